//! Where Mvcc keeps things under the STM root, and how a transaction point's state is written.
//!
//! ```text
//! <root>/stm/history                 the clock: its pzxid/mzxid is the newest commit point
//! <root>/stm/history/t-<GUID>        a live transaction (ephemeral): "<STATE> <age>"
//! <root>/refs/<name>                 the newest committed value (its mzxid is the commit point)
//! <root>/refs/<name>/lock/…          the ref's read-write lock (crate::lock's node names)
//! <root>/refs/<name>/history/<TXID>-<version>   committed values (czxid = commit point)
//! <root>/refs/<name>/txn/<TXID>      the tag of the transaction about to write the ref (ephemeral)
//! ```

use crate::path;

/// The state of a transaction point, as its node's data says.
///
/// ```ignore
/// assert_eq!(State::parse(b"RUNNING 42"), Some((State::Running, 42)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// The transaction may still be barged by an older one.
    Running,
    /// The transaction is writing its values; nobody may kill it.
    Committing,
    /// The transaction committed. Mvcc records it by deleting the point in the commit `multi`
    /// (a history node named after the transaction is the durable record).
    Committed,
    /// The try was abandoned and will run again. Recorded by deleting the point.
    Retry,
    /// An older transaction barged this one; its commit will fail.
    Killed,
}

impl State {
    /// The word stored in the node.
    pub(crate) fn word(self) -> &'static str {
        match self {
            State::Running => "RUNNING",
            State::Committing => "COMMITTING",
            State::Committed => "COMMITTED",
            State::Retry => "RETRY",
            State::Killed => "KILLED",
        }
    }

    /// The node data for this state and the transaction's age (the read point of its first
    /// try: smaller is older).
    pub(crate) fn encode(self, age: i64) -> Vec<u8> {
        format!("{} {age}", self.word()).into_bytes()
    }

    /// Parses node data written by [`encode`](Self::encode); `None` for foreign bytes.
    pub(crate) fn parse(data: &[u8]) -> Option<(State, i64)> {
        let text = std::str::from_utf8(data).ok()?;
        let (word, age) = text.split_once(' ')?;
        let state = [
            State::Running,
            State::Committing,
            State::Committed,
            State::Retry,
            State::Killed,
        ]
        .into_iter()
        .find(|s| s.word() == word)?;
        Some((state, age.parse().ok()?))
    }
}

/// The paths of one STM root.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Layout {
    root: String,
}

impl Layout {
    pub(crate) fn new(root: &str) -> Self {
        Layout {
            root: root.trim_end_matches('/').to_owned(),
        }
    }

    /// `<root>/stm/history`: the transaction points and the clock.
    pub(crate) fn points(&self) -> String {
        format!("{}/stm/history", self.root)
    }

    /// `<root>/refs`.
    pub(crate) fn refs(&self) -> String {
        format!("{}/refs", self.root)
    }

    /// The point of transaction `txid`.
    pub(crate) fn point(&self, txid: &str) -> String {
        path::join(&self.points(), txid)
    }

    /// The ref's node.
    pub(crate) fn ref_node(&self, name: &str) -> String {
        format!("{}/refs/{name}", self.root)
    }

    /// The ref's read-write lock directory.
    pub(crate) fn lock(&self, name: &str) -> String {
        format!("{}/refs/{name}/lock", self.root)
    }

    /// The ref's history directory.
    pub(crate) fn history(&self, name: &str) -> String {
        format!("{}/refs/{name}/history", self.root)
    }

    /// The ref's tag directory.
    pub(crate) fn txn(&self, name: &str) -> String {
        format!("{}/refs/{name}/txn", self.root)
    }

    /// The tag of `txid` on the ref.
    pub(crate) fn tag(&self, name: &str, txid: &str) -> String {
        format!("{}/refs/{name}/txn/{txid}", self.root)
    }

    /// The history node of the value `txid` committed as the ref's `version`.
    pub(crate) fn history_node(&self, name: &str, txid: &str, version: i32) -> String {
        format!(
            "{}/refs/{name}/history/{}",
            self.root,
            history_name(txid, version)
        )
    }
}

/// A transaction id: `t-`, the transaction's age (20 digits, so that a tag's name tells
/// who is older without reading its point) and the try's GUID (32 hex digits).
pub(crate) fn txid(age: i64, guid: u128) -> String {
    format!("t-{:020}-{guid:032x}", age.max(0))
}

/// The age in a transaction id made by [`txid`].
pub(crate) fn txid_age(txid: &str) -> Option<i64> {
    let rest = txid.strip_prefix("t-")?;
    let (age, guid) = rest.split_once('-')?;
    if age.len() != 20 || guid.len() != 32 {
        return None;
    }
    age.parse().ok()
}

/// The name of the history node holding version `version` (the ref node's data version once
/// the value is committed), committed by `txid`: the recipe's `TXID-COMMITPOINT`, where the
/// ref-local version orders the history and the node's czxid is the global commit point.
pub(crate) fn history_name(txid: &str, version: i32) -> String {
    format!("{txid}-{version:010}")
}

/// The name of the history node of a ref's initial value.
pub(crate) fn initial_history_name() -> String {
    history_name("init", 0)
}

/// The ref version a history node holds, from its name.
pub(crate) fn history_version(name: &str) -> Option<i64> {
    path::sequence(name)
}

/// History node names sorted oldest first (by the version in their names); foreign names
/// are left out.
pub(crate) fn sorted_history(children: &[String]) -> Vec<(i64, String)> {
    let mut v: Vec<(i64, String)> = children
        .iter()
        .filter_map(|c| history_version(c).map(|n| (n, c.clone())))
        .collect();
    v.sort();
    v
}

/// The oldest history nodes to delete so that, once a new version is added, at most
/// `max_history` remain. The newest existing node is never among them (with `max_history`
/// 1 it is the new version that remains, and the newest old one is kept too: a reader may
/// still need it until the commit lands).
pub(crate) fn trim_after_commit(children: &[String], max_history: usize) -> Vec<String> {
    let sorted = sorted_history(children);
    let keep_old = max_history.saturating_sub(1).max(1);
    let drop = sorted.len().saturating_sub(keep_old);
    sorted.into_iter().take(drop).map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_foreign_bytes_do_not_parse() {
        for s in [
            State::Running,
            State::Committing,
            State::Committed,
            State::Retry,
            State::Killed,
        ] {
            assert_eq!(State::parse(&s.encode(-3)), Some((s, -3)));
        }
        assert_eq!(State::parse(b"RUNNING"), None);
        assert_eq!(State::parse(b"WAITING 1"), None);
        assert_eq!(State::parse(&[0xff, 0x20, 0x31]), None);
    }

    #[test]
    fn trimming_keeps_the_newest_and_orders_by_version() {
        let names: Vec<String> = [
            history_name("t-b", 3),
            initial_history_name(),
            history_name("t-a", 1),
            history_name("t-c", 2),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            trim_after_commit(&names, 3),
            vec![initial_history_name(), history_name("t-a", 1)]
        );
        // With a history of one, the newest old version still stays.
        let dropped = trim_after_commit(&names, 1);
        assert_eq!(dropped.len(), 3);
        assert!(!dropped.contains(&history_name("t-b", 3)));
        assert!(trim_after_commit(&names, 10).is_empty());
    }

    #[test]
    fn paths() {
        let l = Layout::new("/bank/");
        assert_eq!(l.points(), "/bank/stm/history");
        assert_eq!(l.point("t-1"), "/bank/stm/history/t-1");
        assert_eq!(l.tag("alice", "t-1"), "/bank/refs/alice/txn/t-1");
        assert_eq!(
            l.history_node("alice", "t-1", 7),
            "/bank/refs/alice/history/t-1-0000000007"
        );
        assert_eq!(history_version(&history_name("t-1", 7)), Some(7));
        assert!(txid(1, 2).starts_with("t-0000"));
        assert_eq!(txid_age(&txid(42, 7)), Some(42));
        assert_eq!(txid_age("t-00000000000000000dead"), None);
    }
}
