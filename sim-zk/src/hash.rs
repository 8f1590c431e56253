//! A stable hash of a run: a word-at-a-time multiply-xorshift hash over a canonical encoding.
//!
//! std's `Hash` is not an encoding (its output may change between compiler releases and
//! `RandomState` is seeded per process), so every value that enters a run's hash writes its
//! own words here: integers as one 64-bit word, strings and byte strings length-prefixed and
//! packed eight bytes to a little-endian word, enums by an explicit tag. The same run gives
//! the same hash on every machine and every build.
//!
//! Each word is mixed in with one multiply by an odd 64-bit constant and a xorshift that
//! folds the high bits back down (a byte-at-a-time FNV-1a was an eighth of the simulator's
//! time). This is not a cryptographic hash; it tells runs apart.

use avout::{
    Acl, CreateMode, CreateOptions, Error, EventKind, Identity, Op, OpResult, ReadOp, ReadResult,
    Reply, Request, SessionState, Stat,
};

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// An odd constant with well-spread bits (2^64 / the golden ratio).
const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// A stable 64-bit hasher with typed writers.
///
/// ```
/// let mut h = avout_sim_zk::hash::StableHasher::new();
/// h.str("avout");
/// let a = h.finish();
/// let mut h = avout_sim_zk::hash::StableHasher::new();
/// h.str("avout");
/// assert_eq!(a, h.finish());
/// let mut h = avout_sim_zk::hash::StableHasher::new();
/// h.str("avouT");
/// assert_ne!(a, h.finish());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StableHasher(u64);

impl Default for StableHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl StableHasher {
    /// A hasher in its initial state.
    ///
    /// ```
    /// assert_ne!(avout_sim_zk::hash::StableHasher::new().finish(), 0);
    /// ```
    pub fn new() -> Self {
        StableHasher(OFFSET)
    }

    #[inline]
    fn word(&mut self, w: u64) {
        let x = (self.0 ^ w).wrapping_mul(MULTIPLIER);
        self.0 = x ^ (x >> 29);
    }

    /// Feeds raw bytes (not length-prefixed: callers that need it use [`bytes`](Self::bytes)).
    ///
    /// ```
    /// let mut h = avout_sim_zk::hash::StableHasher::new();
    /// h.raw(b"abc");
    /// ```
    pub fn raw(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes(c.try_into().expect("eight bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(last));
        }
    }

    /// Feeds a `u64`.
    ///
    /// ```
    /// avout_sim_zk::hash::StableHasher::new().u64(7);
    /// ```
    pub fn u64(&mut self, v: u64) {
        self.word(v);
    }

    /// Feeds an `i64`.
    ///
    /// ```
    /// avout_sim_zk::hash::StableHasher::new().i64(-7);
    /// ```
    pub fn i64(&mut self, v: i64) {
        self.word(v as u64);
    }

    /// Feeds a tag.
    ///
    /// ```
    /// avout_sim_zk::hash::StableHasher::new().tag(3);
    /// ```
    pub fn tag(&mut self, t: u8) {
        self.word(u64::from(t));
    }

    /// Feeds a length-prefixed byte string.
    ///
    /// ```
    /// avout_sim_zk::hash::StableHasher::new().bytes(b"data");
    /// ```
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.raw(b);
    }

    /// Feeds a length-prefixed string.
    ///
    /// ```
    /// avout_sim_zk::hash::StableHasher::new().str("/a");
    /// ```
    pub fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    /// The hash so far.
    ///
    /// ```
    /// let h = avout_sim_zk::hash::StableHasher::new();
    /// assert_eq!(h.finish(), h.finish());
    /// ```
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// Values with a canonical encoding into a [`StableHasher`].
///
/// ```
/// use avout_sim_zk::hash::{Canonical, StableHasher};
/// let mut a = StableHasher::new();
/// avout::Stat::default().canon(&mut a);
/// let mut b = StableHasher::new();
/// avout::Stat { version: 1, ..Default::default() }.canon(&mut b);
/// assert_ne!(a.finish(), b.finish());
/// ```
pub trait Canonical {
    /// Writes the value's canonical bytes.
    fn canon(&self, h: &mut StableHasher);
}

impl Canonical for Stat {
    fn canon(&self, h: &mut StableHasher) {
        for v in [
            self.czxid,
            self.mzxid,
            self.pzxid,
            self.ctime,
            self.mtime,
            i64::from(self.version),
            i64::from(self.cversion),
            i64::from(self.aversion),
            self.ephemeral_owner,
            i64::from(self.data_length),
            i64::from(self.num_children),
        ] {
            h.i64(v);
        }
    }
}

impl Canonical for Acl {
    fn canon(&self, h: &mut StableHasher) {
        h.u64(u64::from(self.perms.0));
        h.str(&self.scheme);
        h.str(&self.id);
    }
}

impl<T: Canonical> Canonical for [T] {
    fn canon(&self, h: &mut StableHasher) {
        h.u64(self.len() as u64);
        for x in self {
            x.canon(h);
        }
    }
}

impl<T: Canonical> Canonical for Option<T> {
    fn canon(&self, h: &mut StableHasher) {
        match self {
            None => h.tag(0),
            Some(x) => {
                h.tag(1);
                x.canon(h);
            }
        }
    }
}

impl Canonical for i32 {
    fn canon(&self, h: &mut StableHasher) {
        h.i64(i64::from(*self));
    }
}

impl Canonical for String {
    fn canon(&self, h: &mut StableHasher) {
        h.str(self);
    }
}

impl Canonical for CreateOptions {
    fn canon(&self, h: &mut StableHasher) {
        h.str(create_mode_name(self.mode));
        self.acl.as_deref().canon_opt(h);
        // Only TTL nodes add a field, so the hashes of runs without them stay as they were.
        if let Some(ttl) = self.ttl {
            h.tag(2);
            h.u64(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
        }
    }
}

trait CanonOpt {
    fn canon_opt(self, h: &mut StableHasher);
}

impl CanonOpt for Option<&[Acl]> {
    fn canon_opt(self, h: &mut StableHasher) {
        match self {
            None => h.tag(0),
            Some(acl) => {
                h.tag(1);
                acl.canon(h);
            }
        }
    }
}

impl Canonical for Op {
    fn canon(&self, h: &mut StableHasher) {
        match self {
            Op::Check { path, version } => {
                h.tag(0);
                h.str(path);
                version.canon(h);
            }
            Op::Create {
                path,
                data,
                options,
            } => {
                h.tag(1);
                h.str(path);
                h.bytes(data);
                options.canon(h);
            }
            Op::SetData {
                path,
                data,
                version,
            } => {
                h.tag(2);
                h.str(path);
                h.bytes(data);
                version.canon(h);
            }
            Op::Delete { path, version } => {
                h.tag(3);
                h.str(path);
                version.canon(h);
            }
        }
    }
}

impl Canonical for OpResult {
    fn canon(&self, h: &mut StableHasher) {
        match self {
            OpResult::Check => h.tag(0),
            OpResult::Create { path, stat } => {
                h.tag(1);
                h.str(path);
                // Only a server that returns a create's Stat in a multi adds it, so the
                // hashes of runs recorded before (3.8.0's answer) stay as they were.
                if let Some(stat) = stat {
                    h.tag(1);
                    stat.canon(h);
                }
            }
            OpResult::SetData { stat } => {
                h.tag(2);
                stat.canon(h);
            }
            OpResult::Delete => h.tag(3),
        }
    }
}

/// A request: its name, then its fields. A session's close, which is no [`Request`], is
/// encoded as the name `close` alone (`canon_close`).
impl Canonical for Request {
    fn canon(&self, h: &mut StableHasher) {
        h.str(self.name());
        match self {
            Request::Create {
                path,
                data,
                options,
            } => {
                h.str(path);
                h.bytes(data);
                options.canon(h);
            }
            Request::Delete { path, version } => {
                h.str(path);
                version.canon(h);
            }
            Request::GetData { path, watch }
            | Request::Exists { path, watch }
            | Request::GetChildren { path, watch } => {
                h.str(path);
                h.tag(u8::from(*watch));
            }
            Request::SetData {
                path,
                data,
                version,
            } => {
                h.str(path);
                h.bytes(data);
                version.canon(h);
            }
            Request::Multi(ops) => ops.canon(h),
            Request::Sync { path } | Request::GetAcl { path } => h.str(path),
            Request::AddAuth { scheme, auth } => {
                h.str(scheme);
                h.bytes(auth);
            }
            Request::SetAcl { path, acl, version } => {
                h.str(path);
                acl.canon(h);
                version.canon(h);
            }
            Request::GetEphemerals { prefix: path }
            | Request::GetAllChildrenNumber { path }
            | Request::RemoveWatches { path } => h.str(path),
            Request::AddWatch { path, mode } => {
                h.str(path);
                h.tag(u8::from(mode.is_recursive()));
            }
            Request::MultiRead(reads) => reads.canon(h),
            Request::WhoAmI => {}
        }
    }
}

/// The name a session's close is logged and hashed under, as a request.
pub(crate) const CLOSE: &str = "close";

/// The encoding of a session's close as a request (beside [`Request`]'s).
pub(crate) fn canon_close(h: &mut StableHasher) {
    h.str(CLOSE);
}

/// The encoding of the answer to a session's close (beside [`Reply`]'s tags).
pub(crate) fn canon_closed(h: &mut StableHasher) {
    h.tag(10);
}

/// A reply: a tag per operation, then its fields. Tags 0 to 9 and 11 to 17 are the replies'
/// and 10 the answer to a close (`canon_closed`); they MUST NOT change.
impl Canonical for Reply {
    fn canon(&self, h: &mut StableHasher) {
        match self {
            Reply::Created { path, stat } => {
                h.tag(0);
                h.str(path);
                stat.canon(h);
            }
            Reply::Deleted => h.tag(1),
            Reply::Data { data, stat } => {
                h.tag(2);
                h.bytes(data);
                stat.canon(h);
            }
            Reply::Set(stat) => {
                h.tag(3);
                stat.canon(h);
            }
            Reply::Exists(stat) => {
                h.tag(4);
                stat.canon(h);
            }
            Reply::Children { children, stat } => {
                h.tag(5);
                children.canon(h);
                stat.canon(h);
            }
            Reply::Multi(results) => {
                h.tag(6);
                results.canon(h);
            }
            Reply::Synced => h.tag(7),
            Reply::Acl { acl, stat } => {
                h.tag(8);
                acl.canon(h);
                stat.canon(h);
            }
            Reply::AuthAdded => h.tag(9),
            Reply::AclSet(stat) => {
                h.tag(11);
                stat.canon(h);
            }
            Reply::Ephemerals(paths) => {
                h.tag(12);
                paths.canon(h);
            }
            Reply::AllChildrenNumber(n) => {
                h.tag(13);
                h.u64(*n);
            }
            Reply::WatchAdded => h.tag(14),
            Reply::WatchesRemoved => h.tag(15),
            Reply::MultiRead(results) => {
                h.tag(16);
                results.canon(h);
            }
            Reply::WhoAmI(ids) => {
                h.tag(17);
                ids.canon(h);
            }
        }
    }
}

impl Canonical for ReadOp {
    fn canon(&self, h: &mut StableHasher) {
        match self {
            ReadOp::GetData { path } => {
                h.tag(0);
                h.str(path);
            }
            ReadOp::GetChildren { path } => {
                h.tag(1);
                h.str(path);
            }
        }
    }
}

impl Canonical for ReadResult {
    fn canon(&self, h: &mut StableHasher) {
        match self {
            ReadResult::Data { data, stat } => {
                h.tag(0);
                h.bytes(data);
                stat.canon(h);
            }
            ReadResult::Children { children } => {
                h.tag(1);
                children.canon(h);
            }
            ReadResult::NoNode { path } => {
                h.tag(2);
                h.str(path);
            }
            ReadResult::NoAuth { path } => {
                h.tag(3);
                h.str(path);
            }
        }
    }
}

impl Canonical for Identity {
    fn canon(&self, h: &mut StableHasher) {
        h.str(&self.scheme);
        h.str(&self.user);
    }
}

impl Canonical for Error {
    fn canon(&self, h: &mut StableHasher) {
        h.str(self.name());
        match self {
            Error::NoNode { path }
            | Error::NodeExists { path }
            | Error::BadVersion { path }
            | Error::NotEmpty { path }
            | Error::NoChildrenForEphemerals { path }
            | Error::NoAuth { path }
            | Error::InvalidAcl { path }
            | Error::InvalidPath { path, .. }
            | Error::DataTooLarge { path, .. } => h.str(path),
            Error::Multi { index, source } => {
                h.u64(*index as u64);
                source.canon(h);
            }
            Error::ConnectionLoss
            | Error::OperationTimeout
            | Error::SessionExpired
            | Error::SessionMoved
            | Error::Closed
            | Error::AuthFailed => {}
            // The rest are rare; their text carries their fields.
            other => h.str(&other.to_string()),
        }
    }
}

impl Canonical for EventKind {
    fn canon(&self, h: &mut StableHasher) {
        h.str(event_kind_name(*self));
    }
}

impl Canonical for SessionState {
    fn canon(&self, h: &mut StableHasher) {
        h.str(state_name(*self));
    }
}

/// The stable name of a create mode (its variant name).
fn create_mode_name(mode: CreateMode) -> &'static str {
    match mode {
        CreateMode::Persistent => "Persistent",
        CreateMode::Ephemeral => "Ephemeral",
        CreateMode::PersistentSequential => "PersistentSequential",
        CreateMode::EphemeralSequential => "EphemeralSequential",
        CreateMode::Container => "Container",
        CreateMode::PersistentWithTtl => "PersistentWithTtl",
        CreateMode::PersistentSequentialWithTtl => "PersistentSequentialWithTtl",
    }
}

/// The stable name of an event kind (its variant name).
pub(crate) fn event_kind_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::NodeCreated => "NodeCreated",
        EventKind::NodeDeleted => "NodeDeleted",
        EventKind::NodeDataChanged => "NodeDataChanged",
        EventKind::NodeChildrenChanged => "NodeChildrenChanged",
        EventKind::Session => "Session",
        _ => "Unknown",
    }
}

/// The stable name of a session state (its variant name).
pub(crate) fn state_name(state: SessionState) -> &'static str {
    match state {
        SessionState::Connected => "Connected",
        SessionState::Disconnected => "Disconnected",
        SessionState::Expired => "Expired",
        SessionState::Closed => "Closed",
        SessionState::AuthFailed => "AuthFailed",
        _ => "Unknown",
    }
}
