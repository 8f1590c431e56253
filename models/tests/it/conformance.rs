//! Trace conformance: simulator runs of the production lock, read-write lock, election and
//! atom, under faults, replayed through the models' transitions; hand-edited traces must be
//! refused.

use avout_models::conformance::{Recording, Workload, conform, faulty, record};
use avout_sim_zk::{FaultKind, LogEvent};

/// Seeds per workload and size: every run conforms, and between them they inject every
/// fault kind the models have (about two per run). Seed 1 of the mutex with 3 clients is the
/// run that showed the model delivering a watch event whose arming reply was lost (fixed in
/// the model's world).
const SEEDS: std::ops::Range<u64> = 0..40;

fn faults(run: &Recording, kind: FaultKind) -> usize {
    let first = run.first;
    run.log
        .iter()
        .filter(|e| matches!(e, LogEvent::Fault { kind: k, client: Some(c), .. } if *k == kind && *c >= first))
        .count()
}

fn all_conform(workload: Workload) {
    let mut seen = [0; 3];
    let kinds = [
        FaultKind::RequestLost,
        FaultKind::ReplyLost,
        FaultKind::SessionExpiry,
    ];
    for clients in 2..=4 {
        for seed in SEEDS {
            let run = record(workload, seed, clients, faulty());
            if let Err(d) = conform(&run) {
                panic!(
                    "{workload:?}, {clients} clients, seed {seed}: {d}\n{}",
                    log_text(&run)
                );
            }
            for (n, kind) in seen.iter_mut().zip(kinds) {
                *n += faults(&run, kind);
            }
        }
    }
    assert!(
        seen.iter().all(|n| *n > 10),
        "faults injected (request lost, reply lost, expiry): {seen:?}"
    );
}

fn log_text(run: &Recording) -> String {
    run.log
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{i:4} {e}\n"))
        .collect()
}

#[test]
fn mutex_runs_on_the_simulator_conform_to_the_model() {
    all_conform(Workload::Mutex);
}

#[test]
fn rwlock_runs_on_the_simulator_conform_to_the_model() {
    all_conform(Workload::RwLock);
}

/// Each leader runs the production `MonitorMachine` on its node, in the model as in
/// `Leadership`: its `exists` watch, and what it learns, are replayed too.
#[test]
fn election_runs_on_the_simulator_conform_to_the_model() {
    all_conform(Workload::Election);
}

#[test]
fn atom_runs_on_the_simulator_conform_to_the_model() {
    all_conform(Workload::Atom);
}

/// A mutex run with a lost reply, which conforms as recorded.
fn mutex_run_with_a_lost_reply() -> (Recording, usize) {
    for seed in SEEDS {
        let run = record(Workload::Mutex, seed, 3, faulty());
        let lost = run.log.iter().position(|e| {
            matches!(e, LogEvent::Fault { kind: FaultKind::ReplyLost, client: Some(c), .. } if *c >= run.first)
        });
        if let Some(lost) = lost {
            conform(&run).expect("the run as recorded conforms");
            return (run, lost);
        }
    }
    panic!("no reply lost in seeds {SEEDS:?}");
}

fn refused(run: &Recording, edit: &str) -> String {
    match conform(run) {
        Ok(_) => panic!("{edit}: the edited trace was accepted\n{}", log_text(run)),
        Err(d) => {
            println!("{edit}: {d}");
            d.to_string()
        }
    }
}

/// The first log entry that `is`.
fn position(run: &Recording, is: impl Fn(&LogEvent) -> bool) -> usize {
    run.log.iter().position(is).expect("the entry to edit")
}

#[test]
fn a_hand_edited_trace_is_refused() {
    let (run, lost) = mutex_run_with_a_lost_reply();

    // The reply was not lost after all: the model's client would read the server's answer,
    // the implementation's read ConnectionLoss.
    let mut edited = run.clone();
    edited.log.remove(lost);
    refused(&edited, "reply loss removed");

    // An applied request moved the server to another zxid.
    let mut edited = run.clone();
    let applied = edited
        .log
        .iter()
        .rposition(|e| matches!(e, LogEvent::Applied { client, .. } if *client >= run.first))
        .expect("a request applied");
    if let LogEvent::Applied { zxid, .. } = &mut edited.log[applied] {
        *zxid += 1;
    }
    assert!(refused(&edited, "zxid changed").contains("zxid"));

    // A client deletes another node than its own.
    let mut edited = run.clone();
    let delete = position(
        &edited,
        |e| matches!(e, LogEvent::Request { op, .. } if op == "delete"),
    );
    if let LogEvent::Request { path, .. } = &mut edited.log[delete] {
        *path = Some("/lock/_c_00000000-0000-0000-0000-000000000000-lock-0000000099".into());
    }
    assert!(refused(&edited, "other node deleted").contains("sent delete"));

    // A reply read before the request was applied.
    let mut edited = run.clone();
    let reply = position(
        &edited,
        |e| matches!(e, LogEvent::Reply { client, .. } if *client >= run.first),
    );
    let event = edited.log.remove(reply);
    let request = position(
        &edited,
        |e| matches!(e, LogEvent::Request { client, .. } if *client >= run.first),
    );
    edited.log.insert(request + 1, event);
    refused(&edited, "reply before its request was applied");

    // The end state: a client's call returned another fencing token.
    let mut edited = run.clone();
    let held = edited.results.iter().position(Option::is_some).unwrap();
    edited.results[held] = edited.results[held].map(|t| t + 100);
    assert!(refused(&edited, "another token").contains("returned"));
}
