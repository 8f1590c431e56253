//! `election`: clients campaign in one [`Election`], do fenced work as leader, and resign.
//!
//! A leader reads a counter node and writes it plus one in a `multi` that also checks its
//! candidate node still exists (a leader whose session ended cannot write), then resigns.
//!
//! History, in the mutex checker's format (leadership is a lock on the term):
//! `acquire` (`ok` value the term), `write` (value `{"token": term, "counter"}`), `release`
//! (`ok` for a clean resignation, `info` when leadership was lost).
//!
//! The checker: one leader per term (no two leaderships share a term), no two live leaders
//! at once (overlapping leaderships are allowed only when the earlier one has the smaller
//! term and ended by losing), and no fenced increment lost.

use std::time::Duration;

use avout::recipes::election::Election;
use avout::{Coordination, Op};
use rand::Rng;
use serde_json::{Value, json};

use super::env::{Cluster, Process, Recorder, client_rng};
use super::mutex::{check_holds, ensure_counter, read_counter};
use super::{OP_DEADLINE, Verdict, Workload};
use crate::history::{EventType, History};

const PATH: &str = "/election";
const RESOURCE: &str = "/election-resource";

async fn client<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
    index: usize,
) -> Result<(), String> {
    let mut rng = client_rng(w.seed, index);
    let mut process = Process::new(index, w.clients);
    let mut zk = cluster.connect().await.map_err(|e| e.to_string())?;
    ensure_counter(cluster, &mut zk, RESOURCE).await?;
    let mut election = Election::new(zk.clone(), PATH).map_err(|e| e.to_string())?;
    for _ in 0..w.ops {
        let p = process.id();
        rec.invoke(p, "acquire", Value::Null, None);
        let leadership = match tokio::time::timeout(OP_DEADLINE, election.campaign()).await {
            Err(_) => {
                rec.complete(EventType::Info, p, "acquire", Value::Null, None);
                rec.stall(format!("process {p}'s campaign"));
                break;
            }
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                let indeterminate =
                    matches!(&e, avout::lock::LockError::Zk(z) if z.is_indeterminate());
                let end = if indeterminate {
                    EventType::Info
                } else {
                    EventType::Fail
                };
                rec.complete(end, p, "acquire", Value::Null, None);
                if indeterminate {
                    process.retire();
                }
                if zk.session_states().current().is_terminal() {
                    zk = cluster.connect().await.map_err(|e| e.to_string())?;
                    election = Election::new(zk.clone(), PATH).map_err(|e| e.to_string())?;
                }
                continue;
            }
        };
        let term = leadership.term();
        rec.complete(EventType::Ok, p, "acquire", term.into(), None);
        let mut lost = true;
        if let Ok(n) = read_counter(&*zk, RESOURCE).await {
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..5))).await;
            let value = json!({"token": term, "counter": n + 1});
            rec.invoke(p, "write", value.clone(), None);
            let ops = [
                Op::check(leadership.node().to_owned(), None),
                Op::set_data(RESOURCE, (n + 1).to_string().into_bytes(), None),
            ];
            match tokio::time::timeout(OP_DEADLINE, zk.multi(&ops)).await {
                Ok(Ok(_)) => {
                    rec.complete(EventType::Ok, p, "write", value, None);
                    lost = false;
                }
                Ok(Err(e)) if e.is_indeterminate() => {
                    rec.complete(EventType::Info, p, "write", value, None)
                }
                Ok(Err(_)) => rec.complete(EventType::Fail, p, "write", value, None),
                Err(_) => {
                    rec.complete(EventType::Info, p, "write", value, None);
                    rec.stall(format!("process {p}'s fenced write"));
                    break;
                }
            }
        }
        rec.invoke(p, "release", term.into(), None);
        let resigned = !lost
            && matches!(
                tokio::time::timeout(OP_DEADLINE, leadership.resign()).await,
                Ok(Ok(()))
            );
        if resigned {
            rec.complete(EventType::Ok, p, "release", term.into(), None);
        } else {
            rec.complete(EventType::Info, p, "release", term.into(), None);
            process.retire();
        }
        if zk.session_states().current().is_terminal() {
            zk = cluster.connect().await.map_err(|e| e.to_string())?;
            election = Election::new(zk.clone(), PATH).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The workload: `w.clients` candidates, `w.ops` terms each.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), String> {
    super::env::all_clients(w.clients, |i| client(cluster, w, rec, i)).await?;
    Ok(())
}

/// Judges an election history: one leader per term, no two live leaders.
///
/// ```
/// use avout_scenarios::history::{Event, History, F};
/// let f = |s: &str| F::Other(s.into());
/// // Two leaderships with the same term.
/// let h: History = [
///     Event::invoke(0, f("acquire"), serde_json::Value::Null),
///     Event::ok(0, f("acquire"), 7.into()),
///     Event::invoke(0, f("release"), 7.into()),
///     Event::ok(0, f("release"), 7.into()),
///     Event::invoke(1, f("acquire"), serde_json::Value::Null),
///     Event::ok(1, f("acquire"), 7.into()),
/// ]
/// .into_iter()
/// .collect();
/// let v = avout_scenarios::scenario::election::check(&h);
/// assert!(v.anomalies[0].contains("token 7"), "{v}");
/// ```
pub fn check(history: &History) -> Verdict {
    check_holds(history, "election (one leader per term)")
}
