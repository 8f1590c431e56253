//! The bytes of an Optimistic ref's node: the ids of the last transactions that wrote it,
//! then the value.
//!
//! ```text
//! 0xA7 'S' 0x01  n   chain    txn × n       value
//!  magic, format u8  u32 BE   u128 BE each  rest
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
//! Bytes that do not start with the header (0xA7 cannot start UTF-8, so no JSON text does)
//! are a foreign program's value, with no transactions.

/// Commits remembered per node.
pub(crate) const TXNS: usize = 32;

const MAGIC: [u8; 3] = [0xA7, b'S', 1];
const HEADER: usize = MAGIC.len() + 1 + 4;

/// A decoded node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Envelope {
    /// Ids of the commits that wrote the last versions, newest first.
    pub(crate) txns: Vec<u128>,
    /// Consecutive versions written with the header, this one included.
    pub(crate) chain: u32,
    /// The value, as the ref's codec wrote it.
    pub(crate) body: Vec<u8>,
}

impl Envelope {
    /// Reads a node's data; never fails (foreign bytes are a value with no history).
    pub(crate) fn parse(data: &[u8]) -> Envelope {
        Self::parse_framed(data).unwrap_or_else(|| Envelope {
            txns: Vec::new(),
            chain: 0,
            body: data.to_vec(),
        })
    }

    fn parse_framed(data: &[u8]) -> Option<Envelope> {
        if data.len() < HEADER || data[..MAGIC.len()] != MAGIC {
            return None;
        }
        let n = data[3] as usize;
        let chain = u32::from_be_bytes(data[4..8].try_into().expect("4 bytes"));
        let end = HEADER + 16 * n;
        if n > TXNS || data.len() < end {
            return None;
        }
        let txns = (0..n)
            .map(|k| {
                let at = HEADER + 16 * k;
                u128::from_be_bytes(data[at..at + 16].try_into().expect("16 bytes"))
            })
            .collect();
        Some(Envelope {
            txns,
            chain,
            body: data[end..].to_vec(),
        })
    }

    /// The node written by commit `txn` over `previous` (`None` for a new ref).
    pub(crate) fn next(txn: u128, previous: Option<&Envelope>, body: Vec<u8>) -> Envelope {
        let (old, chain) = previous.map_or((&[][..], 0), |p| (p.txns.as_slice(), p.chain));
        Envelope {
            txns: std::iter::once(txn)
                .chain(old.iter().copied())
                .take(TXNS)
                .collect(),
            chain: chain.saturating_add(1),
            body,
        }
    }

    /// A new ref's first version, written by no transaction.
    pub(crate) fn initial(body: Vec<u8>) -> Envelope {
        Envelope {
            txns: Vec::new(),
            chain: 1,
            body,
        }
    }

    /// The node's data.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let n = self.txns.len().min(TXNS);
        let mut out = Vec::with_capacity(HEADER + 16 * n + self.body.len());
        out.extend_from_slice(&MAGIC);
        out.push(n as u8);
        out.extend_from_slice(&self.chain.to_be_bytes());
        for txn in &self.txns[..n] {
            out.extend_from_slice(&txn.to_be_bytes());
        }
        out.extend_from_slice(&self.body);
        out
    }

    /// The most a header adds to a value.
    pub(crate) fn overhead() -> usize {
        HEADER + 16 * TXNS
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
        let e = Envelope::next(7, Some(&Envelope::initial(b"0".to_vec())), b"1".to_vec());
        assert_eq!(Envelope::parse(&e.to_bytes()), e);
        assert_eq!(e.chain, 2);
        let foreign = Envelope::parse(b"{\"a\":1}");
        assert_eq!(foreign.body, b"{\"a\":1}");
        assert!(foreign.txns.is_empty());
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
            e = Envelope::next(txn, Some(&e), vec![]);
        }
        assert_eq!(e.txns.len(), TXNS);
        assert_eq!(e.txns[0], 99);
        assert_eq!(e.chain, 101);
    }

    #[test]
    fn took_effect_reads_the_commit_list() {
        let node = |txns: Vec<u128>, chain| {
            Envelope {
                txns,
                chain,
                body: vec![],
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
