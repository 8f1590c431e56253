//! The bytes an atom keeps in its ZooKeeper node: a small header, the last write of each
//! recent writer, and the body (the encoded value inline, or a reference into a
//! [`StateContainer`]).
//!
//! ```text
//! 0xA7 'V' 0x02 kind  n  chain   (writer, write id) × n    body
//!  magic   fmt   u8   u8 u32 BE  n × (u64 BE, u64 BE)      rest (kind 0: value; kind 1: blob key)
//! ```
//!
//! The list holds, newest first, one entry per writer (an atom handle, which sends one write at
//! a time on one session): the id of its latest write that took effect. Each writer builds its
//! list from the version it replaces, moving itself to the front, and keeps at most
//! [`WRITERS`] entries. `chain` counts the consecutive versions written with this header
//! (saturating); a write by a foreign program (no header) starts the chain again.
//!
//! This is what lets a writer that lost its connection decide whether its write took effect
//! without applying it twice (see [`super::machine`]): if the node moved past the version the
//! write was conditional on, the writer's entry names its latest write that landed. Since the
//! writer had nothing else in flight, and one session's requests are applied in order, the
//! entry is the lost write if and only if it landed, however many other writes came after.
//! Only if the writer's entry is missing and could have been pushed out (the list is full, or
//! the chain does not reach back to that version) is the outcome unknown.
//!
//! The first byte is never the first byte of a JSON text (0xA7 cannot start UTF-8), so a node
//! holding plain JSON written by another program reads as an inline body with no writers.
//!
//! [`StateContainer`]: super::StateContainer

/// Writers remembered per version: more distinct writers than this between a lost write and
/// its recovery make its outcome unknown.
pub(crate) const WRITERS: usize = 32;

const MAGIC: [u8; 3] = [0xA7, b'V', 2];
const HEADER: usize = MAGIC.len() + 2 + 4;

/// Where the value's bytes are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Body {
    /// In the node itself.
    Inline(Vec<u8>),
    /// In a [`StateContainer`](super::StateContainer), under this key.
    Blob(String),
}

/// A decoded node payload.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Envelope {
    /// `(writer, id of its latest write)`, most recent writer first.
    pub(crate) writers: Vec<(u64, u64)>,
    /// Consecutive versions written with a header, this one included (0: foreign bytes).
    pub(crate) chain: u32,
    /// The value, or where it is.
    pub(crate) body: Body,
}

impl Envelope {
    /// Reads a node's data. Never fails: bytes without the header are a foreign program's
    /// value, inline, with no writers.
    pub(crate) fn parse(data: &[u8]) -> Envelope {
        Self::parse_framed(data).unwrap_or_else(|| Envelope {
            writers: Vec::new(),
            chain: 0,
            body: Body::Inline(data.to_vec()),
        })
    }

    fn parse_framed(data: &[u8]) -> Option<Envelope> {
        if data.len() < HEADER || data[..MAGIC.len()] != MAGIC {
            return None;
        }
        let kind = data[3];
        let n = data[4] as usize;
        let chain = u32::from_be_bytes(data[5..9].try_into().expect("4 bytes"));
        let entries_end = HEADER + 16 * n;
        if data.len() < entries_end {
            return None;
        }
        let u64_at = |i: usize| u64::from_be_bytes(data[i..i + 8].try_into().expect("8 bytes"));
        let writers = (0..n)
            .map(|k| (u64_at(HEADER + 16 * k), u64_at(HEADER + 16 * k + 8)))
            .collect();
        let rest = &data[entries_end..];
        let body = match kind {
            0 => Body::Inline(rest.to_vec()),
            1 => Body::Blob(String::from_utf8(rest.to_vec()).ok()?),
            _ => return None,
        };
        Some(Envelope {
            writers,
            chain,
            body,
        })
    }

    /// The header of a write `write_id` by `writer` replacing the version described by
    /// `previous` (`None`: the node does not exist yet).
    pub(crate) fn next(
        writer: u64,
        write_id: u64,
        previous: Option<&Envelope>,
        body: Body,
    ) -> Self {
        let (old, chain) = previous.map_or((&[][..], 0), |p| (p.writers.as_slice(), p.chain));
        let writers = std::iter::once((writer, write_id))
            .chain(old.iter().copied().filter(|(w, _)| *w != writer))
            .take(WRITERS)
            .collect();
        Envelope {
            writers,
            chain: chain.saturating_add(1),
            body,
        }
    }

    /// The node data.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let (kind, body): (u8, &[u8]) = match &self.body {
            Body::Inline(bytes) => (0, bytes),
            Body::Blob(key) => (1, key.as_bytes()),
        };
        let n = self.writers.len().min(WRITERS);
        let mut out = Vec::with_capacity(HEADER + 16 * n + body.len());
        out.extend_from_slice(&MAGIC);
        out.push(kind);
        out.push(n as u8);
        out.extend_from_slice(&self.chain.to_be_bytes());
        for (writer, id) in &self.writers[..n] {
            out.extend_from_slice(&writer.to_be_bytes());
            out.extend_from_slice(&id.to_be_bytes());
        }
        out.extend_from_slice(body);
        out
    }

    /// The largest header: what the node holds besides the value.
    pub(crate) fn overhead() -> usize {
        HEADER + 16 * WRITERS
    }
}

/// Whether the write `write_id` of `writer`, sent against version `expected` (`-1` for a
/// create), took effect, judging from the node now at `version` with `data`. The writer MUST
/// have had no other write in flight.
///
/// `Some(true)`: it did; `Some(false)`: it did not; `None`: cannot tell.
pub(crate) fn took_effect(
    writer: u64,
    write_id: u64,
    expected: i32,
    version: i32,
    data: &[u8],
) -> Option<bool> {
    if version <= expected {
        return Some(false);
    }
    let envelope = Envelope::parse(data);
    match envelope.writers.iter().find(|(w, _)| *w == writer) {
        Some((_, id)) => Some(*id == write_id),
        None => {
            // Versions expected+1 ..= version were all written with headers, and none pushed
            // an entry out: our write is not among them.
            let since = i64::from(version) - i64::from(expected);
            let covered = i64::from(envelope.chain) >= since;
            (covered && envelope.writers.len() < WRITERS).then_some(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_foreign_bytes_as_inline() {
        let e = Envelope {
            writers: vec![(3, 30), (2, 20)],
            chain: 9,
            body: Body::Blob("k".into()),
        };
        assert_eq!(Envelope::parse(&e.to_bytes()), e);
        let json = Envelope::parse(b"{\"a\":1}");
        assert_eq!(json.body, Body::Inline(b"{\"a\":1}".to_vec()));
        assert!(json.writers.is_empty());
        // A truncated header is foreign bytes, not a panic.
        assert!(
            Envelope::parse(&[0xA7, b'V', 2, 0, 9, 0, 0, 0, 1])
                .writers
                .is_empty()
        );
    }

    #[test]
    fn one_entry_per_writer_most_recent_first_and_bounded() {
        let mut e: Option<Envelope> = None;
        for id in 0..100u64 {
            e = Some(Envelope::next(
                id % 40,
                id,
                e.as_ref(),
                Body::Inline(vec![]),
            ));
        }
        let e = e.unwrap();
        assert_eq!(e.writers.len(), WRITERS);
        assert_eq!(e.writers[0], (99 % 40, 99));
        assert_eq!(e.chain, 100);
        let again = Envelope::next(99 % 40, 100, Some(&e), Body::Inline(vec![]));
        assert_eq!(
            again.writers.iter().filter(|(w, _)| *w == 99 % 40).count(),
            1
        );
    }

    #[test]
    fn took_effect_reads_the_writer_entries() {
        let data = |writers: Vec<(u64, u64)>, chain| {
            Envelope {
                writers,
                chain,
                body: Body::Inline(vec![]),
            }
            .to_bytes()
        };
        // Writer 1 wrote id 7 against version 4; many writes later its entry still says 7.
        assert_eq!(
            took_effect(1, 7, 4, 400, &data(vec![(2, 9), (1, 7)], 500)),
            Some(true)
        );
        // Its entry names an older write: the lost one did not land.
        assert_eq!(
            took_effect(1, 7, 4, 6, &data(vec![(2, 9), (1, 5)], 50)),
            Some(false)
        );
        assert_eq!(took_effect(1, 7, 4, 4, &data(vec![], 0)), Some(false));
        // No entry, a chain reaching back, room in the list: not ours.
        assert_eq!(took_effect(1, 7, 4, 6, &data(vec![(2, 9)], 2)), Some(false));
        // No entry, but a foreign write since (the chain is short): unknown.
        assert_eq!(took_effect(1, 7, 4, 6, &data(vec![(2, 9)], 1)), None);
        // No entry and a full list: it may have been pushed out.
        let full: Vec<_> = (100..100 + WRITERS as u64).map(|w| (w, w)).collect();
        assert_eq!(took_effect(1, 7, 4, 60, &data(full, 90)), None);
        assert_eq!(took_effect(1, 7, -1, 0, &data(vec![(1, 7)], 1)), Some(true));
    }
}
