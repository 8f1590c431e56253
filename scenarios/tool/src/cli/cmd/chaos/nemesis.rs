//! The nemesis of a real run on an ensemble of our own: every `every`, the next of five
//! faults in turn, each healed after a second.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::zk::ZkClient;
use avout_testkit::backend::ZkBackend;
use avout_testkit::server::ZkEnsemble;

/// Counts of nemesis events by kind, shared with the rounds (each reports those during it).
pub(super) type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

/// The client sessions open now, among which the nemesis picks one to expire.
pub(super) type Live = Arc<dyn Fn() -> Vec<Arc<ZkClient>> + Send + Sync>;

/// The sessions of whichever backend `current` holds now (the current round's).
pub(super) fn sessions_of(current: Arc<Mutex<ZkBackend>>) -> Live {
    Arc::new(move || current.lock().expect("not poisoned").sessions())
}

/// Kills and restarts a member, freezes one (SIGSTOP) and resumes it, cuts one off from the
/// others, cuts the clients off from one, expires a client's session of the current round
/// (`live`): in turn, one every `every`, for ever (the caller aborts it).
pub(super) async fn nemesis_loop(
    ensemble: Arc<ZkEnsemble>,
    live: Live,
    every: Duration,
    counts: Counts,
) {
    let n = ensemble.members().len();
    let count = |what: &str| {
        *counts
            .lock()
            .expect("not poisoned")
            .entry(what.to_owned())
            .or_default() += 1;
    };
    for round in 0usize.. {
        tokio::time::sleep(every).await;
        let member = (round / 5) % n;
        match round % 5 {
            0..=3 => {
                let what = [
                    "member-kill",
                    "member-sigstop",
                    "member-partition",
                    "client-partition",
                ][round % 5];
                count(what);
                let e = ensemble.clone();
                // Blocking (the test kit waits for processes): off the runtime's threads.
                // (Deprecated under madsim, where real ensembles do not run.)
                #[cfg_attr(madsim, allow(deprecated))]
                let back = tokio::task::spawn_blocking(move || {
                    let down = match what {
                        "member-kill" => {
                            e.kill(member);
                            Ok(())
                        }
                        "member-sigstop" => e.pause(member),
                        "member-partition" => e.partition(&[member]),
                        _ => e.cut_clients(member),
                    };
                    down.map_err(|err| format!("cannot inject it: {err}"))?;
                    std::thread::sleep(Duration::from_secs(1));
                    match what {
                        "member-kill" => e.restart(member),
                        "member-sigstop" => e.resume(member),
                        _ => {
                            e.heal();
                            Ok(())
                        }
                    }
                    .map_err(|err| format!("cannot heal it: {err}"))
                })
                .await
                .unwrap_or_else(|e| Err(format!("the nemesis step ended: {e}")));
                if let Err(why) = back {
                    // Said as it happens: a member left down changes what the rounds meet.
                    eprintln!("avout: nemesis: {what} of member {}: {why}", member + 1);
                    count("member-restart-failed");
                }
            }
            _ => {
                // The current round's clients.
                let live = live();
                if let Some(c) = live.get(round % live.len().max(1)) {
                    count("session-expiry");
                    if c.expire_session().await.is_err() {
                        count("session-expiry-failed");
                    }
                }
            }
        }
    }
}
