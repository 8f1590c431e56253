//! Conversions between `zookeeper-client`'s types and ours.

use zookeeper_client as zk;

use crate::{
    Acl, AddWatchMode, CreateMode, Error, EventKind, OpResult, Perms, SessionState, Stat,
    WatchedEvent,
};

/// Maps a client error to ours, attaching the request's path.
///
/// Transport failures the client reports as `Custom` (a killed server's `ConnectionReset`, a
/// broken pipe) are connection losses: the request may or may not have reached the server.
pub(super) fn from_zk_error(error: zk::Error, path: &str) -> Error {
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

pub(super) fn from_zk_state(state: zk::SessionState) -> SessionState {
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

pub(super) fn from_zk_event(event: zk::WatchedEvent) -> WatchedEvent {
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

pub(super) fn from_zk_stat(stat: &zk::Stat) -> Stat {
    Stat {
        czxid: stat.czxid,
        mzxid: stat.mzxid,
        pzxid: stat.pzxid,
        ctime: stat.ctime,
        mtime: stat.mtime,
        version: stat.version,
        cversion: stat.cversion,
        aversion: stat.aversion,
        ephemeral_owner: stat.ephemeral_owner,
        data_length: stat.data_length,
        num_children: stat.num_children,
    }
}

pub(super) fn to_zk_watch_mode(mode: AddWatchMode) -> zk::AddWatchMode {
    match mode {
        AddWatchMode::Persistent => zk::AddWatchMode::Persistent,
        AddWatchMode::PersistentRecursive => zk::AddWatchMode::PersistentRecursive,
    }
}

pub(super) fn to_zk_mode(mode: CreateMode) -> zk::CreateMode {
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

pub(super) fn to_zk_acls(acl: &[Acl]) -> Vec<zk::Acl> {
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

pub(super) fn from_zk_acl(acl: &zk::Acl) -> Acl {
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

pub(super) fn from_zk_multi_result(result: zk::MultiWriteResult) -> OpResult {
    match result {
        zk::MultiWriteResult::Check => OpResult::Check,
        zk::MultiWriteResult::Delete => OpResult::Delete,
        zk::MultiWriteResult::Create { path, .. } => OpResult::Create { path },
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
