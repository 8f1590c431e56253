//! What an atom handle and its watchers share ([`Core`]): where the node is, how to read and
//! decode it (its value inline or in a [`StateContainer`]), and what a read found.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::envelope::{Body, Envelope};
use super::{AtomError, CasMachine, Codec, Outcome, StateContainer, Step};
use crate::client::Session;
use crate::machine::drive;
use crate::planted::Bugs;
use crate::{Client, Coordination, Stat};

/// A node's value, decoded, with what a writer replacing it needs.
#[derive(Clone, Debug)]
pub(super) struct Loaded<T> {
    pub(super) value: T,
    pub(super) envelope: Envelope,
    pub(super) stat: Stat,
}

/// What the handle knows of the node.
#[derive(Clone, Debug)]
pub(super) enum Known<T> {
    Unknown,
    Absent,
    Present(Loaded<T>),
}

/// What an atom and its watchers share: where the node is and how to read it.
pub(super) struct Core<K> {
    pub(super) client: Client,
    pub(super) path: String,
    pub(super) codec: K,
    pub(super) store: Arc<dyn StateContainer>,
    /// The bugs planted in this atom's machines.
    pub(super) planted: Bugs,
}

impl<K: Codec> Core<K> {
    /// The session this operation runs on (see [`Client::current_session`]).
    pub(super) async fn session(&self) -> Result<Session, AtomError> {
        Ok(self.client.current_session().await?)
    }

    /// Decodes a node read; `Ok(None)` if its value is in a store file that has been replaced
    /// since (the node changed: read it again).
    pub(super) async fn load<T: DeserializeOwned>(
        &self,
        node: crate::atom::Versioned,
    ) -> Result<Option<Loaded<T>>, AtomError> {
        let envelope = Envelope::parse(&node.data);
        let bytes = match &envelope.body {
            Body::Inline(bytes) => std::borrow::Cow::Borrowed(bytes.as_slice()),
            Body::Blob(key) => match self.store.get(&self.path, key).await {
                Ok(Some(bytes)) => std::borrow::Cow::Owned(bytes),
                Ok(None) => return Ok(None),
                Err(source) => {
                    return Err(AtomError::Store {
                        path: self.path.clone(),
                        source,
                    });
                }
            },
        };
        let value = self
            .codec
            .decode(&bytes)
            .map_err(|source| AtomError::Decode {
                path: self.path.clone(),
                source,
            })?;
        Ok(Some(Loaded {
            value,
            envelope,
            stat: node.stat,
        }))
    }

    /// Reads and decodes the node, linearizably with `sync`.
    pub(super) async fn read<T: DeserializeOwned>(
        &self,
        zk: &dyn Coordination,
        sync: bool,
    ) -> Result<Known<T>, AtomError> {
        loop {
            let outcome = drive(
                zk,
                &mut CasMachine::new(&self.path, Step::Read { sync }).planted(self.planted),
            )
            .await
            .map_err(AtomError::from_step)?;
            let Outcome::NotApplied { current } = outcome else {
                unreachable!("a read writes nothing")
            };
            match current {
                None => return Ok(Known::Absent),
                Some(node) => {
                    if let Some(loaded) = self.load(node).await? {
                        return Ok(Known::Present(loaded));
                    }
                }
            }
        }
    }

    /// Removes a store file no version refers to any more; failures only leak a file.
    pub(super) async fn discard(&self, body: &Body) {
        if let Body::Blob(key) = body
            && let Err(e) = self.store.remove(&self.path, key).await
        {
            tracing::warn!(atom = %self.path, error = %e, "could not remove a replaced value");
        }
    }
}
