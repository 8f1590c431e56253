use super::schedule::{arrivals, map_client};
use avout_sim_zk::LogEvent;

use super::*;

/// Every sublist of `items` from which one item is removed.
fn one_less(items: &[u32]) -> impl Iterator<Item = Vec<u32>> + '_ {
    (0..items.len()).map(move |i| {
        let mut v = items.to_vec();
        v.remove(i);
        v
    })
}

#[test]
fn ddmin_reaches_a_one_minimal_sublist() {
    // Failing needs 3 and 7 together, or 11 alone with 2: several minima.
    let fails =
        |s: &[u32]| (s.contains(&3) && s.contains(&7)) || (s.contains(&11) && s.contains(&2));
    for items in [
        (0..16).collect::<Vec<u32>>(),
        (0..16).rev().collect(),
        vec![3, 7],
        vec![7, 1, 1, 3, 9, 9, 11],
    ] {
        let mut calls = 0;
        let min = ddmin(items.clone(), |s| {
            calls += 1;
            fails(s)
        });
        assert!(fails(&min), "{items:?} gave {min:?}");
        for smaller in one_less(&min) {
            assert!(!fails(&smaller), "{min:?} is not 1-minimal");
        }
        assert!(calls <= items.len() * items.len() + 1);
    }
    assert_eq!(ddmin(vec![1, 2], |_| true), Vec::<u32>::new());
}

#[test]
fn smallest_finds_the_least_failing_count_even_when_failure_is_not_monotone() {
    // 5 and 9 fail; 6, 7, 8 do not (a smaller run is another interleaving).
    let fails = |k: usize| k == 5 || k >= 9;
    assert_eq!(smallest(12, fails), 5);
    assert_eq!(smallest(5, fails), 5);
    assert_eq!(smallest(4, fails), 4);
    assert_eq!(smallest(1, |_| true), 1);
}

#[test]
fn failures_keep_their_class() {
    assert_eq!(Class::of("error: gave up"), Class::Error);
    assert_eq!(
        Class::of("liveness: process 1's acquire …"),
        Class::Liveness
    );
    assert_eq!(
        Class::of("the run panicked: Mvcc protocol violation: t-0001"),
        Class::of("the run panicked: Mvcc protocol violation: t-0992")
    );
    assert_ne!(
        Class::of("the run panicked: Mvcc protocol violation: x"),
        Class::of("the run panicked: Pause { client: 3 } names client 3")
    );
    assert_eq!(Class::of("holds overlap: …"), Class::Anomaly);
}

#[test]
fn arrivals_count_lost_requests_and_number_each_clients_own() {
    let applied = |t, client| LogEvent::Applied {
        t,
        client,
        xid: 0,
        zxid: 0,
        outcome: "ok".into(),
    };
    let log = vec![
        applied(1, 0),
        applied(2, 1),
        LogEvent::Fault {
            t: 3,
            kind: FaultKind::RequestLost,
            client: Some(0),
            duration: None,
        },
        LogEvent::Fault {
            t: 3,
            kind: FaultKind::Pause,
            client: Some(0),
            duration: Some(5),
        },
        applied(4, 0),
    ];
    let a: Vec<(u64, usize, u64)> = arrivals(&log)
        .iter()
        .map(|a| (a.step, a.client, a.nth))
        .collect();
    assert_eq!(a, vec![(1, 0, 1), (2, 1, 1), (3, 0, 2), (4, 0, 3)]);
    assert_eq!(map_client(5, 4, 2), Some(3));
    assert_eq!(map_client(3, 4, 2), None);
    assert_eq!(map_client(1, 4, 2), Some(1));
}
