//! `lock-table`: the medical-records example of Azos's lock tables ([`avout::locktable`]).
//!
//! Clients are clerks entering and reviewing one resident's MDS record, and now and then
//! closing the month. Entering is a lock transaction `assert(not(exists(Month-End))),
//! assert(not(exists(MDS-Review))), assert(set_var(MDS-Entry))`; reviewing the same with
//! the roles swapped; a month-end `assert(not(exists(MDS-Entry))), assert(not(exists
//! (MDS-Review))), assert(set_var(Month-End))`. Nobody else may hold an entry of the same kind
//! either (`set_var` without duplicates). So at most one clerk is *inside* (holding an entry
//! of any kind) at a time. Inside, the clerk reads a counter node and writes it plus one
//! (without a version check, but in a `multi` that checks its own entry still exists: a clerk
//! whose session ended cannot write), then leaves with `delete_var`.
//!
//! History, in the mutex checker's format: `acquire` (`ok` value the grant's token: the zxid
//! of the `multi` that made the entry, [`avout::locktable::Committed::zxid`]), `write` (value
//! `{"token", "counter"}`), `release` (`ok` when `delete_var` succeeded, `info` when the entry
//! was lost with the session).
//!
//! The checker: no two clerks inside at once (overlapping holds are allowed only when the
//! earlier, in ZooKeeper's order, ended by losing its session: its entries vanished with it,
//! as designed), and no increment lost between two clean holds. The token must be ZooKeeper's
//! order, not the order in which the clerks heard of their grants: a clerk can hear of its
//! grant after its session, and its entry, ended, and after another clerk entered (seed
//! 9970005842, kept as `lock-table-grant-heard-after-expiry`).

use std::cell::Cell;
use std::time::Duration;

use avout::Op;
use avout::locktable::{
    Committed, LockTable, LockTableError, Transaction, assert, delete_var, encode_name, exists,
    not, set_var,
};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::builtin::mutex::{counter_node, read_counter, set_counter};
use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::OP_DEADLINE;
use crate::scenario::WorkloadError;
use crate::scenario::worker::{Ended, Ends, Invoke, Worker, all_workers};
use avout_check::history::EventType;

const NAMESPACE: &str = "/locking/Clinical";
const RESOURCE: &str = "/locking-record";
const RESIDENT: &str = "CGROVE-35";
const KINDS: [&str; 3] = ["MDS-Entry", "MDS-Review", "Month-End"];

fn enter(kind: usize, me: &str) -> Transaction {
    let mut statements: Vec<_> = (0..KINDS.len())
        .filter(|&k| k != kind)
        .map(|k| assert(not(exists(KINDS[k], RESIDENT))))
        .collect();
    statements.push(assert(set_var(KINDS[kind], RESIDENT, me)));
    Transaction::new(format!("{} by {me}", KINDS[kind]), statements)
}

fn leave(kind: usize, me: &str) -> Transaction {
    Transaction::new(
        format!("{me} leaves {}", KINDS[kind]),
        vec![assert(delete_var(KINDS[kind], RESIDENT))],
    )
}

impl Ends for LockTableError {
    fn end(&self) -> EventType {
        match self {
            LockTableError::Indeterminate(_) => EventType::Info,
            LockTableError::Zk(z) if z.is_indeterminate() => EventType::Info,
            _ => EventType::Fail,
        }
    }
}

/// One clerk: `me.w.ops` holds, each named by its token (see the module docs).
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    counter_node(&client, RESOURCE).await?;
    let me_name = format!("clerk-{}", me.index);
    let table = LockTable::new(&client, NAMESPACE)?;
    let mut done = 0;
    let mut tries = 0;
    while done < me.w.ops && tries < me.w.ops * 50 {
        tries += 1;
        let kind = if me.rng.random_bool(0.1) {
            2
        } else {
            me.rng.random_range(0..2)
        };
        let p = me.caller.p();
        let entering = enter(kind, &me_name);
        let op =
            Invoke::new("acquire", Value::Null).stall(format!("process {p}'s {}", KINDS[kind]));
        let token = Cell::new(0);
        let grant = |c: &Committed| {
            // Entering always writes (its own entry), so its multi has a zxid.
            token.set(c.zxid.expect("an entering transaction writes"));
            token.get().into()
        };
        match me.caller.call(op, || table.execute(&entering), grant).await {
            Ended::Stuck => break,
            Ended::Err(_) => {
                // Someone else is inside, or the session ended: come back later.
                tokio::time::sleep(Duration::from_millis(me.rng.random_range(1..10))).await;
                continue;
            }
            Ended::Ok(_) => {}
        }
        done += 1;
        let token = token.get();
        if let Ok(n) = read_counter(&client, RESOURCE).await {
            tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..5))).await;
            let value = json!({"token": token, "counter": n + 1});
            me.caller.rec.invoke(p, "write", value.clone(), None);
            // Fenced by the clerk's own entry, on one session: a clerk whose session ended
            // (its entry vanished with it) cannot write, nor can it on its next session.
            let write = async {
                let zk = client.current_session().await?;
                let entry = format!(
                    "{NAMESPACE}/vars/{}/{}/{:016x}",
                    encode_name(KINDS[kind]),
                    encode_name(RESIDENT),
                    zk.session().id.0 as u64
                );
                let ops = [Op::check(entry, None), set_counter(RESOURCE, n + 1)];
                zk.multi(&ops).await
            };
            match write.await {
                Ok(_) => me
                    .caller
                    .rec
                    .complete(EventType::Ok, p, "write", value, None),
                Err(e) => me.caller.rec.complete(e.end(), p, "write", value, None),
            }
        }
        me.caller.rec.invoke(p, "release", token.into(), None);
        let left = tokio::time::timeout(OP_DEADLINE, table.execute(&leave(kind, &me_name))).await;
        me.caller.released(token.into(), matches!(left, Ok(Ok(_))));
    }
    Ok(())
}

/// The `lock-table` scenario: medical records: entry, review, month-end.
pub const SCENARIO: Described = Described {
    name: "lock-table",
    about: "medical records: entry, review, month-end; checker: one clerk inside at a time",
    defaults: (4, 10),
    checkers: |_w| {
        Checks::named("holds", &Options::default())
            .labelled("lock-table (one clerk inside at a time)")
    },
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
