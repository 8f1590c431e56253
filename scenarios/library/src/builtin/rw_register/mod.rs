//! `rw-register`: Maelstrom's txn-rw-register workload on STM refs ([`avout::stm`]), judged
//! as Elle judges register transactions ([`avout_check::rw_register`]).
//!
//! Three keys, each a ref holding a register (`null` until first written). A transaction is
//! 1–4 micro-operations in one `dosync`, each on a random key:
//!
//! - `deref`, recorded `["r", k, v]`;
//! - `ref_set` to a value unique to the run, recorded `["w", k, v]` (a blind write: nothing
//!   orders it after the version it replaced, but its readers);
//! - `alter` to a value unique to the run, recorded as the value its function was given then
//!   the value written, `["r", k, old]`, `["w", k, v]`: the read that orders the write after
//!   the version it replaced (writes follow reads), which is what lets the checker infer
//!   version orders at all.
//!
//! Failures carry Maelstrom's codes as in [`list-append`](crate::builtin::list_append). The protocol is the workload's (`--protocol
//! mvcc|optimistic`); under Mvcc, whose reads only `ensure` protects, write skew (G2-item) is
//! allowed, as for `list-append`: snapshot isolation. Everything else Elle finds in register
//! transactions is an anomaly under either protocol: G0, G1a, G1b, G1c, G-single,
//! G-nonadjacent, lost updates, internal, future and garbage reads, cyclic versions, with
//! their process and real-time variants (strict serializability).

use avout::atom::Codec;
use avout::stm::{Abort, Ref, Tx};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::builtin::txns::{self, Micro, Refs};
use crate::scenario::worker::{Worker, all_workers};
use crate::scenario::{Checks, Described, Protocol, WorkloadError};

/// A micro-operation on register `k`.
#[derive(Clone, Copy)]
enum Register {
    /// `deref`.
    Read(u64),
    /// `ref_set` to the value.
    Set(u64, u64),
    /// `alter` to the value.
    Alter(u64, u64),
}

impl Micro for Register {
    type Value = Option<u64>;

    fn draw(rng: &mut rand_chacha::ChaCha8Rng, keys: u64, unique: &mut dyn FnMut() -> u64) -> Self {
        let k = rng.random_range(0..keys);
        match rng.random_range(0..3) {
            0 => Register::Read(k),
            1 => Register::Set(k, unique()),
            _ => Register::Alter(k, unique()),
        }
    }

    fn invoked(&self, out: &mut Vec<Value>) {
        match *self {
            Register::Read(k) => out.push(json!(["r", k, null])),
            Register::Set(k, v) => out.push(json!(["w", k, v])),
            Register::Alter(k, v) => {
                out.push(json!(["r", k, null]));
                out.push(json!(["w", k, v]));
            }
        }
    }

    async fn run<C: Codec>(
        &self,
        tx: &mut Tx<'_>,
        r: &Ref<Option<u64>, C>,
        out: &mut Vec<Value>,
    ) -> Result<(), Abort> {
        match *self {
            Register::Read(k) => {
                let v = tx.deref(r).await?;
                out.push(json!(["r", k, v]));
            }
            Register::Set(k, v) => {
                tx.ref_set(r, Some(v)).await?;
                out.push(json!(["w", k, v]));
            }
            Register::Alter(k, v) => {
                let mut old = None;
                tx.alter(r, |was| {
                    old = *was;
                    Some(v)
                })
                .await?;
                out.push(json!(["r", k, old]));
                out.push(json!(["w", k, v]));
            }
        }
        Ok(())
    }

    fn key(&self) -> u64 {
        match *self {
            Register::Read(k) | Register::Set(k, _) | Register::Alter(k, _) => k,
        }
    }
}

/// One client: `me.w.ops` transactions.
pub(crate) async fn client(me: Worker<'_>) -> Result<(), WorkloadError> {
    let refs = Refs {
        root: "/rw-register",
        keys: 3,
        initial: None,
        codec: avout::atom::Json,
    };
    txns::client::<Register, _>(me, refs).await
}

/// The `rw-register` scenario: STM transactions of register reads and writes.
pub const SCENARIO: Described = Described {
    name: "rw-register",
    about: "STM transactions of deref, ref_set and alter; checker: Elle's rw-register (G0…G2, internal)",
    defaults: (4, 25),
    checkers: |w| {
        Checks::named(
            "rw-register",
            &Options {
                allow_write_skew: w.protocol == Protocol::Mvcc,
                ..Options::default()
            },
        )
    },
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
