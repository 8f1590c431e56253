//! The two-phase-commit checker on valid histories and on each rule's violations.

use super::*;
use crate::history::{Event, F};
use serde_json::json;

fn f(name: &str) -> F {
    F::Other(name.into())
}

/// A history builder: each step is one operation, invoked and completed at once.
#[derive(Default)]
struct H(Vec<Event>);

impl H {
    fn op(mut self, kind: &str, p: u64, f_: &str, value: Value, done: Value) -> Self {
        self.0.push(Event::invoke(p, f(f_), value));
        self.0.push(match kind {
            "ok" => Event::ok(p, f(f_), done),
            "fail" => Event::fail(p, f(f_), done),
            _ => Event::info(p, f(f_), done),
        });
        self
    }
    fn begin(self, tx: u64, sites: &[&str]) -> Self {
        let v = json!({"tx": tx, "sites": sites});
        self.op("ok", 0, "begin", v.clone(), v)
    }
    fn join(self, p: u64, tx: u64, site: &str) -> Self {
        let v = json!({"tx": tx, "site": site});
        self.op("ok", p, "join", v.clone(), v)
    }
    fn vote(self, end: &str, p: u64, tx: u64, site: &str, vote: &str) -> Self {
        let v = json!({"tx": tx, "site": site, "vote": vote});
        self.op(end, p, "vote", v.clone(), v)
    }
    fn leave(self, p: u64, tx: u64, site: &str) -> Self {
        let v = json!({"tx": tx, "site": site});
        self.op("ok", p, "leave", v.clone(), v)
    }
    fn learn(self, p: u64, tx: u64, site: Option<&str>, outcome: &str) -> Self {
        let v = match site {
            Some(s) => json!({"tx": tx, "site": s}),
            None => json!({"tx": tx}),
        };
        let mut done = v.clone();
        done["outcome"] = outcome.into();
        self.op("ok", p, "outcome", v, done)
    }
    fn check(self) -> Findings {
        check_two_phase_commit(&self.0.into_iter().collect()).unwrap()
    }
}

fn names(v: &Findings) -> Vec<&'static str> {
    v.violations.iter().map(TwoPhaseViolation::name).collect()
}

/// Two sites that join and vote `a` and `b` in tx 1.
fn voted(a: &str, b: &str) -> H {
    H::default()
        .begin(1, &["a", "b"])
        .join(1, 1, "a")
        .join(2, 1, "b")
        .vote("ok", 1, 1, "a", a)
        .vote("ok", 2, 1, "b", b)
}

#[test]
fn valid_commits_and_aborts_pass() {
    let v = voted("commit", "commit")
        .learn(0, 1, None, "commit")
        .learn(1, 1, Some("a"), "commit")
        .learn(2, 1, Some("b"), "commit")
        .check();
    assert!(v.is_valid(), "{v}");
    assert_eq!((v.committed, v.aborted), (1, 0));
    let v = voted("commit", "abort")
        .learn(0, 1, None, "abort")
        .learn(1, 1, Some("a"), "abort")
        .check();
    assert!(v.is_valid(), "{v}");
    assert_eq!((v.committed, v.aborted), (0, 1));
    // Aborting though everyone voted commit is allowed (the coordinator may abort).
    let v = voted("commit", "commit").learn(0, 1, None, "abort").check();
    assert!(v.is_valid(), "{v}");
    // A commit vote in doubt may have taken effect; leaving after voting is fine.
    let v = H::default()
        .begin(1, &["a"])
        .vote("info", 1, 1, "a", "commit")
        .leave(1, 1, "a")
        .learn(0, 1, None, "commit")
        .check();
    assert!(v.is_valid(), "{v}");
    // Nobody learned anything: undecided, not wrong.
    let v = voted("commit", "commit").check();
    assert!(v.is_valid() && v.undecided() == 1, "{v}");
}

#[test]
fn a_site_learning_otherwise_than_the_coordinator_is_a_disagreement() {
    let v = voted("commit", "commit")
        .learn(2, 1, Some("b"), "abort")
        .learn(0, 1, None, "commit")
        .learn(1, 1, Some("a"), "commit")
        .check();
    assert_eq!(names(&v), ["disagreement"], "{v}");
    let text = v.violations[0].to_string();
    assert!(text.contains("site b learned abort"), "{text}");
    assert!(text.contains("the coordinator learned commit"), "{text}");
}

#[test]
fn without_the_coordinator_sites_must_still_agree() {
    let v = voted("commit", "commit")
        .learn(1, 1, Some("a"), "commit")
        .learn(2, 1, Some("b"), "abort")
        .check();
    assert_eq!(names(&v), ["disagreement"], "{v}");
}

#[test]
fn committing_without_every_vote_is_caught() {
    // b joined but never voted.
    let v = H::default()
        .begin(1, &["a", "b"])
        .join(1, 1, "a")
        .join(2, 1, "b")
        .vote("ok", 1, 1, "a", "commit")
        .learn(0, 1, None, "commit")
        .check();
    assert_eq!(names(&v), ["commit-without-vote"], "{v}");
    assert!(v.violations[0].to_string().contains("site b"));
    // b's vote surely failed: it does not count.
    let v = voted("commit", "commit")
        .vote("fail", 3, 1, "c", "commit")
        .learn(0, 1, None, "commit")
        .check();
    assert!(v.is_valid(), "c is not a site of tx 1: {v}");
    let v = H::default()
        .begin(1, &["a", "b"])
        .vote("ok", 1, 1, "a", "commit")
        .vote("fail", 2, 1, "b", "commit")
        .learn(1, 1, Some("a"), "commit")
        .check();
    assert_eq!(names(&v), ["commit-without-vote"], "{v}");
}

#[test]
fn committing_after_an_abort_vote_is_caught() {
    let v = voted("commit", "abort").learn(0, 1, None, "commit").check();
    assert_eq!(names(&v), ["commit-despite-abort"], "{v}");
    // An abort vote in doubt may have taken effect too.
    let v = H::default()
        .begin(1, &["a"])
        .vote("info", 1, 1, "a", "abort")
        .learn(0, 1, None, "commit")
        .check();
    assert_eq!(names(&v), ["commit-despite-abort"], "{v}");
    // Without a begin, the sites seen in the history count.
    let v = H::default()
        .vote("ok", 1, 1, "a", "abort")
        .learn(1, 1, Some("a"), "commit")
        .check();
    assert_eq!(names(&v), ["commit-despite-abort"], "{v}");
}

#[test]
fn committing_after_a_site_vanished_before_voting_is_caught() {
    let v = H::default()
        .begin(1, &["a", "b"])
        .join(1, 1, "a")
        .join(2, 1, "b")
        .vote("ok", 1, 1, "a", "commit")
        .leave(2, 1, "b")
        .learn(0, 1, None, "commit")
        .check();
    assert_eq!(names(&v), ["commit-after-leave"], "{v}");
    // A vote after leaving does not help: the site was gone.
    let v = H::default()
        .begin(1, &["a"])
        .leave(1, 1, "a")
        .vote("ok", 1, 1, "a", "commit")
        .learn(0, 1, None, "commit")
        .check();
    assert_eq!(names(&v), ["commit-after-leave"], "{v}");
}

#[test]
fn a_participant_told_two_outcomes_is_caught() {
    let v = voted("commit", "commit")
        .learn(1, 1, Some("a"), "commit")
        .learn(1, 1, Some("a"), "abort")
        .check();
    assert_eq!(names(&v), ["told-twice"], "{v}");
    let v = voted("commit", "abort")
        .learn(0, 1, None, "abort")
        .learn(0, 1, None, "commit")
        .check();
    assert!(names(&v).contains(&"told-twice"), "{v}");
    assert!(names(&v).contains(&"commit-despite-abort"), "{v}");
    // Told the same twice is fine.
    let v = voted("commit", "commit")
        .learn(1, 1, Some("a"), "commit")
        .learn(1, 1, Some("a"), "commit")
        .check();
    assert!(v.is_valid(), "{v}");
}

#[test]
fn transactions_are_judged_apart() {
    let v = voted("commit", "commit")
        .learn(0, 1, None, "commit")
        .begin(2, &["a"])
        .vote("ok", 1, 2, "a", "abort")
        .learn(0, 2, None, "abort")
        .check();
    assert!(v.is_valid(), "{v}");
    assert_eq!((v.transactions, v.committed, v.aborted), (2, 1, 1));
}

#[test]
fn malformed_histories_are_errors() {
    let bad = |events: Vec<Event>| check_two_phase_commit(&events.into_iter().collect());
    assert!(matches!(
        bad(vec![Event::invoke(0, F::Read, json!({"tx": 1}))]),
        Err(CheckError::Unsupported { line: 1, .. })
    ));
    assert!(matches!(
        bad(vec![Event::invoke(
            0,
            f("begin"),
            json!({"tx": 1, "sites": "a"})
        )]),
        Err(CheckError::Malformed { line: 1, .. })
    ));
    assert!(matches!(
        bad(vec![Event::invoke(0, f("join"), json!({"site": "a"}))]),
        Err(CheckError::Malformed { line: 1, .. })
    ));
    assert!(matches!(
        bad(vec![
            Event::invoke(0, f("outcome"), json!({"tx": 1})),
            Event::ok(0, f("outcome"), "maybe".into()),
        ]),
        Err(CheckError::Malformed { line: 2, .. })
    ));
}
