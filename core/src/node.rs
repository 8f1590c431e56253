//! What a node is: its [`Stat`], how it is created ([`CreateMode`], [`CreateOptions`]) and
//! who may touch it ([`Acl`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The longest TTL ZooKeeper accepts: the TTL is kept in the low five bytes of the node's
/// `ephemeralOwner` (ZooKeeper's `EphemeralType.TTL`), so 2^40 - 1 milliseconds.
///
/// ```
/// assert_eq!(avout::MAX_TTL.as_millis(), 0xFF_FFFF_FFFF);
/// ```
pub const MAX_TTL: Duration = Duration::from_millis(0xFF_FFFF_FFFF);

/// ZooKeeper's metadata of a node.
///
/// Zxids order every change the service makes; versions count changes to one node's data
/// (`version`), children (`cversion`) and ACL (`aversion`).
///
/// ```
/// let stat = avout::Stat::default();
/// assert!(!stat.is_ephemeral());
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Stat {
    /// Zxid of the change that created the node.
    pub czxid: i64,
    /// Zxid of the change that last modified the node's data.
    pub mzxid: i64,
    /// Zxid of the change that last added or removed a child.
    pub pzxid: i64,
    /// Creation time, milliseconds since the epoch (virtual time in the simulator).
    pub ctime: i64,
    /// Last modification time, milliseconds since the epoch.
    pub mtime: i64,
    /// Number of changes to the data.
    pub version: i32,
    /// Number of changes to the children.
    pub cversion: i32,
    /// Number of changes to the ACL.
    pub aversion: i32,
    /// Session id of the owner if the node is ephemeral, else 0.
    pub ephemeral_owner: i64,
    /// Length of the data.
    pub data_length: i32,
    /// Number of children.
    pub num_children: i32,
}

impl Stat {
    /// Whether the node is ephemeral. ZooKeeper reports `ephemeralOwner` 0 for container
    /// and TTL nodes (it keeps their kind there internally), so only a session's ephemeral
    /// nodes have a non-zero owner.
    ///
    /// ```
    /// let stat = avout::Stat { ephemeral_owner: 0x10, ..Default::default() };
    /// assert!(stat.is_ephemeral());
    /// ```
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral_owner != 0
    }
}

/// How a node is created.
///
/// ```
/// use avout::CreateMode;
/// assert!(CreateMode::EphemeralSequential.is_sequential());
/// assert!(CreateMode::EphemeralSequential.is_ephemeral());
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum CreateMode {
    /// Lives until deleted.
    #[default]
    Persistent,
    /// Deleted when its creator's session ends.
    Ephemeral,
    /// Persistent, with a ten-digit sequence number appended to its name.
    PersistentSequential,
    /// Ephemeral, with a ten-digit sequence number appended to its name.
    EphemeralSequential,
    /// Deleted by the server some time after its last child is deleted.
    Container,
    /// Persistent, and deleted by the server once it has had no children and no change to
    /// its data for its TTL ([`CreateOptions::with_ttl`]). Needs a server started with
    /// `extendedTypesEnabled=true`; others refuse it with [`crate::Error::Unimplemented`].
    PersistentWithTtl,
    /// [`PersistentWithTtl`](Self::PersistentWithTtl), with a sequence number appended.
    PersistentSequentialWithTtl,
}

impl CreateMode {
    /// Whether the server appends a sequence number.
    ///
    /// ```
    /// assert!(!avout::CreateMode::Persistent.is_sequential());
    /// ```
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// Whether the mode takes a TTL (and must be given one).
    ///
    /// ```
    /// assert!(avout::CreateMode::PersistentWithTtl.is_ttl());
    /// assert!(!avout::CreateMode::Persistent.is_ttl());
    /// ```
    pub fn is_ttl(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentWithTtl | CreateMode::PersistentSequentialWithTtl
        )
    }

    /// Whether the node dies with its session.
    ///
    /// ```
    /// assert!(avout::CreateMode::Ephemeral.is_ephemeral());
    /// ```
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }
}

/// Permission bits of an ACL entry, as ZooKeeper numbers them.
///
/// ```
/// use avout::Perms;
/// let rw = Perms::READ | Perms::WRITE;
/// assert!(rw.contains(Perms::READ));
/// assert!(!rw.contains(Perms::ADMIN));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Perms(pub u32);

impl Perms {
    /// Read the data and list the children.
    pub const READ: Perms = Perms(1);
    /// Set the data.
    pub const WRITE: Perms = Perms(2);
    /// Create children.
    pub const CREATE: Perms = Perms(4);
    /// Delete children.
    pub const DELETE: Perms = Perms(8);
    /// Set the ACL.
    pub const ADMIN: Perms = Perms(16);
    /// Everything.
    pub const ALL: Perms = Perms(31);

    /// Whether every bit of `other` is set here.
    ///
    /// ```
    /// assert!(avout::Perms::ALL.contains(avout::Perms::DELETE));
    /// ```
    pub fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Perms {
    type Output = Perms;
    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

/// One ACL entry: what an identity (`scheme`, `id`) may do.
///
/// ```
/// use avout::{Acl, Perms};
/// let acl = Acl::digest("app", "secret", Perms::ALL);
/// assert_eq!(acl.scheme, "digest");
/// assert!(acl.id.starts_with("app:"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Acl {
    /// What the identity may do.
    pub perms: Perms,
    /// The scheme: `world`, `auth`, `digest`, `ip`, …
    pub scheme: String,
    /// The identity within the scheme.
    pub id: String,
}

impl Acl {
    /// Anyone may do anything (`world:anyone`, all permissions): ZooKeeper's open ACL.
    ///
    /// ```
    /// assert_eq!(avout::Acl::open_unsafe()[0].id, "anyone");
    /// ```
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: Perms::ALL,
            scheme: "world".into(),
            id: "anyone".into(),
        }]
    }

    /// Anyone may read, nobody may change.
    ///
    /// ```
    /// assert_eq!(avout::Acl::read_unsafe()[0].perms, avout::Perms::READ);
    /// ```
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl {
            perms: Perms::READ,
            scheme: "world".into(),
            id: "anyone".into(),
        }]
    }

    /// Only the identities this session authenticated as may do anything (`auth:`, all
    /// permissions). Creating a node with it needs an authenticated session.
    ///
    /// ```
    /// assert_eq!(avout::Acl::creator_all()[0].scheme, "auth");
    /// ```
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl {
            perms: Perms::ALL,
            scheme: "auth".into(),
            id: String::new(),
        }]
    }

    /// A `digest` entry for `user` with `password`: the id is `user:base64(sha1(user:password))`,
    /// as ZooKeeper's `DigestAuthenticationProvider` computes it.
    ///
    /// ```
    /// // The digest ZooKeeper's own tools print for super:test.
    /// let acl = avout::Acl::digest("super", "test", avout::Perms::ALL);
    /// assert_eq!(acl.id, "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
    /// ```
    pub fn digest(user: &str, password: &str, perms: Perms) -> Acl {
        use base64::Engine as _;
        use sha1::Digest as _;
        let hash = sha1::Sha1::digest(format!("{user}:{password}").as_bytes());
        Acl {
            perms,
            scheme: "digest".into(),
            id: format!(
                "{user}:{}",
                base64::engine::general_purpose::STANDARD.encode(hash)
            ),
        }
    }
}

/// How to create a node: its mode and, optionally, its ACL.
///
/// Without an ACL the backend's default applies (for the ZooKeeper backend,
/// [`ZkConfig::default_acl`](crate::zk::ZkConfig::default_acl) when the feature is on).
///
/// ```
/// use avout::{Acl, CreateMode, CreateOptions};
/// let opts = CreateOptions::new(CreateMode::Ephemeral).with_acl(Acl::creator_all());
/// assert!(opts.mode.is_ephemeral());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CreateOptions {
    /// The node's mode.
    pub mode: CreateMode,
    /// The node's ACL; `None` for the backend's default.
    pub acl: Option<Vec<Acl>>,
    /// The TTL of a [`CreateMode::PersistentWithTtl`] or
    /// [`CreateMode::PersistentSequentialWithTtl`] node; `None` for every other mode.
    #[serde(default)]
    pub ttl: Option<Duration>,
}

impl CreateOptions {
    /// Options for `mode` with the default ACL.
    ///
    /// ```
    /// let o = avout::CreateOptions::new(avout::CreateMode::Container);
    /// assert!(o.acl.is_none());
    /// ```
    pub fn new(mode: CreateMode) -> Self {
        CreateOptions {
            mode,
            acl: None,
            ttl: None,
        }
    }

    /// The same options with a TTL, for a TTL mode.
    ///
    /// ```
    /// use std::time::Duration;
    /// let o = avout::CreateOptions::new(avout::CreateMode::PersistentWithTtl).with_ttl(Duration::from_secs(60));
    /// assert!(o.validate("/a").is_ok());
    /// ```
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Checks that the mode and the TTL agree, as the client library does before sending:
    /// a TTL mode needs a TTL from 1 ms to [`MAX_TTL`] (whole milliseconds), any other mode
    /// must have none. Fails with [`crate::Error::BadArguments`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use avout::{CreateMode, CreateOptions, Error};
    /// let bad = CreateOptions::new(CreateMode::Ephemeral).with_ttl(Duration::from_secs(1));
    /// assert!(matches!(bad.validate("/a"), Err(Error::BadArguments(_))));
    /// let zero = CreateOptions::new(CreateMode::PersistentWithTtl).with_ttl(Duration::ZERO);
    /// assert!(matches!(zero.validate("/a"), Err(Error::BadArguments(_))));
    /// ```
    pub fn validate(&self, path: &str) -> crate::Result<()> {
        let bad = |why: String| {
            Err(crate::Error::BadArguments(format!(
                "{why} (creating {path})"
            )))
        };
        match (self.mode.is_ttl(), self.ttl) {
            (false, None) => Ok(()),
            (false, Some(_)) => bad(format!("a TTL was given to a {:?} node", self.mode)),
            (true, None) => bad(format!("a {:?} node needs a TTL", self.mode)),
            (true, Some(ttl)) if ttl.as_millis() == 0 => {
                bad("the TTL must be at least 1 ms".to_owned())
            }
            (true, Some(ttl)) if ttl > MAX_TTL => bad(format!(
                "the TTL {ttl:?} exceeds ZooKeeper's limit of {} ms",
                MAX_TTL.as_millis()
            )),
            (true, Some(_)) => Ok(()),
        }
    }

    /// The same options with an explicit ACL.
    ///
    /// ```
    /// let o = avout::CreateOptions::default().with_acl(avout::Acl::read_unsafe());
    /// assert_eq!(o.acl.unwrap().len(), 1);
    /// ```
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = Some(acl);
        self
    }
}

impl From<CreateMode> for CreateOptions {
    fn from(mode: CreateMode) -> Self {
        CreateOptions::new(mode)
    }
}
