//! [`MvccModel`]: the clients, the model ZooKeeper and the properties the checker holds them to.

use avout::machine::Request;
use avout::planted::Bug;
use avout::stm::mvcc::{Halt, create_ref_ops, root_paths};
use avout_sim_zk::kernel::Kernel;
use stateright::{Model, Property};

use super::agent::is_kill;
use super::{Body, Ended, MvccAgent, POINTS, REF_A, REF_B, ROOT, Workload, decode};
use crate::tx;
use crate::world::{Action, Faults, Space, World};

/// The Mvcc model; see the [module docs](super).
///
/// ```
/// use avout_models::{Search, check, mvcc::MvccModel};
/// // Two clients' whole state space is far too large for an example: a bound.
/// let search = Search { max_depth: Some(12), ..Search::default() };
/// let report = check(MvccModel::new(2), search);
/// assert_eq!(report.property("no lost update").verdict, avout_models::Verdict::Holds);
/// ```
#[derive(Clone, Debug)]
pub struct MvccModel {
    /// How many clients (see [`Workload::body`]).
    pub clients: u8,
    /// What the writers do.
    pub workload: Workload,
    /// The faults the environment may inject.
    pub faults: Faults,
    /// `StmConfig::retry_limit`.
    pub retry_limit: u32,
    /// `StmConfig::max_history`.
    pub max_history: usize,
    /// Whether BARGE-WAIT must pass (a script step) before a client may barge.
    pub barge_wait: bool,
    /// Timer firings per client (plus one per fault).
    pub timers: u8,
    /// A planted bug, in the configuration of the clients' machines (feature `planted-bugs`).
    pub bug: Option<Bug>,
    /// Whether clients read ahead (a partial-order reduction: the same verdicts from fewer
    /// states; see [`World::reading_ahead`]).
    pub read_ahead: bool,
    /// What the model's states share (see [`Space`]); [`crate::check()`] gives each check a
    /// fresh one.
    pub space: Space<MvccAgent>,
}

impl MvccModel {
    /// `clients` clients, no faults, production's retry limit, MAX-HISTORY 1, BARGE-WAIT to
    /// pass, one timer firing per client, reading ahead. See [`MvccModel`].
    pub fn new(clients: u8) -> Self {
        MvccModel {
            clients,
            workload: Workload::Increments,
            faults: Faults::NONE,
            retry_limit: avout::stm::StmConfig::default().retry_limit,
            max_history: 1,
            barge_wait: true,
            timers: 1,
            bug: None,
            read_ahead: true,
            space: Space::default(),
        }
    }

    fn count(&self, body: Body) -> u64 {
        (0..self.clients)
            .filter(|&i| self.workload.body(i) == body)
            .count() as u64
    }

    fn writers(&self) -> u64 {
        u64::from(self.clients) - self.count(Body::Reader)
    }

    /// `a`'s initial value: enough for every transfer.
    fn initial_a(&self) -> u64 {
        self.count(Body::Transfer)
    }
}

fn on_server(state: &World<MvccAgent>, path: &str) -> u64 {
    decode(&state.kernel.tree().node(path).expect("a ref").data)
}

/// Commits the server applied of clients running `body`.
fn applied(state: &World<MvccAgent>, body: Body) -> u64 {
    state
        .clients
        .iter()
        .filter(|c| c.agent.body == body)
        .map(|c| u64::from(c.agent.applied))
        .sum()
}

/// No point is `KILLED` after having been `COMMITTING`, and no commit found its point
/// killed.
fn committing_never_killed(m: &MvccModel, state: &World<MvccAgent>) -> bool {
    let killed_late = !m
        .space
        .holds(&state.kernel, "no point killed late", |kernel| {
            let tree = kernel.tree();
            let points = tree.node(POINTS).expect("the clock");
            !points.children.iter().any(|child| {
                let node = tree.node(&format!("{POINTS}/{child}")).expect("a child");
                is_kill(&node.data) && node.stat.version > 1
            })
        });
    let violated = state
        .clients
        .iter()
        .any(|c| matches!(c.agent.ended, Some(Ended::Failed(Halt::Violation(_)))));
    !killed_late && !violated
}

/// Each ref's history holds the node created by the commit that set the ref's newest value.
fn newest_kept(m: &MvccModel, state: &World<MvccAgent>) -> bool {
    m.space.holds(&state.kernel, "newest kept", |kernel| {
        newest_in_history(kernel)
    })
}

/// Each ref's history in `kernel` holds the node created by the commit that set the ref's
/// newest value.
fn newest_in_history(kernel: &Kernel) -> bool {
    let tree = kernel.tree();
    [REF_A, REF_B].into_iter().all(|r| {
        let newest = tree.node(r).expect("a ref").stat.mzxid;
        let history = format!("{r}/history");
        tree.node(&history)
            .expect("a history")
            .children
            .iter()
            .any(|c| {
                tree.node(&format!("{history}/{c}"))
                    .is_some_and(|n| n.stat.czxid == newest)
            })
    })
}

/// The client whose transaction is the oldest (smallest age, then GUID, whose high bits
/// are the client's index: the first to have read, as no try takes its point before
/// reading), once every client has read.
fn oldest(state: &World<MvccAgent>) -> Option<usize> {
    let ages: Option<Vec<i64>> = state.clients.iter().map(|c| c.agent.age).collect();
    let ages = ages?;
    (0..ages.len()).min_by_key(|&i| (ages[i], state.clients[i].agent.index))
}

impl Model for MvccModel {
    type State = World<MvccAgent>;
    type Action = Action;

    fn init_states(&self) -> Vec<Self::State> {
        let planted = crate::plant(self.bug);
        let agents = (0..self.clients)
            .map(|i| {
                MvccAgent::new(
                    i,
                    self.workload.body(i),
                    self.retry_limit,
                    self.max_history,
                    !self.barge_wait,
                    self.timers.saturating_add(self.faults.budget),
                )
                .planted(planted)
            })
            .collect();
        let create = |path: &str| Request::Create {
            path: path.into(),
            data: Vec::new(),
            options: Default::default(),
        };
        let [points, refs] = root_paths(ROOT);
        let a = self.initial_a().to_string();
        let setup = [
            create(ROOT),
            create(&format!("{ROOT}/stm")),
            create(&points),
            create(&refs),
            Request::Multi(create_ref_ops(ROOT, "a", a.as_bytes())),
            Request::Multi(create_ref_ops(ROOT, "b", b"0")),
        ];
        let world = World::new(agents, self.faults, &setup).batching_replies();
        vec![match self.read_ahead {
            true => world.reading_ahead(&self.faults),
            false => world,
        }]
    }

    crate::world::world_moves!();

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("no lost update", |m: &MvccModel, s: &World<MvccAgent>| {
                let transfers = applied(s, Body::Transfer);
                on_server(s, REF_A) + transfers == m.initial_a() + applied(s, Body::Increment)
                    && on_server(s, REF_B) == transfers
            }),
            Property::always("applied at most once", |_, s| tx::at_most_once(s)),
            Property::always("acknowledged means applied", |_, s| {
                tx::acknowledged_applied(s)
            }),
            Property::always(
                "a COMMITTING transaction is never killed",
                committing_never_killed,
            ),
            Property::always(
                "only an older transaction barges, after BARGE-WAIT",
                |_, s: &World<MvccAgent>| s.clients.iter().all(|c| c.agent.bad_barge.is_none()),
            ),
            Property::always("the newest committed value is never trimmed", newest_kept),
            Property::always(
                "retries stay within the limit",
                |_, s: &World<MvccAgent>| {
                    s.clients
                        .iter()
                        .all(|c| c.agent.ended != Some(Ended::RetryLimit))
                },
            ),
            Property::eventually("every transaction finishes", |_, s| tx::all_finished(s)),
        ];
        if self.workload == Workload::Transfers {
            properties.push(Property::always(
                "a transfer conserves the total",
                |m: &MvccModel, s: &World<MvccAgent>| {
                    on_server(s, REF_A) + on_server(s, REF_B) == m.initial_a()
                },
            ));
            properties.push(Property::always(
                "validated reads are a snapshot",
                |m: &MvccModel, s: &World<MvccAgent>| {
                    s.clients.iter().all(|c| match c.agent.ended {
                        Some(Ended::Committed { a, b }) if c.agent.body == Body::Reader => {
                            a + b == m.initial_a()
                        }
                        _ => true,
                    })
                },
            ));
        }
        if self.faults.budget == 0 {
            properties.push(Property::eventually(
                "the oldest transaction commits",
                |_, s: &World<MvccAgent>| {
                    oldest(s).is_some_and(|i| {
                        matches!(s.clients[i].agent.ended, Some(Ended::Committed { .. }))
                    })
                },
            ));
        }
        if self.writers() >= 2 {
            properties.push(Property::sometimes(
                "a barge happens",
                |_, s: &World<MvccAgent>| s.clients.iter().any(|c| c.agent.barges > 0),
            ));
            properties.push(Property::sometimes("a conflict retried", |_, s| {
                tx::conflict_retried(s)
            }));
        }
        let readers = self.count(Body::Reader);
        if self.writers() >= 2 && readers > 0 && self.max_history == 1 {
            properties.push(Property::sometimes(
                "a read fault happens",
                |_, s: &World<MvccAgent>| s.clients.iter().any(|c| c.agent.read_fault),
            ));
        }
        if self.faults.budget > 0 && self.faults.reply_lost && self.writers() > 0 {
            properties.push(Property::sometimes(
                "a lost commit reply recovered",
                |_, s| tx::lost_reply_recovered(s),
            ));
        }
        if readers > 0 {
            properties.push(Property::sometimes(
                "a read-only transaction validates",
                |_, s| tx::reader_validated(s),
            ));
        }
        properties.extend(crate::world::fault_examples(&self.faults));
        properties
    }
}
