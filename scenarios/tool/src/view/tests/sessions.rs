//! Session matching against the truth: clients that note which simulator session they opened,
//! under every fault kind at a high rate, so sessions end, reconnect and are renewed.

use std::cell::RefCell;
use std::rc::Rc;

use avout::{Coordination, CoordinationExt, Error};
use avout_sim_zk::{FaultRates, Sim, SimConfig};
use serde_json::Value;

use crate::view::sessions::match_sessions;
use crate::view::timeline::Timeline;
use avout_check::history::EventType;
use avout_scenarios::scenario::env::Recorder;

const CLIENTS: usize = 4;

/// One run: the log, the laid-out history, and each session's true client.
fn run(seed: u64) -> (Vec<avout_sim_zk::LogEvent>, Timeline, Vec<(usize, usize)>) {
    let rates = FaultRates {
        expire: 0.03,
        pause: 0.01,
        ..FaultRates::chaos()
    };
    let sim = Sim::builder()
        .config(SimConfig {
            seed,
            // The builder's one client is closed at once, unused: a session with nothing
            // to match but a coincidence or two.
            clients: 1,
            rates,
            keep_log: true,
            ..SimConfig::default()
        })
        .build();
    let ((history, truth), summary) = sim.run(|ctx| async move {
        let rec = Recorder::new();
        let truth: Rc<RefCell<Vec<(usize, usize)>>> = Rc::default();
        let client = |i: usize| {
            let (zk, rec, truth) = (ctx.zk.clone(), rec.clone(), truth.clone());
            async move {
                let mut session = zk.connect();
                truth.borrow_mut().push((session.index(), i));
                let _ = session.ensure_path("/k").await;
                for n in 0..30u64 {
                    let p = i as u64;
                    let (f, write) = if n % 2 == 0 {
                        ("write", true)
                    } else {
                        ("read", false)
                    };
                    rec.invoke(p, f, n.into(), None);
                    let result = if write {
                        session
                            .set_data("/k", &n.to_be_bytes(), None)
                            .await
                            .map(drop)
                    } else {
                        session.get_data("/k").await.map(drop)
                    };
                    let end = match &result {
                        Ok(()) => EventType::Ok,
                        Err(e) => avout_scenarios::scenario::env::outcome_of(e),
                    };
                    rec.complete(end, p, f, Value::Null, None);
                    if matches!(result, Err(Error::SessionExpired | Error::Closed)) {
                        session = zk.connect();
                        truth.borrow_mut().push((session.index(), i));
                    }
                }
            }
        };
        futures::future::join_all((0..CLIENTS).map(client)).await;
        (rec.history(), truth.borrow().clone())
    });
    let timeline = Timeline::build(&history, Some(CLIENTS)).unwrap();
    (summary.log, timeline, truth)
}

/// No session is ever put in another client's lane; nearly all are matched.
#[test]
fn sessions_are_matched_to_the_clients_that_opened_them_or_left_unmatched() {
    let (mut sessions, mut unmatched) = (0, 0);
    for seed in 0..40 {
        let (log, timeline, truth) = run(seed);
        let matched = match_sessions(&log, &timeline.ops, CLIENTS);
        for &(session, client) in &truth {
            sessions += 1;
            match matched.get(&session) {
                Some(&lane) => assert_eq!(lane, client, "seed {seed}: session c{session}"),
                None => unmatched += 1,
            }
        }
        for s in matched.keys() {
            assert!(
                truth.iter().any(|t| t.0 == *s),
                "seed {seed}: c{s} is nobody's: {truth:?}"
            );
        }
    }
    assert!(
        sessions > 40 * CLIENTS + 40,
        "sessions were renewed: {sessions}"
    );
    assert!(
        unmatched * 10 <= sessions,
        "{unmatched} of {sessions} sessions unmatched"
    );
}
