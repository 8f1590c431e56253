# Sourced by the reports that plant bugs (museum.sh, swarm.sh): sets `avout` to $AVOUT, an
# `avout` binary already built with `--features planted-bugs`, or builds one.
if [ -n "${AVOUT:-}" ]; then
  avout=$AVOUT
else
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
  cargo build --release -q -p avout-cli --features planted-bugs
  avout=$CARGO_TARGET_DIR/release/avout
fi
