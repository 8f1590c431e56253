//! `list-append`: Maelstrom's txn-list-append workload on STM refs ([`avout::stm`]).
//!
//! Five keys, each a ref holding a list of integers. A transaction is 1–4 micro-operations,
//! each a read of a key or an append of a value unique to the run, executed in one `dosync`
//! (`deref`, or `alter` pushing the value). The protocol is the workload's.
//!
//! History: `f: "txn"`, value the micro-operations (`["r", k, null]` / `["append", k, v]`);
//! an `ok` completion carries the lists read. A failed transaction carries Maelstrom's code
//! (`error`, see [`super::codes`]): 30 when it gave up after the retry limit of conflicts
//! (the workload's `retry_limit`, else the protocol's), 13 when its commit's outcome is
//! unknown, 11 when it was refused unsent because the client's connection was down.
//!
//! The checker is the Elle-style list-append checker ([`avout_check::list_append`]) for
//! strict serializability: G0, G1a, G1b, G1c, G-single, G-nonadjacent, G2-item, lost-update,
//! internal and future-read anomalies (with their process and realtime variants).

use rand::Rng;
use serde_json::{Value, json};

use super::REFUSED_PAUSE;
use super::bank::open_refs_with;
use super::env::Cluster;
use super::error::WorkloadError;
use super::worker::{Ended, Invoke, Worker};
use super::{Protocol, Verdict};
use avout_check::history::History;
use avout_check::list_append::ListAppendChecker;

const ROOT: &str = "/list-append";
const KEYS: u64 = 5;

#[derive(Clone, Copy)]
enum Micro {
    Read(u64),
    Append(u64, u64),
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client<K: Cluster>(mut me: Worker<'_, K>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let names: Vec<String> = (0..KEYS).map(|k| format!("k{k}")).collect();
    let (stm, refs) = open_refs_with(
        me.cluster,
        &client,
        me.w,
        ROOT,
        &names,
        Vec::<u64>::new(),
        avout::atom::Json,
    )
    .await?;
    let mut next = 1u64;
    for _ in 0..me.w.ops {
        let len = me.rng.random_range(1..=4);
        let micros: Vec<Micro> = (0..len)
            .map(|_| {
                let k = me.rng.random_range(0..KEYS);
                if me.rng.random_bool(0.5) {
                    Micro::Read(k)
                } else {
                    // Unique in the run: the client's index and its own counter.
                    let v = (me.index as u64) * 1_000_000 + next;
                    next += 1;
                    Micro::Append(k, v)
                }
            })
            .collect();
        let input: Value = micros
            .iter()
            .map(|m| match *m {
                Micro::Read(k) => json!(["r", k, null]),
                Micro::Append(k, v) => json!(["append", k, v]),
            })
            .collect();
        let (stm, refs) = (&stm, &refs);
        let micros = &micros;
        let body = || {
            stm.dosync(async |tx| {
                let mut done = Vec::with_capacity(micros.len());
                for m in micros {
                    match *m {
                        Micro::Read(k) => {
                            let list = tx.deref(&refs[k as usize]).await?;
                            done.push(json!(["r", k, list]));
                        }
                        Micro::Append(k, v) => {
                            tx.alter(&refs[k as usize], |l| {
                                let mut l = l.clone();
                                l.push(v);
                                l
                            })
                            .await?;
                            done.push(json!(["append", k, v]));
                        }
                    }
                }
                Ok(Value::Array(done))
            })
        };
        let stall = format!("process {}'s transaction", me.caller.p());
        let op = Invoke::new("txn", input).stall(stall);
        if me.caller.unavailable(&client, &op) {
            tokio::time::sleep(REFUSED_PAUSE).await;
            continue;
        }
        if let Ended::Stuck = me.caller.call(op, body, Value::clone).await {
            break;
        }
    }
    me.caller.rec.retries(stm.stats().retries);
    Ok(())
}

/// Judges a list-append history with the Elle-style checker: strict serializability for
/// [`Protocol::Optimistic`]; for [`Protocol::Mvcc`], whose reads are Clojure's (snapshot
/// isolation: only `ensure` prevents write skew), strong snapshot isolation: G2-item cycles
/// (two or more rw edges, two of them adjacent) are allowed and everything else is not — G0,
/// G1a–c, G-single, G-nonadjacent (rw edges none adjacent, which snapshot isolation forbids,
/// per Cerone and Gotsman), lost-update (first committer wins), internal, future-read.
///
/// ```
/// use avout_check::history::{Event, History, F};
/// use avout_scenarios::scenario::Protocol;
/// use serde_json::json;
/// let txn = || F::Other("txn".into());
/// // A read of an element nobody appended.
/// let h: History = [
///     Event::invoke(0, txn(), json!([["r", 0, null]])),
///     Event::ok(0, txn(), json!([["r", 0, [9]]])),
/// ]
/// .into_iter()
/// .collect();
/// assert!(!avout_scenarios::scenario::list_append::check(&h, Protocol::Mvcc).valid);
/// ```
pub fn check(history: &History, protocol: Protocol) -> Verdict {
    let name = match protocol {
        Protocol::Optimistic => "list-append (Elle, strict serializability)",
        Protocol::Mvcc => {
            "list-append (Elle, strict serializability but G2-item: snapshot isolation)"
        }
    };
    match checker(protocol).check(history) {
        Ok(v) => Verdict::new(name, v.anomalies.iter().map(ToString::to_string).collect()),
        Err(e) => Verdict::new(
            name,
            vec![format!("the checker could not judge the history: {e}")],
        ),
    }
}

/// The list-append checker as this scenario configures it for `protocol`: write skew allowed
/// under [`Protocol::Mvcc`] (see [`check`]).
pub fn checker(protocol: Protocol) -> ListAppendChecker {
    match protocol {
        Protocol::Optimistic => ListAppendChecker::new(),
        Protocol::Mvcc => ListAppendChecker::new().allow_write_skew(),
    }
}

/// The `list-append` scenario: STM transactions of reads and appends.
#[derive(Clone, Copy, Debug, Default)]
pub struct ListAppendScenario;

impl super::Scenario for ListAppendScenario {
    fn name(&self) -> &'static str {
        "list-append"
    }

    fn about(&self) -> &'static str {
        "STM transactions of reads and appends; checker: Elle (G0…G2, internal)"
    }

    fn defaults(&self) -> (usize, usize) {
        (4, 25)
    }

    fn workload<'a>(
        &'a self,
        cluster: super::AnyCluster<'a>,
        w: &'a super::Workload,
        rec: &'a super::env::Recorder,
    ) -> futures::future::LocalBoxFuture<'a, Result<(), WorkloadError>> {
        Box::pin(async move { super::worker::all_workers(&cluster, w, rec, client).await })
    }

    fn check(&self, w: &super::Workload, history: &History) -> super::Verdict {
        check(history, w.protocol)
    }
}
