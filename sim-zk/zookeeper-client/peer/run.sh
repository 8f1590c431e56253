#!/usr/bin/env bash
# Runs zookeeper-client 0.11.2's own test suite (tests/zookeeper.rs, read from cargo's registry
# and rewritten by build.rs) against the simulation under madsim, and prints every test's
# outcome beside the table of expected ones (tests/peer/expected.tsv), with the reason for
# each that cannot pass. Exits 1 if any outcome differs from the table (a test that should
# pass fails, one that cannot pass passes, or a test is missing or new).
#
#   bash sim-zk/zookeeper-client/peer/run.sh            # from anywhere in the workspace
#   MADSIM_TEST_SEED=7 bash sim-zk/zookeeper-client/peer/run.sh
set -euo pipefail
crate="$(cd "$(dirname "$0")/.." && pwd)"
expected="$crate/tests/peer/expected.tsv"
target="${CARGO_TARGET_DIR:-$crate/../../target}/madsim"
# --cfg madsim rebuilds every crate: a target dir of its own.
if [[ "${CARGO_TARGET_DIR:-}" == */madsim ]]; then target="$CARGO_TARGET_DIR"; fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR="$target" \
  cargo test --manifest-path "$crate/Cargo.toml" --test peer -- --test-threads=1 >"$log" 2>&1
set -e
if ! grep -q '^test result' "$log"; then
  echo "the peer suite did not run:" >&2
  cat "$log" >&2
  exit 1
fi

declare -A got
while read -r name outcome; do
  got[$name]=$outcome
done < <(sed -nE 's/^test ([^ ]+)( - should panic)? \.\.\. (ok|FAILED)$/\1 \3/p' "$log")

mismatches=0
declare -A listed
printf '%-52s %-9s %-9s %s\n' "test (zookeeper-client 0.11.2)" expected result reason
while IFS=$'\t' read -r name want reason; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  listed[$name]=1
  case "${got[$name]:-}" in
    ok) result=pass ;;
    FAILED) result=fail ;;
    *) result=off ;;
  esac
  mark=""
  if [[ "$result" != "$want" ]]; then mark="  <-- differs"; mismatches=$((mismatches + 1)); fi
  printf '%-52s %-9s %-9s %s%s\n' "$name" "$want" "$result" "${reason:-}" "$mark"
done <"$expected"
for name in "${!got[@]}"; do
  if [[ -z "${listed[$name]:-}" ]]; then
    printf '%-52s %-9s %-9s %s\n' "$name" "-" "${got[$name]}" "not in tests/peer/expected.tsv  <-- new"
    mismatches=$((mismatches + 1))
  fi
done
pass=$(grep -c '^test .* \.\.\. ok$' "$log" || true)
fail=$(grep -c '^test .* \.\.\. FAILED$' "$log" || true)
echo "ran $((pass + fail)): $pass passed, $fail failed (each failure for the reason above)"
if [[ $mismatches -gt 0 ]]; then
  echo "$mismatches outcome(s) differ from tests/peer/expected.tsv; the run's output:" >&2
  cat "$log" >&2
  exit 1
fi
