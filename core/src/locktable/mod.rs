//! Lock tables (after Azos's Sky locking): namespaces of named variables, changed by lock
//! transactions that apply all or nothing, with entries owned by the caller's session.
//!
//! A namespace holds tables; a table holds variables (*slots*); a slot holds at most one
//! *entry* per session, with a value. A [`Transaction`] is a list of statements:
//!
//! | statement | meaning |
//! |---|---|
//! | [`assert(c)`](fn@assert) | abort the whole transaction unless `c` holds |
//! | [`not(c)`](not) | negation |
//! | [`exists(t, v)`](exists) | another session has an entry in slot `t/v` (refine: [`with_value`](Condition::with_value), [`including_own`](Condition::including_own)) |
//! | [`set_var(t, v, x)`](set_var) | set this session's entry to `x`; refused while another session has one, unless [`allow_duplicates`](Change::allow_duplicates) |
//! | [`delete_var(t, v)`](delete_var) | delete this session's entry (refused if there is none) |
//! | [`anyway_continue_after(ch)`](anyway_continue_after) | apply `ch` if it can be, go on either way |
//!
//! A failed transaction changes nothing and names the failing statement
//! ([`LockTableError::Failed`]: its index and the statement itself).
//!
//! ```no_run
//! use avout::locktable::{assert, exists, not, set_var, LockTable, LockTableError, Transaction};
//! # async fn demo(user1: &avout::Client, user3: &avout::Client) -> Result<(), LockTableError> {
//! let mds_entry = Transaction::new("MDS entry for Zak Pak at Cherry Grove", vec![
//!     assert(not(exists("Month-End", "CGROVE-35"))),
//!     assert(not(exists("MDS-Review", "CGROVE-35").with_value("R-45899"))),
//!     assert(set_var("MDS-Entry", "CGROVE-35", "R-45899").allow_duplicates()),
//! ]);
//! let mds_review = Transaction::new("MDS review for Zak Pak at Cherry Grove", vec![
//!     assert(not(exists("Month-End", "CGROVE-35"))),
//!     assert(not(exists("MDS-Entry", "CGROVE-35").with_value("R-45899"))),
//!     assert(set_var("MDS-Review", "CGROVE-35", "R-45899")),
//! ]);
//! LockTable::new(user1, "/locking/Clinical")?.execute(&mds_entry).await?;
//! match LockTable::new(user3, "/locking/Clinical")?.execute(&mds_review).await {
//!     Err(LockTableError::Failed { index: 1, .. }) => { /* someone is entering */ }
//!     other => { other?; }
//! }
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! `<ns>/vars/<table>/<var>` is a slot (persistent; names [encoded](encode_name)), and
//! `<slot>/<session id, 16 hex digits>` an entry: an **ephemeral** node holding the value, the
//! setting transaction's id and description. `<ns>/tx/<session>-<GUID>` is a handle's marker
//! (ephemeral), holding the id of the last transaction the handle committed.
//!
//! # How a transaction runs: one `multi`, no namespace lock
//!
//! The statements are evaluated on a snapshot of the slots they name, and the outcome is made
//! conditional on that snapshot in one ZooKeeper `multi` (the algorithm is in
//! [`TxMachine`]'s module). The snapshot is protected by two kinds of check, and every
//! statement needs only these:
//!
//! - *the slot is unchanged since it was read*: every transaction that changes a slot's
//!   entries also writes the slot node in the same `multi`, so a version check on the slot
//!   covers every change made by a transaction. This is what `not(exists)`, a refused or
//!   applied `set_var` (with or without duplicates: the set depends on who else has an entry)
//!   and `delete_var` rely on. A slot that was never used is created before it is read, so
//!   "nothing here" is a version like any other.
//! - *the witness entry still exists*: an entry also disappears when its session expires,
//!   which writes no slot; an `exists` that came out true checks the entry that made it true.
//!   Disappearance can only turn `exists` false, so a false `exists` needs no more than the
//!   slot check.
//!
//! `assert` and `anyway_continue_after` are control flow evaluated on the client; `not`
//! flips the result, and whichever way a condition came out, its checks are the ones above.
//! So none of the six statements needs a namespace lock. What a `multi` cannot express is a
//! condition over an unbounded set of nodes — "no entry anywhere in table T", a count, a scan
//! — whose absence of change no single version records; such statements (Azos has selects
//! and counts) would need the namespace serialised by a lock. They are not offered.
//! Contention shows as conflicts: a check that fails means another transaction changed
//! the snapshot, and the transaction is re-read and re-evaluated (up to
//! [`MAX_ATTEMPTS`] times, then [`LockTableError::Contended`]).
//! A failed transaction's verdict is confirmed by a `multi` of the same checks, so it too
//! held at one instant.
//!
//! # No "trust level"
//!
//! Azos lets each transaction demand a minimum server *trust level*, a guess from the call
//! rate that the in-memory lock server has not missed other callers' updates (its servers do
//! not replicate). Here there is nothing to guess: ZooKeeper's writes are linearizable — a
//! `multi` is committed by a quorum, applied in one order everywhere, and its checks are
//! evaluated against the latest state, not a replica's view — so a transaction that commits
//! saw, at its commit, exactly the state it assumed. A lagging replica can only make a
//! transaction re-read (its checks fail), never commit on stale data; that is also why reads
//! after a conflict are preceded by `sync`. And where Azos expires entries by time, entries
//! here are ephemeral nodes of the caller's session: they vanish when ZooKeeper expires the
//! session (the holder stopped heart-beating), decided by the same quorum, so an entry
//! exists exactly as long as its owner is alive in ZooKeeper's view.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - A lost reply to a read is simply re-read. A lost reply to the committing `multi`
//!   (*indeterminate*) is **resolved, not retried**: after a `sync` the machine reads the
//!   handle's marker, which the `multi` sets to the transaction's id. It holds that id if and
//!   only if the `multi` was applied (a handle runs one transaction at a time). Only if it was
//!   not is the transaction evaluated again — blindly re-sending it could, for example,
//!   report `assert(delete_var(..))` as failed after it had in fact deleted the entry.
//! - A session expiry ends the transaction with [`LockTableError::SessionLost`]: every entry
//!   of the session is gone, whatever the last `multi` did. The handle's entries are never
//!   re-asserted on the client's next session. The loss is reported once: by the transaction
//!   in flight when the session ended, or else by the handle's next `execute`, which then
//!   fails with [`LockTableError::SessionLost`] applying nothing, if the handle had committed
//!   on the ended session (its entries are gone and the application must learn it). The call
//!   after that runs on the new session with no entries.
//! - Dropping [`LockTable::execute`]'s future abandons the transaction: a `multi` already
//!   sent may still be applied (its entries are ephemeral, so at worst they live until the
//!   session ends).
//! - A caller can hear of its commit late: a paused process reads the reply after its session,
//!   and its entries, ended, and after another session entered. So fence what an entry
//!   guards, as the `lock-table` scenario does (a write in a `multi` that checks the writer's
//!   own entry), and order holders by [`Committed::zxid`], the zxid of the `multi` that made
//!   the entry, not by when each heard of its commit.

mod machine;
mod statement;

pub use machine::{MAX_ATTEMPTS, TxMachine, TxOutcome};
pub use statement::{
    Change, Condition, Slot, Statement, Transaction, anyway_continue_after, assert, delete_var,
    delete_var_value, encode_name, exists, not, set_var,
};

use crate::client::Session;
use crate::machine::drive;
use crate::{Client, Error, path};

use machine::{EntryData, entry_session, slot_path};

/// Why a lock transaction did not commit.
///
/// ```
/// use avout::locktable::{assert, exists, LockTableError};
/// let e = LockTableError::Failed { index: 1, statement: assert(exists("a", "b")) };
/// assert_eq!(e.to_string(), "statement 1 failed: assert(exists(a/b))");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum LockTableError {
    /// Statement `index` did not hold; nothing was changed.
    #[error("statement {index} failed: {statement}")]
    Failed {
        /// Its index in the transaction.
        index: usize,
        /// The statement.
        statement: Statement,
    },
    /// Bad input (an empty name, a path, a transaction too large for one request); nothing
    /// was sent.
    #[error("invalid lock transaction: {reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
    /// Other transactions kept changing what this one read; nothing was changed.
    #[error("gave up after {attempts} conflicting attempts")]
    Contended {
        /// How many attempts conflicted.
        attempts: u32,
    },
    /// The session ended: none of its entries exist any more.
    #[error("session lost: {0}")]
    SessionLost(Error),
    /// The commit's outcome could not be found out (the handle's marker was deleted by
    /// someone else): the transaction may or may not have been applied.
    #[error("outcome unknown: {0}")]
    Indeterminate(Error),
    /// The coordination service refused a request (no access, …).
    #[error(transparent)]
    Zk(Error),
}

impl From<Error> for LockTableError {
    fn from(error: Error) -> Self {
        if error.is_session_lost() {
            LockTableError::SessionLost(error)
        } else {
            LockTableError::Zk(error)
        }
    }
}

/// A committed transaction.
///
/// ```
/// let c = avout::locktable::Committed { applied: vec![true, false], resolved: false, zxid: Some(42) };
/// assert!(!c.applied[1]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Committed {
    /// Per statement: whether it took effect (an `assert` always did; an
    /// `anyway_continue_after` only if its change could be applied).
    pub applied: Vec<bool>,
    /// Whether the commit's reply was lost and the outcome was found through the marker.
    pub resolved: bool,
    /// The zxid of the `multi` that made the transaction's changes, `None` if it changed
    /// nothing. A fencing token: commits that change the table are ordered by it as
    /// ZooKeeper applied them, so of two clerks told they entered, the one whose entry was
    /// made first has the smaller zxid, whichever heard of it first (a paused client may
    /// hear late, after its session, and its entries, ended).
    pub zxid: Option<i64>,
}

/// One session's entry in a slot, as [`LockTable::entries`] reads it.
///
/// ```
/// let e = avout::locktable::Entry { session: 7, value: "R-1".into(), description: "entry".into() };
/// assert_eq!(e.session, 7);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The owning session's id.
    pub session: i64,
    /// The value.
    pub value: String,
    /// The description of the transaction that set it.
    pub description: String,
}

/// A handle on one lock-table namespace, for one session; see the [module docs](self).
///
/// Transactions through one handle run one at a time (that is what lets a lost commit reply
/// be resolved); use several handles for concurrency.
pub struct LockTable {
    client: Client,
    ns: String,
    /// The session the handle's entries live on (from its first transaction); the lock
    /// serialises its transactions.
    on: tokio::sync::Mutex<Option<On>>,
}

/// The session a lock-table handle's entries and marker live on.
struct On {
    session: Session,
    /// `<ns>/tx/<session>-<GUID>`: the handle's marker on that session.
    marker: String,
    /// Whether the marker node exists (the handle committed on the session).
    marker_exists: bool,
}

impl On {
    fn new(ns: &str, session: Session) -> Self {
        let marker = format!(
            "{}/{:016x}-{:032x}",
            path::join(ns, "tx"),
            session.session().id.0 as u64,
            session.new_guid()
        );
        On {
            session,
            marker,
            marker_exists: false,
        }
    }
}

impl std::fmt::Debug for LockTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockTable").field("ns", &self.ns).finish()
    }
}

impl LockTable {
    /// A handle on the namespace at path `namespace` (created on first use).
    ///
    /// Fails with [`LockTableError::Invalid`] for an invalid path.
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::locktable::LockTable::new(client, "Clinical").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, namespace: impl Into<String>) -> Result<Self, LockTableError> {
        let ns = namespace.into();
        path::validate_path(&ns, false).map_err(|e| LockTableError::Invalid {
            reason: e.to_string(),
        })?;
        if ns == "/" {
            return Err(LockTableError::Invalid {
                reason: "the namespace cannot be the root".into(),
            });
        }
        Ok(LockTable {
            client: client.clone(),
            ns,
            on: tokio::sync::Mutex::new(None),
        })
    }

    /// The namespace's path.
    ///
    /// ```no_run
    /// # fn demo(t: avout::locktable::LockTable) {
    /// println!("{}", t.namespace());
    /// # }
    /// ```
    pub fn namespace(&self) -> &str {
        &self.ns
    }

    /// Runs `tx`: all its changes are applied, or none. See the [module docs](self) for what
    /// happens on connection loss, expiry and cancellation.
    ///
    /// Errors: [`LockTableError::Failed`] names the statement that did not hold;
    /// [`Invalid`](LockTableError::Invalid) for bad input (nothing sent);
    /// [`SessionLost`](LockTableError::SessionLost), [`Contended`](LockTableError::Contended),
    /// [`Indeterminate`](LockTableError::Indeterminate), [`Zk`](LockTableError::Zk).
    ///
    /// ```no_run
    /// # async fn demo(t: avout::locktable::LockTable) -> Result<(), avout::locktable::LockTableError> {
    /// use avout::locktable::{anyway_continue_after, delete_var, Transaction};
    /// let done = Transaction::new("review done", vec![
    ///     anyway_continue_after(delete_var("MDS-Review", "CGROVE-35")),
    /// ]);
    /// let committed = t.execute(&done).await?;
    /// println!("deleted: {}", committed.applied[0]);
    /// # Ok(()) }
    /// ```
    pub async fn execute(&self, tx: &Transaction) -> Result<Committed, LockTableError> {
        validate(tx)?;
        let mut on = self.on.lock().await;
        let zk = self.client.current_session().await?;
        let on = match &mut *on {
            Some(on) if on.session.generation() == zk.generation() => on,
            Some(on) => {
                // The entries went with the old session: say so once, re-assert nothing.
                let had_entries = on.marker_exists;
                *on = On::new(&self.ns, zk.clone());
                if had_entries {
                    return Err(LockTableError::SessionLost(Error::SessionExpired));
                }
                on
            }
            None => on.insert(On::new(&self.ns, zk.clone())),
        };
        let mut machine = TxMachine::new(
            &self.ns,
            tx.clone(),
            zk.session().id.0,
            zk.new_guid(),
            on.marker.clone(),
            on.marker_exists,
        );
        let outcome = drive(&*zk, &mut machine).await;
        // A transaction that failed with the session's loss has reported it: the next call
        // must not report the same loss again.
        on.marker_exists =
            machine.marker_exists() && !matches!(outcome, Err(LockTableError::SessionLost(_)));
        match outcome? {
            TxOutcome::Committed(committed) => Ok(committed),
            TxOutcome::Failed { index } => Err(LockTableError::Failed {
                index,
                statement: tx.statements[index].clone(),
            }),
        }
    }

    /// The entries of slot `table`/`var`, every session's, in session order.
    ///
    /// ```no_run
    /// # async fn demo(t: avout::locktable::LockTable) -> Result<(), avout::locktable::LockTableError> {
    /// for e in t.entries("MDS-Entry", "CGROVE-35").await? {
    ///     println!("{:x}: {} ({})", e.session, e.value, e.description);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn entries(&self, table: &str, var: &str) -> Result<Vec<Entry>, LockTableError> {
        let slot = slot_path(&self.ns, &Slot::new(table, var));
        let zk = self.client.current_session().await?;
        let children = match zk.get_children(&slot).await {
            Ok((children, _)) => children,
            Err(Error::NoNode { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut entries = Vec::new();
        for child in children {
            let Some(session) = entry_session(&child) else {
                continue;
            };
            match zk.get_data(&path::join(&slot, &child)).await {
                Ok((data, _)) => {
                    let data: Option<EntryData> = serde_json::from_slice(&data).ok();
                    entries.push(Entry {
                        session,
                        value: data.as_ref().map(|d| d.value.clone()).unwrap_or_default(),
                        description: data.map(|d| d.description).unwrap_or_default(),
                    });
                }
                Err(Error::NoNode { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        entries.sort_by_key(|e| e.session);
        Ok(entries)
    }
}

impl Drop for LockTable {
    fn drop(&mut self) {
        if let Some(on) = self.on.get_mut()
            && on.marker_exists
        {
            let (zk, marker) = (on.session.clone(), on.marker.clone());
            crate::lock::spawn_cleanup(async move {
                crate::lock::delete_idempotent(&*zk, &marker).await
            });
        }
    }
}

/// Bad input is refused before anything is sent.
fn validate(tx: &Transaction) -> Result<(), LockTableError> {
    for (index, statement) in tx.statements.iter().enumerate() {
        for slot in statement.slots() {
            if slot.table.is_empty() || slot.var.is_empty() {
                return Err(LockTableError::Invalid {
                    reason: format!(
                        "statement {index} ({statement}): empty table or variable name"
                    ),
                });
            }
        }
    }
    Ok(())
}
