//! Where a transactional scenario's ref values live (`--ref-store`), and values padded to a
//! size (`--value-size`): what runs the STM with its values outside ZooKeeper
//! ([`avout::stm::store`]).

use std::sync::Arc;

use avout::atom::{Codec, CodecError};
use avout::stm::store::{MemoryStore, RefStore};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Which store holds the refs' values.
///
/// ```
/// use avout_scenarios::scenario::store::RefStoreKind;
/// assert_eq!("memory".parse::<RefStoreKind>(), Ok(RefStoreKind::Memory));
/// assert_eq!(RefStoreKind::default().name(), "zk");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefStoreKind {
    /// The refs' ZooKeeper nodes (no store).
    #[default]
    Zk,
    /// An in-process [`MemoryStore`] shared by the run's clients (the simulator's store).
    Memory,
    /// PostgreSQL ([`avout::stm::store::PostgresStore`]); real ZooKeeper only.
    Postgres,
}

impl RefStoreKind {
    /// Every kind.
    pub const ALL: [RefStoreKind; 3] = [
        RefStoreKind::Zk,
        RefStoreKind::Memory,
        RefStoreKind::Postgres,
    ];

    /// As the command line spells it.
    ///
    /// ```
    /// assert_eq!(avout_scenarios::scenario::store::RefStoreKind::Postgres.name(), "postgres");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            RefStoreKind::Zk => "zk",
            RefStoreKind::Memory => "memory",
            RefStoreKind::Postgres => "postgres",
        }
    }

    /// Whether this is the default (values in the nodes): what workloads leave out of their
    /// files.
    ///
    /// ```
    /// assert!(avout_scenarios::scenario::store::RefStoreKind::Zk.is_default());
    /// ```
    pub fn is_default(&self) -> bool {
        *self == RefStoreKind::Zk
    }

    /// A fresh in-process store for a run of this kind; `None` for the nodes, and for
    /// PostgreSQL (which the caller connects).
    ///
    /// ```
    /// use avout_scenarios::scenario::store::RefStoreKind;
    /// assert!(RefStoreKind::Memory.in_process().is_some());
    /// assert!(RefStoreKind::Zk.in_process().is_none());
    /// ```
    pub fn in_process(self) -> Option<Arc<dyn RefStore>> {
        match self {
            RefStoreKind::Memory => Some(Arc::new(MemoryStore::new())),
            RefStoreKind::Zk | RefStoreKind::Postgres => None,
        }
    }
}

impl std::str::FromStr for RefStoreKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RefStoreKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown ref store {s:?} (expected zk, memory or postgres)"))
    }
}

/// JSON padded with spaces to at least `size` bytes (JSON allows trailing whitespace, so it
/// decodes as plain JSON): what makes a bank account's value 2 MiB. Size 0 is plain JSON.
///
/// ```
/// use avout::atom::Codec;
/// use avout_scenarios::scenario::store::Padded;
/// let p = Padded { size: 16 };
/// let bytes = p.encode(&20i64).unwrap();
/// assert_eq!(bytes.len(), 16);
/// assert_eq!(p.decode::<i64>(&bytes).unwrap(), 20);
/// assert_eq!(Padded { size: 0 }.encode(&20i64).unwrap(), b"20");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Padded {
    /// The smallest encoding, in bytes.
    pub size: usize,
}

impl Codec for Padded {
    const NAME: &'static str = "padded json";

    fn encode<T: Serialize + ?Sized>(&self, value: &T) -> Result<Vec<u8>, CodecError> {
        let mut bytes = serde_json::to_vec(value).map_err(|e| CodecError {
            codec: Self::NAME,
            message: e.to_string(),
        })?;
        if bytes.len() < self.size {
            bytes.resize(self.size, b' ');
        }
        Ok(bytes)
    }

    fn decode<T: DeserializeOwned>(&self, bytes: &[u8]) -> Result<T, CodecError> {
        serde_json::from_slice(bytes).map_err(|e| CodecError {
            codec: Self::NAME,
            message: e.to_string(),
        })
    }
}
