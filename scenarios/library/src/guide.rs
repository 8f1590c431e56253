//! # Testing your application
//!
//! Your application uses avout's locks, elections, queues and atoms. This guide puts it under
//! avout's simulated ZooKeeper: many seeded runs under injected faults (lost requests and
//! replies, disconnections, pauses, session expiries, stale reads, outages), each judged by a
//! checker you write, every failure named by its seed, shrunk to a few steps, replayed bit
//! for bit and kept as a regression case. The workspace's `examples/scheduler` is this guide
//! carried out.
//!
//! ## 1. A crate
//!
//! ```text
//! cargo new --lib my-app && cd my-app
//! ```
//!
//! ```toml
//! [dependencies]
//! avout = "0.1"
//!
//! [dev-dependencies]
//! avout-scenarios = "0.1"
//! futures = "0.3"
//! serde_json = "1"
//! ```
//!
//! Write the application against [`avout::Client`] (a managed client: it opens a new session
//! after each expiry, and the handles built on it carry on). Nothing in it should read the
//! wall clock, OS randomness or a `HashMap`'s order where the simulator runs it: a run must be
//! a function of its seed.
//!
//! ## 2. A scenario: a workload and a checker
//!
//! A [`Scenario`](crate::scenario::Scenario) is a name, a line about it, a default size
//! (clients, operations per client), a workload and the checkers that judge its history. The workload opens clients on
//! the backend of the [`Env`](crate::scenario::env::Env) it is given (testkit's
//! [`Backend`](avout_testkit::backend::Backend): the simulator, or real ZooKeeper; the same
//! code runs on both),
//! draws its choices from its clients' own streams
//! ([`ClientStream`](avout_sim_zk::rng::ClientStream)) and records every
//! operation it makes, its invocation and how it ended, with the
//! [`Recorder`](crate::scenario::env::Recorder): `ok` with its output, `fail` when it surely
//! did not happen, `info` when it may have. The checkers judge that history alone: one of
//! avout-check's by name ([`avout_check::Checkers`], the same list `avout check --model`
//! offers) or one of your own, anything that implements [`avout_check::Checker`] — for a rule
//! in a few lines, an [`avout_check::Rule`]: a name and a function from the history to the
//! anomalies found, each named and told. Errors the workload cannot go on after are a
//! [`WorkloadError`](crate::scenario::WorkloadError) (`?` converts avout's).
//!
//! Here an application's hit counter, an [`Atom`](avout::atom::Atom), and a checker that
//! every acknowledged increment is in the final value:
//!
//! ```
//! use avout::atom::Atom;
//! use avout_check::history::{EventType, History};
//! use avout_check::{Anomaly, Rule};
//! use avout_scenarios::scenario::env::{Env, Recorder};
//! use avout_scenarios::scenario::{Checks, Scenario, Workload, WorkloadError};
//! use futures::future::LocalBoxFuture;
//!
//! pub struct Hits;
//!
//! impl Scenario for Hits {
//!     fn name(&self) -> &'static str { "guide-hits" }
//!     fn about(&self) -> &'static str { "increments of one atom; checker: none lost" }
//!     fn defaults(&self) -> (usize, usize) { (3, 5) }
//!
//!     fn workload<'a>(&'a self, env: &'a Env<'a>, w: &'a Workload, rec: &'a Recorder)
//!         -> LocalBoxFuture<'a, Result<(), WorkloadError>> {
//!         Box::pin(async move {
//!             let clients = (0..w.clients).map(|c| async move {
//!                 let client = env.backend.client().await?;
//!                 let hits: Atom<u64> = Atom::open(&client, "/hits", 0).await?;
//!                 for _ in 0..w.ops {
//!                     rec.invoke(c as u64, "add", 1.into(), None);
//!                     let end = match hits.swap(|n| n + 1).await {
//!                         Ok(_) => EventType::Ok,
//!                         Err(e) if e.is_definite() => EventType::Fail,
//!                         Err(_) => EventType::Info,
//!                     };
//!                     rec.complete(end, c as u64, "add", 1.into(), None);
//!                 }
//!                 Ok::<_, WorkloadError>(())
//!             });
//!             for done in futures::future::join_all(clients).await {
//!                 done?;
//!             }
//!             // The final read, retried: a read changes nothing.
//!             let client = env.backend.client().await?;
//!             let hits: Atom<u64> = Atom::open(&client, "/hits", 0).await?;
//!             let p = w.clients as u64;
//!             loop {
//!                 rec.invoke(p, "read", serde_json::Value::Null, None);
//!                 match hits.deref().await {
//!                     Ok(n) => break rec.complete(EventType::Ok, p, "read", n.into(), None),
//!                     Err(_) => rec.complete(EventType::Fail, p, "read", serde_json::Value::Null, None),
//!                 }
//!             }
//!             Ok(())
//!         })
//!     }
//!
//!     fn checkers(&self, _: &Workload) -> Checks {
//!         Checks::of(Rule::new("guide-hits", none_lost))
//!     }
//! }
//!
//! /// Every acknowledged increment, and at most those in doubt besides, in the final read.
//! fn none_lost(history: &History) -> Vec<Anomaly> {
//!     let ended = |kind| history.events().iter()
//!         .filter(|e| e.kind == kind && e.f.as_str() == "add").count() as u64;
//!     let (ok, info) = (ended(EventType::Ok), ended(EventType::Info));
//!     let read = history.events().iter().rev()
//!         .find(|e| e.kind == EventType::Ok && e.f.as_str() == "read")
//!         .and_then(|e| e.value.as_u64());
//!     match read {
//!         Some(n) if (ok..=ok + info).contains(&n) => vec![],
//!         other => vec![Anomaly::new(
//!             "lost-increment",
//!             format!("{ok} increments acknowledged ({info} in doubt), read {other:?}"),
//!         )],
//!     }
//! }
//!
//! // In tests/simulated.rs this is a #[test]; here it runs a few seeds.
//! let passed = avout_scenarios::harness::Harness::new(Hits)
//!     .seeds(0..3)
//!     .regressions(std::env::temp_dir().join("guide-hits-regressions"))
//!     .run();
//! assert_eq!(passed.seeds, 3);
//! ```
//!
//! ## 3. A test
//!
//! ```text
//! // tests/simulated.rs
//! #[test]
//! fn hits_are_never_lost() {
//!     avout_scenarios::harness::Harness::new(my_app::Hits).seeds(0..50).run();
//! }
//! ```
//!
//! [`Harness`](crate::harness::Harness) runs the seeds under every default fault kind
//! ([`faults`](crate::harness::Harness::faults) to choose), first checking that one seed run
//! twice gives the same event-log hash (a workload that reads the wall clock fails here).
//! `AVOUT_SEEDS=1000..2000 cargo test` runs other seeds without editing the test.
//!
//! ## 4. When it fails
//!
//! The test panics with the lowest failing seed, its anomalies, its case file (under
//! `target/debug/avout-failures/`) and the commands that replay it. It has shrunk the case
//! (fewer faults, clients and operations, within [`shrink_budget`] runs) and shows the
//! shrunk run's history, which is kept as `tests/avout-regressions/SCENARIO-SEED.json`:
//! commit it. From then on that case runs before any seed, as proptest's persisted
//! failures do, and the test fails on it until the bug is fixed.
//!
//! ```text
//! AVOUT_REPLAY=tests/avout-regressions/guide-hits-4.json cargo test hits_are_never_lost
//! ```
//!
//! replays a case from its recorded choices (the same event-log hash, or it says the code
//! changed since) and prints its history.
//!
//! [`shrink_budget`]: crate::harness::Harness::shrink_budget
//!
//! ## 5. Your own `avout`
//!
//! ```text
//! // src/bin/my-avout.rs
//! fn main() -> std::process::ExitCode {
//!     avout_scenarios::cli::main_with(
//!         avout_scenarios::scenario::Registry::builtins().with(my_app::Hits),
//!     )
//! }
//! ```
//!
//! gives `my-avout run guide-hits --seed 7`, `explore guide-hits --seeds 0..10000`,
//! `replay FILE`, `shrink FILE`, `soak` and `view` over avout's scenarios and yours
//! (`avout_cli::main_with`). `run --zk HOST:PORT` runs the same workload on a real
//! ZooKeeper.
//!
//! ## 6. Under madsim: your own tasks and timers too
//!
//! The simulator controls avout's calls and the tasks avout starts. Your application's own
//! tasks, timers and retries are simulated too when the test is built for madsim. Name
//! tokio as madsim's (`tokio = { package = "madsim-tokio", version = "0.2.30", features =
//! [...] }`) and run:
//!
//! ```text
//! RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=target/madsim cargo test --test simulated
//! ```
//!
//! Use a separate target dir: the cfg rebuilds every crate. A run is then a madsim simulation
//! seeded by the run's seed, on madsim's clock and scheduler. Cases it keeps go to
//! `tests/avout-regressions/madsim/`, since madsim orders tasks its own way and a case
//! replays only under the runtime that found it. A workload can also start a client
//! process as a madsim node: take the service from the backend ([`Backend::simulator`]),
//! start the node with `SimZk::node(name, init)` and open the node's clients inside it in an
//! `Env` of its own, `Env::new(&SimBackend::new(zk))`. Then `pause`, `kill` and `restart` act on the whole process. A
//! pause stops its tasks and timers, and its sessions go silent. A kill drops the tasks and
//! leaves the sessions to expire. A restart runs `init` again with new sessions. The
//! scheduler example's `SchedulerOnNodes` (`examples/scheduler/src/nodes.rs`) does this. It
//! pauses one worker, kills another and restarts it, and checks that every job is still done
//! exactly once.
//!
//! [`Backend::simulator`]: avout_testkit::backend::Backend::simulator
