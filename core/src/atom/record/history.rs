//! What a record's node holds: each key's bounded history of revisions, stamped with the
//! record's logical time, and the versioned encoding that keeps records written before
//! history existed readable.
//!
//! # Time
//!
//! A record's time is the number of writes made to it since it gained history: every write
//! (one conditional `set_data` of the whole record) sets it to one more than the time it was
//! computed from, and stamps the revision it adds with it. The conditional write makes the
//! stamps of one record strictly increasing and gap-free in commit order, on the simulator
//! and on a real server alike, and the writer knows the stamp before it writes, so it
//! survives a reply lost to a connection loss (the atom recognises its own write by its
//! write id; the stamp is in the data it wrote).
//!
//! ZooKeeper's `mzxid` was the other candidate, and is not used: it is only known once the
//! reply arrives (a write recovered after a lost reply would have to read it back, by which
//! time another write may have replaced the node), it is not in the data (so the history of
//! a key would need one read per revision), and a zxid does not survive restoring the data
//! into another ensemble. What the logical time gives up is comparison across records: time
//! 5 of one record and time 5 of another are unrelated.
//!
//! # Encoding
//!
//! A record is encoded as `{"v":2,"time":…,"keys":{key:{"trimmed":…,"revisions":[…]}}}`.
//! A node written before history existed holds a bare map from keys to value sets; it reads
//! as time 0 with each key's values as its only revision, and the next write stores it in
//! the new form. (An older avout reading the new form fails with a decode error: it never
//! mistakes it for a record.)

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::{Record, Value};

/// How many revisions of each key a [`Records`](super::Records) handle keeps unless told
/// otherwise ([`Records::history_limit`](super::Records::history_limit)).
///
/// ```
/// assert_eq!(avout::atom::record::DEFAULT_HISTORY_LIMIT, 64);
/// ```
pub const DEFAULT_HISTORY_LIMIT: usize = 64;

/// The encoding version this module writes.
const VERSION: u32 = 2;

/// One revision of a key: its values from `time` until the key's next revision.
///
/// ```
/// use std::collections::BTreeSet;
/// use avout::atom::record::{Revision, Value};
/// let r = Revision { time: 3, values: BTreeSet::from([Value::Int(1)]) };
/// assert_eq!(r.time, 3);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revision {
    /// The record's time after the write that made this revision.
    pub time: u64,
    /// The key's values from then on (empty: the key was cleared).
    pub values: BTreeSet<Value>,
}

/// A key's revisions, oldest first, as [`Records::history`](super::Records::history) returns
/// them.
///
/// ```
/// use avout::atom::record::{History, Revision};
/// let h = History { now: 0, trimmed: false, revisions: Vec::new() };
/// assert!(h.revisions.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct History {
    /// The record's time when this was read.
    pub now: u64,
    /// Whether older revisions were dropped to keep the history within its bound.
    pub trimmed: bool,
    /// The kept revisions, oldest first; the last holds the key's current values.
    pub revisions: Vec<Revision>,
}

/// Why a record has no answer for a key at a time.
///
/// ```
/// use avout::atom::record::{RecordState, TimeError};
/// assert_eq!(RecordState::default().at("k", 1), Err(TimeError::NotYet { now: 0 }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeError {
    /// The revision in force at that time was dropped; `oldest` is the oldest kept.
    Trimmed {
        /// The time of the oldest revision kept.
        oldest: u64,
    },
    /// The record has not reached that time.
    NotYet {
        /// The record's time.
        now: u64,
    },
}

/// One key's kept revisions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct KeyHistory {
    trimmed: bool,
    revisions: VecDeque<Revision>,
}

/// A record and the history of its keys: the value a record's node holds. Read it with
/// [`Records::atom`](super::Records::atom)'s `deref`, or through [`Records`](super::Records).
///
/// ```
/// use std::collections::BTreeSet;
/// use avout::atom::record::{RecordState, Value};
/// let s = RecordState::default();
/// assert_eq!(s.time(), 0);
/// assert!(s.values("k").is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Encoded", into = "Encoded")]
pub struct RecordState {
    time: u64,
    keys: BTreeMap<String, KeyHistory>,
}

impl RecordState {
    /// The record's time: how many writes it has had since it gained history.
    ///
    /// ```
    /// assert_eq!(avout::atom::record::RecordState::default().time(), 0);
    /// ```
    pub fn time(&self) -> u64 {
        self.time
    }

    /// The current values of `key` (empty if it has none).
    ///
    /// ```
    /// assert!(avout::atom::record::RecordState::default().values("k").is_empty());
    /// ```
    pub fn values(&self, key: &str) -> BTreeSet<Value> {
        self.current(key).cloned().unwrap_or_default()
    }

    /// The current values of every key that has any.
    ///
    /// ```
    /// assert!(avout::atom::record::RecordState::default().record().is_empty());
    /// ```
    pub fn record(&self) -> Record {
        self.keys
            .iter()
            .filter_map(|(key, h)| {
                let values = &h.revisions.back()?.values;
                (!values.is_empty()).then(|| (key.clone(), values.clone()))
            })
            .collect()
    }

    /// The kept revisions of `key`.
    ///
    /// ```
    /// let h = avout::atom::record::RecordState::default().history("k");
    /// assert!(h.revisions.is_empty() && !h.trimmed);
    /// ```
    pub fn history(&self, key: &str) -> History {
        let kept = self.keys.get(key);
        History {
            now: self.time,
            trimmed: kept.is_some_and(|h| h.trimmed),
            revisions: kept
                .map(|h| h.revisions.iter().cloned().collect())
                .unwrap_or_default(),
        }
    }

    /// The values `key` had at `time`: those of its last revision at or before `time`
    /// (empty if it had none yet). A time past the record's is [`TimeError::NotYet`]; a
    /// time before the oldest kept revision of a trimmed history is [`TimeError::Trimmed`].
    ///
    /// ```
    /// use avout::atom::record::{RecordState, TimeError};
    /// assert_eq!(RecordState::default().at("k", 0), Ok(Default::default()));
    /// ```
    pub fn at(&self, key: &str, time: u64) -> Result<BTreeSet<Value>, TimeError> {
        if time > self.time {
            return Err(TimeError::NotYet { now: self.time });
        }
        let Some(h) = self.keys.get(key) else {
            return Ok(BTreeSet::new());
        };
        match h.revisions.iter().rev().find(|r| r.time <= time) {
            Some(r) => Ok(r.values.clone()),
            None if h.trimmed => Err(TimeError::Trimmed {
                oldest: h.revisions.front().map_or(self.time, |r| r.time),
            }),
            None => Ok(BTreeSet::new()),
        }
    }

    /// The record after one write that gives `key` the values `values`: one time later,
    /// with a new revision of `key`, its history trimmed to `limit` revisions (at least
    /// one: the last is the current values).
    ///
    /// ```
    /// use std::collections::BTreeSet;
    /// use avout::atom::record::{RecordState, Value};
    /// let s = RecordState::default().with("k", BTreeSet::from([Value::Int(1)]), 64);
    /// assert_eq!((s.time(), s.values("k").len()), (1, 1));
    /// ```
    pub fn with(&self, key: &str, values: BTreeSet<Value>, limit: usize) -> RecordState {
        let mut next = self.clone();
        next.time += 1;
        let h = next.keys.entry(key.to_owned()).or_default();
        h.revisions.push_back(Revision {
            time: next.time,
            values,
        });
        while h.revisions.len() > limit.max(1) {
            h.revisions.pop_front();
            h.trimmed = true;
        }
        next
    }

    fn current(&self, key: &str) -> Option<&BTreeSet<Value>> {
        Some(&self.keys.get(key)?.revisions.back()?.values)
    }
}

/// The encodings a record's node may hold, newest first: serde tries them in order, and a
/// bare map never decodes as the versioned form (its values are arrays, `v` is a number).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Encoded {
    Versioned(Versioned),
    Plain(Record),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Versioned {
    v: u32,
    time: u64,
    keys: BTreeMap<String, KeyHistory>,
}

impl TryFrom<Encoded> for RecordState {
    type Error = String;

    fn try_from(encoded: Encoded) -> Result<Self, String> {
        match encoded {
            Encoded::Versioned(Versioned { v, time, keys }) => {
                if v != VERSION {
                    return Err(format!(
                        "record encoding version {v}; this build reads {VERSION}"
                    ));
                }
                Ok(RecordState { time, keys })
            }
            Encoded::Plain(record) => Ok(RecordState {
                time: 0,
                keys: record
                    .into_iter()
                    .map(|(key, values)| {
                        let revisions = VecDeque::from([Revision { time: 0, values }]);
                        let h = KeyHistory {
                            trimmed: false,
                            revisions,
                        };
                        (key, h)
                    })
                    .collect(),
            }),
        }
    }
}

impl From<RecordState> for Encoded {
    fn from(state: RecordState) -> Encoded {
        Encoded::Versioned(Versioned {
            v: VERSION,
            time: state.time,
            keys: state.keys,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atom::{Codec, Json};

    fn set(v: i64) -> BTreeSet<Value> {
        BTreeSet::from([Value::Int(v)])
    }

    #[test]
    fn get_at_answers_from_the_revision_in_force() {
        let s = RecordState::default()
            .with("a", set(1), 64)
            .with("b", set(9), 64)
            .with("a", set(2), 64)
            .with("a", BTreeSet::new(), 64);
        assert_eq!(s.time(), 4);
        assert_eq!(s.at("a", 0), Ok(BTreeSet::new()));
        assert_eq!(s.at("a", 1), Ok(set(1)));
        assert_eq!(s.at("a", 2), Ok(set(1)), "b's write does not touch a");
        assert_eq!(s.at("a", 3), Ok(set(2)));
        assert_eq!(s.at("a", 4), Ok(BTreeSet::new()), "cleared");
        assert_eq!(s.at("a", 5), Err(TimeError::NotYet { now: 4 }));
        assert_eq!(s.at("never", 4), Ok(BTreeSet::new()));
        assert!(
            !s.record().contains_key("a"),
            "a cleared key is not in the record"
        );
        assert_eq!(s.record()["b"], set(9));
        let times: Vec<u64> = s.history("a").revisions.iter().map(|r| r.time).collect();
        assert_eq!(times, [1, 3, 4]);
    }

    #[test]
    fn a_trimmed_history_refuses_times_it_no_longer_holds() {
        let mut s = RecordState::default();
        for v in 0..10 {
            s = s.with("k", set(v), 3);
        }
        let h = s.history("k");
        assert!(h.trimmed);
        assert_eq!(h.revisions.len(), 3);
        assert_eq!(h.revisions[0].time, 8);
        assert_eq!(s.at("k", 8), Ok(set(7)));
        assert_eq!(s.at("k", 7), Err(TimeError::Trimmed { oldest: 8 }));
        assert_eq!(s.at("k", 0), Err(TimeError::Trimmed { oldest: 8 }));
        // A limit of 0 still keeps the current values.
        let one = s.with("k", set(99), 0);
        assert_eq!(one.values("k"), set(99));
        assert_eq!(one.history("k").revisions.len(), 1);
    }

    #[test]
    fn a_record_without_history_reads_as_time_zero_and_is_rewritten_versioned() {
        let legacy = br#"{"tags":[{"Str":"a"},{"Int":1}],"v":[{"Int":2}]}"#;
        let s: RecordState = Json.decode(legacy).unwrap();
        assert_eq!(s.time(), 0);
        assert_eq!(s.values("v"), set(2));
        assert_eq!(s.at("tags", 0).unwrap().len(), 2);
        let bytes = Json.encode(&s.with("v", set(3), 64)).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.starts_with(r#"{"v":2,"time":1,"#), "{text}");
        let back: RecordState = Json.decode(&bytes).unwrap();
        assert_eq!(back.at("v", 0), Ok(set(2)));
        assert_eq!(back.at("v", 1), Ok(set(3)));
        // The old type cannot read the new form: an older build fails rather than misreads.
        assert!(Json.decode::<Record>(&bytes).is_err());
    }

    #[test]
    fn an_unknown_encoding_version_is_a_decode_error() {
        let future = br#"{"v":3,"time":0,"keys":{}}"#;
        assert!(Json.decode::<RecordState>(future).is_err());
        let empty = Json.encode(&RecordState::default()).unwrap();
        assert_eq!(empty, br#"{"v":2,"time":0,"keys":{}}"#);
    }
}
