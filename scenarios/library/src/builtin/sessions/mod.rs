//! `sessions`: every client runs a long mixed workload on one managed [`Client`] across
//! several expiries of its own session, with handles built once.
//!
//! Each client opens one [`Client`] and, on it, an atom, an STM with five accounts, a
//! [`Mutex`] and an [`Election`] — once: none is rebuilt when a session ends. Its operations,
//! drawn from its own seeded stream, are
//!
//! - `add` (the atom's `swap(n + 1)`) and `read` (its `deref`), as in `counter`;
//! - `transfer` (an STM transaction moving 1–5 between two accounts under validators that
//!   forbid a negative balance) and `balances` (every account read in one transaction), as in
//!   `bank`;
//! - a hold of the mutex: `acquire` (`ok` with the fencing token), a fenced increment of a
//!   counter node (`write`, a `multi` that checks the lock node) and `release` (`ok` only when
//!   the lock node was confirmed to stand), as in `mutex`;
//! - `expire`: at two to four points of its run (never in its last [`AFTER_LAST`] operations)
//!   the client expires its *own* current session through [`Cluster::expire`] and waits until
//!   its client has opened the next one (`ok` with the generations). Half of the expiries whose
//!   operation is a hold happen inside it, after the acquire: the hold's write must then be
//!   fenced off and its release is `info`.
//!
//! Beside its operations each client stands in one election through a [`LeaderLatch`], which
//! re-enters on each new session. Its leadership is recorded under a second process set (from
//! [`LEADER_BASE`]): `acquire` invoked when the latch stands as a candidate, `ok` with the term
//! when it leads; then up to [`LEADER_WRITES`] fenced increments of another counter node
//! (`write`, a `multi` that checks the leader's candidate node); `release` `info` when the
//! latch reports the term lost, and at the end `release` `ok` if the candidate node was
//! confirmed to stand before the latch closed. After every client is done, a fresh client
//! reads the atom and the balances (processes from [`FINAL_BASE`]).
//!
//! With `--faults`, every drawn fault hits whichever session sends the request, the
//! replacement sessions included.
//!
//! The checker (avout-check's `sessions`, [`avout_check::recipes::sessions`]) splits the history into its parts and judges each with the
//! checker of its scenario: the atom's as `counter` (no acknowledged increment lost or applied
//! twice; every read, the final one included, between the increments surely and possibly
//! done), the bank's as `bank` (every read sums to 100, no negative balance), the mutex's as
//! `mutex` (no overlapping holds unless fenced, tokens growing, writes accepted in token
//! order, no increment lost), the leader's as `election` (one leader per term, no two live
//! leaders); and, liveness, every client made progress after each of its expiries: an `ok`
//! operation of its own invoked after the `expire` completed.

/// The `sessions` scenario: atom, transfers, fenced lock, leader latch across own expiries.
pub const SCENARIO: Described = Described {
    name: "sessions",
    about: "atom, transfers, fenced lock, leader latch across own expiries; checker: \
        each part's, and progress after every expiry",
    defaults: (4, 40),
    checkers: |w| {
        crate::scenario::Checks::named(
            "sessions",
            &avout_check::Options {
                clients: w.clients,
                ..crate::builtin::bank::checker_options()
            },
        )
    },
    workload: |cluster, w, rec| Box::pin(async move { workload(&cluster, w, rec).await }),
};

#[cfg(test)]
mod tests;

use std::ops::RangeInclusive;
use std::time::Duration;

use avout::atom::Atom;
use avout::lock::Mutex;
use avout::recipes::election::{Election, LatchState, LeaderLatch};
use avout::stm::Stm;
use avout::{Client, Coordination, Op};
use rand::Rng;
use rand::seq::index::sample;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::builtin::bank::{balances, draw_transfer, open_accounts, transfer_of};
use crate::builtin::counter::read_until_answered;
use avout_sim_zk::rng::ClientStream;

use crate::builtin::mutex::{
    counter_node, fenced_increment, fenced_write, read_counter, set_counter,
};
use crate::scenario::Described;
use crate::scenario::WorkloadError;
use crate::scenario::env::{Cluster, Process, Recorder, open_client};
use crate::scenario::worker::all_workers;
use crate::scenario::worker::{Caller, Ended, Invoke, Worker};
use crate::scenario::{OP_DEADLINE, Workload};
use avout_check::history::EventType;
use avout_check::recipes::sessions::{FINAL_BASE, LEADER_BASE};

const COUNTER: &str = "/sessions/counter";
const BANK: &str = "/sessions/bank";
const LOCK: &str = "/sessions/lock";
const LOCKED: &str = "/sessions/lock-resource";
const ELECTION: &str = "/sessions/leader";
const LED: &str = "/sessions/leader-resource";
const ACCOUNTS: usize = 5;

/// How many times each client expires its own session (fewer in a run too short for them).
const EXPIRIES: RangeInclusive<usize> = 2..=4;

/// Operations each client has at least after its last expiry, to show it goes on.
pub const AFTER_LAST: usize = 5;

/// Fenced writes a leader makes in each of its terms.
pub const LEADER_WRITES: usize = 3;

/// What a client builds once on its client.
struct Handles {
    atom: Atom<u64>,
    stm: Stm,
    accounts: Vec<crate::builtin::bank::Account>,
    mutex: Mutex,
    election: Election,
}

impl Handles {
    async fn open<K: Cluster>(
        cluster: &K,
        client: &Client,
        w: &Workload,
    ) -> Result<Self, WorkloadError> {
        let atom = crate::builtin::counter::open(cluster, client, COUNTER).await?;
        let (stm, accounts) = open_accounts(cluster, client, w, BANK).await?;
        counter_node(client, LOCKED).await?;
        counter_node(client, LED).await?;
        let mutex = Mutex::new(client, LOCK)?.planted(cluster.planted());
        let election = Election::new(client, ELECTION)?;
        Ok(Handles {
            atom,
            stm,
            accounts,
            mutex,
            election,
        })
    }
}

/// The workload: every client (its operations and its leadership), then the final reads.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    all_workers(cluster, w, rec, client).await?;
    final_reads(cluster, w, rec).await
}

/// One client: its operations beside its leadership.
async fn client<K: Cluster>(mut me: Worker<'_, K>) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let h = Handles::open(me.cluster, &client, me.w).await?;
    let (stop, stopped) = oneshot::channel();
    let leader = Leader {
        caller: Caller::new(
            me.caller.rec,
            Process::new(me.index, me.w.clients).shifted(LEADER_BASE),
        ),
        rng: ClientStream::LEADER.rng(me.w.seed, me.index),
        client: client.clone(),
        election: h.election.clone(),
        holding: None,
        asked: false,
    };
    let work = async {
        let done = operations(&mut me, &client, &h).await;
        let _ = stop.send(());
        done
    };
    let ((), ()) = futures::join!(work, leader.stand(stopped));
    let stats = h.atom.stats();
    me.caller
        .rec
        .retries(stats.conflicts + stats.recoveries + h.stm.stats().retries);
    Ok(())
}

/// The operations before which the client expires its session: two to four, none among the
/// last [`AFTER_LAST`].
fn expiry_points(rng: &mut impl Rng, ops: usize) -> Vec<usize> {
    let room = ops.saturating_sub(AFTER_LAST);
    let n = rng.random_range(EXPIRIES).min(room);
    let mut points = sample(rng, room, n).into_vec();
    points.sort_unstable();
    points
}

/// The client's `me.w.ops` operations.
async fn operations<K: Cluster>(me: &mut Worker<'_, K>, client: &Client, h: &Handles) {
    let expiries = expiry_points(&mut me.rng, me.w.ops);
    for n in 0..me.w.ops {
        let expire = expiries.binary_search(&n).is_ok();
        let roll = me.rng.random_range(0..100);
        let ended = if roll >= 75 {
            // A hold of the mutex; half the expiries due now happen inside it.
            let inside = expire && me.rng.random_bool(0.5);
            if expire
                && !inside
                && let Ended::Stuck = expire_own(me, client, false).await
            {
                return;
            }
            let then = async |me: &mut Worker<'_, K>| {
                if inside {
                    expire_own(me, client, true).await
                } else {
                    Ended::Ok(())
                }
            };
            fenced_increment(me, client, &h.mutex, LOCKED, then).await
        } else {
            if expire && let Ended::Stuck = expire_own(me, client, false).await {
                return;
            }
            one(me, h, roll).await
        };
        if let Ended::Stuck = ended {
            return;
        }
    }
}

/// One operation on the atom or the accounts, by `roll` (below 75).
async fn one<K>(me: &mut Worker<'_, K>, h: &Handles, roll: u32) -> Ended<(), ()> {
    let (f, input) = match roll {
        0..30 => ("add", Value::from(1)),
        30..40 => ("read", Value::Null),
        40..65 => ("transfer", draw_transfer(&mut me.rng, ACCOUNTS)),
        _ => ("balances", Value::Null),
    };
    let (atom, stm, accounts) = (&h.atom, &h.stm, &h.accounts);
    match f {
        "add" | "read" => {
            let call = || async {
                if f == "add" {
                    atom.swap(|n| n + 1).await
                } else {
                    atom.deref().await
                }
            };
            let op = Invoke::new(f, input);
            drop_value(me.caller.call(op, call, |v| Value::from(*v)).await)
        }
        _ => {
            let call = || async {
                if f == "transfer" {
                    transfer_of(stm, accounts, &input).await
                } else {
                    balances(stm, accounts).await
                }
            };
            let op = Invoke::new(f, input.clone());
            drop_value(me.caller.call(op, call, Value::clone).await)
        }
    }
}

/// How an operation ended, without what it returned.
fn drop_value<T, E>(ended: Ended<T, E>) -> Ended<(), ()> {
    match ended {
        Ended::Ok(_) => Ended::Ok(()),
        Ended::Err(_) => Ended::Err(()),
        Ended::Stuck => Ended::Stuck,
    }
}

/// Expires the client's current session and waits until the client has opened the next one:
/// the `expire` operation, `ok` with the session and the generations (done inside a hold when
/// `in_hold`).
async fn expire_own<K: Cluster>(
    me: &mut Worker<'_, K>,
    client: &Client,
    in_hold: bool,
) -> Ended<(), ()> {
    let cluster = me.cluster;
    let call = || async {
        // Subscribed first: the new session cannot be announced unseen in between.
        let mut events = client.connection_events();
        let session = client.current_session().await?;
        let (id, generation) = (session.session().id, session.generation());
        drop(session);
        cluster.expire(id).await?;
        while client.generation() <= generation {
            if events.next().await.is_none() {
                return Err(avout::Error::Closed);
            }
        }
        let next = client.current_session().await?;
        Ok::<_, avout::Error>(json!({
            "session": format!("{:#x}", id.0),
            "expired": generation,
            "generation": next.generation(),
        }))
    };
    let op = Invoke::new("expire", Value::Null).stall(format!(
        "process {}'s expiry of its own session",
        me.caller.p()
    ));
    let op = if in_hold { op.in_hold() } else { op };
    drop_value(me.caller.call(op, call, Value::clone).await)
}

/// A client's leadership: its latch, and how its holds are recorded.
struct Leader<'a> {
    caller: Caller<'a>,
    rng: rand_chacha::ChaCha8Rng,
    client: Client,
    election: Election,
    /// The term held (as recorded: an `ok` acquire without its release yet), and the
    /// candidate node once found.
    holding: Option<(i64, Option<String>)>,
    /// Whether an `acquire` is invoked and not yet completed.
    asked: bool,
}

impl Leader<'_> {
    /// Stands in the election until `stop`, recording each term; closes the latch at the end.
    async fn stand(mut self, mut stop: oneshot::Receiver<()>) {
        let latch = self.election.latch();
        let mut events = latch.events();
        let mut state = events.current();
        loop {
            if !self.follow(state, &latch).await {
                return;
            }
            state = tokio::select! {
                biased;
                next = events.next() => match next {
                    Some(next) => next,
                    None => return,
                },
                _ = &mut stop => break,
            };
        }
        self.step_down(latch, events).await;
    }

    /// Records a transition of the latch (and leads, on `Leading`); false once it closed, or
    /// an operation missed its deadline.
    async fn follow(&mut self, state: LatchState, latch: &LeaderLatch) -> bool {
        match state {
            LatchState::Candidate { .. } => self.ask(),
            LatchState::Leading { term, .. } => {
                if self.held() == Some(term) {
                    return true;
                }
                // The latch tells each loss before the next term; not hearing of one is a
                // hold that ended unseen.
                self.lost();
                self.ask();
                let p = self.caller.p();
                self.caller
                    .rec
                    .complete(EventType::Ok, p, "acquire", term.into(), None);
                self.asked = false;
                self.holding = Some((term, None));
                return self.lead(term, latch).await;
            }
            LatchState::Lost { term, .. } if self.held() == Some(term) => self.lost(),
            LatchState::Closed(_) => {
                self.unasked();
                self.lost();
                return false;
            }
            _ => {}
        }
        true
    }

    /// The term held, if any.
    fn held(&self) -> Option<i64> {
        self.holding.as_ref().map(|(term, _)| *term)
    }

    /// Records the end of the term held, if any, as lost.
    fn lost(&mut self) {
        if let Some((term, _)) = self.holding.take() {
            let p = self.caller.p();
            self.caller.rec.invoke(p, "release", term.into(), None);
            self.caller.released(term.into(), false);
        }
    }

    /// Records the invocation of an acquire, unless one is pending or a term is held.
    fn ask(&mut self) {
        if !self.asked && self.holding.is_none() {
            self.caller
                .rec
                .invoke(self.caller.p(), "acquire", Value::Null, None);
            self.asked = true;
        }
    }

    /// Ends a pending acquire in doubt: the latch may have led without telling.
    fn unasked(&mut self) {
        if self.asked {
            let p = self.caller.p();
            self.caller
                .rec
                .complete(EventType::Info, p, "acquire", Value::Null, None);
            self.caller.process.retire();
            self.asked = false;
        }
    }

    /// The leader's fenced increments in `term`; false if one missed its deadline.
    async fn lead(&mut self, term: i64, latch: &LeaderLatch) -> bool {
        for _ in 0..LEADER_WRITES {
            let pause = Duration::from_millis(self.rng.random_range(1..10));
            tokio::time::sleep(pause).await;
            if latch.state().term() != Some(term) {
                return true;
            }
            let Some(node) = self.node(term).await else {
                return true;
            };
            let Ok(n) = read_counter(&self.client, LED).await else {
                return true;
            };
            let ops = [Op::check(node, None), set_counter(LED, n + 1)];
            let client = &self.client;
            match fenced_write(&mut self.caller, term, n + 1, || client.multi(&ops)).await {
                Ended::Ok(_) => {}
                Ended::Err(_) => return true,
                Ended::Stuck => return false,
            }
        }
        true
    }

    /// The candidate node of `term`, as the election shows it (`None` if it leads no more, or
    /// cannot be read).
    async fn node(&mut self, term: i64) -> Option<String> {
        if let Some((t, Some(node))) = &self.holding
            && *t == term
        {
            return Some(node.clone());
        }
        let leader = self.election.leader().await.ok()??;
        if leader.term != term {
            return None;
        }
        self.holding = Some((term, Some(leader.node.clone())));
        Some(leader.node)
    }

    /// At the end: releases the term held, `ok` if its node was confirmed to stand when the
    /// release began, then closes the latch and records what it said last.
    async fn step_down(
        mut self,
        latch: LeaderLatch,
        mut events: avout::recipes::election::LatchEvents,
    ) {
        let released = match self.holding.clone() {
            Some((term, _)) => {
                let p = self.caller.p();
                self.caller.rec.invoke(p, "release", term.into(), None);
                let intact = match self.node(term).await {
                    Some(node) => matches!(
                        tokio::time::timeout(
                            OP_DEADLINE,
                            self.client.multi(&[Op::check(node, None)])
                        )
                        .await,
                        Ok(Ok(_))
                    ),
                    None => false,
                };
                Some((term, intact))
            }
            None => None,
        };
        latch.close().await;
        if let Some((term, intact)) = released {
            self.holding = None;
            self.caller.released(term.into(), intact);
        }
        // A term won while closing was never acted on: its acquire stays in doubt.
        self.unasked();
        while events.next().await.is_some() {}
    }
}

/// After every client is done: a fresh client reads the atom and the balances, each until it
/// answers.
async fn final_reads<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let client = open_client(cluster).await?;
    let atom = crate::builtin::counter::open(cluster, &client, COUNTER).await?;
    read_until_answered(rec, FINAL_BASE, "read", || atom.deref())
        .await
        .map_err(|last| WorkloadError::gave_up("the final read of the atom", Some(last)))?;
    let (stm, accounts) = open_accounts(cluster, &client, w, BANK).await?;
    read_until_answered(rec, FINAL_BASE + 1, "balances", || {
        balances(&stm, &accounts)
    })
    .await
    .map_err(|last| WorkloadError::gave_up("the final read of the balances", Some(last)))
}
