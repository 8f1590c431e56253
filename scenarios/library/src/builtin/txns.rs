//! What the transactional scenarios of micro-operations share (`list-append`,
//! `rw-register`): each client opens a few refs and runs `ops` transactions, each a few
//! micro-operations drawn at random and run in one `dosync`, recorded as `f: "txn"` with the
//! micro-operations as invoked (reads `null`) and, on `ok`, as done (reads with their values).
//! A failed transaction carries Maelstrom's code, as [`crate::builtin::list_append`] says.

use avout::atom::Codec;
use avout::stm::{Abort, Ref, Tx};
use serde_json::Value;

use crate::builtin::bank::open_refs_with;
use crate::scenario::REFUSED_PAUSE;
use crate::scenario::WorkloadError;
use crate::scenario::worker::{Ended, Invoke, Worker};

/// The refs a client works on: at `root`, named `k0`, `k1`, …, each starting at `initial`.
pub(crate) struct Refs<T, C> {
    pub(crate) root: &'static str,
    pub(crate) keys: u64,
    pub(crate) initial: T,
    pub(crate) codec: C,
}

/// A micro-operation kind of a workload: how it is drawn, invoked and done.
pub(crate) trait Micro: Sized {
    /// The refs' values.
    type Value: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static;
    /// Draws one micro-operation on one of `keys` refs; `unique` gives a value no other
    /// micro-operation of the run writes.
    fn draw(rng: &mut rand_chacha::ChaCha8Rng, keys: u64, unique: &mut dyn FnMut() -> u64) -> Self;
    /// As invoked, reads blank: one micro-operation or more of the history.
    fn invoked(&self, out: &mut Vec<Value>);
    /// Does it in `tx` on `r`, its ref, adding what it did to `out`.
    async fn run<C: Codec>(
        &self,
        tx: &mut Tx<'_>,
        r: &Ref<Self::Value, C>,
        out: &mut Vec<Value>,
    ) -> Result<(), Abort>;
    /// The key it is on.
    fn key(&self) -> u64;
}

/// One client: `me.w.ops` transactions of 1–4 micro-operations `M` on `refs`.
pub(crate) async fn client<M: Micro, C: Codec>(
    mut me: Worker<'_>,
    refs: Refs<M::Value, C>,
) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let names: Vec<String> = (0..refs.keys).map(|k| format!("k{k}")).collect();
    let (stm, refs_) = open_refs_with(
        me.env,
        &client,
        me.w,
        refs.root,
        &names,
        refs.initial,
        refs.codec,
    )
    .await?;
    let mut next = 1u64;
    // Unique in the run: the client's index and its own counter.
    let base = (me.index as u64) * 1_000_000;
    for _ in 0..me.w.ops {
        let len = rand::Rng::random_range(&mut me.rng, 1..=4);
        let mut unique = || {
            next += 1;
            base + next - 1
        };
        let micros: Vec<M> = (0..len)
            .map(|_| M::draw(&mut me.rng, refs.keys, &mut unique))
            .collect();
        let mut input = Vec::new();
        for m in &micros {
            m.invoked(&mut input);
        }
        let (stm, refs_, micros) = (&stm, &refs_, &micros);
        let body = || {
            stm.dosync(async |tx| {
                let mut done = Vec::with_capacity(micros.len());
                for m in micros {
                    m.run(tx, &refs_[m.key() as usize], &mut done).await?;
                }
                Ok(Value::Array(done))
            })
        };
        let stall = format!("process {}'s transaction", me.caller.p());
        let op = Invoke::new("txn", Value::Array(input)).stall(stall);
        if me.caller.unavailable(&client, &op) {
            tokio::time::sleep(REFUSED_PAUSE).await;
            continue;
        }
        if let Ended::Stuck = me.caller.call(op, body, Value::clone).await {
            break;
        }
    }
    me.caller.rec.stm(stm.stats());
    Ok(())
}
