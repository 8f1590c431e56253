//! The faults beyond the classic three (`--kinds`): a disconnect, a stale read from a
//! lagging follower, an outage. Each is reached (its `sometimes` example is found) and the
//! models' properties hold under it.

use avout_models::check::Verdict;
use avout_models::world::FaultKind;
use avout_models::{Config, check_named};

fn checked(name: &str, clients: u8, kinds: &[FaultKind]) -> avout_models::Report {
    let config = Config {
        clients,
        faults: 1,
        kinds: kinds.to_vec(),
        ..Config::default()
    };
    let report = check_named(name, &config).expect("a model");
    assert!(report.ok(), "{name} under {kinds:?}:\n{report}");
    report
}

fn found(report: &avout_models::Report, example: &str) -> String {
    match &report.property(example).verdict {
        Verdict::Found(trace) => trace.clone(),
        other => panic!("{example}: {other:?}\n{report}"),
    }
}

/// A stale read under the Optimistic STM: a try's reads are synced, but the model's
/// stale-read fault can move a session to a lagging follower between the `sync` and the
/// read sent with it (a real session moves only on a reconnection, which fails both), so a
/// transfer or the reader reads an old value; the commit's version checks refuse it — the
/// snapshot, the total and the count of applied commits hold.
#[test]
fn stm_reads_from_a_lagging_follower_are_refused_at_commit() {
    let report = checked("stm", 2, &[FaultKind::StaleRead]);
    let trace = found(&report, "a stale read served");
    assert!(trace.contains("MOVES to a lagging follower"), "{trace}");
    for always in [
        "no lost update",
        "validated reads are a snapshot",
        "retries are caused",
    ] {
        assert_eq!(report.property(always).verdict, Verdict::Holds, "{always}");
    }
    // 417 before a try's reads were synced.
    assert_eq!(report.unique_states, 2275);
}

/// The atom's read, compute, write: a stale read makes the conditional write fail, and the
/// update goes round again.
#[test]
fn atom_updates_survive_stale_reads_disconnects_and_outages() {
    let report = checked("atom", 2, &FaultKind::ALL);
    found(&report, "a stale read served");
    found(&report, "a cut connection restored");
    assert_eq!(report.unique_states, 6512);
}

/// The election's leadership monitor across a cut connection and an outage: a reconnection
/// is no loss of the leadership, and every client still finishes.
#[test]
fn election_monitors_ride_out_disconnects_and_outages() {
    let report = checked("election", 2, &[FaultKind::Disconnect, FaultKind::Outage]);
    let trace = found(&report, "a cut connection restored");
    assert!(trace.contains("CUT") || trace.contains("OUTAGE"), "{trace}");
    assert_eq!(
        report
            .property("monitor fires only once the leadership is gone")
            .verdict,
        Verdict::Holds
    );
    assert_eq!(report.unique_states, 36265);
}

#[test]
fn fault_kinds_are_named_on_the_command_line() {
    for kind in FaultKind::ALL {
        assert_eq!(kind.name().parse::<FaultKind>(), Ok(kind));
    }
    let e = "meteor".parse::<FaultKind>().unwrap_err();
    assert!(e.contains("stale-read"), "{e}");
}
