//! Conversions between `zookeeper-client`'s types and avout's, both ways: `from_zk_*` for what
//! the real backend receives, `to_zk_*` for what a client that speaks `zookeeper-client`'s API
//! over an avout backend answers (the drop-in simulated `zookeeper-client`,
//! `avout-zookeeper-client`).
//!
//! ```
//! use avout::zk::convert::{from_zk_stat, to_zk_stat};
//! let stat = avout::Stat { version: 3, ..Default::default() };
//! assert_eq!(from_zk_stat(&to_zk_stat(&stat)), stat);
//! ```

use zookeeper_client as zk;

use crate::{
    Acl, AddWatchMode, CreateMode, Error, EventKind, OpResult, Perms, SessionState, Stat,
    WatchedEvent,
};

/// Maps a client error to ours, attaching the request's path.
///
/// Transport failures the client reports as `Custom` (a killed server's `ConnectionReset`, a
/// broken pipe) are connection losses: the request may or may not have reached the server.
///
/// ```
/// use zookeeper_client as zk;
/// let e = avout::zk::convert::from_zk_error(zk::Error::NoNode, "/a");
/// assert_eq!(e, avout::Error::NoNode { path: "/a".into() });
/// ```
pub fn from_zk_error(error: zk::Error, path: &str) -> Error {
    let path = path.to_owned();
    match error {
        zk::Error::NoNode => Error::NoNode { path },
        zk::Error::NodeExists => Error::NodeExists { path },
        zk::Error::BadVersion => Error::BadVersion { path },
        zk::Error::NotEmpty => Error::NotEmpty { path },
        zk::Error::NoChildrenForEphemerals => Error::NoChildrenForEphemerals { path },
        zk::Error::NoAuth => Error::NoAuth { path },
        zk::Error::InvalidAcl => Error::InvalidAcl { path },
        zk::Error::BadArguments(what) => Error::BadArguments((*what).to_owned()),
        zk::Error::ConnectionLoss => Error::ConnectionLoss,
        zk::Error::Custom(e) => {
            tracing::debug!(error = %e, "transport failure treated as connection loss");
            Error::ConnectionLoss
        }
        zk::Error::Timeout => Error::OperationTimeout,
        zk::Error::SessionExpired => Error::SessionExpired,
        zk::Error::SessionMoved => Error::SessionMoved,
        zk::Error::ClientClosed => Error::Closed,
        zk::Error::AuthFailed => Error::AuthFailed,
        zk::Error::Unimplemented => Error::Unimplemented(format!("request on {path}")),
        zk::Error::NoWatcher => Error::NoWatcher { path },
        // Everything else leaves the outcome unknown; `Other` is indeterminate.
        other => Error::Other(other.to_string()),
    }
}

/// The error `zookeeper-client` reports for the same outcome: the path goes (its errors
/// carry none), a refusal keeps its kind, and what it has no word for becomes
/// `UnexpectedError`. Data over the 1 MiB limit is `ConnectionLoss`: a server drops the
/// connection that sends it.
///
/// ```
/// use zookeeper_client as zk;
/// use avout::zk::convert::to_zk_error;
/// assert_eq!(to_zk_error(&avout::Error::BadVersion { path: "/a".into() }), zk::Error::BadVersion);
/// assert_eq!(to_zk_error(&avout::Error::Closed), zk::Error::ClientClosed);
/// ```
pub fn to_zk_error(error: &Error) -> zk::Error {
    match error {
        Error::NoNode { .. } => zk::Error::NoNode,
        Error::NodeExists { .. } => zk::Error::NodeExists,
        Error::BadVersion { .. } => zk::Error::BadVersion,
        Error::NotEmpty { .. } => zk::Error::NotEmpty,
        Error::NoChildrenForEphemerals { .. } => zk::Error::NoChildrenForEphemerals,
        Error::NoAuth { .. } => zk::Error::NoAuth,
        Error::InvalidAcl { .. } => zk::Error::InvalidAcl,
        Error::InvalidPath { .. } => zk::Error::BadArguments(&"invalid path"),
        Error::DataTooLarge { .. } | Error::ConnectionLoss => zk::Error::ConnectionLoss,
        // What the server refuses as bad arguments, as the client crate words it.
        Error::BadArguments(_) => zk::Error::BadArguments(&"server error"),
        Error::OperationTimeout => zk::Error::Timeout,
        Error::Unreachable { .. } => zk::Error::NoHosts,
        Error::SessionExpired => zk::Error::SessionExpired,
        Error::SessionMoved => zk::Error::SessionMoved,
        Error::Closed => zk::Error::ClientClosed,
        Error::AuthFailed => zk::Error::AuthFailed,
        Error::Multi { source, .. } => to_zk_error(source),
        Error::NoWatcher { .. } => zk::Error::NoWatcher,
        Error::Unimplemented(_) => zk::Error::Unimplemented,
        other => zk::Error::UnexpectedError(other.to_string()),
    }
}

/// Maps a client session state to ours (a read-only connection is connected).
///
/// ```
/// use zookeeper_client as zk;
/// let s = avout::zk::convert::from_zk_state(zk::SessionState::SyncConnected);
/// assert_eq!(s, avout::SessionState::Connected);
/// ```
pub fn from_zk_state(state: zk::SessionState) -> SessionState {
    match state {
        zk::SessionState::SyncConnected | zk::SessionState::ConnectedReadOnly => {
            SessionState::Connected
        }
        zk::SessionState::Disconnected => SessionState::Disconnected,
        zk::SessionState::Expired => SessionState::Expired,
        zk::SessionState::Closed => SessionState::Closed,
        zk::SessionState::AuthFailed => SessionState::AuthFailed,
    }
}

/// The client crate's name for a session state.
///
/// ```
/// use zookeeper_client as zk;
/// let s = avout::zk::convert::to_zk_state(avout::SessionState::Connected);
/// assert_eq!(s, zk::SessionState::SyncConnected);
/// ```
pub fn to_zk_state(state: SessionState) -> zk::SessionState {
    match state {
        SessionState::Connected => zk::SessionState::SyncConnected,
        SessionState::Disconnected => zk::SessionState::Disconnected,
        SessionState::Expired => zk::SessionState::Expired,
        SessionState::Closed => zk::SessionState::Closed,
        SessionState::AuthFailed => zk::SessionState::AuthFailed,
    }
}

/// Maps a client watch event to ours.
///
/// ```
/// use zookeeper_client as zk;
/// let e = avout::zk::convert::from_zk_event(zk::WatchedEvent::new(zk::EventType::NodeDeleted, "/a"));
/// assert_eq!(e.kind, avout::EventKind::NodeDeleted);
/// ```
pub fn from_zk_event(event: zk::WatchedEvent) -> WatchedEvent {
    let kind = match event.event_type {
        zk::EventType::NodeCreated => EventKind::NodeCreated,
        zk::EventType::NodeDeleted => EventKind::NodeDeleted,
        zk::EventType::NodeDataChanged => EventKind::NodeDataChanged,
        zk::EventType::NodeChildrenChanged => EventKind::NodeChildrenChanged,
        zk::EventType::Session => EventKind::Session,
    };
    WatchedEvent {
        kind,
        state: from_zk_state(event.session_state),
        path: event.path,
    }
}

/// The client crate's watch event for ours: a node event without a zxid
/// ([`zk::WatchedEvent::NO_ZXID`], as ZooKeeper before 3.9 sends it), or a session event.
///
/// ```
/// use zookeeper_client as zk;
/// let ended = avout::WatchedEvent::session_ended(avout::SessionState::Expired);
/// let e = avout::zk::convert::to_zk_event(&ended);
/// assert_eq!(e, zk::WatchedEvent::new_session(zk::SessionState::Expired));
/// ```
pub fn to_zk_event(event: &WatchedEvent) -> zk::WatchedEvent {
    let kind = match event.kind {
        EventKind::NodeCreated => zk::EventType::NodeCreated,
        EventKind::NodeDeleted => zk::EventType::NodeDeleted,
        EventKind::NodeDataChanged => zk::EventType::NodeDataChanged,
        EventKind::NodeChildrenChanged => zk::EventType::NodeChildrenChanged,
        EventKind::Session => return zk::WatchedEvent::new_session(to_zk_state(event.state)),
    };
    zk::WatchedEvent::new(kind, event.path.clone())
}

/// Copies every field of a stat into the other crate's `Stat`.
macro_rules! copy_stat {
    ($stat:expr => $to:path) => {{
        let s = $stat;
        $to {
            czxid: s.czxid,
            mzxid: s.mzxid,
            pzxid: s.pzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: s.ephemeral_owner,
            data_length: s.data_length,
            num_children: s.num_children,
        }
    }};
}

/// Maps a client stat to ours.
///
/// ```
/// let zk = zookeeper_client::Stat { czxid: 7, mzxid: 7, pzxid: 7, ctime: 0, mtime: 0,
///     version: 0, cversion: 0, aversion: 0, ephemeral_owner: 0, data_length: 0, num_children: 0 };
/// assert_eq!(avout::zk::convert::from_zk_stat(&zk).czxid, 7);
/// ```
pub fn from_zk_stat(stat: &zk::Stat) -> Stat {
    copy_stat!(stat => Stat)
}

/// The client crate's stat for ours.
///
/// ```
/// let stat = avout::Stat { num_children: 2, ..Default::default() };
/// assert_eq!(avout::zk::convert::to_zk_stat(&stat).num_children, 2);
/// ```
pub fn to_zk_stat(stat: &Stat) -> zk::Stat {
    copy_stat!(stat => zk::Stat)
}

/// The client crate's watch mode for ours.
///
/// ```
/// use zookeeper_client as zk;
/// let m = avout::zk::convert::to_zk_watch_mode(avout::AddWatchMode::Persistent);
/// assert_eq!(m, zk::AddWatchMode::Persistent);
/// ```
pub fn to_zk_watch_mode(mode: AddWatchMode) -> zk::AddWatchMode {
    match mode {
        AddWatchMode::Persistent => zk::AddWatchMode::Persistent,
        AddWatchMode::PersistentRecursive => zk::AddWatchMode::PersistentRecursive,
    }
}

/// Our watch mode for the client crate's.
///
/// ```
/// use zookeeper_client as zk;
/// let m = avout::zk::convert::from_zk_watch_mode(zk::AddWatchMode::PersistentRecursive);
/// assert_eq!(m, avout::AddWatchMode::PersistentRecursive);
/// ```
pub fn from_zk_watch_mode(mode: zk::AddWatchMode) -> AddWatchMode {
    match mode {
        zk::AddWatchMode::Persistent => AddWatchMode::Persistent,
        zk::AddWatchMode::PersistentRecursive => AddWatchMode::PersistentRecursive,
    }
}

/// The client crate's create mode for ours (a TTL node is marked by its options' TTL there).
///
/// ```
/// use zookeeper_client as zk;
/// let m = avout::zk::convert::to_zk_mode(avout::CreateMode::PersistentWithTtl);
/// assert_eq!(m, zk::CreateMode::Persistent);
/// ```
pub fn to_zk_mode(mode: CreateMode) -> zk::CreateMode {
    match mode {
        CreateMode::Persistent => zk::CreateMode::Persistent,
        CreateMode::Ephemeral => zk::CreateMode::Ephemeral,
        CreateMode::PersistentSequential => zk::CreateMode::PersistentSequential,
        CreateMode::EphemeralSequential => zk::CreateMode::EphemeralSequential,
        CreateMode::Container => zk::CreateMode::Container,
        // The client crate marks a TTL node by the TTL in its options, not by its mode.
        CreateMode::PersistentWithTtl => zk::CreateMode::Persistent,
        CreateMode::PersistentSequentialWithTtl => zk::CreateMode::PersistentSequential,
    }
}

const PERMISSIONS: [(Perms, zk::Permission); 5] = [
    (Perms::READ, zk::Permission::READ),
    (Perms::WRITE, zk::Permission::WRITE),
    (Perms::CREATE, zk::Permission::CREATE),
    (Perms::DELETE, zk::Permission::DELETE),
    (Perms::ADMIN, zk::Permission::ADMIN),
];

/// The client crate's ACL for ours.
///
/// ```
/// let acl = avout::Acl::open_unsafe();
/// let zk = avout::zk::convert::to_zk_acls(&acl);
/// assert_eq!(zk[0].scheme(), "world");
/// ```
pub fn to_zk_acls(acl: &[Acl]) -> Vec<zk::Acl> {
    acl.iter()
        .map(|entry| {
            let permission = PERMISSIONS
                .iter()
                .filter(|(ours, _)| entry.perms.contains(*ours))
                .fold(zk::Permission::NONE, |acc, (_, theirs)| acc | *theirs);
            zk::Acl::new(permission, zk::AuthId::new(&entry.scheme, &entry.id))
        })
        .collect()
}

/// Our ACL entry for the client crate's.
///
/// ```
/// use zookeeper_client as zk;
/// let entry = avout::zk::convert::from_zk_acl(&zk::Acls::anyone_all()[0]);
/// assert_eq!(entry, avout::Acl::open_unsafe()[0]);
/// ```
pub fn from_zk_acl(acl: &zk::Acl) -> Acl {
    let perms = PERMISSIONS
        .iter()
        .filter(|(_, theirs)| acl.permission().has(*theirs))
        .fold(Perms(0), |acc, (ours, _)| acc | *ours);
    Acl {
        perms,
        scheme: acl.scheme().to_owned(),
        id: acl.id().to_owned(),
    }
}

/// Maps one result of a client `multi` to ours.
///
/// ```
/// use zookeeper_client as zk;
/// let r = avout::zk::convert::from_zk_multi_result(zk::MultiWriteResult::Delete);
/// assert_eq!(r, avout::OpResult::Delete);
/// ```
pub fn from_zk_multi_result(result: zk::MultiWriteResult) -> OpResult {
    match result {
        zk::MultiWriteResult::Check => OpResult::Check,
        zk::MultiWriteResult::Delete => OpResult::Delete,
        // ZooKeeper before 3.7.2/3.8.2 answers an invalid Stat here (ZOOKEEPER-4026).
        zk::MultiWriteResult::Create { path, stat } => OpResult::Create {
            path,
            stat: (!stat.is_invalid()).then(|| from_zk_stat(&stat)),
        },
        zk::MultiWriteResult::SetData { stat } => OpResult::SetData {
            stat: from_zk_stat(&stat),
        },
        other => unreachable!("a multi of writes returned {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_failures_are_indeterminate() {
        // `Custom` cannot be built outside the client crate; the failover tests on a real
        // ensemble meet it when they kill the server a client is connected to.
        assert!(from_zk_error(zk::Error::ConnectionLoss, "/a").is_indeterminate());
        assert!(from_zk_error(zk::Error::Timeout, "/a").is_indeterminate());
    }

    #[test]
    fn refusals_keep_their_path() {
        assert_eq!(
            from_zk_error(zk::Error::BadVersion, "/x"),
            Error::BadVersion { path: "/x".into() }
        );
        assert!(from_zk_error(zk::Error::SessionExpired, "/x").is_session_lost());
        assert!(from_zk_error(zk::Error::ClientClosed, "/x").is_session_lost());
    }

    #[test]
    fn permissions_round_trip() {
        for bits in 0..32 {
            let acl = [Acl {
                perms: Perms(bits),
                scheme: "digest".into(),
                id: "u:h".into(),
            }];
            assert_eq!(from_zk_acl(&to_zk_acls(&acl)[0]), acl[0]);
        }
    }
}
