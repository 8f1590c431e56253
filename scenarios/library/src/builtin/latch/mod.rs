//! `latch`: every client takes `ops` turns at leading through a [`LeaderLatch`], and between
//! turns looks up who leads.
//!
//! A turn opens a latch on the election and waits until it leads; the leader makes up to two
//! fenced increments of a counter node (a `multi` that checks its candidate node, found with
//! [`Election::leader`]), then closes the latch (resigning). Between turns the client asks
//! [`Election::leader`] twice. The latch stands across the client's sessions: an expiry while
//! it waits or leads makes it stand again on the next session.
//!
//! History: `acquire` (invoked as the latch opens; `ok` value the term it leads in, `fail`
//! with the reason when the latch stopped standing by itself), `write` (`{"token": term,
//! "counter"}`), `release` (`ok` when the candidate node was confirmed to stand as the latch
//! closed, else `info`) and `leader` (`ok` value the leader's term or `null`; `fail` when the
//! look-up was refused, `info` when its session or connection was lost).
//!
//! The checkers: the leaderships as [`holds`](avout_check::recipes::holds) judges a lock's
//! (one leader per term, no two live leaders, no fenced increment lost) and
//! [`latch`](avout_check::recipes::latch): no latch stops standing by itself, no look-up of
//! the leader is refused.

use std::time::Duration;

use avout::lock::LockError;
use avout::recipes::election::{Election, LatchState, LeaderLatch};
use avout::{Client, Coordination, Op};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;
use avout_check::history::EventType;

use crate::builtin::mutex::{counter_node, fenced_write, read_counter, set_counter};
use crate::scenario::worker::{Caller, Ended, Ends, Invoke, Worker, all_workers};
use crate::scenario::{Checks, Described, OP_DEADLINE, WorkloadError};

const PATH: &str = "/latch";
const RESOURCE: &str = "/latch-resource";

/// A leader's fenced increments in one term.
const WRITES: usize = 2;

/// A look-up's error: refused (`fail`), or in doubt with its connection or session (`info`).
struct Lookup(LockError);

impl Ends for Lookup {
    fn end(&self) -> EventType {
        match &self.0 {
            LockError::SessionLost(_) => EventType::Info,
            LockError::Zk(e) if !e.is_rejected() => EventType::Info,
            _ => EventType::Fail,
        }
    }
}

/// Asks who leads, recorded as `leader`; false if the look-up missed its deadline.
async fn look_up(election: &Election, caller: &mut Caller<'_>) -> bool {
    let op = Invoke::new("leader", Value::Null);
    let call = || async { election.leader().await.map_err(Lookup) };
    let ended = caller
        .call(op, call, |l| {
            l.as_ref().map_or(Value::Null, |l| l.term.into())
        })
        .await;
    !matches!(ended, Ended::Stuck)
}

/// Waits until `latch` leads: `Ok(term)`, or `Err` with why it closed.
async fn leading(latch: &LeaderLatch) -> Result<i64, LockError> {
    let mut events = latch.events();
    loop {
        match events.current() {
            LatchState::Leading { term, .. } => return Ok(term),
            LatchState::Closed(why) => return Err(why),
            _ => {}
        }
        if events.next().await.is_none() {
            return Err(LockError::SessionLost(avout::Error::Closed));
        }
    }
}

/// The candidate node of `term`, if the election shows it leading.
async fn node_of(election: &Election, term: i64) -> Option<String> {
    let leader = election.leader().await.ok()??;
    (leader.term == term).then_some(leader.node)
}

/// One turn: the latch opened, led, written under, closed. False if an operation missed its
/// deadline.
async fn turn(me: &mut Worker<'_>, client: &Client, election: &Election) -> bool {
    let latch = election.latch();
    let p = me.caller.p();
    me.caller.rec.invoke(p, "acquire", Value::Null, None);
    let term = match tokio::time::timeout(OP_DEADLINE, leading(&latch)).await {
        Err(_) => {
            me.caller
                .rec
                .complete(EventType::Info, p, "acquire", Value::Null, None);
            me.caller.rec.stall(format!("process {p}'s latch"));
            return false;
        }
        Ok(Err(why)) => {
            let why = json!(why.to_string());
            me.caller
                .rec
                .complete(EventType::Fail, p, "acquire", why, None);
            return true;
        }
        Ok(Ok(term)) => term,
    };
    me.caller
        .rec
        .complete(EventType::Ok, p, "acquire", term.into(), None);
    let mut node = None;
    for _ in 0..WRITES {
        tokio::time::sleep(Duration::from_millis(me.rng.random_range(1..5))).await;
        if latch.state().term() != Some(term) {
            break;
        }
        if node.is_none() {
            node = node_of(election, term).await;
        }
        let (Some(at), Ok(n)) = (&node, read_counter(client, RESOURCE).await) else {
            break;
        };
        let ops = [Op::check(at.clone(), None), set_counter(RESOURCE, n + 1)];
        match fenced_write(&mut me.caller, term, n + 1, || client.multi(&ops)).await {
            Ended::Ok(_) => {}
            Ended::Err(_) => break,
            Ended::Stuck => return false,
        }
    }
    me.caller.rec.invoke(p, "release", term.into(), None);
    let intact = match &node {
        Some(at) => matches!(
            tokio::time::timeout(OP_DEADLINE, client.multi(&[Op::check(at.clone(), None)])).await,
            Ok(Ok(_))
        ),
        None => false,
    };
    let still = latch.state().term() == Some(term);
    latch.close().await;
    me.caller.released(term.into(), intact && still);
    true
}

/// One client: `me.w.ops` turns, each after two look-ups of the leader.
async fn client(mut me: Worker<'_>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    counter_node(&client, RESOURCE).await?;
    let election = Election::new(&client, PATH)?
        .with_id(format!("c{}", me.index))
        .planted(me.env.planted);
    for _ in 0..me.w.ops {
        for _ in 0..2 {
            if !look_up(&election, &mut me.caller).await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..3))).await;
        }
        if !turn(&mut me, &client, &election).await {
            return Ok(());
        }
    }
    Ok(())
}

/// The `latch` scenario: turns at leading through leader latches, look-ups between.
pub const SCENARIO: Described = Described {
    name: "latch",
    about: "turns at leading through leader latches (fenced writes, resign), look-ups of the \
            leader between; checker: one leader per term, latches stand until closed, look-ups \
            answer",
    defaults: (4, 5),
    checkers: |_w| {
        Checks::named("holds", &Options::default())
            .and("latch", &Options::default())
            .labelled("latch (one leader per term, stands until closed, look-ups answer)")
    },
    workload: |env, w, rec| Box::pin(async move { all_workers(env, w, rec, client).await }),
};
