use super::*;
use crate::machine::testing::{children, drain};
use crate::{Stat, agent::Consumed};

const ENTRY: &str = "p-0000000000000001-00000000000000000000000000000002-0000000003";
const LATER: &str = "p-0000000000000001-00000000000000000000000000000003-0000000004";
const FENCE: &str = "/a/executor/_c_x-lock-0000000000";

type Keep = fn(&AgentState, &EntryName, &[u8]) -> Result<Consumed, StepError>;

/// Consumes by keeping the value.
fn keep(s: &AgentState, e: &EntryName, _: &[u8]) -> Result<Consumed, StepError> {
    Ok((s.consumed(e, s.value.clone(), None).encode(), None))
}

fn state(applied: i64) -> Vec<u8> {
    let mut s = AgentState::new(serde_json::json!(0));
    s.applied = applied;
    s.encode()
}

fn data(bytes: Vec<u8>, version: i32) -> crate::Result<Reply> {
    Ok(Reply::Data {
        data: bytes,
        stat: Stat {
            version,
            ..Stat::default()
        },
    })
}

/// A step, started, that read state `applied` at version 5 and the queue `names`; returns
/// it with the requests it sent next.
fn read(wait: bool, applied: i64, names: &[&str]) -> (StepMachine<Keep>, Vec<(Token, Request)>) {
    read_fenced(Some(FENCE), wait, applied, names)
}

/// [`read`], by an executor fenced by `fence` (or by none).
fn read_fenced(
    fence: Option<&str>,
    wait: bool,
    applied: i64,
    names: &[&str],
) -> (StepMachine<Keep>, Vec<(Token, Request)>) {
    let mut m = StepMachine::new("/a", fence.map(str::to_owned), wait, keep as Keep);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    assert_eq!(sent.len(), 3, "sync, state, queue: {sent:?}");
    m.handle_reply(Millis(1), sent[0].0, Ok(Reply::Synced));
    m.handle_reply(Millis(1), sent[1].0, data(state(applied), 5));
    m.handle_reply(Millis(1), sent[2].0, children(names));
    let next = drain(&mut m);
    (m, next)
}

/// A step that got as far as its commit `multi`; returns it with the multi's token.
fn committing() -> (StepMachine<Keep>, Token) {
    let (mut m, sent) = read(true, 2, &[LATER, ENTRY]);
    assert!(
        matches!(&sent[..], [(_, Request::GetData { path, .. })] if path.ends_with(ENTRY)),
        "the first entry past `applied` is read: {sent:?}"
    );
    m.handle_reply(Millis(2), sent[0].0, data(b"null".to_vec(), 0));
    let sent = drain(&mut m);
    let [(token, Request::Multi(ops))] = &sent[..] else {
        panic!("one multi: {sent:?}");
    };
    assert_eq!(ops.len(), 3, "fence, set, delete: {ops:?}");
    assert!(matches!(&ops[0], Op::Check { path, .. } if path == FENCE));
    assert!(matches!(
        &ops[1],
        Op::SetData {
            version: Some(5),
            ..
        }
    ));
    (m, *token)
}

#[test]
fn a_committed_step_reports_the_entry_consumed() {
    let (mut m, multi) = committing();
    m.handle_reply(Millis(3), multi, Ok(Reply::Multi(Vec::new())));
    assert_eq!(
        m.poll_output(),
        Some(Ok(Stepped::Consumed {
            skipped: None,
            recovered: false
        }))
    );
}

#[test]
fn a_lost_commit_reply_is_decided_by_the_applied_position() {
    for (applied, expected) in [
        (
            3,
            Stepped::Consumed {
                skipped: None,
                recovered: true,
            },
        ),
        (
            4,
            Stepped::Consumed {
                skipped: None,
                recovered: true,
            },
        ),
        (2, Stepped::Raced),
    ] {
        let (mut m, multi) = committing();
        m.handle_reply(Millis(3), multi, Err(Error::ConnectionLoss));
        assert!(
            drain(&mut m).is_empty(),
            "nothing sent before the session is back"
        );
        assert_eq!(
            m.poll_timer(),
            Some(Millis(3).plus(crate::machine::RETRY_PAUSE_MS))
        );
        m.handle_session(Millis(4), SessionState::Connected);
        let sent = drain(&mut m);
        assert!(
            matches!(
                &sent[..],
                [
                    (_, Request::Sync { .. }),
                    (_, Request::GetData { watch: false, .. })
                ]
            ),
            "a synced read decides: {sent:?}"
        );
        m.handle_reply(Millis(5), sent[0].0, Ok(Reply::Synced));
        m.handle_reply(Millis(5), sent[1].0, data(state(applied), 6));
        assert_eq!(m.poll_output(), Some(Ok(expected)), "applied {applied}");
    }
}

#[test]
fn a_decision_behind_a_failed_sync_is_not_trusted() {
    let (mut m, multi) = committing();
    m.handle_reply(Millis(3), multi, Err(Error::ConnectionLoss));
    m.handle_timer(Millis(100));
    let sent = drain(&mut m);
    m.handle_reply(Millis(101), sent[0].0, Err(Error::ConnectionLoss));
    m.handle_reply(Millis(101), sent[1].0, data(state(2), 5));
    assert_eq!(
        m.poll_output(),
        None,
        "a stale read could say 'not applied'"
    );
    m.handle_session(Millis(102), SessionState::Connected);
    assert_eq!(drain(&mut m).len(), 2, "read again");
}

#[test]
fn a_lost_lock_node_fences_the_commit() {
    let (mut m, multi) = committing();
    m.handle_reply(
        Millis(3),
        multi,
        Err(Error::Multi {
            index: 0,
            source: Box::new(Error::NoNode { path: FENCE.into() }),
        }),
    );
    assert_eq!(
        m.poll_output(),
        Some(Err(StepError::Fenced { node: FENCE.into() }))
    );
}

#[test]
fn a_refused_commit_is_a_race() {
    let (mut m, multi) = committing();
    m.handle_reply(
        Millis(3),
        multi,
        Err(Error::Multi {
            index: 1,
            source: Box::new(Error::BadVersion { path: "/a".into() }),
        }),
    );
    assert_eq!(m.poll_output(), Some(Ok(Stepped::Raced)));
}

/// Without a fence the set is the commit's first op, so its refusal at index 0 is a race
/// with another executor, not a lost lock node.
#[test]
fn an_unfenced_refused_commit_is_a_race() {
    let (mut m, sent) = read_fenced(None, true, 2, &[ENTRY]);
    m.handle_reply(Millis(2), sent[0].0, data(b"null".to_vec(), 0));
    let sent = drain(&mut m);
    let [(token, Request::Multi(ops))] = &sent[..] else {
        panic!("one multi: {sent:?}");
    };
    assert_eq!(ops.len(), 2, "set, delete: {ops:?}");
    m.handle_reply(
        Millis(3),
        *token,
        Err(Error::Multi {
            index: 0,
            source: Box::new(Error::BadVersion { path: "/a".into() }),
        }),
    );
    assert_eq!(m.poll_output(), Some(Ok(Stepped::Raced)));
}

#[test]
fn nothing_to_apply_waits_for_a_change_or_reports_idle() {
    let (mut m, sent) = read(true, 3, &[ENTRY]);
    assert!(sent.is_empty(), "{sent:?}");
    assert_eq!(m.poll_output(), None, "waiting");
    m.handle_watch(
        Millis(9),
        Token(3),
        WatchedEvent {
            kind: crate::EventKind::NodeChildrenChanged,
            path: "/a/queue".into(),
            state: SessionState::Connected,
        },
    );
    assert_eq!(m.poll_output(), Some(Ok(Stepped::Changed)));

    let (mut m, sent) = read(false, 3, &[ENTRY]);
    assert!(sent.is_empty());
    assert_eq!(m.poll_output(), Some(Ok(Stepped::Idle)));
}

#[test]
fn a_failed_agent_applies_nothing() {
    let mut m = StepMachine::new("/a", None, false, keep as Keep);
    m.handle_session(Millis(0), SessionState::Connected);
    let sent = drain(&mut m);
    let mut failed = AgentState::new(serde_json::json!(0));
    failed.failure = Some(AgentFailure {
        seq: 2,
        error: "no".into(),
    });
    m.handle_reply(Millis(1), sent[1].0, data(failed.encode(), 1));
    m.handle_reply(Millis(1), sent[2].0, children(&[ENTRY]));
    assert_eq!(m.poll_output(), Some(Ok(Stepped::Idle)));
}

#[test]
fn an_expired_session_ends_the_step() {
    let (mut m, _) = committing();
    m.handle_session(Millis(3), SessionState::Expired);
    assert_eq!(
        m.poll_output(),
        Some(Err(StepError::Zk(Error::SessionExpired)))
    );
}

#[test]
fn an_agent_whose_state_node_is_gone_is_missing() {
    let mut m = StepMachine::new("/a", Some(FENCE.to_owned()), true, keep as Keep);
    m.handle_session(Millis(0), SessionState::Connected);
    let [(sync, _), (state, _), _] = &drain(&mut m)[..] else {
        panic!("sync, state, queue");
    };
    m.handle_reply(Millis(1), *sync, Ok(Reply::Synced));
    // The state read's NoNode says there is no agent (a queue read's would be a failed read).
    let gone = Error::NoNode { path: "/a".into() };
    m.handle_reply(Millis(1), *state, Err(gone));
    let missing = StepError::Missing { path: "/a".into() };
    assert_eq!(m.poll_output(), Some(Err(missing)));
}
