//! The value types whose fields `zookeeper-client` keeps private, so that they cannot be the
//! real crate's: create modes and options, sequence numbers, session info.

use std::time::Duration;

use super::{Acls, Error, Result, SessionId};

/// The kind of a node. It covers every kind with help from [`CreateOptions::with_ttl`].
///
/// ```
/// use avout_zookeeper_client::{Acls, CreateMode};
/// let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateMode {
    /// A node that stays until deleted.
    Persistent,
    /// A persistent node whose name gets a sequence number.
    PersistentSequential,
    /// A node deleted with the session that made it.
    Ephemeral,
    /// An ephemeral node whose name gets a sequence number.
    EphemeralSequential,
    /// A node the server deletes once its last child is gone.
    Container,
}

impl CreateMode {
    /// [`CreateOptions`] with this mode and `acls`.
    ///
    /// ```
    /// use avout_zookeeper_client::{Acls, CreateMode, CreateOptions};
    /// static OPEN: &CreateOptions<'static> = &CreateMode::Persistent.with_acls(Acls::anyone_all());
    /// # let _ = OPEN;
    /// ```
    pub const fn with_acls(self, acls: Acls<'_>) -> CreateOptions<'_> {
        CreateOptions {
            mode: self,
            acls,
            ttl: None,
        }
    }

    pub(crate) fn is_sequential(self) -> bool {
        matches!(self, Self::PersistentSequential | Self::EphemeralSequential)
    }

    pub(crate) fn is_persistent(self) -> bool {
        matches!(self, Self::Persistent | Self::PersistentSequential)
    }

    pub(crate) fn is_ephemeral(self) -> bool {
        matches!(self, Self::Ephemeral | Self::EphemeralSequential)
    }

    /// avout's mode for this one, with or without a TTL.
    pub(crate) fn to_avout(self, ttl: bool) -> avout::CreateMode {
        use avout::CreateMode as A;
        match (self, ttl) {
            (Self::Persistent, false) => A::Persistent,
            (Self::Persistent, true) => A::PersistentWithTtl,
            (Self::PersistentSequential, false) => A::PersistentSequential,
            (Self::PersistentSequential, true) => A::PersistentSequentialWithTtl,
            (Self::Ephemeral, _) => A::Ephemeral,
            (Self::EphemeralSequential, _) => A::EphemeralSequential,
            (Self::Container, _) => A::Container,
        }
    }
}

/// ZooKeeper's largest TTL: five bytes of milliseconds.
const TTL_MAX_MILLIS: u128 = 0x00FF_FFFF_FFFF;

/// How to create a node: its mode, ACLs and TTL. Made by [`CreateMode::with_acls`].
///
/// ```
/// use std::time::Duration;
/// use avout_zookeeper_client::{Acls, CreateMode};
/// let ttl = CreateMode::Persistent.with_acls(Acls::anyone_all()).with_ttl(Duration::from_secs(5));
/// # let _ = ttl;
/// ```
#[derive(Clone, Debug)]
pub struct CreateOptions<'a> {
    pub(crate) mode: CreateMode,
    pub(crate) acls: Acls<'a>,
    pub(crate) ttl: Option<Duration>,
}

impl<'a> CreateOptions<'a> {
    /// Gives a persistent node a TTL: the server deletes it once it has had no children and
    /// no change for that long.
    ///
    /// ```
    /// use std::time::Duration;
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// let _ = CreateMode::Persistent.with_acls(Acls::anyone_all()).with_ttl(Duration::from_secs(1));
    /// ```
    pub const fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// The real crate's checks, with its errors.
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(ttl) = self.ttl {
            if !self.mode.is_persistent() {
                return Err(Error::BadArguments(
                    &"ttl can only be specified with persistent node",
                ));
            } else if ttl.is_zero() {
                return Err(Error::BadArguments(&"ttl is zero"));
            } else if ttl.as_millis() > TTL_MAX_MILLIS {
                return Err(Error::BadArguments(&"ttl cannot larger than 1099511627775"));
            }
        }
        if self.acls.is_empty() {
            return Err(Error::InvalidAcl);
        }
        Ok(())
    }

    /// The checks for a node `mkdir` or a lock makes as a parent.
    pub(crate) fn validate_as_directory(&self) -> Result<()> {
        self.validate()?;
        if self.mode.is_ephemeral() {
            return Err(Error::BadArguments(&"directory node must not be ephemeral"));
        } else if self.mode.is_sequential() {
            return Err(Error::BadArguments(
                &"directory node must not be sequential",
            ));
        }
        Ok(())
    }

    /// avout's options for these.
    pub(crate) fn to_avout(&self) -> avout::CreateOptions {
        let acl = self
            .acls
            .iter()
            .map(avout::zk::convert::from_zk_acl)
            .collect();
        avout::CreateOptions {
            mode: self.mode.to_avout(self.ttl.is_some()),
            acl: Some(acl),
            ttl: self.ttl,
        }
    }
}

/// A sequential node's sequence number; it prints as ten decimal digits (nineteen past
/// `i32::MAX`).
///
/// ```
/// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
/// use avout_zookeeper_client::{Acls, CreateMode};
/// let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
/// let (_stat, sequence) = client.create("/job-", b"", &options).await?;
/// let path = format!("/job-{sequence}");
/// # let _ = path;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CreateSequence(pub(crate) i64);

impl std::fmt::Display for CreateSequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 <= i32::MAX.into() {
            write!(f, "{:010}", self.0)
        } else {
            write!(f, "{:019}", self.0)
        }
    }
}

impl CreateSequence {
    /// The number (`-1` for a node that is not sequential).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// let (_, sequence) = client.create("/plain", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    /// assert_eq!(sequence.into_i64(), -1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn into_i64(self) -> i64 {
        self.0
    }
}

/// A session: its id, whether it is read-only, and what re-establishing it takes.
///
/// ```
/// # async fn demo(client: avout_zookeeper_client::Client) {
/// let session = client.session().clone();
/// assert!(!session.is_readonly());
/// println!("session {}", session.id());
/// # }
/// ```
#[derive(Clone)]
pub struct SessionInfo {
    pub(crate) id: SessionId,
    pub(crate) readonly: bool,
}

impl std::fmt::Debug for SessionInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionInfo")
            .field("id", &self.id)
            .field("readonly", &self.readonly)
            .finish()
    }
}

impl SessionInfo {
    /// The session's id.
    ///
    /// ```
    /// # fn demo(info: &avout_zookeeper_client::SessionInfo) {
    /// println!("{}", info.id());
    /// # }
    /// ```
    pub fn id(&self) -> SessionId {
        self.id
    }

    /// Whether the session is read-only (never, on the simulated servers, which have no
    /// read-only mode).
    ///
    /// ```
    /// # fn demo(info: &avout_zookeeper_client::SessionInfo) {
    /// assert!(!info.is_readonly());
    /// # }
    /// ```
    pub fn is_readonly(&self) -> bool {
        self.readonly
    }
}

/// A server version, as `Connector::with_server_version` takes it.
#[derive(Copy, Clone, Debug, PartialEq, PartialOrd)]
pub(crate) struct Version(pub(crate) u32, pub(crate) u32, pub(crate) u32);
