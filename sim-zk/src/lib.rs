//! # avout-sim-zk: a deterministic simulated ZooKeeper
//!
//! The simulator that avout's protocols are tested on: every ZooKeeper behaviour the recipes
//! depend on, every fault that is rare in production, and every run replayable from its seed.
//!
//! It has three layers:
//!
//! - the [`kernel`]: ZooKeeper's state machine, pure and synchronous (the data tree with full
//!   [`avout::Stat`]s, zxids, sequential nodes, ephemerals, containers, ACLs, one-shot
//!   watches, sessions, atomic `multi`, a lagging follower), taking requests as values;
//! - the network and scheduler (`world`): seeded latencies over per-session FIFO links,
//!   connections that drop and come back, sessions that time out, and the [`Fault`]s;
//! - runs ([`Sim`]): a seed, a [`SimConfig`] and a workload, executed on a current-thread
//!   tokio runtime with a paused clock, so production code written against
//!   [`avout::Coordination`] runs unchanged, in virtual time, deterministically. The run's
//!   event log ([`LogEvent`]) has a stable hash: the same seed gives the same hash. A
//!   failing run prints its seed; a [`ReplayFile`] (seed, configuration and every choice
//!   made) re-runs a schedule exactly, or an edited version of it.
//!
//! Every random choice comes from one `u64` seed split into named ChaCha8 streams
//! ([`rng`]): network latencies, faults, and the workload's own stream, so switching faults
//! on or off never changes what the workload decides. [`demo`] is the main-job demo: clients
//! doing sequential creates and versioned updates under every fault, replayed to the same
//! hash.
//!
//! # Fidelity
//!
//! The kernel follows ZooKeeper 3.8's own processors (checks in its order, failed writes
//! consuming zxids, sequence numbers from the count of child creates, watches in two
//! server-side tables fanned out by the client). It passes avout's backend conformance suite
//! unchanged, and a differential test runs random operation sequences on it and on a real
//! server and requires identical results. Known, deliberate differences: containers are
//! reaped right after the write that empties them (ZooKeeper: on a timer); session ids,
//! zxids and times are the simulator's own.
//!
//! ## The ensemble
//!
//! With [`Builder::servers`] above one, or any ensemble fault kind drawn, the run has an
//! ensemble. What it reproduces of a real one (a differential test runs the first four against
//! Debian's ZooKeeper 3.8 in a three-member ensemble and requires the same behaviour):
//!
//! - reads served by the session's own server from its replica, which trails the leader by
//!   its own lag; reads never go back in time for a session, across moves included; `sync`
//!   and the session's own writes catch its server up; writes go through the leader;
//! - new sessions connect to any member, and a session that reconnects moves to any reachable
//!   member, keeping its id, its ephemerals and its watches;
//! - a member lost under a client (cut off from the quorum, or killed): the session moves
//!   and its calls in flight fail with `ConnectionLoss` only;
//! - a leader lost: every client is disconnected for the election window, calls in flight
//!   fail with `ConnectionLoss` whether applied or not, sessions and ephemerals survive, and
//!   a member with every committed transaction leads;
//! - a follower cut off from the leader serves reads from what it has until it notices (a
//!   third of the session timeout, for ZooKeeper's `syncLimit` ticks), while its clients'
//!   writes and `sync`s wait; then it drops them and they move;
//! - quorum loss: nothing commits, every member still serves reads until it notices, then the
//!   leader steps down and no election ends before a member is back;
//! - `SessionMoved` for a request still on an old connection after its session moved;
//! - a client cut off from its member both ways or one way (its requests still applied);
//! - a frozen client process, whose tasks and timers stop with its network (under madsim, a
//!   whole node), and which finds its session expired only after its code ran on;
//! - a leader's disk stalling on fsync, and message latency with a long tail.
//!
//! What it does not reproduce:
//!
//! - `OperationTimeout` for a stalled call. Neither does the client avout uses on real
//!   servers: `zookeeper-client` fails a call in flight with `ConnectionLoss` when its
//!   connection drops, and reports a timeout only when it cannot reconnect within the session
//!   timeout (the session is then lost), which the simulator reports as `Expired`;
//! - an isolated *leader* serving reads to its own clients until it notices: its clients lose
//!   their connection at once and the election starts;
//! - a leader whose quorum comes back within its sync limit carrying on: once the quorum is
//!   lost, the leader always steps down;
//! - partitions between two followers: ZAB followers talk only to the leader, so in a steady
//!   state such a cut changes nothing, and the simulated election does not model who can
//!   vote for whom (any member that is not cut off can win);
//! - a follower's crash as a fault of its own: to its clients it is a partition of the
//!   client (both ways), to the quorum a partitioned follower that comes back, caught up;
//! - clock drift between clients: every client reads one virtual clock. Only the delay
//!   queue compares clocks across processes (a producer's due time, a consumer's now); its
//!   docs say what a skew does;
//! - observers, read-only mode, local sessions, and the negotiation of the session timeout
//!   within the server's `minSessionTimeout`/`maxSessionTimeout` (the requested timeout is
//!   granted).
//!
//! ```
//! use avout::{Coordination, CreateMode};
//! use avout_sim_zk::{Fault, Sim, When};
//!
//! let sim = Sim::builder()
//!     .seed(2024)
//!     .clients(2)
//!     .fault(When::Step(2), Fault::ReplyLost { client: None })
//!     .build();
//! let work = |ctx: avout_sim_zk::SimCtx| async move {
//!     let (a, b) = (&ctx.clients[0], &ctx.clients[1]);
//!     a.create("/jobs", b"", &Default::default()).await.unwrap();
//!     // The create is applied but its reply is lost.
//!     let lost = a.create("/jobs/j-", b"x", &CreateMode::PersistentSequential.into()).await;
//!     assert_eq!(lost.unwrap_err(), avout::Error::ConnectionLoss);
//!     b.get_children("/jobs").await.unwrap().0
//! };
//! let (children, first) = sim.run(work);
//! assert_eq!(children, ["j-0000000000"]);
//! let (_, again) = sim.run(work);
//! assert_eq!(first.hash, again.hash);
//! ```

pub mod bench;
mod client;
pub mod demo;
mod fault;
pub mod hash;
pub mod kernel;
pub mod latency;
mod log;
#[cfg(madsim)]
pub mod node;
mod replay;
pub mod rng;
#[cfg(madsim)]
mod serve;
mod sim;
mod swarm;
mod world;

pub use client::{SimClient, SimZk};
pub use fault::{Cut, Fault, FaultKind, FaultRates, When};
pub use log::LogEvent;
#[cfg(madsim)]
pub use node::SimNode;
pub use replay::{Choices, REPLAY_FORMAT, ReplayError, ReplayFile};
#[cfg(madsim)]
pub use serve::WeakSimZk;
pub use sim::{Builder, REPLAY_DIR_ENV, REPLAY_ENV, RunSummary, SEED_ENV, Sim, SimConfig, SimCtx};
pub use swarm::{STEPS_PER_DOUBLING, SwarmRange};
