#!/usr/bin/env bash
# Every chaos run ends with a verdict (issue 39): N consecutive runs of every scenario on an
# ensemble of our own (3 members of Debian's ZooKeeper 3.8) under the nemesis, each run's exit
# status, verdicts and rounds without one, and the JVMs left once it ended.
#
#   bash reports/chaos-verdicts.sh [N] [DURATION] [EVERY] [SCENARIO ...]
#     (N defaults to 20, DURATION to 6s, EVERY to 1s, the scenarios to all of them, and the
#      bank again with --ref-store memory)
#
# Writes reports/chaos-verdicts.md (or `$CHAOS_REPORT`: two halves of the scenarios can run at
# once, each with its own report) and keeps each run's
# output in reports/chaos-verdicts/ (not in git). A run "ends with a verdict" when it exits 0
# (every judged round valid) or 1 (an anomaly, with its page) with at least one judged round;
# exit 2, an abort or a signal is a run without one. `AVOUT` names a built binary.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-20}
duration=${2:-6s}
every=${3:-1s}
shift 3 2>/dev/null || shift $#
if [ -z "${AVOUT:-}" ]; then
    cargo build --release -q -p avout-cli
    AVOUT="${CARGO_TARGET_DIR:-target}/release/avout"
fi
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
    mapfile -t scenarios < <("$AVOUT" run --help | sed -n 's/.*<SCENARIO>  The scenario: //p' |
        sed 's/ or /, /' | tr ',' '\n' | sed 's/^ *//' | grep .)
    scenarios+=("bank+memory")
fi
out=reports/chaos-verdicts
mkdir -p "$out"
rows=()
for entry in "${scenarios[@]}"; do
    scenario=${entry%%+*}
    extra=()
    [ "$entry" != "$scenario" ] && extra=(--ref-store "${entry#*+}")
    codes="" verdicts=0 valid=0 judged=0 unjudged=0 left=0 secs=0
    declare -A nemesis=()
    for i in $(seq 1 "$runs"); do
        log="$out/$entry-$i"
        # The run's servers keep their directories under its own TMPDIR, so that its JVMs
        # (and only its: other work on the machine has its own) can be found afterwards.
        tmp="$PWD/$out/tmp/$entry-$i"
        rm -rf "$tmp" && mkdir -p "$tmp"
        start=$(date +%s)
        set +e
        TMPDIR="$tmp" timeout -s KILL 600 "$AVOUT" run "$scenario" "${extra[@]}" --seed $((i * 1000)) \
            --zk-ensemble 3 --kill-every "$every" --duration "$duration" --json \
            --out "$out/runs" >"$log.json" 2>"$log.err"
        code=$?
        set -e
        secs=$((secs + $(date +%s) - start))
        codes+="$code "
        # The servers a run started die with it; give the kernel a moment to reap them.
        sleep 0.5
        n=$(pgrep -fc "QuorumPeerMain $tmp/" || true)
        left=$((left + n))
        [ "$n" -gt 0 ] && pkill -9 -f "QuorumPeerMain $tmp/" || true
        rm -rf "$tmp"
        if [ "$code" -le 1 ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$log.json" 2>/dev/null; then
            read -r j u v f < <(python3 - "$log.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rounds = r.get("rounds")
if not rounds:  # a run of one round
    print(1, 0, int(r["valid"]), "")
else:
    each = rounds["each"]
    j = sum(1 for e in each if "valid" in e)
    v = int(all(e.get("valid", True) for e in each))
    f = ",".join(f"{k}={n}" for k, n in rounds["faults"].items())
    print(j, len(each) - j, v, f or "-")
PY
            )
            if [ "$j" -gt 0 ]; then verdicts=$((verdicts + 1)); fi
            valid=$((valid + v)) judged=$((judged + j)) unjudged=$((unjudged + u))
            for kv in ${f//,/ }; do
                [ "$kv" = "-" ] && continue
                nemesis[${kv%%=*}]=$(( ${nemesis[${kv%%=*}]:-0} + ${kv#*=} ))
            done
        fi
        echo "$entry run $i: exit $code" >&2
    done
    events=$(for k in "${!nemesis[@]}"; do echo "$k ${nemesis[$k]}"; done | sort | paste -sd, - | sed 's/,/, /g')
    unset nemesis
    rows+=("| $entry | $runs | **$verdicts** | $valid | $judged | $unjudged | ${events:--} | $left | $(echo $codes | tr ' ' '\n' | sort -n | uniq -c | awk '{printf "%s%s×%s", (NR>1?", ":""), $1, $2}') | $secs |")
done
{
    echo "# Every chaos run ends with a verdict"
    echo
    echo "\`bash reports/chaos-verdicts.sh $runs $duration $every${*:+ $*}\` (made $(date -u +%Y-%m-%d), $(nproc) cores, $("$AVOUT" --version))."
    echo
    echo "Each run: \`avout run SCENARIO --seed S --zk-ensemble 3 --kill-every $every --duration $duration\`"
    echo "(S = 1000 × the run's number), its own 3-member ensemble under the nemesis (a member killed, frozen, cut off"
    echo "from the others, the clients cut off from one, a session expired; in turn, one every $every)."
    echo
    echo "| scenario | runs | runs with a verdict | runs valid | rounds judged | rounds without a verdict | nemesis events | JVMs left | exit statuses | seconds |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} >"${CHAOS_REPORT:-reports/chaos-verdicts.md}"
cat "${CHAOS_REPORT:-reports/chaos-verdicts.md}"
