#!/usr/bin/env bash
# cache-lag.sh build DIR | run DIR CONNECT NODES RATE SECONDS [SETTLE [SEED]]
# The Curator peer of `avout bench cache-lag`: `build` compiles CacheLag.java into DIR against
# Debian's Curator 5.4 jars; `run` runs it from DIR and prints its one JSON line.
# Needs: OpenJDK 17 (javac), apt-get install -y libcurator-framework-java libcurator-recipes-java
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
J=/usr/share/java
cmd=${1:-}; dir=${2:-}
[ -n "$dir" ] || { echo "usage: $0 build DIR | run DIR CONNECT NODES RATE SECONDS [SETTLE [SEED]]" >&2; exit 2; }
case $cmd in
build)
  for jar in curator-client curator-framework curator-recipes; do
    [ -f "$J/$jar.jar" ] || { echo "$J/$jar.jar is missing (libcurator-recipes-java)" >&2; exit 1; }
  done
  mkdir -p "$dir"
  javac -Xlint:-path -d "$dir" -cp "$J/curator-client.jar:$J/curator-framework.jar:$J/curator-recipes.jar" \
    "$here/CacheLag.java" ;;
run)
  shift 2
  exec java -cp "$J/curator-recipes.jar:$J/slf4j-nop.jar:$dir" CacheLag "$@" ;;
*) echo "usage: $0 build DIR | run DIR CONNECT NODES RATE SECONDS [SETTLE [SEED]]" >&2; exit 2 ;;
esac
