//! The acquisition machine's tests, as golden transcripts: each case is a file under
//! `testdata/` (see [`crate::machine::transcript`] for the format), the exclusive lock's and
//! both sides of the read-write lock's.

use std::path::Path;

use super::*;
use crate::machine::transcript::{named, number, run_dir};

/// Builds the machine of a transcript's `new PATH KIND PATIENCE guid=N session=N [own=A,B]
/// [releasing=A,B] [riding=PATH] [planted=BUG] [clock=blocked]` line (`PATIENCE`: `forever`,
/// `none` or milliseconds; `clock=blocked` counts them only behind a holder).
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
    let (mut riding, mut planted, mut blocked) = (None, Bugs::NONE, false);
    for option in options {
        let names = |v: &str| v.split(',').map(str::to_owned).collect::<Vec<_>>();
        match option.split_once('=').expect("KEY=VALUE") {
            ("guid", v) => guid = number(v).expect("a guid") as u128,
            ("session", v) => session = number(v).expect("a session"),
            ("own", v) => own = names(v),
            ("releasing", v) => releasing = names(v),
            ("riding", v) => riding = Some(v.to_owned()),
            ("planted", v) => {
                planted = Bugs::plant([v.parse().expect("a planted bug")]).expect("compiled in")
            }
            ("clock", "blocked") => blocked = true,
            (key, _) => panic!("unknown option {key}"),
        }
    }
    let mut m = AcquireMachine::new(path, kind, guid, session, patience, own)
        .with_releasing(releasing)
        .planted(planted);
    if blocked {
        m = m.blocked_patience();
    }
    match riding {
        Some(node) => m.with_riding(node),
        None => m,
    }
}

#[test]
fn transcripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lock/acquire/testdata");
    run_dir(&dir, build);
}

/// Steps a riding machine through its first multi with `reply`; returns it.
fn ride(reply: crate::Result<Reply>) -> AcquireMachine {
    let mut m = AcquireMachine::new("/l", LockKind::Exclusive, 1, 7, Patience::Forever, vec![])
        .with_riding("/l/_c_0-lock-0000000004".into());
    m.handle_session(Millis(0), SessionState::Connected);
    let (multi, _) = m.poll_request().expect("the multi");
    m.handle_reply(Millis(1), multi, reply);
    m
}

fn refused(index: usize, error: Error) -> crate::Result<Reply> {
    Err(Error::Multi {
        index,
        source: Box::new(error),
    })
}

#[test]
fn the_old_node_is_released_by_the_ride_or_left_to_the_caller() {
    let applied = Reply::Multi(vec![
        crate::OpResult::Delete,
        crate::OpResult::Create {
            path: "/l/_c_00000000-0000-0000-0000-000000000001-lock-0000000005".into(),
            stat: None,
        },
        crate::OpResult::SetData {
            stat: crate::Stat::default(),
        },
    ]);
    assert_eq!(ride(Ok(applied)).unreleased(), None, "applied");
    let gone = Error::NoNode {
        path: "/l/_c_0-lock-0000000004".into(),
    };
    assert_eq!(ride(refused(0, gone)).unreleased(), None, "already gone");
    let denied = Error::NoAuth {
        path: "/l/_c_0-lock-0000000004".into(),
    };
    assert_eq!(
        ride(refused(0, denied)).unreleased(),
        Some("/l/_c_0-lock-0000000004"),
        "refused: the caller releases it"
    );
    let mut unknown = ride(Err(Error::ConnectionLoss));
    assert_eq!(unknown.unreleased(), Some("/l/_c_0-lock-0000000004"));
    unknown.handle_session(Millis(2), SessionState::Expired);
    assert_eq!(unknown.unreleased(), None, "gone with the session");
}

/// The museum's bugs planted in this machine (`testdata/planted/`), each beside the
/// transcript of the same case without it.
#[cfg(feature = "planted-bugs")]
#[test]
fn planted_transcripts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lock/acquire/testdata/planted");
    run_dir(&dir, build);
}
