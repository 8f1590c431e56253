//! Coverage of many runs: how many runs reached each of the protocol code's marks
//! ([`avout::coverage`]), and how often.
//!
//! Every simulated run counts the marks it reached ([`Report::coverage`]); a soak adds its
//! runs up per row ([`Coverage::add_run`]) and folds rows and shards together
//! ([`Coverage::merge`]). Marks are kept by name, so a file written by a build with other
//! marks still merges: a mark this build does not know is kept as it is. A mark no run reached
//! is a finding: no scenario, fault mix or seed brought the code to that state.
//!
//! [`Report::coverage`]: super::Report::coverage
//!
//! ```
//! use avout::coverage::{Counts, Mark};
//! use avout_scenarios::scenario::coverage::Coverage;
//! let mut run = Counts::default();
//! run.add_one(Mark::ClientSessionReplaced);
//! run.add_one(Mark::ClientSessionReplaced);
//! let mut c = Coverage::default();
//! c.add_run(&run);
//! c.add_run(&Counts::default());
//! let reached = c.get(Mark::ClientSessionReplaced);
//! assert_eq!((c.runs, reached.runs, reached.times), (2, 1, 2));
//! assert!(c.unreached().any(|m| m == Mark::StmMvccBargedRunning));
//! ```

use std::collections::BTreeMap;

use avout::coverage::{Counts, Mark};
use serde::{Deserialize, Serialize};

/// How often one mark was reached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reached {
    /// Runs that reached it at least once.
    pub runs: u64,
    /// Times it was reached, over all runs.
    pub times: u64,
}

/// The marks reached over many runs (see the [module docs](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Runs counted.
    pub runs: u64,
    /// The marks reached, by name (marks never reached are left out).
    pub marks: BTreeMap<String, Reached>,
}

impl Coverage {
    /// Counts one more run, which reached the marks of `counts`.
    pub fn add_run(&mut self, counts: &Counts) {
        self.runs += 1;
        for (mark, times) in counts.reached() {
            let r = self.marks.entry(mark.name().to_owned()).or_default();
            r.runs += 1;
            r.times += times;
        }
    }

    /// Folds `other`'s runs into these.
    ///
    /// ```
    /// use avout::coverage::{Counts, Mark};
    /// use avout_scenarios::scenario::coverage::Coverage;
    /// let mut counts = Counts::default();
    /// counts.add_one(Mark::LockGaveUpQueued);
    /// let (mut a, mut b) = (Coverage::default(), Coverage::default());
    /// a.add_run(&counts);
    /// b.add_run(&counts);
    /// a.merge(&b);
    /// assert_eq!((a.runs, a.get(Mark::LockGaveUpQueued).runs), (2, 2));
    /// ```
    pub fn merge(&mut self, other: &Coverage) {
        self.runs += other.runs;
        for (name, r) in &other.marks {
            let mine = self.marks.entry(name.clone()).or_default();
            mine.runs += r.runs;
            mine.times += r.times;
        }
    }

    /// How often `mark` was reached.
    pub fn get(&self, mark: Mark) -> Reached {
        self.marks.get(mark.name()).copied().unwrap_or_default()
    }

    /// The marks of this build that no run reached, in declaration order.
    pub fn unreached(&self) -> impl Iterator<Item = Mark> + '_ {
        Mark::ALL.iter().copied().filter(|m| self.get(*m).runs == 0)
    }
}
