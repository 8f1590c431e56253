#!/usr/bin/env bash
# Judges Elle's and Knossos' own test histories with `avout check` and, where it has the
# model, with adya (`cargo install adya --no-default-features`), and prints one row per
# history: the file, the verdict each gives, and each one's wall time. The histories are read
# from checkouts of jepsen-io/elle and jepsen-io/knossos (git directories, bare or not); none
# of their files is copied into this repository.
#
# usage: compare-adya.sh ELLE_GIT_DIR KNOSSOS_GIT_DIR
#   AVOUT (default: target/release/avout, built from this tree) and ADYA (default: adya on
#   the PATH) name the two binaries.
set -euo pipefail
elle=${1:?the git directory of jepsen-io/elle}
knossos=${2:?the git directory of jepsen-io/knossos}
avout=${AVOUT:-target/release/avout}
adya=${ADYA:-adya}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The histories, as the repositories hold them (files a snapshot lacks are said so).
extract() {
  local git=$1 path=$2 out=$3
  mkdir -p "$(dirname "$out")"
  if ! git --git-dir="$git" show "HEAD:$path" > "$out" 2>/dev/null; then
    echo "absent from the checkout: $path" >&2
    rm -f "$out"
  fi
}
for f in huge-scc paper-example si-without-g-single small-slow-scc; do
  extract "$elle" "histories/$f.edn" "$work/elle/$f.edn"
done
git --git-dir="$knossos" ls-tree -r --name-only HEAD data | grep '\.edn$' | while read -r f; do
  extract "$knossos" "$f" "$work/knossos/${f#data/}"
done

# One checker run: "verdict ms", the verdict from the exit status (0 valid, 1 invalid; 2 and
# 3 mean it could not judge the history).
timed() {
  local start end code
  start=$(date +%s%N)
  set +e
  "$@" > "$work/out" 2>&1
  code=$?
  set -e
  end=$(date +%s%N)
  local verdict
  case $code in
    0) verdict=valid ;;
    1) verdict=invalid ;;
    *) verdict="unread: $(head -c 80 "$work/out" | tr '\n' ' ')" ;;
  esac
  echo "$verdict|$(( (end - start) / 1000000 ))"
}

printf '%s\t%s\t%s\t%s\n' history "avout check" adya expected
for f in "$work"/elle/*.edn; do
  name=elle/$(basename "$f")
  for c in strict-serializable serializable; do
    a=$(timed "$avout" check "$f" --model list-append --consistency "$c")
    b=$(timed "$adya" check -m list-append -c "$c" "$f")
    printf '%s (%s)\t%s\t%s\t-\n' "$name" "$c" "$a" "$b"
  done
done
for f in $(find "$work/knossos" -name '*.edn' | sort); do
  rel=${f#"$work"/knossos/}
  case $rel in
    cas-register/*) model=cas-register ;;
    mutex/*) model=mutex ;;
    *) model=register ;;
  esac
  expected=${rel#*/}; expected=${expected%%/*}
  a=$(timed "$avout" check "$f" --model "$model")
  printf '%s\t%s\t%s\t%s\n' "knossos/$rel" "$a" "no linearizability model" "$expected"
done
