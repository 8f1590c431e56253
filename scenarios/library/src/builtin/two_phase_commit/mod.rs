//! `two-phase-commit`: rounds of transactions over avout's two-phase-commit recipe
//! ([`avout::recipes::two_phase_commit`]), judged for atomic commitment.
//!
//! Every client plays two roles, each on its own managed client. As a *site* (`c<i>`) it takes part
//! in every transaction; as a *coordinator* it begins the rounds `r` with `r % clients == i`,
//! so coordination rotates and each transaction has `clients` sites. There are `w.ops`
//! transactions in all, at `/two-phase-commit/run-N/t-<round>` (a fresh `run-N` per run, so
//! runs against one real server do not meet each other's transactions).
//!
//! A round: the coordinator begins the transaction and tells the sites in-process (a site
//! does not learn of a round whose begin did not succeed). Each site draws its part from its
//! own seeded stream before the round starts — vote commit (75 %), vote abort (15 %) or join
//! and leave without voting (10 %), and whether to read the outcome a second time — then
//! joins (again, on the client's next session, if its session was lost: the recipe
//! recognises a join that did happen), votes or leaves, and learns the outcome. The
//! coordinator waits for the outcome and aborts the transaction if it is not decided within
//! [`DECIDE_WAIT`] (the recipe's remedy for a site that never joins); its transaction handle
//! outlives its sessions, so a wait or an abort cut off by a lost session is made again. A
//! participant whose session is lost while waiting reads the outcome again, on the client's
//! next session. A site waits up to [`OP_DEADLINE`](crate::scenario::OP_DEADLINE), past which the run
//! fails as stuck.
//!
//! History ([`avout_check::two_phase_commit`]'s format): `begin` (`{"tx", "sites"}`), `join`
//! and `leave` (`{"tx", "site"}`), `vote` (`{"tx", "site", "vote"}`), `outcome` (`{"tx"}` for
//! the coordinator, `{"tx", "site"}` for a site; an `ok` completion adds `"outcome"`).
//!
//! The checker: every participant that learns an outcome learns the coordinator's; commit
//! only if every site voted commit; an abort vote or a site that left before voting never
//! yields commit; nobody is told two different outcomes.

use std::time::Duration;

use avout::machine::drive;
use avout::recipes::two_phase_commit::{
    Coordinator, Outcome as Decision, OutcomeMachine, Site, TwoPhaseError, Vote,
};
use avout::task::watch;
use avout::{Client, CoordinationExt, CreateMode, CreateOptions};
use rand::Rng;
use serde_json::{Value, json};

use avout_check::Options;

use crate::scenario::Checks;
use crate::scenario::Described;
use crate::scenario::Workload;
use avout_sim_zk::rng::ClientStream;

use crate::scenario::WorkloadError;
use crate::scenario::env::{Cluster, Process, Recorder, all_clients, open_client, retry_open};
use crate::scenario::worker::{Caller, Ended, Ends, Invoke};
use avout_check::history::EventType;

const ROOT: &str = "/two-phase-commit";

/// How long a coordinator waits for the outcome before aborting the transaction.
pub const DECIDE_WAIT: Duration = Duration::from_secs(30);

/// Tries of an operation that a lost session interrupted.
const ATTEMPTS: usize = 20;

/// Why a role stopped early.
enum Stop {
    /// An operation missed the deadline (already recorded as a stall).
    Stuck,
    /// A client could not be opened.
    Infra(WorkloadError),
}

fn finish(stop: Result<(), Stop>) -> Result<(), WorkloadError> {
    match stop {
        Ok(()) | Err(Stop::Stuck) => Ok(()),
        Err(Stop::Infra(e)) => Err(e),
    }
}

impl Ends for TwoPhaseError {
    fn end(&self) -> EventType {
        match self {
            TwoPhaseError::SessionLost(_) => EventType::Info,
            TwoPhaseError::Zk(z) if z.is_indeterminate() => EventType::Info,
            _ => EventType::Fail,
        }
    }
}

/// Why reading the outcome ended without one.
enum Unlearned {
    /// The reader's patience ran out (the outcome may come later: `info`).
    GaveUp,
    /// The read failed.
    Failed(TwoPhaseError),
}

impl Ends for Unlearned {
    fn end(&self) -> EventType {
        match self {
            Unlearned::GaveUp => EventType::Info,
            Unlearned::Failed(e) => e.end(),
        }
    }
}

fn tx_path(base: &str, round: u64) -> String {
    format!("{base}/t-{round}")
}

/// One role of a client (its coordinator or its site): a managed client (it keeps no
/// handles: the recipe's are per transaction), and a process number in the history with where
/// to record.
struct Role<'a> {
    client: Client,
    caller: Caller<'a>,
}

impl<'a> Role<'a> {
    async fn new<K: Cluster>(
        cluster: &K,
        rec: &'a Recorder,
        process: Process,
    ) -> Result<Self, Stop> {
        let client = open_client(cluster).await.map_err(Stop::Infra)?;
        Ok(Role {
            client,
            caller: Caller::new(rec, process),
        })
    }

    /// Records `f` of transaction `round` (invoked with `value`, `ok` with `output` of what
    /// it returned) around `call`. A failure is recorded and then [`recover`](Self::recover)ed
    /// from: `Ok(Err(lost))`, `lost` when the session was.
    async fn call<T, Fut>(
        &mut self,
        f: &str,
        value: &Value,
        round: u64,
        call: impl FnOnce() -> Fut,
        output: impl FnOnce(&T) -> Value,
    ) -> Result<Result<T, bool>, Stop>
    where
        Fut: std::future::Future<Output = Result<T, TwoPhaseError>>,
    {
        let stall = format!("process {}'s {f} in transaction {round}", self.caller.p());
        let op = Invoke::new(f, value.clone()).stall(stall);
        match self.caller.call(op, call, output).await {
            Ended::Stuck => Err(Stop::Stuck),
            Ended::Ok(t) => Ok(Ok(t)),
            Ended::Err(e) => Ok(Err(self.recover(&e).await)),
        }
    }

    /// After a failure (already recorded): whether the session had been lost, so that
    /// trying again (on the client's next session) makes sense.
    async fn recover(&mut self, e: &TwoPhaseError) -> bool {
        let lost = matches!(e, TwoPhaseError::SessionLost(_));
        if lost {
            self.caller.rec.retries(1);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        lost
    }

    /// Reads the outcome until it is known, again after each lost session. Past
    /// `patience` (if given) it gives up, recording `info`; past [`OP_DEADLINE`](crate::scenario::OP_DEADLINE) it is stuck.
    async fn learn(
        &mut self,
        round: u64,
        path: &str,
        ask: &Value,
        sites: Option<&[String]>,
        patience: Option<Duration>,
    ) -> Result<(), Stop> {
        for _ in 0..ATTEMPTS {
            let stall = format!(
                "process {}'s outcome in transaction {round}",
                self.caller.p()
            );
            let op = Invoke::new("outcome", ask.clone()).stall(stall);
            let mut machine = OutcomeMachine::new(path, sites.map(<[String]>::to_vec));
            let client = &self.client;
            let read = || async move {
                // The machine reads and watches: one session for the whole read.
                let read = async {
                    let zk = client.current_session().await?;
                    drive(&*zk, &mut machine).await
                };
                match patience {
                    Some(wait) => match tokio::time::timeout(wait, read).await {
                        Ok(done) => done.map_err(Unlearned::Failed),
                        Err(_) => Err(Unlearned::GaveUp),
                    },
                    None => read.await.map_err(Unlearned::Failed),
                }
            };
            match self.caller.call(op, read, |d| learned(ask, *d)).await {
                Ended::Stuck => return Err(Stop::Stuck),
                Ended::Ok(_) | Ended::Err(Unlearned::GaveUp) => return Ok(()),
                Ended::Err(Unlearned::Failed(e)) => {
                    if !self.recover(&e).await {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Joins, again (on the client's next session) after a lost session (a join that did
    /// happen then answers `AlreadyJoined`, and its presence went with the old session).
    async fn join(&mut self, round: u64, path: &str, name: &str) -> Result<Option<Site>, Stop> {
        let value = json!({"tx": round, "site": name});
        for _ in 0..ATTEMPTS {
            let client = self.client.clone();
            let join = || async move { Site::join(&client, path, name).await };
            match self
                .call("join", &value, round, join, |_| value.clone())
                .await?
            {
                Ok(site) => return Ok(Some(site)),
                Err(false) => return Ok(None),
                Err(true) => {}
            }
        }
        Ok(None)
    }
}

/// An `outcome` operation's completion: what was asked, and the decision.
fn learned(ask: &Value, d: Decision) -> Value {
    let mut value = ask.clone();
    // As the recipe writes it in its outcome node: "commit" or "abort".
    value["outcome"] = String::from_utf8_lossy(d.as_bytes()).into();
    value
}

async fn coordinator<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
    index: usize,
    base: &str,
    rounds: Vec<(u64, watch::Sender<Option<bool>>)>,
) -> Result<(), Stop> {
    let sites: Vec<String> = (0..w.clients).map(|c| format!("c{c}")).collect();
    let process = Process::new(index, 2 * w.clients);
    let mut role = Role::new(cluster, rec, process).await?;
    // Dropping a round's sender unannounced tells its sites it was not begun.
    for (round, announce) in rounds {
        let path = tx_path(base, round);
        let begin = json!({"tx": round, "sites": sites});
        let payload = format!("transaction {round}");
        let client = &role.client.clone();
        let (at, sites) = (&path, &sites);
        let call =
            || async move { Coordinator::begin(client, at, sites, payload.as_bytes()).await };
        let Ok(tx) = role
            .call("begin", &begin, round, call, |_| begin.clone())
            .await?
        else {
            continue;
        };
        announce.send_replace(Some(true));
        let ask = json!({"tx": round});
        let decide = || async {
            match tokio::time::timeout(DECIDE_WAIT, tx.outcome()).await {
                Ok(decided) => decided,
                // A site never joined: the recipe's way out.
                Err(_) => tx.abort().await,
            }
        };
        // The transaction's handle outlives the session: a wait or an abort cut off by a
        // lost session is made again.
        for _ in 0..ATTEMPTS {
            let decided = role.call("outcome", &ask, round, decide, |d| learned(&ask, *d));
            if decided.await? != Err(true) {
                break;
            }
        }
    }
    Ok(())
}

async fn site<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
    index: usize,
    base: &str,
    mut rounds: Vec<watch::Receiver<Option<bool>>>,
) -> Result<(), Stop> {
    let mut rng = ClientStream::CHOICES.rng(w.seed, index);
    let name = format!("c{index}");
    let process = Process::new(w.clients + index, 2 * w.clients);
    let mut role = Role::new(cluster, rec, process).await?;
    for (round, announced) in rounds.iter_mut().enumerate() {
        let round = round as u64;
        // Drawn first, whatever happens in the round, so faults never change the choices.
        let roll: f64 = rng.random();
        let vote = if roll < 0.75 {
            Some(Vote::Commit)
        } else if roll < 0.9 {
            Some(Vote::Abort)
        } else {
            None
        };
        let confirm = rng.random_bool(0.25);
        let pause = Duration::from_millis(rng.random_range(0..10));
        let begun = announced
            .wait_for(Option::is_some)
            .await
            .is_ok_and(|a| *a == Some(true));
        if !begun {
            continue;
        }
        let path = tx_path(base, round);
        let joined = role.join(round, &path, &name).await?;
        tokio::time::sleep(pause).await;
        // Kept until the outcome is known: dropping a site that has not voted aborts.
        let mut kept = None;
        match (joined, vote) {
            (Some(site), Some(vote)) => {
                let cast = String::from_utf8_lossy(vote.as_bytes());
                let value = json!({"tx": round, "site": name, "vote": cast});
                let cast = || site.vote(vote);
                // Failed or not, the site learns the outcome next.
                let _ = role
                    .call("vote", &value, round, cast, |_| value.clone())
                    .await?;
                kept = Some(site);
            }
            (Some(site), None) => {
                let value = json!({"tx": round, "site": name});
                let leave = || site.leave();
                let _ = role
                    .call("leave", &value, round, leave, |_| value.clone())
                    .await?;
            }
            (None, _) => {}
        }
        let ask = json!({"tx": round, "site": name});
        for _ in 0..1 + usize::from(confirm) {
            role.learn(round, &path, &ask, None, None).await?;
        }
        drop(kept);
    }
    Ok(())
}

/// A fresh directory for this run's transactions.
async fn run_base<K: Cluster>(cluster: &K) -> Result<String, WorkloadError> {
    let client = open_client(cluster).await?;
    let sequential = CreateOptions::new(CreateMode::PersistentSequential);
    // A create lost with its reply leaves an empty run directory behind: harmless.
    retry_open(ATTEMPTS as u32, || async {
        client
            .create_with_parents(&format!("{ROOT}/run-"), &[], &sequential)
            .await
            .map(|(path, _)| path)
    })
    .await
    .map_err(|e| WorkloadError::setup(format!("the run's directory under {ROOT}"), e))
}

/// The workload: `w.ops` transactions, each with every client as a site and coordinators
/// taking turns.
pub(crate) async fn workload<K: Cluster>(
    cluster: &K,
    w: &Workload,
    rec: &Recorder,
) -> Result<(), WorkloadError> {
    let base = run_base(cluster).await?;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..w.ops).map(|_| watch::channel(None)).unzip();
    let mut owned: Vec<Vec<(u64, watch::Sender<Option<bool>>)>> =
        (0..w.clients).map(|_| Vec::new()).collect();
    for (round, sender) in senders.into_iter().enumerate() {
        owned[round % w.clients].push((round as u64, sender));
    }
    let base = &base;
    let (coordinators, sites) = futures::join!(
        all_clients(w.clients, |i| {
            let rounds = std::mem::take(&mut owned[i]);
            async move { finish(coordinator(cluster, w, rec, i, base, rounds).await) }
        }),
        all_clients(w.clients, |i| {
            let rounds = receivers.clone();
            async move { finish(site(cluster, w, rec, i, base, rounds).await) }
        }),
    );
    coordinators.and(sites)
}

/// The `two-phase-commit` scenario: transactions over every client as a site.
pub const SCENARIO: Described = Described {
    name: "two-phase-commit",
    about: "transactions over every client as a site; checker: atomic commitment",
    defaults: (4, 15),
    checkers: |_w| Checks::named("two-phase-commit", &Options::default()),
    workload: |cluster, w, rec| Box::pin(async move { workload(&cluster, w, rec).await }),
};

#[cfg(test)]
mod tests {
    use super::SCENARIO;
    use crate::scenario::{FaultPlan, Registry, Scenario};
    use avout_check::history::{Event, EventType, History};

    /// The verdict the scenario's checkers give `history`.
    fn check(history: &History) -> avout_check::Verdict {
        SCENARIO
            .checkers(
                &Registry::builtins()
                    .workload("two-phase-commit", 0)
                    .unwrap(),
            )
            .judge(history)
    }

    fn recorded(seed: u64) -> History {
        let registry = Registry::builtins();
        let w = registry.workload("two-phase-commit", seed).unwrap();
        let report = registry.run(&w).faults(&FaultPlan::all()).sim().unwrap();
        assert!(report.verdict.is_valid(), "seed {seed}: {}", report.verdict);
        report.history
    }

    /// The history with `edit` applied to the first event it changes (it returns whether it
    /// did).
    fn tampered(history: &History, mut edit: impl FnMut(&mut Event) -> bool) -> History {
        let mut done = false;
        let out: History = history
            .events()
            .iter()
            .cloned()
            .map(|mut e| {
                if !done {
                    done = edit(&mut e);
                }
                e
            })
            .collect();
        assert!(done, "nothing to tamper with");
        out
    }

    fn is_ok_outcome(e: &Event, of: &str) -> bool {
        e.kind == EventType::Ok && e.f.as_str() == "outcome" && e.value["outcome"] == of
    }

    #[test]
    fn a_recorded_history_with_one_learned_outcome_flipped_is_caught() {
        let h = recorded(3);
        let bad = tampered(&h, |e| {
            let site = !e.value["site"].is_null();
            if site && is_ok_outcome(e, "commit") {
                e.value["outcome"] = "abort".into();
                return true;
            }
            false
        });
        let v = check(&bad);
        assert!(v.kinds().contains(&"disagreement".to_owned()), "{v}");
    }

    #[test]
    fn a_recorded_commit_with_one_vote_turned_to_abort_is_caught() {
        let h = recorded(3);
        // The first committed transaction, and one of its votes.
        let committed = h
            .events()
            .iter()
            .find(|e| is_ok_outcome(e, "commit"))
            .map(|e| e.value["tx"].clone())
            .expect("a commit");
        let bad = tampered(&h, |e| {
            if e.f.as_str() == "vote" && e.value["tx"] == committed {
                e.value["vote"] = "abort".into();
                return e.kind != EventType::Invoke;
            }
            false
        });
        let v = check(&bad);
        assert!(
            v.kinds().contains(&"commit-despite-abort".to_owned()),
            "{v}"
        );
    }
}
