//! Helpers for the golden tests that step a machine by hand.

use super::{Machine, Millis, Reply, Request, Token};
use crate::Stat;

/// Every request the machine wants sent now, in order.
pub(crate) fn drain(m: &mut impl Machine) -> Vec<(Token, Request)> {
    std::iter::from_fn(|| m.poll_request()).collect()
}

/// A children reply listing `names`.
pub(crate) fn children(names: &[&str]) -> crate::Result<Reply> {
    Ok(Reply::Children {
        children: names.iter().map(|s| s.to_string()).collect(),
        stat: Stat::default(),
    })
}

/// Expects the `sync` that precedes a proof lookup, answers it, and returns what follows.
pub(crate) fn synced(m: &mut impl Machine) -> Vec<(Token, Request)> {
    let sent = drain(m);
    assert!(
        matches!(&sent[..], [(_, Request::Sync { .. })]),
        "sync first: {sent:?}"
    );
    m.handle_reply(Millis(1000), sent[0].0, Ok(Reply::Synced));
    drain(m)
}
