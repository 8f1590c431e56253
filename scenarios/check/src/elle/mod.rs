//! What Elle's transactional checkers share, whatever their micro-operations: the dependency
//! graph over transactions ([`graph`]), the search for its cycles and their names by Adya's
//! phenomena ([`cycle`]), the order edges a consistency model adds ([`order`]), and the
//! findings a check ends with ([`findings`]).
//!
//! A checker of one workload (list-append, rw-register) parses its history, infers what the
//! micro-operations show of each key's versions, checks what needs no graph (aborted,
//! intermediate and internal reads, lost updates), adds its dependency edges (`ww`, `wr`,
//! `rw`) to a [`graph::Graph`], lets [`order::order_edges`] add process and real-time edges for
//! the model checked, and [`cycle::find_cycles`] name the cycles, explaining each edge in its
//! own words.

pub(crate) mod atom;
pub(crate) mod cycle;
pub(crate) mod findings;
pub(crate) mod graph;
pub(crate) mod order;
pub(crate) mod parse;
#[cfg(any(test, feature = "synth"))]
pub(crate) mod testing;

use std::fmt;

/// The consistency model a transactional history is checked against: which order edges its
/// dependency graph includes.
///
/// ```
/// use avout_check::list_append::Consistency;
/// assert_eq!(Consistency::default(), Consistency::StrictSerializable);
/// assert_eq!(Consistency::Serializable.to_string(), "serializable");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Consistency {
    /// Dependency edges only: some serial order explains every read.
    Serializable,
    /// Plus each process's order: a process sees its own committed transactions.
    StrongSessionSerializable,
    /// Plus real time: a transaction sees every one that completed before it began.
    #[default]
    StrictSerializable,
}

impl Consistency {
    /// As a checker's name says it: `strict serializability`.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Consistency::Serializable => "serializability",
            Consistency::StrongSessionSerializable => "strong session serializability",
            Consistency::StrictSerializable => "strict serializability",
        }
    }
}

impl fmt::Display for Consistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Consistency::Serializable => "serializable",
            Consistency::StrongSessionSerializable => "strong-session-serializable",
            Consistency::StrictSerializable => "strict-serializable",
        })
    }
}

/// What a transactional checker holds a history to: a consistency model, and whether write
/// skew is allowed within it (snapshot isolation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Model {
    pub(crate) consistency: Consistency,
    pub(crate) allow_write_skew: bool,
}

impl Model {
    /// The model `avout check`'s options (or a scenario's) say.
    pub(crate) fn of(options: &crate::Options) -> Model {
        Model {
            consistency: options.consistency,
            allow_write_skew: options.allow_write_skew,
        }
    }

    /// A checker's name: `list-append (Elle, strict serializability)`.
    pub(crate) fn name(self, workload: &str) -> String {
        let model = self.consistency.noun();
        if self.allow_write_skew {
            format!("{workload} (Elle, {model} but G2-item: snapshot isolation)")
        } else {
            format!("{workload} (Elle, {model})")
        }
    }

    /// Drops from `findings` what the model allows.
    pub(crate) fn allow<A: findings::Found>(self, findings: &mut findings::Findings<A>) {
        if self.allow_write_skew {
            findings.allow_write_skew();
        }
    }
}

/// The parts of an Elle checker that only its name tells apart: `new`, `of`, `consistency`,
/// `analyse` and the [`Checker`](crate::Checker) impl, for a struct `$ty { model: Model }` in a
/// module with its own `Parsed::new(history)`, `Parsed::from_file(path)` and
/// `Analysis::run(&parsed, consistency)`.
macro_rules! elle_checker {
    ($ty:ident, $name:literal) => {
        impl $ty {
            /// A checker for strict serializability.
            pub fn new() -> Self {
                $ty::default()
            }

            /// A checker for `model`.
            pub(crate) fn of(model: $crate::elle::Model) -> Self {
                $ty { model }
            }

            /// The model to check.
            pub fn consistency(mut self, consistency: Consistency) -> Self {
                self.model.consistency = consistency;
                self
            }

            /// Judges a history, every anomaly in detail.
            pub(crate) fn analyse(&self, history: &History) -> Result<Findings, CheckError> {
                Ok(self.findings(&Parsed::new(history)?))
            }

            fn findings(&self, parsed: &Parsed) -> Findings {
                let mut findings = Analysis::run(parsed, self.model.consistency);
                self.model.allow(&mut findings);
                findings
            }
        }

        impl $crate::Checker for $ty {
            fn name(&self) -> String {
                self.model.name($name)
            }

            fn check(&self, history: &History) -> Result<$crate::Verdict, CheckError> {
                Ok(self.analyse(history)?.verdict(self.name()))
            }

            fn check_file(&self, path: &std::path::Path) -> Result<$crate::Verdict, CheckError> {
                let parsed = Parsed::from_file(path)?;
                Ok(self.findings(&parsed).verdict(self.name()))
            }
        }
    };
}
pub(crate) use elle_checker;
