//! The bytes of an Optimistic ref's node: the ids of the last transactions that wrote it, the
//! ref's previous values, then the value.
//!
//! ```text
//! 0xA7 'S' 0x01  n   chain    txn × n       h    (point, len, bytes) × h          value
//!  magic, format u8  u32 BE   u128 BE each  u8   u64 BE, u32 BE, len bytes each   rest
//! ```
//!
//! `txns` holds, newest first, the id of each of the last [`TXNS`] commits that wrote the
//! node (an id is drawn afresh for every commit `multi` sent, so each write adds exactly one
//! entry), and `chain` counts the consecutive versions written with this header (a foreign
//! write, without one, starts it again). This is what lets a committer whose reply was lost
//! tell whether its `multi` was applied without sending it again (see
//! [`took_effect`]) — the same idea as the atom's writer list, with one entry per commit
//! instead of per writer.
//!
//! `history` holds, newest first, the values the ref had before, each with its commit point:
//! the `mzxid` of the version that held it (the zxid of the `multi` that wrote it; ZooKeeper's
//! zxids order all commits). A writer copies the version it replaces into the list, keeping
//! at most `max_history - 1` entries and dropping the oldest ones that would not fit in a
//! node.
//!
//! Bytes that do not start with the header (0xA7 cannot start UTF-8, so no JSON text does)
//! are a foreign program's value, with no transactions and no history.

use crate::MAX_DATA_LEN;

/// Commits remembered per node.
pub(crate) const TXNS: usize = 32;

const MAGIC: [u8; 3] = [0xA7, b'S', 1];
const HEADER: usize = MAGIC.len() + 1 + 4;
/// Bytes of one history entry besides its value.
const ENTRY: usize = 8 + 4;

/// A decoded node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Envelope {
    /// Ids of the commits that wrote the last versions, newest first.
    pub(crate) txns: Vec<u128>,
    /// Consecutive versions written with the header, this one included.
    pub(crate) chain: u32,
    /// Previous values with their commit points, newest first.
    pub(crate) history: Vec<(u64, Vec<u8>)>,
    /// The value, as the ref's codec wrote it.
    pub(crate) body: Vec<u8>,
}

impl Envelope {
    /// Reads a node's data; never fails (foreign bytes are a value with no history).
    pub(crate) fn parse(data: &[u8]) -> Envelope {
        Self::parse_framed(data).unwrap_or_else(|| Envelope {
            body: data.to_vec(),
            ..Envelope::default()
        })
    }

    fn parse_framed(data: &[u8]) -> Option<Envelope> {
        if data.len() < HEADER || data[..MAGIC.len()] != MAGIC {
            return None;
        }
        let n = data[3] as usize;
        let chain = u32::from_be_bytes(data[4..8].try_into().ok()?);
        let mut at = HEADER + 16 * n;
        if n > TXNS || data.len() < at + 1 {
            return None;
        }
        let txns = (0..n)
            .map(|k| {
                let i = HEADER + 16 * k;
                u128::from_be_bytes(data[i..i + 16].try_into().expect("16 bytes"))
            })
            .collect();
        let h = data[at] as usize;
        at += 1;
        let mut history = Vec::with_capacity(h);
        for _ in 0..h {
            let head = data.get(at..at + ENTRY)?;
            let point = u64::from_be_bytes(head[..8].try_into().expect("8 bytes"));
            let len = u32::from_be_bytes(head[8..].try_into().expect("4 bytes")) as usize;
            at += ENTRY;
            history.push((point, data.get(at..at.checked_add(len)?)?.to_vec()));
            at += len;
        }
        Some(Envelope {
            txns,
            chain,
            history,
            body: data[at..].to_vec(),
        })
    }

    /// The node written by commit `txn` over `previous`, the version read with its commit
    /// point, keeping at most `keep` previous values (and only as many as fit in a node).
    pub(crate) fn next(
        txn: u128,
        previous: &Envelope,
        previous_point: u64,
        body: Vec<u8>,
        keep: usize,
    ) -> Envelope {
        let mut next = Envelope {
            txns: std::iter::once(txn)
                .chain(previous.txns.iter().copied())
                .take(TXNS)
                .collect(),
            chain: previous.chain.saturating_add(1),
            history: std::iter::once((previous_point, previous.body.clone()))
                .chain(previous.history.iter().cloned())
                .take(keep)
                .collect(),
            body,
        };
        while next.len() > MAX_DATA_LEN && next.history.pop().is_some() {}
        next
    }

    /// A new ref's first version, written by no transaction.
    pub(crate) fn initial(body: Vec<u8>) -> Envelope {
        Envelope {
            chain: 1,
            body,
            ..Envelope::default()
        }
    }

    fn len(&self) -> usize {
        HEADER
            + 16 * self.txns.len().min(TXNS)
            + 1
            + self
                .history
                .iter()
                .map(|(_, v)| ENTRY + v.len())
                .sum::<usize>()
            + self.body.len()
    }

    /// The node's data.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let n = self.txns.len().min(TXNS);
        let h = self.history.len().min(u8::MAX as usize);
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&MAGIC);
        out.push(n as u8);
        out.extend_from_slice(&self.chain.to_be_bytes());
        for txn in &self.txns[..n] {
            out.extend_from_slice(&txn.to_be_bytes());
        }
        out.push(h as u8);
        for (point, value) in &self.history[..h] {
            out.extend_from_slice(&point.to_be_bytes());
            out.extend_from_slice(&(value.len() as u32).to_be_bytes());
            out.extend_from_slice(value);
        }
        out.extend_from_slice(&self.body);
        out
    }

    /// The most a header adds to a value (history is dropped to make room).
    pub(crate) fn overhead() -> usize {
        HEADER + 16 * TXNS + 1
    }
}

/// Whether commit `txn`, which wrote the node conditionally on `expected`, took effect,
/// judging from the node now at `version` holding `data`.
///
/// `Some(true)`: it did. `Some(false)`: it did not — the node is still at `expected`, or
/// every version since was written by another commit that the header lists. `None`: cannot
/// tell (more than [`TXNS`] commits since, or a foreign write).
pub(crate) fn took_effect(txn: u128, expected: i32, version: i32, data: &[u8]) -> Option<bool> {
    if version <= expected {
        return Some(false);
    }
    let envelope = Envelope::parse(data);
    if envelope.txns.contains(&txn) {
        return Some(true);
    }
    let since = i64::from(version) - i64::from(expected);
    let covered = i64::from(envelope.chain) >= since && envelope.txns.len() as i64 >= since;
    covered.then_some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_foreign_bytes_as_a_value() {
        let e = Envelope::next(7, &Envelope::initial(b"0".to_vec()), 40, b"1".to_vec(), 9);
        assert_eq!(Envelope::parse(&e.to_bytes()), e);
        assert_eq!(e.chain, 2);
        assert_eq!(e.history, vec![(40, b"0".to_vec())]);
        let foreign = Envelope::parse(b"{\"a\":1}");
        assert_eq!(foreign.body, b"{\"a\":1}");
        assert!(foreign.txns.is_empty());
        // Foreign bytes as long as a header, or shorter than the magic, are values too.
        let zeros = [0u8; 16];
        assert_eq!(Envelope::parse(&zeros).body, zeros);
        assert_eq!(Envelope::parse(b"x").body, b"x");
        // A header announcing more entries than there are bytes is foreign, not a panic.
        assert!(
            Envelope::parse(&[0xA7, b'S', 1, 9, 0, 0, 0, 1])
                .txns
                .is_empty()
        );
    }

    #[test]
    fn keeps_the_last_commits_newest_first() {
        let mut e = Envelope::initial(vec![]);
        for txn in 0..100u128 {
            e = Envelope::next(txn, &e, txn as u64, vec![txn as u8], 9);
        }
        assert_eq!(e.txns.len(), TXNS);
        assert_eq!(e.txns[0], 99);
        assert_eq!(e.chain, 101);
        assert_eq!(e.history.len(), 9);
        assert_eq!(e.history[0], (99, vec![98]));
        // Values that do not fit push the oldest history out.
        let big = vec![1u8; MAX_DATA_LEN / 3];
        let mut e = Envelope::initial(big.clone());
        for txn in 0..5u128 {
            e = Envelope::next(txn, &e, txn as u64, big.clone(), 9);
            assert!(e.to_bytes().len() <= MAX_DATA_LEN);
        }
        assert_eq!(e.history.len(), 1);
    }

    #[test]
    fn the_size_reckoned_is_the_size_written() {
        // `next` trims history by `len`, so a wrong reckoning lets a value over the limit
        // through (or trims one that fits): it must be the written size, to the byte.
        let mut e = Envelope::initial(b"0".to_vec());
        assert_eq!(e.len(), e.to_bytes().len());
        for txn in 0..(TXNS as u128 + 3) {
            e = Envelope::next(txn, &e, txn as u64, vec![7; txn as usize], 5);
            assert_eq!(e.len(), e.to_bytes().len(), "after {txn} commits");
        }
        // One byte over the limit with its history, so the history goes and it fits.
        let old = Envelope::initial(vec![1; 10]);
        let fits = MAX_DATA_LEN - Envelope::next(1, &old, 1, vec![], 0).len();
        let e = Envelope::next(1, &old, 1, vec![2; fits - (ENTRY + 10) + 1], 1);
        assert!(e.history.is_empty() && e.to_bytes().len() <= MAX_DATA_LEN);
    }

    #[test]
    fn took_effect_reads_the_commit_list() {
        let node = |txns: Vec<u128>, chain| {
            Envelope {
                txns,
                chain,
                ..Envelope::default()
            }
            .to_bytes()
        };
        // Ours, three commits later.
        assert_eq!(took_effect(5, 4, 8, &node(vec![9, 8, 7, 5], 9)), Some(true));
        // Still at the expected version: not applied.
        assert_eq!(took_effect(5, 4, 4, &node(vec![1], 5)), Some(false));
        // Two later versions, both by others and both listed: not ours.
        assert_eq!(took_effect(5, 4, 6, &node(vec![9, 8, 1], 9)), Some(false));
        // Versions by others pushed ours out of reach: unknown.
        let many: Vec<u128> = (100..100 + TXNS as u128).collect();
        assert_eq!(
            took_effect(5, 4, 4 + TXNS as i32 + 1, &node(many, 90)),
            None
        );
        // A foreign write since: unknown.
        assert_eq!(took_effect(5, 4, 6, &node(vec![9], 1)), None);
    }
}
