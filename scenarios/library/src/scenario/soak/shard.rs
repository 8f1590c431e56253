//! A soak spread over machines: each [`Shard`] runs a deterministic slice of every row's
//! seeds, writes what it found as a [`SoakSlice`] (`avout soak --shard I/N --json`), and
//! [`merge`] folds the slices into the slice of the whole soak, which is what one machine
//! running every seed would have found.
//!
//! Shard `I` of `N` runs the seeds at offsets `I, I + N, I + 2N, …` from the base, in every
//! row: interleaved rather than in blocks, so a row whose runs grow slower with the seed (or
//! a batch of slow seeds) is spread evenly over the shards. Which shard runs a seed never
//! changes what the run does: a run is a function of its seed. The first [`Soak::repeat`]
//! seeds of a row run twice in whichever shard holds them, so the merged soak repeats the
//! same seeds as the whole one. Any batch scheduler can run the shards: a CI matrix, an
//! indexed Kubernetes Job (`--shard $JOB_COMPLETION_INDEX/N`), or a loop over machines.
//!
//! A slice records its rows' failing seeds, not their case files: the merge records the
//! lowest failing seed of each row again ([`SoakSlice::record_first`]), the same run taped,
//! so the merged case files are the whole soak's, byte for byte.
//!
//! ```
//! use avout_scenarios::scenario::Registry;
//! use avout_scenarios::scenario::soak::{FaultConfig, Shard, Soak, SoakSlice, merge, soak};
//! let registry = Registry::builtins();
//! let mut s = Soak::new(vec!["counter".into()], vec![FaultConfig::all()], 40, 6);
//! s.ops = Some(2);
//! let slices: Vec<SoakSlice> = (0..3)
//!     .map(|i| {
//!         let s = Soak { shard: Shard::new(i, 3).unwrap(), ..s.clone() };
//!         SoakSlice::of(&s, &soak(&registry, &s, &|_| {}).unwrap())
//!     })
//!     .collect();
//! assert_eq!(slices[1].rows[0].seeds, 2); // seeds 41 and 44
//! let merged = merge(&slices).unwrap();
//! let whole = SoakSlice::of(&s, &soak(&registry, &s, &|_| {}).unwrap());
//! assert_eq!(merged.rows[0].seeds, 6);
//! assert_eq!(merged.runs, whole.runs);
//! assert_eq!(merged.rows[0].coverage, whole.rows[0].coverage);
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use avout::planted::Bug;
use serde::{Deserialize, Serialize};

use super::{Row, Soak, SoakReport, record_first};
use crate::scenario::{Protocol, Registry, RunError};

/// Which slice of the seeds a soak runs: the `index`-th of `count` (from 0), written `I/N`.
///
/// ```
/// use avout_scenarios::scenario::soak::Shard;
/// let s: Shard = "1/4".parse().unwrap();
/// assert_eq!((s.index(), s.count(), s.to_string()), (1, 4, "1/4".to_owned()));
/// assert_eq!(s.seeds_of(10), 3); // offsets 1, 5 and 9
/// assert_eq!(s.offset(2), 9);
/// assert!("4/4".parse::<Shard>().is_err() && "1/0".parse::<Shard>().is_err());
/// assert!("2".parse::<Shard>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Shard {
    index: u64,
    count: u64,
}

/// A shard that names no slice.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Not `I/N` with two numbers.
    #[error("shard {0:?}: expected I/N, such as 0/4 (the first of four slices)")]
    Syntax(String),
    /// `N` is 0, or `I` is not below it.
    #[error(
        "shard {index}/{count}: the index counts from 0 and must be below the count (1 or more)"
    )]
    OutOfRange {
        /// `I`.
        index: u64,
        /// `N`.
        count: u64,
    },
}

impl Shard {
    /// Every seed: the one slice of one.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// The `index`-th slice of `count`.
    pub fn new(index: u64, count: u64) -> Result<Shard, ShardError> {
        if index < count {
            Ok(Shard { index, count })
        } else {
            Err(ShardError::OutOfRange { index, count })
        }
    }

    /// Its index, from 0.
    pub fn index(self) -> u64 {
        self.index
    }

    /// How many slices there are.
    pub fn count(self) -> u64 {
        self.count
    }

    /// How many of a row's `seeds` offsets it runs.
    pub fn seeds_of(self, seeds: u64) -> u64 {
        seeds.saturating_sub(self.index).div_ceil(self.count)
    }

    /// The offset from the base of its `k`-th seed.
    pub fn offset(self, k: u64) -> u64 {
        self.index + k * self.count
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (index, count) = s.split_once('/').ok_or_else(syntax)?;
        let number = |n: &str| n.trim().parse::<u64>().map_err(|_| syntax());
        Shard::new(number(index)?, number(count)?)
    }
}

impl From<Shard> for String {
    fn from(shard: Shard) -> String {
        shard.to_string()
    }
}

impl TryFrom<String> for Shard {
    type Error = ShardError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

/// What one shard of a soak found, with what it ran: the input of [`merge`]. `avout soak
/// --json` prints it (with more fields, for people and scripts, that a merge ignores).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SoakSlice {
    /// The soak's first seed.
    pub base: u64,
    /// Seeds per row of the whole soak (this slice ran [`Shard::seeds_of`] them).
    pub seeds: u64,
    /// Which slice this is.
    pub shard: Shard,
    /// The planted bug that was on.
    #[serde(default)]
    pub planted: Option<Bug>,
    /// The STM protocol of the transactional scenarios.
    pub protocol: Protocol,
    /// Operations per client, when not each scenario's.
    #[serde(default)]
    pub ops: Option<usize>,
    /// Seeds of each row run twice.
    pub repeat: u64,
    /// Runs made.
    pub runs: u64,
    /// Simulated requests over all runs.
    pub requests: u64,
    /// Wall-clock seconds (of a merge: its slices' sum, the machine time spent).
    pub wall_time_s: f64,
    /// The rows, in the soak's order.
    pub rows: Vec<Row>,
}

/// Slices that do not make one soak.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no slices to merge")]
    Empty,
    /// Two slices ran different soaks.
    #[error(
        "slice {shard} ran another soak than slice {first}: its {what} differs \
         ({theirs} against {ours})"
    )]
    Differs {
        /// The first slice's shard.
        first: Shard,
        /// The differing slice's shard.
        shard: Shard,
        /// What differs.
        what: &'static str,
        /// The first slice's.
        ours: String,
        /// The differing slice's.
        theirs: String,
    },
    /// A slice is there twice.
    #[error("slice {0} is given twice")]
    Twice(Shard),
    /// A slice is missing.
    #[error("slice {index}/{count} is missing: the merge would not cover every seed")]
    Missing {
        /// Its index.
        index: u64,
        /// The count.
        count: u64,
    },
}

impl SoakSlice {
    /// The slice that `soak` made as `report`.
    pub fn of(soak: &Soak, report: &SoakReport) -> SoakSlice {
        SoakSlice {
            base: soak.base,
            seeds: soak.seeds,
            shard: soak.shard,
            planted: soak.planted,
            protocol: soak.protocol,
            ops: soak.ops,
            repeat: soak.repeat,
            runs: report.runs,
            requests: report.requests,
            wall_time_s: report.wall_time.as_secs_f64(),
            rows: report.rows.clone(),
        }
    }

    /// Records each failing row's lowest failing seed as its case ([`Row::first`]), as the
    /// soak itself does: a slice read from JSON has the seeds, not the cases.
    pub fn record_first(&mut self, registry: &Registry) -> Result<(), RunError> {
        record_first(
            registry,
            &mut self.rows,
            self.protocol,
            self.ops,
            self.planted,
        )
    }

    /// It as a report, to print as a soak's.
    pub fn report(&self) -> SoakReport {
        SoakReport {
            rows: self.rows.clone(),
            runs: self.runs,
            requests: self.requests,
            wall_time: Duration::from_secs_f64(self.wall_time_s.max(0.0)),
        }
    }

    /// What every slice of one soak shares, by name, written to be compared.
    fn identity(&self) -> [(&'static str, String); 8] {
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| format!("{} ({})", r.label(), r.faults.name))
            .collect();
        [
            ("base", self.base.to_string()),
            ("seeds", self.seeds.to_string()),
            ("shard count", self.shard.count.to_string()),
            ("planted bug", format!("{:?}", self.planted)),
            ("protocol", format!("{:?}", self.protocol)),
            ("operations", format!("{:?}", self.ops)),
            ("repeat", self.repeat.to_string()),
            ("rows", rows.join(", ")),
        ]
    }
}

/// Folds the slices of one soak, every shard exactly once, into the whole soak's slice: each
/// row's seeds, failing seeds, unrepeatable seeds and coverage added up, in seed order. The
/// rows' cases are left to [`SoakSlice::record_first`].
///
/// # Errors
///
/// [`MergeError`] if the slices ran different soaks, or a shard is missing or given twice.
pub fn merge(slices: &[SoakSlice]) -> Result<SoakSlice, MergeError> {
    let first = slices.first().ok_or(MergeError::Empty)?;
    let identity = first.identity();
    let count = first.shard.count;
    let mut seen = std::collections::BTreeSet::new();
    for slice in slices {
        for ((what, ours), (_, theirs)) in identity.iter().zip(slice.identity()) {
            if *ours != theirs {
                return Err(MergeError::Differs {
                    first: first.shard,
                    shard: slice.shard,
                    what,
                    ours: ours.clone(),
                    theirs,
                });
            }
        }
        if !seen.insert(slice.shard.index) {
            return Err(MergeError::Twice(slice.shard));
        }
    }
    // The indices seen are distinct and below the count: all there iff as many as the count.
    if let Some(index) = (0..count).find(|i| !seen.contains(i)) {
        return Err(MergeError::Missing { index, count });
    }
    let mut merged = SoakSlice {
        shard: Shard::WHOLE,
        runs: 0,
        requests: 0,
        wall_time_s: 0.0,
        rows: first
            .rows
            .iter()
            .map(|r| Row {
                seeds: 0,
                failed: Vec::new(),
                first: None,
                coverage: Default::default(),
                unrepeatable: Vec::new(),
                ..r.clone()
            })
            .collect(),
        ..first.clone()
    };
    for slice in slices {
        merged.runs += slice.runs;
        merged.requests += slice.requests;
        merged.wall_time_s += slice.wall_time_s;
        for (row, part) in merged.rows.iter_mut().zip(&slice.rows) {
            row.seeds += part.seeds;
            row.failed.extend(&part.failed);
            row.coverage.merge(&part.coverage);
            row.unrepeatable.extend(&part.unrepeatable);
        }
    }
    for row in &mut merged.rows {
        row.failed.sort_unstable();
        row.unrepeatable.sort_by_key(|u| u.seed);
    }
    Ok(merged)
}
