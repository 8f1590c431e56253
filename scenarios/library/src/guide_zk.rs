//! # An application on `zookeeper-client`
//!
//! Your service talks to ZooKeeper through the `zookeeper-client` crate, not through avout.
//! This guide puts it, unchanged, under avout's simulated ZooKeeper: madsim runs its tasks and
//! timers on a seeded clock, avout's simulator serves its sessions with every fault kind
//! (lost requests and replies, disconnections, expiries, pauses, stale reads, outages, and an
//! ensemble's partitions, elections, moved sessions, frozen processes, slow disks), and
//! avout's [harness](crate::harness) runs it on many seeds, judges each run with a checker,
//! shrinks a failure to a few steps and keeps it. The workspace's `examples/zk-counter` is
//! this guide carried out: a counter under `zookeeper-client`'s Curator-compatible lock and a
//! leader election, in which the simulator found a bug of the lock itself (step 6).
//!
//! ## 1. A crate
//!
//! ```text
//! cargo new --lib my-service && cd my-service
//! ```
//!
//! ```toml
//! [dependencies]
//! # zookeeper-client itself in a normal build; the simulation under --cfg madsim.
//! zookeeper-client = { package = "avout-zookeeper-client", version = "0.1", features = ["tokio"] }
//! # tokio itself in a normal build; madsim's runtime under --cfg madsim.
//! tokio = { package = "madsim-tokio", version = "0.2.30", features = ["rt-multi-thread", "time", "macros"] }
//!
//! [dev-dependencies]
//! avout-scenarios = "0.1"
//! avout-sim-zk = "0.1"
//! avout-cli = "0.1" # step 5: the case's page
//! madsim = "0.2.34"
//! futures = "0.3"
//! serde_json = "1"
//! ```
//!
//! The code says `use zookeeper_client as zk;` as before: the package rename is the only
//! change. In a normal build the crate *is* `zookeeper-client` (it re-exports it), so the
//! service ships and runs against real ensembles exactly as it did.
//!
//! ## 2. The service
//!
//! Write it against `zookeeper-client` as usual. What the simulation runs must be a function of
//! its seed: timers and tasks through `tokio` (madsim's, under the cfg), no wall clock, no OS
//! threads, no `HashMap` order. A process's loop, with a hook to report what it does (for
//! logging or metrics; the test records a history through it):
//!
//! ```no_run
//! use std::time::Duration;
//! use zookeeper_client as zk;
//!
//! pub trait Events {
//!     fn acquiring(&self);
//!     fn acquired(&self, token: i64);
//!     fn wrote(&self, token: i64, value: u64, written: &Result<(), zk::Error>);
//!     fn released(&self, clean: bool);
//! }
//!
//! /// One addition to the counter under the lock; `Ok(false)` if the wait ran out.
//! pub async fn add_one(client: &zk::Client, events: &impl Events) -> Result<bool, zk::Error> {
//!     events.acquiring();
//!     let prefix = zk::LockPrefix::new_curator("/app/lock", "lock-")?;
//!     let lock = client.lock(prefix, b"", zk::Acls::anyone_all());
//!     let Ok(lock) = tokio::time::timeout(Duration::from_secs(4), lock).await else {
//!         return Ok(false);
//!     };
//!     let lock = lock?;
//!     let token: i64 = lock.lock_path()[lock.lock_path().len() - 10..].parse().unwrap();
//!     events.acquired(token);
//!     client.sync("/app/counter").await?;
//!     let (data, _) = client.get_data("/app/counter").await?;
//!     let n: u64 = String::from_utf8_lossy(&data).parse().unwrap_or(0) + 1;
//!     // Through the lock: refused (RuntimeInconsistent) once its node is gone.
//!     let written = lock.set_data("/app/counter", n.to_string().as_bytes(), None).await.map(drop);
//!     events.wrote(token, n, &written);
//!     let clean = lock.new_check_writer().commit().await.is_ok();
//!     drop(lock); // deleted in the background
//!     events.released(clean);
//!     Ok(true)
//! }
//! ```
//!
//! ## 3. A first test on the simulator
//!
//! A test under madsim (`#[madsim::test] async fn counts_under_faults() { … }`, in a file
//! under `#[cfg(madsim)]`) starts the simulated ensemble on an address with
//! `zookeeper_client::SimServer` (madsim builds only), and the service's unchanged connect
//! string reaches it. Its body:
//!
//! ```
//! # #[cfg(madsim)]
//! # madsim::runtime::Runtime::new().block_on(async {
//! use avout_sim_zk::FaultRates;
//! use zookeeper_client::{Acls, Client, CreateMode, SimServer};
//! let _zk = SimServer::builder()
//!     .sim(|sim| sim.servers(3).rates(FaultRates::chaos_all()))
//!     .start(["zk1:2181", "zk2:2181", "zk3:2181"]);
//! let client = Client::connect("zk1:2181,zk2:2181,zk3:2181").await.unwrap();
//! // … the service's processes, and assertions on what they did; for instance:
//! let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
//! match client.create("/app", b"", &open).await {
//!     Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
//!     // A fault may lose the reply: the create may or may not have gone through.
//!     Err(e) => println!("create /app: {e}"),
//! }
//! # });
//! ```
//!
//! ```text
//! RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=target/madsim cargo test
//! ```
//!
//! (The cfg rebuilds every crate: a target dir of its own.) A failing test prints
//! `MADSIM_TEST_SEED=…`, which replays it exactly; `MADSIM_TEST_NUM=100` runs it on 100 seeds.
//! The simulator's seed is madsim's, so that one number fixes the whole run: the service's
//! tasks, its timers, and every latency and fault.
//!
//! ## 4. Runs judged by a checker, through the harness
//!
//! For many seeds, shrinking and kept cases, the service becomes a scenario of avout's
//! harness, a [`Described`](crate::scenario::Described) scenario ([the other guide](crate::guide)
//! explains scenarios): its workload starts the service's processes as madsim nodes on the
//! run's simulated ensemble, served at an address, and records what they report with the
//! run's [`Recorder`](crate::scenario::env::Recorder); its checkers judge the history. A
//! lock's history in the mutex checker's format (`acquire` with its token, `write` with
//! `{"token", "counter"}`, `release` `ok` when the hold lasted) is judged by the checkers avout
//! binds to its own [`mutex`](crate::builtin::mutex) scenario (`holds`, the fencing rule, and
//! `mutex`); an election's, by those of its [`election`](crate::builtin::election) scenario
//! (`holds`). `examples/zk-counter/tests/judge/mod.rs` is the whole of it, compiled and run in
//! CI; the gist:
//!
//! ```ignore
//! const MY_COUNTER: Described = Described {
//!     name: "my-counter",
//!     about: "the counter under zookeeper-client's lock; checker: avout's mutex",
//!     defaults: (3, 5),
//!     checkers: avout_scenarios::builtin::mutex::SCENARIO.checkers,
//!     workload: |cluster, w, rec| Box::pin(processes(cluster, w, rec)),
//! };
//!
//! async fn processes(cluster: AnyCluster<'_>, w: &Workload, rec: &Recorder)
//!     -> Result<(), WorkloadError> {
//!     let zk = cluster.sim_zk().expect("the simulator");
//!     // The run's simulated ensemble, where the service's connect string leads.
//!     let _served = zookeeper_client::SimServer::attach(&zk, ["zk:2181"]);
//!     let done = Arc::new(Mutex::new(0));
//!     for me in 0..w.clients {
//!         let (rec, done) = (rec.clone(), done.clone());
//!         // A process of its own: faults freeze, and a test may pause or kill, all of it.
//!         zk.node(&format!("process-{me}"), move || {
//!             let (rec, done) = (rec.clone(), done.clone());
//!             async move {
//!                 my_service::run("zk:2181", &Recording::new(rec, me)).await;
//!                 *done.lock().unwrap() += 1;
//!             }
//!         });
//!     }
//!     while *done.lock().unwrap() < w.clients {
//!         tokio::time::sleep(Duration::from_millis(50)).await;
//!     }
//!     Ok(())
//! }
//! ```
//!
//! ```ignore
//! #[cfg(madsim)]
//! #[test]
//! fn the_counter_holds_under_every_fault_kind() {
//!     let every = FaultPlan::kinds(&avout_sim_zk::FaultKind::ALL, None);
//!     avout_scenarios::harness::Harness::new(MY_COUNTER).faults(every).seeds(0..20).run();
//! }
//! ```
//!
//! `AVOUT_SEEDS=0..5000` explores more seeds without editing the test.
//!
//! ## 5. When it fails
//!
//! The test panics with the lowest failing seed, the replay command and the shrunk schedule,
//! and keeps the shrunk case in `tests/avout-regressions/madsim/` (commit it: it runs first
//! from then on, and fails until the bug is fixed). `AVOUT_REPLAY=FILE cargo test NAME`
//! replays a case and prints its history. For its page (one lane per process, the
//! simulator's faults and session states on the same time axis, the checker's verdict drawn
//! on top), give the service an `avout` of its own as a cargo example, which may use the
//! dev-dependencies, and `view` the case:
//!
//! ```ignore
//! // examples/my-avout.rs
//! fn main() -> std::process::ExitCode {
//!     avout_cli::main_with(avout_scenarios::scenario::Registry::builtins().with(MY_COUNTER))
//! }
//! ```
//!
//! ```text
//! RUSTFLAGS="--cfg madsim" CARGO_TARGET_DIR=target/madsim \
//!   cargo run --example my-avout -- view tests/avout-regressions/madsim/my-counter-7.json
//! ```
//!
//! ## 6. What the simulator found in `zookeeper-client`'s lock
//!
//! `examples/zk-counter` first waited for the lock with a timeout and, when the wait ran out,
//! tried again on the same session, trusting `Client::lock`'s documented cancellation safety.
//! The harness found seeds where every process waited in vain until it gave up, and shrank
//! one to three processes of three additions. The lock's own cleanup is at fault: a lock
//! future dropped while its node's create is outstanding hands the node to a guard that, for
//! a Curator prefix, deletes the child's *name* instead of its path; the client's path check
//! refuses that (`BadArguments`), the refusal is ignored, and the node stays first in line
//! for as long as its session lives. `examples/zk-counter/tests/finding.rs` shows it on a real
//! server with the real crate in a few lines. What the service does about it: after a wait
//! that ran out, it starts over on a new session, which takes its ephemeral nodes with it.
//!
//! ## 7. And on a real ensemble
//!
//! Build without the cfg and the same service, and the same body of a test, run against real
//! servers with the real crate: `avout-testkit` starts Debian's ZooKeeper on loopback for a
//! test (`examples/zk-counter/tests/real.rs`).
