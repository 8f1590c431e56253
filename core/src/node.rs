//! What a node is: its [`Stat`], how it is created ([`CreateMode`], [`CreateOptions`]) and
//! who may touch it ([`Acl`]).

use serde::{Deserialize, Serialize};

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
    /// Whether the node is ephemeral.
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
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
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
}

impl CreateOptions {
    /// Options for `mode` with the default ACL.
    ///
    /// ```
    /// let o = avout::CreateOptions::new(avout::CreateMode::Container);
    /// assert!(o.acl.is_none());
    /// ```
    pub fn new(mode: CreateMode) -> Self {
        CreateOptions { mode, acl: None }
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
