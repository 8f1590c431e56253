//! [`Checks`]: the checkers a scenario binds to judge its history, by name from avout-check's
//! registry ([`Checkers::builtins`]) or checkers of the user's own, judged together.

use avout_check::history::History;
use avout_check::{Checker, Checkers, Options, Verdict};

/// The checkers a scenario's history is judged by, and the name of their joint verdict.
///
/// ```
/// use avout_check::Options;
/// use avout_scenarios::scenario::Checks;
/// let checks = Checks::named("holds", &Options::default())
///     .and("mutex", &Options::default())
///     .labelled("mutex (fencing) and the mutex checker");
/// let verdict = checks.judge(&Default::default());
/// assert_eq!(verdict.to_string(), "valid (mutex (fencing) and the mutex checker)");
/// ```
pub struct Checks {
    label: Option<String>,
    checkers: Vec<Box<dyn Checker>>,
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checks")
            .field("label", &self.label())
            .finish_non_exhaustive()
    }
}

impl Checks {
    /// The built-in checker `name`, told `options`.
    ///
    /// # Panics
    ///
    /// If no built-in checker has that name: a scenario's binding is part of its code.
    pub fn named(name: &str, options: &Options) -> Self {
        Checks {
            label: None,
            checkers: Vec::new(),
        }
        .and(name, options)
    }

    /// `checker`, a checker of the user's own.
    ///
    /// ```
    /// use avout_scenarios::scenario::Checks;
    /// let checks = Checks::of(avout_check::recipes::counter::CHECKER);
    /// assert_eq!(checks.label(), "counter");
    /// ```
    pub fn of(checker: impl Checker + 'static) -> Self {
        Checks {
            label: None,
            checkers: vec![Box::new(checker)],
        }
    }

    /// The same, and the built-in checker `name` too.
    ///
    /// # Panics
    ///
    /// If no built-in checker has that name.
    pub fn and(mut self, name: &str, options: &Options) -> Self {
        let checker = Checkers::builtins()
            .get(name, options)
            .unwrap_or_else(|e| panic!("a scenario binds {e}"));
        self.checkers.push(checker);
        self
    }

    /// The same, its verdict named `label` (by default, its checkers' names joined by
    /// `and`).
    pub fn labelled(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// The name of its verdict.
    pub fn label(&self) -> String {
        self.label.clone().unwrap_or_else(|| {
            let names: Vec<String> = self.checkers.iter().map(|c| c.name()).collect();
            names.join(" and ")
        })
    }

    /// Judges `history` by every checker, in order, as one verdict; a checker that refuses
    /// the history says so as an anomaly ([`Checker::judge`]).
    pub fn judge(&self, history: &History) -> Verdict {
        Verdict::all(self.label(), self.checkers.iter().map(|c| c.judge(history)))
    }
}
