//! What an agent keeps in ZooKeeper, and the pure decisions made from it: the state node's
//! contents ([`AgentState`]), the names of queue entries ([`EntryName`]) and which entry is
//! applied next ([`next_entry`]). No I/O here, so the executor, its tests and a model share
//! one definition of "the next action" and "already applied".

use serde::{Deserialize, Serialize};

/// How many senders' last applied plain send the state remembers (what decides a send whose
/// reply was lost after its entry has already been applied and deleted).
pub const SENDERS_KEPT: usize = 64;

/// What an agent does when an action fails (Clojure's `:error-mode`).
///
/// ```
/// use avout::agent::ErrorMode;
/// assert_eq!(ErrorMode::default(), ErrorMode::Fail);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorMode {
    /// The agent stops: no action is applied until [`restart`](super::Agent::restart).
    #[default]
    Fail,
    /// The failed action is skipped (the value is unchanged) and the executor's error handler
    /// is called; the agent goes on.
    Continue,
}

/// Why an agent stopped: the action at `seq` failed with `error`.
///
/// ```
/// let f = avout::agent::AgentFailure { seq: 3, error: "overdrawn".into() };
/// assert_eq!(f.seq, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AgentFailure {
    /// The queue position of the failed action.
    pub seq: i64,
    /// The action's error, as text (any process may read it).
    pub error: String,
}

/// A sender's last applied plain send.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SenderMark {
    /// The sending handle's id.
    pub sender: u64,
    /// The GUID of its last applied plain send, in hex.
    pub guid: String,
    /// That send's queue position.
    pub seq: i64,
}

/// The last restart: which failure it cleared and the GUID of the `restart` call, so that a
/// restart whose reply was lost can tell its own write from someone else's.
///
/// ```
/// let m = avout::agent::RestartMark { seq: 3, guid: "0a".into() };
/// assert_eq!(m.seq, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RestartMark {
    /// The queue position of the failure the restart cleared.
    pub seq: i64,
    /// The restart call's GUID, in hex.
    pub guid: String,
}

/// The agent's node: its value with the position of the last action applied, in one place,
/// so that an executor's compare-and-set on the node's version both applies an action and
/// records that it did.
///
/// ```
/// use avout::agent::AgentState;
/// let s = AgentState::new(serde_json::json!(0));
/// assert_eq!(s.applied, -1);
/// assert!(s.failure.is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentState {
    /// The value, as JSON.
    pub value: serde_json::Value,
    /// The queue position of the last action applied (or failed, or skipped); -1 for none.
    pub applied: i64,
    /// Set while the agent is failed.
    pub failure: Option<AgentFailure>,
    /// The error mode every executor follows.
    pub mode: ErrorMode,
    /// The last applied plain send of the most recent senders (at most [`SENDERS_KEPT`]).
    pub senders: Vec<SenderMark>,
    /// The largest position of a sender mark dropped to keep [`SENDERS_KEPT`] (-1: none
    /// ever was, so a sender without a mark has had nothing applied).
    pub evicted: i64,
    /// The last restart (absent in states written before restarts were marked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<RestartMark>,
}

impl AgentState {
    /// A fresh agent holding `value`, nothing applied, in [`ErrorMode::Fail`].
    ///
    /// ```
    /// let s = avout::agent::AgentState::new(serde_json::json!([1]));
    /// assert_eq!(s.value, serde_json::json!([1]));
    /// ```
    pub fn new(value: serde_json::Value) -> Self {
        AgentState {
            value,
            applied: -1,
            failure: None,
            mode: ErrorMode::Fail,
            senders: Vec::new(),
            evicted: -1,
            restart: None,
        }
    }

    /// The state's bytes.
    ///
    /// ```
    /// let s = avout::agent::AgentState::new(serde_json::json!(1));
    /// assert_eq!(avout::agent::AgentState::decode(&s.encode()).unwrap(), s);
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("JSON values always encode")
    }

    /// Parses a state node's bytes.
    ///
    /// ```
    /// assert!(avout::agent::AgentState::decode(b"not json").is_err());
    /// ```
    pub fn decode(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// The state after entry `entry` was consumed with `value` as the new value and
    /// `failure` if it failed (`value` is then the old one).
    ///
    /// ```
    /// use avout::agent::{AgentState, EntryName};
    /// let e = EntryName::parse("p-0000000000000007-0000000000000000000000000000000a-0000000004").unwrap();
    /// let s = AgentState::new(serde_json::json!(0)).consumed(&e, serde_json::json!(1), None);
    /// assert_eq!((s.applied, s.senders.len()), (4, 1));
    /// ```
    pub fn consumed(
        &self,
        entry: &EntryName,
        value: serde_json::Value,
        failure: Option<AgentFailure>,
    ) -> AgentState {
        let mut next = self.clone();
        next.value = value;
        next.applied = entry.seq;
        next.failure = failure;
        if entry.plain {
            next.senders.retain(|m| m.sender != entry.sender);
            next.senders.push(SenderMark {
                sender: entry.sender,
                guid: entry.guid.clone(),
                seq: entry.seq,
            });
            if next.senders.len() > SENDERS_KEPT {
                // The oldest mark goes: its sender has not sent for the longest.
                let oldest = (0..next.senders.len())
                    .min_by_key(|&i| next.senders[i].seq)
                    .expect("not empty");
                let gone = next.senders.remove(oldest);
                next.evicted = next.evicted.max(gone.seq);
            }
        }
        next
    }

    /// Whether the plain send `guid` of `sender` is known applied (its sender's mark names it
    /// or a later send). `None` when the state no longer remembers the sender.
    ///
    /// ```
    /// use avout::agent::{AgentState, EntryName};
    /// let e = EntryName::parse("p-0000000000000007-0000000000000000000000000000000a-0000000004").unwrap();
    /// let s = AgentState::new(serde_json::json!(0)).consumed(&e, serde_json::json!(1), None);
    /// assert_eq!(s.sender_applied(7, &e.guid), Some(true));
    /// assert_eq!(s.sender_applied(7, "ff"), Some(false));
    /// assert_eq!(s.sender_applied(8, "ff"), None);
    /// ```
    pub fn sender_applied(&self, sender: u64, guid: &str) -> Option<bool> {
        self.senders
            .iter()
            .find(|m| m.sender == sender)
            .map(|m| m.guid == guid)
    }
}

/// A queue entry's name: `p-` (a plain send) or `t-` (a send from a transaction), the
/// sending handle's id, the send's GUID and ZooKeeper's sequence suffix, the queue position.
///
/// ```
/// use avout::agent::EntryName;
/// let n = EntryName::parse("t-00000000000000ff-0000000000000000000000000000abcd-0000000012").unwrap();
/// assert_eq!((n.plain, n.sender, n.seq), (false, 255, 12));
/// assert!(EntryName::parse("lock-1").is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryName {
    /// A plain send (not from a transaction).
    pub plain: bool,
    /// The sending handle's id.
    pub sender: u64,
    /// The send's GUID, in hex.
    pub guid: String,
    /// The queue position.
    pub seq: i64,
}

impl EntryName {
    /// The prefix a send creates its sequential node with (ZooKeeper appends the position).
    ///
    /// ```
    /// assert_eq!(
    ///     avout::agent::EntryName::prefix(true, 1, 2),
    ///     "p-0000000000000001-00000000000000000000000000000002-"
    /// );
    /// ```
    pub fn prefix(plain: bool, sender: u64, guid: u128) -> String {
        let kind = if plain { 'p' } else { 't' };
        format!("{kind}-{sender:016x}-{guid:032x}-")
    }

    /// Parses a child name of the queue; `None` for anything else.
    pub fn parse(name: &str) -> Option<EntryName> {
        let mut parts = name.splitn(4, '-');
        let plain = match parts.next()? {
            "p" => true,
            "t" => false,
            _ => return None,
        };
        let sender = u64::from_str_radix(parts.next()?, 16).ok()?;
        let guid = parts.next()?;
        u128::from_str_radix(guid, 16).ok()?;
        let seq = parts.next()?.parse().ok()?;
        Some(EntryName {
            plain,
            sender,
            guid: guid.to_owned(),
            seq,
        })
    }

    /// The node's name again.
    ///
    /// ```
    /// let s = "p-0000000000000001-00000000000000000000000000000002-0000000003";
    /// assert_eq!(avout::agent::EntryName::parse(s).unwrap().name(), s);
    /// ```
    pub fn name(&self) -> String {
        let kind = if self.plain { 'p' } else { 't' };
        format!("{kind}-{:016x}-{}-{:010}", self.sender, self.guid, self.seq)
    }
}

/// The entry an executor applies next: the one with the smallest position after
/// `state.applied`, or `None` when there is none or the agent is failed.
///
/// ```
/// use avout::agent::{AgentState, EntryName, next_entry};
/// let names = ["p-0000000000000001-00000000000000000000000000000002-0000000009",
///              "p-0000000000000001-00000000000000000000000000000003-0000000004"];
/// let entries: Vec<EntryName> = names.iter().filter_map(|n| EntryName::parse(n)).collect();
/// let state = AgentState::new(serde_json::json!(0));
/// assert_eq!(next_entry(&state, &entries).unwrap().seq, 4);
/// ```
pub fn next_entry<'e>(state: &AgentState, entries: &'e [EntryName]) -> Option<&'e EntryName> {
    if state.failure.is_some() {
        return None;
    }
    entries
        .iter()
        .filter(|e| e.seq > state.applied)
        .min_by_key(|e| e.seq)
}
