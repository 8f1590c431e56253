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

use avout::atom::Codec;
use avout::stm::{Abort, Ref, Tx};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::builtin::txns::{self, Micro, Refs};
use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::Protocol;
use crate::scenario::WorkloadError;
use crate::scenario::worker::{Worker, all_workers};

#[derive(Clone, Copy)]
enum Append {
    Read(u64),
    Append(u64, u64),
}

impl Micro for Append {
    type Value = Vec<u64>;

    fn draw(rng: &mut rand_chacha::ChaCha8Rng, keys: u64, unique: &mut dyn FnMut() -> u64) -> Self {
        let k = rng.random_range(0..keys);
        if rng.random_bool(0.5) {
            Append::Read(k)
        } else {
            Append::Append(k, unique())
        }
    }

    fn invoked(&self, out: &mut Vec<Value>) {
        out.push(match *self {
            Append::Read(k) => json!(["r", k, null]),
            Append::Append(k, v) => json!(["append", k, v]),
        });
    }

    async fn run<C: Codec>(
        &self,
        tx: &mut Tx<'_>,
        r: &Ref<Vec<u64>, C>,
        out: &mut Vec<Value>,
    ) -> Result<(), Abort> {
        match *self {
            Append::Read(k) => {
                let list = tx.deref(r).await?;
                out.push(json!(["r", k, list]));
            }
            Append::Append(k, v) => {
                tx.alter(r, |l| {
                    let mut l = l.clone();
                    l.push(v);
                    l
                })
                .await?;
                out.push(json!(["append", k, v]));
            }
        }
        Ok(())
    }

    fn key(&self) -> u64 {
        match *self {
            Append::Read(k) | Append::Append(k, _) => k,
        }
    }
}

/// One client: `me.w.ops` transactions.
pub(crate) async fn client(me: Worker<'_>) -> Result<(), WorkloadError> {
    let refs = Refs {
        root: "/list-append",
        keys: 5,
        initial: Vec::new(),
        codec: avout::atom::Json,
    };
    txns::client::<Append, _>(me, refs).await
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
