//! Lock transactions as values: statements, the conditions they assert and the changes they
//! make, with the constructors that read like the Azos operators (`assert(not(exists(..)))`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// One entry slot: a variable (`var`) of a table, as in `exists("Month-End", "CGROVE-35")`.
///
/// ```
/// let s = avout::locktable::Slot::new("Month-End", "CGROVE-35");
/// assert_eq!(s.to_string(), "Month-End/CGROVE-35");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Slot {
    /// The table (Azos's "variable" table name, e.g. `MDS-Entry`).
    pub table: String,
    /// The variable in it (e.g. a facility, `CGROVE-35`).
    pub var: String,
}

impl Slot {
    /// The slot `table`/`var`.
    ///
    /// ```
    /// assert_eq!(avout::locktable::Slot::new("t", "v").var, "v");
    /// ```
    pub fn new(table: impl Into<String>, var: impl Into<String>) -> Slot {
        Slot {
            table: table.into(),
            var: var.into(),
        }
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.table, self.var)
    }
}

/// A change to the caller's own entry in a slot. As a [`Condition`] it is true when it was
/// applied.
///
/// ```
/// use avout::locktable::{delete_var, set_var};
/// assert_eq!(set_var("MDS-Entry", "CGROVE-35", "R-45899").allow_duplicates().to_string(),
///            r#"set_var(MDS-Entry/CGROVE-35 = "R-45899", duplicates)"#);
/// assert_eq!(delete_var("MDS-Review", "CGROVE-35").to_string(), "delete_var(MDS-Review/CGROVE-35)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Change {
    /// Sets this session's entry in the slot to `value` (creating it, or replacing its value).
    /// Without duplicates it is refused while another session has an entry in the slot;
    /// with duplicates it always applies.
    SetVar {
        /// The slot.
        slot: Slot,
        /// The entry's value.
        value: String,
        /// Whether other sessions' entries may coexist.
        allow_duplicates: bool,
    },
    /// Deletes this session's entry in the slot (only if its value is `value`, when given);
    /// refused when there is no such entry.
    DeleteVar {
        /// The slot.
        slot: Slot,
        /// The value the entry must have, if any.
        value: Option<String>,
    },
}

impl Change {
    /// The same set-var, letting other sessions' entries coexist (Azos's `allowDuplicates`).
    /// A no-op on a delete-var.
    ///
    /// ```
    /// use avout::locktable::{set_var, Change};
    /// assert!(matches!(set_var("t", "v", "x").allow_duplicates(),
    ///     Change::SetVar { allow_duplicates: true, .. }));
    /// ```
    pub fn allow_duplicates(mut self) -> Change {
        if let Change::SetVar {
            allow_duplicates, ..
        } = &mut self
        {
            *allow_duplicates = true;
        }
        self
    }

    /// The slot the change concerns.
    ///
    /// ```
    /// assert_eq!(avout::locktable::delete_var("t", "v").slot().table, "t");
    /// ```
    pub fn slot(&self) -> &Slot {
        match self {
            Change::SetVar { slot, .. } | Change::DeleteVar { slot, .. } => slot,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::SetVar {
                slot,
                value,
                allow_duplicates,
            } => {
                write!(f, "set_var({slot} = {value:?}")?;
                if *allow_duplicates {
                    write!(f, ", duplicates")?;
                }
                write!(f, ")")
            }
            Change::DeleteVar { slot, value: None } => write!(f, "delete_var({slot})"),
            Change::DeleteVar {
                slot,
                value: Some(v),
            } => write!(f, "delete_var({slot} = {v:?})"),
        }
    }
}

/// What an [`assert`](fn@assert) requires.
///
/// ```
/// use avout::locktable::{exists, not};
/// let c = not(exists("Month-End", "CGROVE-35"));
/// assert_eq!(c.to_string(), "not(exists(Month-End/CGROVE-35))");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Condition {
    /// True when the slot has an entry of *another* session (or of any session, with
    /// `include_own`) whose value is `value`, when given.
    Exists {
        /// The slot.
        slot: Slot,
        /// The value a matching entry must have, if any.
        value: Option<String>,
        /// Whether this session's own entry counts (Azos's `ignoreThisSession = false`).
        include_own: bool,
    },
    /// The negation.
    Not(Box<Condition>),
    /// A change, true when applied.
    Change(Change),
}

impl Condition {
    /// The same exists-condition, matching only entries whose value is `value`.
    /// A no-op on other conditions.
    ///
    /// ```
    /// use avout::locktable::exists;
    /// assert_eq!(exists("t", "v").with_value("x").to_string(), r#"exists(t/v = "x")"#);
    /// ```
    pub fn with_value(mut self, wanted: impl Into<String>) -> Condition {
        if let Condition::Exists { value, .. } = &mut self {
            *value = Some(wanted.into());
        }
        self
    }

    /// The same exists-condition, counting this session's own entry too.
    /// A no-op on other conditions.
    ///
    /// ```
    /// use avout::locktable::exists;
    /// assert_eq!(exists("t", "v").including_own().to_string(), "exists(t/v, own too)");
    /// ```
    pub fn including_own(mut self) -> Condition {
        if let Condition::Exists { include_own, .. } = &mut self {
            *include_own = true;
        }
        self
    }

    fn slots<'a>(&'a self, out: &mut Vec<&'a Slot>) {
        match self {
            Condition::Exists { slot, .. } => out.push(slot),
            Condition::Not(inner) => inner.slots(out),
            Condition::Change(change) => out.push(change.slot()),
        }
    }
}

impl From<Change> for Condition {
    fn from(change: Change) -> Condition {
        Condition::Change(change)
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Exists {
                slot,
                value,
                include_own,
            } => {
                write!(f, "exists({slot}")?;
                if let Some(v) = value {
                    write!(f, " = {v:?}")?;
                }
                if *include_own {
                    write!(f, ", own too")?;
                }
                write!(f, ")")
            }
            Condition::Not(inner) => write!(f, "not({inner})"),
            Condition::Change(change) => change.fmt(f),
        }
    }
}

/// One statement of a [`Transaction`].
///
/// ```
/// use avout::locktable::{anyway_continue_after, assert, delete_var, exists, not};
/// assert_eq!(assert(not(exists("Month-End", "F"))).to_string(), "assert(not(exists(Month-End/F)))");
/// assert_eq!(anyway_continue_after(delete_var("R", "F")).to_string(),
///            "anyway_continue_after(delete_var(R/F))");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Statement {
    /// Aborts the whole transaction unless the condition holds.
    Assert(Condition),
    /// Applies the change if it can be applied, and goes on either way.
    AnywayContinueAfter(Change),
}

impl Statement {
    /// The slots the statement reads or changes.
    pub(crate) fn slots(&self) -> Vec<&Slot> {
        let mut out = Vec::new();
        match self {
            Statement::Assert(c) => c.slots(&mut out),
            Statement::AnywayContinueAfter(change) => out.push(change.slot()),
        }
        out
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Assert(c) => write!(f, "assert({c})"),
            Statement::AnywayContinueAfter(change) => write!(f, "anyway_continue_after({change})"),
        }
    }
}

/// A lock transaction: statements applied in order, all or nothing.
///
/// ```
/// use avout::locktable::{assert, exists, not, set_var, Transaction};
/// let entry = Transaction::new("MDS entry", vec![
///     assert(not(exists("Month-End", "CGROVE-35"))),
///     assert(set_var("MDS-Entry", "CGROVE-35", "R-45899").allow_duplicates()),
/// ]);
/// assert_eq!(entry.statements.len(), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Transaction {
    /// What it is for; stored with the entries it sets.
    pub description: String,
    /// The statements, in order.
    pub statements: Vec<Statement>,
}

impl Transaction {
    /// A transaction of `statements`.
    ///
    /// ```
    /// let t = avout::locktable::Transaction::new("nothing", vec![]);
    /// assert!(t.statements.is_empty());
    /// ```
    pub fn new(description: impl Into<String>, statements: Vec<Statement>) -> Transaction {
        Transaction {
            description: description.into(),
            statements,
        }
    }
}

/// `assert(condition)`: abort unless it holds.
///
/// ```
/// let s = avout::locktable::assert(avout::locktable::exists("t", "v"));
/// assert!(matches!(s, avout::locktable::Statement::Assert(_)));
/// ```
pub fn assert(condition: impl Into<Condition>) -> Statement {
    Statement::Assert(condition.into())
}

/// `anyway_continue_after(change)`: apply it if possible, go on either way.
///
/// ```
/// let s = avout::locktable::anyway_continue_after(avout::locktable::delete_var("t", "v"));
/// assert!(matches!(s, avout::locktable::Statement::AnywayContinueAfter(_)));
/// ```
pub fn anyway_continue_after(change: Change) -> Statement {
    Statement::AnywayContinueAfter(change)
}

/// `not(condition)`.
///
/// ```
/// let c = avout::locktable::not(avout::locktable::exists("t", "v"));
/// assert!(matches!(c, avout::locktable::Condition::Not(_)));
/// ```
pub fn not(condition: impl Into<Condition>) -> Condition {
    Condition::Not(Box::new(condition.into()))
}

/// `exists(table, var)`: another session has an entry in the slot (refine with
/// [`Condition::with_value`] and [`Condition::including_own`]).
///
/// ```
/// let c = avout::locktable::exists("MDS-Review", "CGROVE-35").with_value("R-45899");
/// assert!(matches!(c, avout::locktable::Condition::Exists { value: Some(_), .. }));
/// ```
pub fn exists(table: impl Into<String>, var: impl Into<String>) -> Condition {
    Condition::Exists {
        slot: Slot::new(table, var),
        value: None,
        include_own: false,
    }
}

/// `set_var(table, var, value)`, without duplicates (see [`Change::allow_duplicates`]).
///
/// ```
/// let c = avout::locktable::set_var("MDS-Review", "CGROVE-35", "R-45899");
/// assert!(matches!(c, avout::locktable::Change::SetVar { allow_duplicates: false, .. }));
/// ```
pub fn set_var(
    table: impl Into<String>,
    var: impl Into<String>,
    value: impl Into<String>,
) -> Change {
    Change::SetVar {
        slot: Slot::new(table, var),
        value: value.into(),
        allow_duplicates: false,
    }
}

/// `delete_var(table, var)`: delete this session's entry in the slot, whatever its value.
///
/// ```
/// let c = avout::locktable::delete_var("MDS-Review", "CGROVE-35");
/// assert!(matches!(c, avout::locktable::Change::DeleteVar { value: None, .. }));
/// ```
pub fn delete_var(table: impl Into<String>, var: impl Into<String>) -> Change {
    Change::DeleteVar {
        slot: Slot::new(table, var),
        value: None,
    }
}

/// `delete_var(table, var, value)`: delete this session's entry only if its value is `value`.
///
/// ```
/// let c = avout::locktable::delete_var_value("MDS-Review", "CGROVE-35", "R-45899");
/// assert!(matches!(c, avout::locktable::Change::DeleteVar { value: Some(_), .. }));
/// ```
pub fn delete_var_value(
    table: impl Into<String>,
    var: impl Into<String>,
    value: impl Into<String>,
) -> Change {
    Change::DeleteVar {
        slot: Slot::new(table, var),
        value: Some(value.into()),
    }
}

/// A table or variable name as a ZooKeeper node name: bytes other than ASCII letters, digits,
/// `-` and `_` are written `%XX`, so any name maps to a valid, distinct node name (no `/`,
/// never `.` or `..`).
///
/// ```
/// assert_eq!(avout::locktable::encode_name("MDS Entry/2"), "MDS%20Entry%2F2");
/// assert_eq!(avout::locktable::encode_name(".."), "%2E%2E");
/// ```
pub fn encode_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
