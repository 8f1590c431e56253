//! The bytes an atom keeps in its ZooKeeper node: a small header, the ids of the last writes,
//! and the body (the encoded value inline, or a reference into a [`StateContainer`]).
//!
//! ```text
//! 0xA7 'V' 0x01 kind  n  id[0] .. id[n-1]  body
//!  magic  fmt   u8   u8   n × u64 BE      rest (kind 0: value bytes; kind 1: a blob key)
//! ```
//!
//! `id[0]` is the write that produced the node's current version, `id[i]` the one that
//! produced version `current - i`. Each writer builds its list from the version it replaces,
//! so the list stays aligned with versions; a write by a foreign program (no header) starts the
//! chain again. This is what lets a writer that lost its connection decide whether its write
//! took effect without applying it twice (see [`super::machine`]).
//!
//! The first byte is never the first byte of a JSON text (0xA7 cannot start UTF-8), so a node
//! holding plain JSON written by another program reads as an inline body with no history.
//!
//! [`StateContainer`]: super::StateContainer

/// Write ids kept per version: how far back a recovering writer can look.
pub(crate) const HISTORY: usize = 32;

const MAGIC: [u8; 3] = [0xA7, b'V', 1];
const HEADER: usize = MAGIC.len() + 2;

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
    /// Ids of the latest writes, newest first.
    pub(crate) history: Vec<u64>,
    /// The value, or where it is.
    pub(crate) body: Body,
}

impl Envelope {
    /// Reads a node's data. Never fails: bytes without the header are a foreign program's
    /// value, inline, with no history.
    pub(crate) fn parse(data: &[u8]) -> Envelope {
        Self::parse_framed(data).unwrap_or_else(|| Envelope {
            history: Vec::new(),
            body: Body::Inline(data.to_vec()),
        })
    }

    fn parse_framed(data: &[u8]) -> Option<Envelope> {
        if data.len() < HEADER || data[..MAGIC.len()] != MAGIC {
            return None;
        }
        let kind = data[3];
        let n = data[4] as usize;
        let ids_end = HEADER + 8 * n;
        if data.len() < ids_end {
            return None;
        }
        let history = data[HEADER..ids_end]
            .chunks_exact(8)
            .map(|c| u64::from_be_bytes(c.try_into().expect("chunks of 8")))
            .collect();
        let rest = &data[ids_end..];
        let body = match kind {
            0 => Body::Inline(rest.to_vec()),
            1 => Body::Blob(String::from_utf8(rest.to_vec()).ok()?),
            _ => return None,
        };
        Some(Envelope { history, body })
    }

    /// The ids a write of `write_id` replacing a node with `previous` ids records.
    pub(crate) fn next_history(write_id: u64, previous: &[u64]) -> Vec<u64> {
        std::iter::once(write_id)
            .chain(previous.iter().copied())
            .take(HISTORY)
            .collect()
    }

    /// The node data.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let (kind, body): (u8, &[u8]) = match &self.body {
            Body::Inline(bytes) => (0, bytes),
            Body::Blob(key) => (1, key.as_bytes()),
        };
        let n = self.history.len().min(HISTORY);
        let mut out = Vec::with_capacity(HEADER + 8 * n + body.len());
        out.extend_from_slice(&MAGIC);
        out.push(kind);
        out.push(n as u8);
        for id in &self.history[..n] {
            out.extend_from_slice(&id.to_be_bytes());
        }
        out.extend_from_slice(body);
        out
    }

    /// The size of the node data for a body of `body_len` bytes with a full history.
    pub(crate) fn overhead() -> usize {
        HEADER + 8 * HISTORY
    }
}

/// Whether the write `write_id`, sent against version `expected` (`-1` for a create), is the
/// one that produced version `expected + 1` of a node now at `version` with `data`.
///
/// `Some(true)`: it took effect; `Some(false)`: it did not; `None`: too many writes since to
/// tell.
pub(crate) fn took_effect(write_id: u64, expected: i32, version: i32, data: &[u8]) -> Option<bool> {
    if version <= expected {
        return Some(false);
    }
    let back = (version - (expected + 1)) as usize;
    let history = Envelope::parse(data).history;
    history.get(back).map(|id| *id == write_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reads_foreign_bytes_as_inline() {
        let e = Envelope {
            history: vec![3, 2, 1],
            body: Body::Blob("k".into()),
        };
        assert_eq!(Envelope::parse(&e.to_bytes()), e);
        let json = Envelope::parse(b"{\"a\":1}");
        assert_eq!(json.body, Body::Inline(b"{\"a\":1}".to_vec()));
        assert!(json.history.is_empty());
        // A truncated header is foreign bytes, not a panic.
        assert_eq!(
            Envelope::parse(&[0xA7, b'V', 1, 0, 9]).history,
            Vec::<u64>::new()
        );
    }

    #[test]
    fn history_is_bounded_and_newest_first() {
        let mut h = Vec::new();
        for id in 0..100 {
            h = Envelope::next_history(id, &h);
        }
        assert_eq!(h.len(), HISTORY);
        assert_eq!(h[0], 99);
    }

    #[test]
    fn took_effect_reads_the_version_chain() {
        let data = |h: Vec<u64>| {
            Envelope {
                history: h,
                body: Body::Inline(vec![]),
            }
            .to_bytes()
        };
        // Wrote 7 against version 4; node now at 6 with ids [9, 7, ..]: ours made version 5.
        assert_eq!(took_effect(7, 4, 6, &data(vec![9, 7, 1])), Some(true));
        assert_eq!(took_effect(7, 4, 6, &data(vec![9, 8, 1])), Some(false));
        assert_eq!(took_effect(7, 4, 4, &data(vec![1])), Some(false));
        assert_eq!(took_effect(7, 4, 40, &data(vec![1])), None);
        assert_eq!(took_effect(7, -1, 0, &data(vec![7])), Some(true));
    }
}
