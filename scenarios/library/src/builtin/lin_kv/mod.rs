//! `lin-kv`: Maelstrom's linearizable key-value workload on [`avout::atom::linkv::LinKv`].
//!
//! Each client issues random `read`, `write` and `cas` operations on three keys with values
//! 0–4 (a cas from a random value to a random value, without `create_if_not_exists`, as
//! Maelstrom's lin-kv workload does). A read of a missing key is an `ok` read of `null` (the
//! register's initial value); a refused cas (codes 20 and 22) is a `fail`; an error that
//! [`KvError::is_definite`] says may have taken effect is `info`. Every failed completion
//! carries Maelstrom's error code (`error`, see [`crate::scenario::codes`]): 20/22 for a refused cas,
//! 13 for an indefinite failure, 0 for an operation that outran the deadline, and 11 for an
//! operation refused without being sent because the client's connection was down. Each
//! client ends with a `delete` of key `"0"`, which lin-kv does not offer: refused with 10
//! (not-supported); the checker leaves operations refused with 10 out of the model.
//!
//! The checker is the linearizability checker ([`avout_check::linear`]) for a cas-register, per
//! key (the `key` field).

use avout::atom::linkv::{KvError, LinKv};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::REFUSED_PAUSE;
use crate::scenario::WorkloadError;
use crate::scenario::env::retry_open;
use crate::scenario::worker::{Ended, Invoke, Worker, all_workers};
use avout_check::history::ErrorCode;

const BASE: &str = "/lin-kv";
const KEYS: u64 = 3;
const VALUES: u64 = 5;

/// One client: `me.w.ops` operations.
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let kv = retry_open(200, || LinKv::open(&client, BASE)).await?;
    for _ in 0..me.w.ops {
        let rng = &mut me.rng;
        let key = rng.random_range(0..KEYS).to_string();
        let k = Some(Value::from(key.clone()));
        let (f, input) = match rng.random_range(0..3) {
            0 => ("read", Value::Null),
            1 => ("write", json!(rng.random_range(0..VALUES))),
            _ => (
                "cas",
                json!([rng.random_range(0..VALUES), rng.random_range(0..VALUES)]),
            ),
        };
        let kv = &kv;
        let call = || async {
            match f {
                "read" => match kv.read(&key).await {
                    Err(KvError::KeyDoesNotExist { .. }) => Ok(Value::Null),
                    other => other,
                },
                "write" => kv.write(&key, input.clone()).await.map(|()| input.clone()),
                _ => kv
                    .cas(&key, &input[0], input[1].clone(), false)
                    .await
                    .map(|()| input.clone()),
            }
        };
        let op = Invoke::new(f, input.clone())
            .key(k)
            .stall(format!("process {}'s {f} of key {key}", me.caller.p()));
        if me.caller.unavailable(&client, &op) {
            tokio::time::sleep(REFUSED_PAUSE).await;
            continue;
        }
        if let Ended::Stuck = me.caller.call(op, call, Value::clone).await {
            return Ok(());
        }
    }
    // Last, a `delete`, which lin-kv (Maelstrom's and this one) does not offer: refused
    // unsent with 10, not-supported.
    let op = Invoke::new("delete", Value::Null).key(Some(Value::from("0")));
    me.caller.refuse(&op, ErrorCode::NOT_SUPPORTED);
    Ok(())
}

/// The `lin-kv` scenario: Maelstrom lin-kv read/write/cas on 3 keys.
pub const SCENARIO: Described = Described {
    name: "lin-kv",
    about: "Maelstrom lin-kv read/write/cas on 3 keys; checker: linearizability per key",
    defaults: (4, 50),
    checkers: |_w| Checks::named("cas-register", &Options::default()),
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
