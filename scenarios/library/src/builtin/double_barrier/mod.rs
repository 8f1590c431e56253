//! `double-barrier`: every client takes part in `ops` rounds of a [`DoubleBarrier`] of all the
//! clients: each comes to the round after a pause of its own, enters, works a moment, and
//! leaves.
//!
//! Round `r` is the barrier at `/double-barrier/r<r>`, so no round sees another's nodes. An
//! enter that fails (its session lost, say) is tried again on the client's next session; a
//! client whose leave failed goes on to the next round (its node went with its session).
//! Every enter races the end of its round: a client whose session ended after the barrier
//! filled counted as a participant, and the others may have left the round without it (its
//! node went with its session, which counts as leaving); its enter then stops, `fail`, and it
//! goes on to the next round. An enter tried again stops the same way as soon as another
//! client's enter of the round has returned: the barrier opens only with every client's node
//! present, so the round opened with the old session's node counted, and an enter now would
//! wait for a `ready` that the round's last leaver deletes (two such clients waited for each
//! other for ever under every fault kind, seed 12010007427).
//!
//! History: `enter` and `leave` (input `{"round", "client", "count"}`; `ok` when it returned,
//! `fail` for an enter stopped because the round was over).
//!
//! The checker ([`avout_check::recipes::double_barrier`]): nobody entered a round before
//! every client had come to it, and nobody left a round before every client that entered it
//! had begun to leave; and, as everywhere, no enter or leave stuck (a participant that waits
//! for ever on a barrier that has filled).

use std::time::Duration;

use avout::task::watch;

use avout::recipes::barrier::BarrierError;
use avout::recipes::double_barrier::DoubleBarrier;
use rand::Rng;
use serde_json::json;

use avout_check::Options;
use avout_check::history::EventType;

use crate::scenario::worker::{Ended, Ends, Invoke, Worker, all_workers};
use crate::scenario::{Checks, Described, WorkloadError};

const PATH: &str = "/double-barrier";

/// How many times a client tries to enter one round before giving up on the run.
const TRIES: usize = 20;

impl Ends for BarrierError {
    fn end(&self) -> EventType {
        match self {
            BarrierError::Zk(e) if e.is_indeterminate() => EventType::Info,
            _ => EventType::Fail,
        }
    }
}

/// An enter's end: the barrier's error, or the round over without it (`fail`).
enum Entered {
    Barrier(BarrierError),
    RoundOver,
}

impl Ends for Entered {
    fn end(&self) -> EventType {
        match self {
            Entered::Barrier(e) => e.end(),
            Entered::RoundOver => EventType::Fail,
        }
    }
}

/// Per round: how many clients are done with it (left it, or gone past it), and whether it
/// opened (some client's enter returned).
struct Rounds {
    done: Vec<watch::Sender<usize>>,
    opened: Vec<watch::Sender<bool>>,
}

impl Rounds {
    fn new(rounds: usize) -> Self {
        Rounds {
            done: (0..rounds).map(|_| watch::channel(0).0).collect(),
            opened: (0..rounds).map(|_| watch::channel(false).0).collect(),
        }
    }

    fn done(&self, round: usize) {
        self.done[round].send_modify(|n| *n += 1);
    }

    fn open(&self, round: usize) {
        self.opened[round].send_replace(true);
    }

    /// Returns once every other client of `count` is done with `round`.
    async fn over(&self, round: usize, count: usize) {
        let mut done = self.done[round].subscribe();
        let _ = done.wait_for(|n| *n + 1 >= count).await;
    }

    /// Returns once `round` has opened. The barrier opens only when every client's node is
    /// present, so a client whose enter failed (its session ended) and that sees the round
    /// open was counted by its old node: the round went on without it, and entering again
    /// would wait for a `ready` the round's last leaver has deleted, or will.
    async fn opened(&self, round: usize) {
        let mut opened = self.opened[round].subscribe();
        let _ = opened.wait_for(|o| *o).await;
    }
}

/// One client: `me.w.ops` rounds.
async fn client(mut me: Worker<'_>, rounds: &Rounds) -> Result<(), WorkloadError> {
    let client = me.client().await?;
    let count = me.w.clients;
    for round in 0..me.w.ops {
        let barrier =
            DoubleBarrier::new(&client, format!("{PATH}/r{round}"), count)?.planted(me.env.planted);
        let input = json!({"round": round, "client": me.index, "count": count});
        tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..20))).await;
        let (mut inside, mut over) = (None, false);
        for attempt in 0..TRIES {
            let op = Invoke::new("enter", input.clone());
            let enter = || async {
                tokio::select! {
                    biased;
                    () = rounds.over(round, count) => Err(Entered::RoundOver),
                    () = rounds.opened(round), if attempt > 0 => Err(Entered::RoundOver),
                    entered = barrier.enter() => entered.map_err(Entered::Barrier),
                }
            };
            match me.caller.call(op, enter, |_| input.clone()).await {
                Ended::Ok(guard) => {
                    rounds.open(round);
                    inside = Some(guard);
                    break;
                }
                Ended::Err(Entered::RoundOver) => {
                    over = true;
                    break;
                }
                Ended::Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                Ended::Stuck => return Ok(()),
            }
        }
        let Some(guard) = inside else {
            if over {
                rounds.done(round);
                continue;
            }
            return Err(WorkloadError::gave_up(
                format!("entering round {round} ({TRIES} tries)"),
                None::<crate::scenario::BoxError>,
            ));
        };
        tokio::time::sleep(Duration::from_millis(me.rng.random_range(0..4))).await;
        let op = Invoke::new("leave", input.clone());
        let left = me
            .caller
            .call(op, || guard.leave(), |()| input.clone())
            .await;
        rounds.done(round);
        if let Ended::Stuck = left {
            return Ok(());
        }
    }
    Ok(())
}

/// The `double-barrier` scenario: rounds entered and left together.
pub const SCENARIO: Described = Described {
    name: "double-barrier",
    about: "rounds of a double barrier of every client: enter, work, leave; checker: nobody in \
            before all came, nobody out before all began to leave",
    defaults: (4, 6),
    checkers: |_w| Checks::named("double-barrier", &Options::default()),
    workload: |env, w, rec| {
        Box::pin(async move {
            let rounds = Rounds::new(w.ops);
            let rounds = &rounds;
            all_workers(env, w, rec, |me| client(me, rounds)).await
        })
    },
};
