//! `list-append`: Maelstrom's txn-list-append workload on STM refs ([`avout::stm`]).
//!
//! Five keys, each a ref holding a list of integers. A transaction is 1–4 micro-operations,
//! each a read of a key or an append of a value unique to the run, executed in one `dosync`
//! (`deref`, or `alter` pushing the value). The protocol is the workload's.
//!
//! History: `f: "txn"`, value the micro-operations (`["r", k, null]` / `["append", k, v]`);
//! an `ok` completion carries the lists read. A failed transaction carries Maelstrom's code
//! (`error`, see [`crate::scenario::codes`]): 30 when it gave up after the retry limit of conflicts
//! (the workload's `retry_limit`, else the protocol's), 13 when its commit's outcome is
//! unknown, 11 when it was refused unsent because the client's connection was down.
//!
//! The checker is the Elle-style list-append checker ([`avout_check::list_append`]) for
//! strict serializability: G0, G1a, G1b, G1c, G-single, G-nonadjacent, G2-item, lost-update,
//! internal and future-read anomalies (with their process and realtime variants).

use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::builtin::bank::open_refs_with;
use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::Protocol;
use crate::scenario::REFUSED_PAUSE;
use crate::scenario::WorkloadError;
use crate::scenario::worker::{Ended, Invoke, Worker, all_workers};

const ROOT: &str = "/list-append";
const KEYS: u64 = 5;

#[derive(Clone, Copy)]
enum Micro {
    Read(u64),
    Append(u64, u64),
}

/// One client: `me.w.ops` operations.
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let names: Vec<String> = (0..KEYS).map(|k| format!("k{k}")).collect();
    let (stm, refs) = open_refs_with(
        me.env,
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

/// The `list-append` scenario: STM transactions of reads and appends.
pub const SCENARIO: Described = Described {
    name: "list-append",
    about: "STM transactions of reads and appends; checker: Elle (G0…G2, internal)",
    defaults: (4, 25),
    checkers: |w| {
        Checks::named(
            "list-append",
            &Options {
                allow_write_skew: w.protocol == Protocol::Mvcc,
                ..Options::default()
            },
        )
    },
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
