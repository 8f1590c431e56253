//! Every fault kind of the simulator reaches an application's `zookeeper-client` sessions
//! (`--cfg madsim` only): each kind drawn alone while worker processes (madsim nodes) keep a
//! counter with compare-and-set, and the counter comes out right.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout_sim_zk::{FaultKind, FaultRates};
use avout_zookeeper_client as zk;

static OPEN: &zk::CreateOptions<'static> =
    &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());

/// What the workers saw.
#[derive(Default)]
struct Seen {
    /// Increments acknowledged, and those whose outcome is unknown (a lost connection).
    acked: u64,
    unknown: u64,
    /// Errors and session states, by name.
    errors: Vec<String>,
    states: Vec<zk::SessionState>,
}

/// How an increment ended.
enum Ended {
    Acked,
    /// The write was in flight when its connection or session was lost: applied or not.
    Unknown {
        session_lost: bool,
    },
}

/// One increment: read, then a versioned write. An error means the read failed (nothing
/// written).
async fn increment(client: &zk::Client) -> Result<Ended, zk::Error> {
    loop {
        let (data, stat) = client.get_data("/counter").await?;
        let n: u64 = std::str::from_utf8(&data).unwrap().parse().unwrap();
        match client
            .set_data(
                "/counter",
                (n + 1).to_string().as_bytes(),
                Some(stat.version),
            )
            .await
        {
            Ok(_) => return Ok(Ended::Acked),
            Err(zk::Error::BadVersion) => continue,
            // A call refused because its session moved was on a connection the client left:
            // the real client has failed it with `ConnectionLoss` already, and so does this.
            Err(zk::Error::ConnectionLoss) => {
                return Ok(Ended::Unknown {
                    session_lost: false,
                });
            }
            Err(zk::Error::SessionExpired) => return Ok(Ended::Unknown { session_lost: true }),
            Err(e) => return Err(e),
        }
    }
}

/// A worker: `ops` increments, on a new session whenever one ends.
async fn worker(seen: Arc<Mutex<Seen>>, ops: usize) {
    let mut done = 0;
    while done < ops {
        let client = match zk::Client::connect("zk:2181").await {
            Ok(client) => client,
            Err(e) => {
                seen.lock().unwrap().errors.push(format!("connect: {e:?}"));
                continue;
            }
        };
        let mut states = client.state_watcher();
        let watching = seen.clone();
        let recorder = tokio::spawn(async move {
            loop {
                let state = states.changed().await;
                watching.lock().unwrap().states.push(state);
            }
        });
        while done < ops {
            match increment(&client).await {
                Ok(Ended::Acked) => {
                    seen.lock().unwrap().acked += 1;
                    done += 1;
                }
                Ok(Ended::Unknown { session_lost }) => {
                    seen.lock().unwrap().unknown += 1;
                    done += 1;
                    if session_lost {
                        break;
                    }
                }
                Err(e) => {
                    let lost = matches!(e, zk::Error::SessionExpired);
                    seen.lock().unwrap().errors.push(format!("{e:?}"));
                    if lost {
                        break;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        recorder.abort();
    }
}

/// Three workers of `ops` increments each under `kind` alone; what they saw, the counter's
/// final value, and how often the kind fired.
fn run(kind: FaultKind, seed: u64, ops: usize) -> (Seen, u64, u64) {
    let rt = madsim::runtime::Runtime::with_seed_and_config(seed, madsim::Config::default());
    rt.block_on(async move {
        let mut rates = FaultRates::default();
        *rates.rate_mut(kind) = 0.03;
        let server = zk::SimServer::builder()
            .sim(|sim| sim.rates(rates))
            .start(["zk:2181"]);
        let setup = zk::Client::connect("zk:2181").await.unwrap();
        setup.create("/counter", b"0", OPEN).await.unwrap();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let handle = madsim::runtime::Handle::current();
        let workers: Vec<_> = (0..3)
            .map(|i| {
                let seen = seen.clone();
                handle
                    .create_node()
                    .name(format!("worker-{i}"))
                    .build()
                    .spawn(worker(seen, ops))
            })
            .collect();
        for w in workers {
            w.await.unwrap();
        }
        // The setup session may sit on a follower that trails: `sync` first.
        let final_value = loop {
            let sync = setup.sync("/counter");
            let read = setup.get_data("/counter");
            if sync.await.is_err() {
                continue;
            }
            match read.await {
                Ok((data, _)) => break std::str::from_utf8(&data).unwrap().parse().unwrap(),
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        let fired = server.zk().fault_count(kind);
        let seen = std::mem::take(&mut *seen.lock().unwrap());
        (seen, final_value, fired)
    })
}

#[test]
fn every_fault_kind_reaches_the_applications_sessions() {
    for (i, kind) in FaultKind::ALL.into_iter().enumerate() {
        let (seen, value, fired) = run(kind, 3_800_000 + i as u64, 40);
        assert!(
            fired > 0,
            "{kind:?} never fired on the application's sessions"
        );
        assert!(
            (seen.acked..=seen.acked + seen.unknown).contains(&value),
            "{kind:?}: {} acknowledged and {} unknown increments, counter {value}",
            seen.acked,
            seen.unknown
        );
        assert!(
            seen.errors.iter().all(|e| !e.contains("SessionMoved")),
            "{kind:?}: the real client never reports SessionMoved for a call: {:?}",
            seen.errors
        );
        let disconnected = seen.states.contains(&zk::SessionState::Disconnected);
        let expired = seen.states.contains(&zk::SessionState::Expired);
        match kind {
            // What the application sees of each: a connection that broke, or a session lost.
            FaultKind::RequestLost
            | FaultKind::ReplyLost
            | FaultKind::Disconnect
            | FaultKind::Outage
            | FaultKind::Partition
            | FaultKind::LeaderElection => assert!(disconnected, "{kind:?}: {:?}", seen.states),
            FaultKind::SessionExpiry | FaultKind::Pause => {
                assert!(expired, "{kind:?}: {:?}", seen.states)
            }
            FaultKind::SessionMoved => assert!(
                seen.unknown > 0 || disconnected,
                "{kind:?}: no call in flight was refused or lost"
            ),
            FaultKind::StaleReads | FaultKind::ClientFreeze | FaultKind::SlowDisk => {}
        }
    }
}
