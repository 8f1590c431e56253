//! The acquisition machine's tests, as golden transcripts: each case is a file under
//! `testdata/` (see [`crate::machine::transcript`] for the format), the exclusive lock's and
//! both sides of the read-write lock's.

use std::path::Path;

use super::*;
use crate::machine::transcript::{named, number, run_dir};

/// Builds the machine of a transcript's `new PATH KIND PATIENCE guid=N session=N [own=A,B]
/// [releasing=A,B] [planted=BUG]` line (`PATIENCE`: `forever`, `none` or milliseconds).
fn build(args: &[&str]) -> AcquireMachine {
    let [path, kind, patience, options @ ..] = args else {
        panic!("new PATH KIND PATIENCE …: {args:?}")
    };
    let kind = named(
        kind,
        [
            LockKind::Exclusive,
            LockKind::Read,
            LockKind::Write,
            LockKind::Latch,
        ],
    )
    .expect("a lock kind");
    let patience = match *patience {
        "forever" => Patience::Forever,
        "none" => Patience::None,
        ms => Patience::Millis(number(ms).expect("milliseconds") as u64),
    };
    let (mut guid, mut session, mut own, mut releasing) = (0, 0, Vec::new(), Vec::new());
    let mut planted = Bugs::NONE;
    for option in options {
        let names = |v: &str| v.split(',').map(str::to_owned).collect::<Vec<_>>();
        match option.split_once('=').expect("KEY=VALUE") {
            ("guid", v) => guid = number(v).expect("a guid") as u128,
            ("session", v) => session = number(v).expect("a session"),
            ("own", v) => own = names(v),
            ("releasing", v) => releasing = names(v),
            ("planted", v) => {
                planted = Bugs::plant([v.parse().expect("a planted bug")]).expect("compiled in")
            }
            (key, _) => panic!("unknown option {key}"),
        }
    }
    AcquireMachine::new(path, kind, guid, session, patience, own)
        .with_releasing(releasing)
        .planted(planted)
}

#[test]
fn transcripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lock/acquire/testdata");
    run_dir(&dir, build);
}

/// The museum's bugs planted in this machine (`testdata/planted/`), each beside the
/// transcript of the same case without it.
#[cfg(feature = "planted-bugs")]
#[test]
fn planted_transcripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lock/acquire/testdata/planted");
    run_dir(&dir, build);
}
