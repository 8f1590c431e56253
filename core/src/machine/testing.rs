//! Helpers for the golden tests that step a machine by hand.

use super::{Machine, Reply, Request, Token};
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
