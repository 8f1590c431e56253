//! What the two STM models, protocol Optimistic's ([`crate::stm`]) and protocol Mvcc's
//! ([`crate::mvcc`]), hold their clients to alike: each such property is written once here,
//! over what [`TxClient`] tells of a client, and both models list it under the same name.

use crate::world::{Agent, World};

/// What the shared properties read of an STM model's client.
pub(crate) trait TxClient: Agent {
    /// Whether its transaction only reads.
    fn is_reader(&self) -> bool;
    /// Whether its transaction ended committed.
    fn committed(&self) -> bool;
    /// How many times the server applied its commit.
    fn applied(&self) -> u8;
    /// Whether a try of it failed on a conflict and was retried.
    fn conflicted(&self) -> bool;
    /// Whether it recovered a commit whose reply was lost.
    fn recovered(&self) -> bool;
}

/// `always` **applied at most once**: no commit is applied twice.
pub(crate) fn at_most_once<A: TxClient>(state: &World<A>) -> bool {
    state.clients.iter().all(|c| c.agent.applied() <= 1)
}

/// `always` **acknowledged means applied**: a writer told it committed was applied.
pub(crate) fn acknowledged_applied<A: TxClient>(state: &World<A>) -> bool {
    state
        .clients
        .iter()
        .all(|c| c.agent.is_reader() || !c.agent.committed() || c.agent.applied() == 1)
}

/// `eventually` **every transaction finishes**.
pub(crate) fn all_finished<A: TxClient>(state: &World<A>) -> bool {
    state.clients.iter().all(|c| c.agent.finished())
}

/// `sometimes` **a conflict retried**.
pub(crate) fn conflict_retried<A: TxClient>(state: &World<A>) -> bool {
    state.clients.iter().any(|c| c.agent.conflicted())
}

/// `sometimes` **a lost commit reply recovered**: a client recovered a commit whose reply
/// was lost, and ended committed.
pub(crate) fn lost_reply_recovered<A: TxClient>(state: &World<A>) -> bool {
    state
        .clients
        .iter()
        .any(|c| c.agent.recovered() && c.agent.committed())
}

/// `sometimes` **a read-only transaction validates**: a reader ended committed.
pub(crate) fn reader_validated<A: TxClient>(state: &World<A>) -> bool {
    state
        .clients
        .iter()
        .any(|c| c.agent.is_reader() && c.agent.committed())
}

/// Implements [`TxClient`] for an STM model's agent type, whose `body`, `ended`, `applied`,
/// `conflicted` and `recovered` fields mean the same in both models (`Body` and `Ended`
/// are the caller's).
macro_rules! tx_client {
    ($agent:ty) => {
        impl $crate::tx::TxClient for $agent {
            fn is_reader(&self) -> bool {
                self.body == Body::Reader
            }
            fn committed(&self) -> bool {
                matches!(self.ended, Some(Ended::Committed { .. }))
            }
            fn applied(&self) -> u8 {
                self.applied
            }
            fn conflicted(&self) -> bool {
                self.conflicted
            }
            fn recovered(&self) -> bool {
                self.recovered
            }
        }
    };
}
pub(crate) use tx_client;
