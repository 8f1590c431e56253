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
use serde_json::Value;

use avout_check::Options;

use crate::builtin::mutex::{counter_node, fenced_write, read_counter, set_counter};
use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::OP_DEADLINE;
use crate::scenario::WorkloadError;
use crate::scenario::worker::{Ended, Invoke, Worker, all_workers};

const PATH: &str = "/election";
const RESOURCE: &str = "/election-resource";

/// One client: `me.w.ops` operations.
pub(crate) async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    counter_node(&client, RESOURCE).await?;
    let election = Election::new(&client, PATH)?.planted(me.env.planted);
    for _ in 0..me.w.ops {
        let p = me.caller.p();
        let campaign = Invoke::new("acquire", Value::Null).stall(format!("process {p}'s campaign"));
        let leadership = match me
            .caller
            .call(campaign, || election.campaign(), |l| l.term().into())
            .await
        {
            Ended::Stuck => break,
            Ended::Ok(l) => l,
            // Lost with its session or not, the next campaign runs on the client's session.
            Ended::Err(_) => continue,
        };
        let term = leadership.term();
        let mut lost = true;
        if let Ok(n) = read_counter(&client, RESOURCE).await {
            tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..5))).await;
            let ops = [
                Op::check(leadership.node().to_owned(), None),
                set_counter(RESOURCE, n + 1),
            ];
            // Fenced by the leadership's node; sent on the client's current session, which
            // is the leadership's while the node stands.
            match fenced_write(&mut me.caller, term, n + 1, || client.multi(&ops)).await {
                Ended::Stuck => break,
                Ended::Ok(_) => lost = false,
                Ended::Err(_) => {}
            }
        }
        me.caller.rec.invoke(p, "release", term.into(), None);
        let resigned = !lost
            && matches!(
                tokio::time::timeout(OP_DEADLINE, leadership.resign()).await,
                Ok(Ok(()))
            );
        me.caller.released(term.into(), resigned);
    }
    Ok(())
}

/// The `election` scenario: campaign, fenced work, resign.
pub const SCENARIO: Described = Described {
    name: "election",
    about: "campaign, fenced work, resign; checker: one leader per term, no two live leaders",
    defaults: (4, 10),
    checkers: |_w| {
        Checks::named("holds", &Options::default()).labelled("election (one leader per term)")
    },
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
