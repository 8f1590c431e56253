//! Soaking: every scenario on many seeds under each fault configuration, as a gate.
//!
//! A soak is a grid: scenarios × fault configurations (all kinds together, each kind alone,
//! every pair of kinds, or a list) × the seeds `base..base + seeds`. Every cell of the grid
//! is one simulated run; all of them go through exploration's machinery
//! ([`super::explore`]) as one list, so both cores stay busy across scenarios, and every run
//! is made (a soak counts failures; it does not stop at the first). A failure is any run
//! whose verdict is not valid, an error the workload gave up with included.
//!
//! Each (scenario, configuration) row reports its seeds, its failures and the lowest failing
//! seed, recorded as a [`Case`] (re-run with its choices taped) to be written, replayed and
//! shrunk. The seeds are a function of `base` alone: the same base soaks the same runs.
//!
//! A run is a function of its seed only if nothing in it draws from outside the seed (an
//! unbiased `select!`, a `HashMap`'s order, the clock). So the first [`Soak::repeat`] seeds
//! of every row are run twice, and a seed whose two event logs differ fails the soak as
//! [`Row::unrepeatable`]: a replay that cannot reproduce its run is a failure of the test bed.
//!
//! ```
//! use avout_scenarios::scenario::soak::{FaultConfig, Soak, soak};
//! use avout_scenarios::scenario::Registry;
//! let mut s = Soak::new(vec!["counter".into()], vec![FaultConfig::none()], 7, 3);
//! s.ops = Some(3);
//! let report = soak(&Registry::builtins(), &s, &|_| {}).unwrap();
//! assert_eq!((report.runs, report.rows[0].seeds, report.failed()), (3, 3, false));
//! ```

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use avout::planted::Bug;

mod faults;
mod shard;

pub use faults::{FaultConfig, FaultConfigError};
pub use shard::{MergeError, Shard, ShardError, SoakSlice, merge};

use super::case::{Case, CaseError};
use super::coverage::Coverage;
use super::explore::explore_runs;
use super::store::RefStoreKind;
use super::{Faults, Protocol, Registry, Report, RunError, WAN_LATENCY_MS, Workload};
use serde::{Deserialize, Serialize};

/// What to soak.
#[derive(Clone, Debug)]
pub struct Soak {
    /// The scenarios, by name.
    pub scenarios: Vec<String>,
    /// The fault configurations.
    pub faults: Vec<FaultConfig>,
    /// The first seed.
    pub base: u64,
    /// Seeds per (scenario, configuration).
    pub seeds: u64,
    /// The STM protocol of the transactional scenarios.
    pub protocol: Protocol,
    /// Operations per client (default: each scenario's).
    pub ops: Option<usize>,
    /// A planted bug to switch on.
    pub planted: Option<Bug>,
    /// OS threads.
    pub threads: usize,
    /// Extra rows: a scenario run again with its refs' values in a store, under each fault
    /// configuration. By default bank with the in-process store, when bank is soaked (one
    /// row per configuration more: the soak grows by one scenario's share, about 1/13).
    pub ref_store_rows: Vec<(String, RefStoreKind)>,
    /// Extra rows: a transactional scenario run again under the STM protocol that is not
    /// [`Soak::protocol`], under each fault configuration. By default every soaked one of
    /// [`TRANSACTIONAL`], so a soak judges both protocols by its strongest checkers.
    pub other_protocol_rows: Vec<String>,
    /// Extra rows: a scenario run again on a distant ensemble, with this one-way latency in
    /// milliseconds ([`Workload::latency_ms`]). By default bank at [`WAN_LATENCY_MS`], when
    /// bank is soaked: the only rows whose round trips outlast the Mvcc STM's lock wait.
    pub latency_rows: Vec<(String, u64)>,
    /// Extra rows: a transactional scenario run by one client on a distant ensemble, with
    /// this one-way latency in milliseconds, where the rule "a lone client never conflicts"
    /// ([`Recorder::stm`](crate::scenario::env::Recorder::stm)) is sharpest: its round trips
    /// outlast the protocols' short waits. By default rw-register (whose transactions
    /// `ensure`, `alter`, `ref_set` and read) at [`WAN_LATENCY_MS`], when rw-register is
    /// soaked (a lone client's run is about a fifth of a full one).
    pub lone_rows: Vec<(String, u64)>,
    /// A one-way latency in milliseconds for every other row ([`Workload::latency_ms`]):
    /// the whole soak on a distant ensemble. `None`: the simulator's own.
    pub latency_ms: Option<u64>,
    /// How many seeds of each row (the first ones) run twice, their event logs compared.
    pub repeat: u64,
    /// The slice of the seeds this soak runs ([`Shard::WHOLE`]: all of them).
    pub shard: Shard,
}

/// The scenarios whose transactions a soak runs under both STM protocols by default: those
/// judged by the bank invariant, list-append and rw-register (Elle's two workloads).
pub const TRANSACTIONAL: [&str; 3] = ["bank", "list-append", "rw-register"];

/// Seeds of each row run twice by default: a few per row finds a run that draws from outside
/// its seed (such draws are usually in code every run passes through) for under 0.1% more
/// runs on a 10,000-seed soak.
pub const REPEAT: u64 = 8;

impl Soak {
    /// `scenarios` × `faults` on seeds `base..base + seeds`, on every core.
    pub fn new(scenarios: Vec<String>, faults: Vec<FaultConfig>, base: u64, seeds: u64) -> Self {
        Soak {
            faults,
            base,
            seeds,
            protocol: Protocol::default(),
            ops: None,
            planted: None,
            threads: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            ref_store_rows: if scenarios.iter().any(|s| s == "bank") {
                vec![("bank".to_owned(), RefStoreKind::Memory)]
            } else {
                Vec::new()
            },
            latency_rows: if scenarios.iter().any(|s| s == "bank") {
                vec![("bank".to_owned(), WAN_LATENCY_MS)]
            } else {
                Vec::new()
            },
            lone_rows: if scenarios.iter().any(|s| s == "rw-register") {
                vec![("rw-register".to_owned(), WAN_LATENCY_MS)]
            } else {
                Vec::new()
            },
            other_protocol_rows: TRANSACTIONAL
                .iter()
                .filter(|t| scenarios.iter().any(|s| s == *t))
                .map(|t| (*t).to_owned())
                .collect(),
            latency_ms: None,
            scenarios,
            repeat: REPEAT,
            shard: Shard::WHOLE,
        }
    }

    /// How many rows the soak has.
    ///
    /// ```
    /// use avout_scenarios::scenario::soak::{FaultConfig, Soak};
    /// let s = Soak::new(vec!["bank".into(), "counter".into()], FaultConfig::per_kind(), 1, 1);
    /// // bank again with the memory store, under the Optimistic protocol and far away
    /// assert_eq!(s.rows(), (2 + 1 + 1 + 1) * 13);
    /// let s = Soak::new(vec!["rw-register".into()], FaultConfig::per_kind(), 1, 1);
    /// // rw-register again under the Optimistic protocol, and far away with one client
    /// assert_eq!(s.rows(), (1 + 1 + 1) * 13);
    /// assert_eq!(s.lone_rows, [("rw-register".to_owned(), 60)]);
    /// ```
    pub fn rows(&self) -> usize {
        self.scenario_rows() * self.faults.len()
    }

    /// How many rows each fault configuration has: the scenarios and their extra rows.
    pub fn scenario_rows(&self) -> usize {
        self.scenarios.len()
            + self.ref_store_rows.len()
            + self.other_protocol_rows.len()
            + self.latency_rows.len()
            + self.lone_rows.len()
    }

    /// `scenario` as the soak runs it by default.
    fn plain<'a>(&self, scenario: &'a str) -> RowKind<'a> {
        RowKind {
            scenario,
            ref_store: RefStoreKind::default(),
            protocol: None,
            latency_ms: self.latency_ms,
            clients: None,
        }
    }

    /// The rows of the grid, in order: each with its faults.
    fn jobs(&self) -> Vec<(RowKind<'_>, &FaultConfig)> {
        let other = self.protocol.other();
        self.scenarios
            .iter()
            .map(|s| self.plain(s))
            .chain(self.ref_store_rows.iter().map(|(s, k)| RowKind {
                ref_store: *k,
                ..self.plain(s)
            }))
            .chain(self.other_protocol_rows.iter().map(|s| RowKind {
                protocol: Some(other),
                ..self.plain(s)
            }))
            .chain(self.latency_rows.iter().map(|(s, ms)| RowKind {
                latency_ms: Some(*ms),
                ..self.plain(s)
            }))
            .chain(self.lone_rows.iter().map(|(s, ms)| RowKind {
                latency_ms: Some(*ms),
                clients: Some(1),
                ..self.plain(s)
            }))
            .flat_map(|k| self.faults.iter().map(move |f| (k, f)))
            .collect()
    }
}

/// What a row runs: a scenario, and how its run differs from the soak's plain one.
#[derive(Clone, Copy, Debug)]
struct RowKind<'a> {
    scenario: &'a str,
    ref_store: RefStoreKind,
    protocol: Option<Protocol>,
    latency_ms: Option<u64>,
    /// Clients, when not the scenario's default.
    clients: Option<usize>,
}

impl RowKind<'_> {
    /// The row's workload (its scenario found in `registry`) with `seed`; `protocol` is the
    /// soak's, used unless the row names its own.
    fn workload(
        &self,
        registry: &Registry,
        protocol: Protocol,
        ops: Option<usize>,
        seed: u64,
    ) -> Result<Workload, RunError> {
        let mut w = registry.workload(self.scenario, seed)?;
        w.ref_store = self.ref_store;
        w.protocol = self.protocol.unwrap_or(protocol);
        w.latency_ms = self.latency_ms;
        if let Some(clients) = self.clients {
            w.clients = clients;
        }
        if let Some(ops) = ops {
            w.ops = ops;
        }
        Ok(w)
    }
}

/// One (scenario, fault configuration) row of a soak. Written to JSON (by `avout soak
/// --json`, to be [merged](merge)) without [`Row::first`], which a merge records again.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// The scenario.
    pub scenario: String,
    /// Where its refs' values lived.
    pub ref_store: RefStoreKind,
    /// The STM protocol of an extra row run under the protocol that is not the soak's
    /// ([`Soak::other_protocol_rows`]); `None`: the soak's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// The one-way latency of a distant row ([`Soak::latency_rows`]); `None`: the
    /// simulator's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// The clients of a row that does not run the scenario's default number
    /// ([`Soak::lone_rows`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<usize>,
    /// The fault configuration.
    pub faults: FaultConfig,
    /// Seeds run.
    pub seeds: u64,
    /// Failing seeds, lowest first.
    #[serde(rename = "failed_seeds")]
    pub failed: Vec<u64>,
    /// The lowest failing seed's run, recorded.
    #[serde(skip)]
    pub first: Option<Case>,
    /// The coverage marks its runs reached.
    pub coverage: Coverage,
    /// Seeds whose two runs logged different events, lowest first, with both logs' hashes:
    /// the run drew from something other than its seed, so it cannot be replayed.
    pub unrepeatable: Vec<Unrepeatable>,
}

/// A seed whose two runs differed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unrepeatable {
    /// The seed.
    pub seed: u64,
    /// The first run's event-log hash and simulated requests.
    pub first: (Option<u64>, Option<u64>),
    /// The second run's.
    pub second: (Option<u64>, Option<u64>),
}

impl Row {
    /// The row's scenario as the soak shows it: its name, with the store when its values
    /// were not in the nodes (`bank+memory`), and the protocol of an extra row
    /// (`bank+optimistic`), the clients of a row that does not run the default number
    /// (`bank+1client`), and the one-way latency of a distant row (`bank+60ms`).
    ///
    /// ```
    /// use avout_scenarios::scenario::soak::{FaultConfig, Row};
    /// use avout_scenarios::scenario::store::RefStoreKind;
    /// use avout_scenarios::scenario::Protocol;
    /// let row = Row { scenario: "bank".into(), ref_store: RefStoreKind::Memory, protocol: None, latency_ms: None, clients: None, faults: FaultConfig::none(), seeds: 1, failed: vec![], first: None, coverage: Default::default(), unrepeatable: vec![] };
    /// assert_eq!(row.label(), "bank+memory");
    /// let row = Row { ref_store: RefStoreKind::default(), protocol: Some(Protocol::Optimistic), ..row };
    /// assert_eq!(row.label(), "bank+optimistic");
    /// let row = Row { protocol: None, latency_ms: Some(60), ..row };
    /// assert_eq!(row.label(), "bank+60ms");
    /// let row = Row { clients: Some(1), ..row };
    /// assert_eq!(row.label(), "bank+1client+60ms");
    /// ```
    pub fn label(&self) -> String {
        let mut label = self.scenario.clone();
        if !self.ref_store.is_default() {
            label = format!("{label}+{}", self.ref_store.name());
        }
        if let Some(protocol) = self.protocol {
            label = format!("{label}+{}", protocol.name());
        }
        match self.clients {
            Some(1) => label = format!("{label}+1client"),
            Some(n) => label = format!("{label}+{n}clients"),
            None => {}
        }
        if let Some(ms) = self.latency_ms {
            label = format!("{label}+{ms}ms");
        }
        label
    }
}

/// What a soak found.
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// One row per (scenario, configuration), in the soak's order.
    pub rows: Vec<Row>,
    /// Runs made.
    pub runs: u64,
    /// Simulated requests over all runs.
    pub requests: u64,
    /// Wall-clock time.
    pub wall_time: Duration,
}

impl SoakReport {
    /// Whether any run failed.
    pub fn failed(&self) -> bool {
        self.rows
            .iter()
            .any(|r| !r.failed.is_empty() || !r.unrepeatable.is_empty())
    }

    /// The coverage marks of every row's runs together.
    pub fn coverage(&self) -> Coverage {
        let mut all = Coverage::default();
        for row in &self.rows {
            all.merge(&row.coverage);
        }
        all
    }
}

/// Runs the soak; `progress` is called after each run with the number of runs done.
/// `Err` only for what no seed causes (a planted bug that is not compiled in).
///
/// # Panics
///
/// If `base + seeds` overflows a `u64`.
pub fn soak(
    registry: &Registry,
    s: &Soak,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<SoakReport, RunError> {
    assert!(
        s.base.checked_add(s.seeds).is_some(),
        "seeds {}..{}+{} overflow",
        s.base,
        s.base,
        s.seeds
    );
    let wall = Instant::now();
    let jobs = s.jobs();
    // Every row's scenario is known before any run is made.
    let workloads = jobs
        .iter()
        .map(|(kind, _)| kind.workload(registry, s.protocol, s.ops, s.base))
        .collect::<Result<Vec<Workload>, RunError>>()?;
    let faults: Vec<Faults> = jobs.iter().map(|(_, f)| f.faults()).collect();
    // This shard's seeds of each row: the k-th is the row's offset `s.shard.offset(k)`.
    let per_job = s.shard.seeds_of(s.seeds);
    let seed_of = |i: u64| (i / per_job, s.base + s.shard.offset(i % per_job));
    let coverage: Vec<Mutex<Coverage>> = jobs.iter().map(|_| Mutex::default()).collect();
    let unrepeatable = std::sync::Mutex::new(Vec::new());
    let found = explore_runs(
        jobs.len() as u64 * per_job,
        s.threads,
        true,
        progress,
        &|i| {
            let (job, seed) = seed_of(i);
            let job = job as usize;
            let run = || {
                registry
                    .run(&workloads[job])
                    .seed(seed)
                    .with_faults(&faults[job])
                    .planted(s.planted)
                    .sim()
            };
            let mut report = run()?;
            // The row's first seeds, whichever shard runs them.
            if seed - s.base < s.repeat {
                let again = run()?;
                let logged = |r: &Report| (r.hash, r.requests);
                if logged(&report) != logged(&again) {
                    unrepeatable.lock().expect("not poisoned").push((
                        job,
                        Unrepeatable {
                            seed,
                            first: logged(&report),
                            second: logged(&again),
                        },
                    ));
                }
            }
            // Only the count and the seeds of failures are kept; the lowest is re-run below.
            coverage[job]
                .lock()
                .expect("not poisoned")
                .add_run(&report.coverage);
            report.history = Default::default();
            Ok(report)
        },
    )?;
    let mut rows: Vec<Row> = jobs
        .iter()
        .zip(coverage)
        .map(|((kind, faults), coverage)| Row {
            scenario: kind.scenario.to_owned(),
            ref_store: kind.ref_store,
            protocol: kind.protocol,
            latency_ms: kind.latency_ms,
            clients: kind.clients,
            faults: (*faults).clone(),
            seeds: per_job,
            failed: Vec::new(),
            first: None,
            coverage: coverage.into_inner().expect("not poisoned"),
            unrepeatable: Vec::new(),
        })
        .collect();
    let mut unrepeatable = unrepeatable.into_inner().expect("not poisoned");
    unrepeatable.sort_by_key(|(job, u)| (*job, u.seed));
    for (job, u) in unrepeatable {
        rows[job].unrepeatable.push(u);
    }
    for (i, _) in &found.failures {
        let (job, seed) = seed_of(*i);
        rows[job as usize].failed.push(seed);
    }
    record_first(registry, &mut rows, s.protocol, s.ops, s.planted)?;
    Ok(SoakReport {
        rows,
        runs: found.runs,
        requests: found.requests,
        wall_time: wall.elapsed(),
    })
}

/// Records each failing row's lowest failing seed as a [`Case`] ([`Row::first`]): the same
/// run, a function of its seed, with its choices taped for the case file.
fn record_first(
    registry: &Registry,
    rows: &mut [Row],
    protocol: Protocol,
    ops: Option<usize>,
    planted: Option<Bug>,
) -> Result<(), RunError> {
    for row in rows {
        row.first = match row.failed.first() {
            Some(&seed) => {
                let kind = RowKind {
                    scenario: &row.scenario,
                    ref_store: row.ref_store,
                    protocol: row.protocol,
                    latency_ms: row.latency_ms,
                    clients: row.clients,
                };
                let w = kind.workload(registry, protocol, ops, seed)?;
                Some(Case::record_faults(
                    registry,
                    &w,
                    &row.faults.faults(),
                    planted,
                )?)
            }
            None => None,
        };
    }
    Ok(())
}

/// A kept regression case, run again.
#[derive(Clone, Debug)]
pub struct Kept {
    /// Its file.
    pub path: PathBuf,
    /// The failure it was kept for.
    pub anomaly: String,
    /// The planted bug the case was kept with, if any: the rerun leaves it out.
    pub planted: Option<Bug>,
    /// The run now.
    pub report: Report,
}

/// Runs every kept case (`*.json` in `dir`, in name order) again from its seed and fault
/// plan, without its planted bug: a failure found once is run first, every time, and the
/// correct code must pass it. (A case kept with a planted bug, the museum's among them, is
/// the bug's shrunk failure: that it still fails *with* the bug is its test's to check, in a
/// build with the feature; here it guards the correct code, in any build.)
///
/// ```
/// let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../regressions");
/// let registry = avout_scenarios::scenario::Registry::builtins();
/// let kept = avout_scenarios::scenario::soak::rerun_kept(&registry, &dir).unwrap();
/// assert!(!kept.is_empty());
/// assert!(kept.iter().all(|k| k.report.verdict.is_valid()), "{kept:?}");
/// ```
pub fn rerun_kept(registry: &Registry, dir: &Path) -> Result<Vec<Kept>, CaseError> {
    let io = |source| CaseError::Io {
        path: dir.display().to_string(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let case = Case::load(&path)?;
            let report = case.rerun(registry, None)?;
            let anomaly = case.anomalies.first().cloned().unwrap_or_default();
            Ok(Kept {
                path,
                anomaly,
                planted: case.planted,
                report,
            })
        })
        .collect()
}
