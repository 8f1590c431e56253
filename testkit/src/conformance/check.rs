//! What the cases share: calls that must succeed, refusals matching a pattern, waits bounded
//! by [`EVENT_TIMEOUT`], watch checks, and one table of the requests that name a single path.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use avout::path::{self, sequence};
use avout::{
    Coordination, CoordinationExt, CreateMode, CreateOptions, EventKind, Result, SessionState,
    Stat, Watch, WatchedEvent,
};
use futures::FutureExt;

use std::sync::Arc;

use super::EVENT_TIMEOUT;
use crate::backend::Backend;

/// A new session of `backend`, or a panic: a case cannot run without one.
pub(super) async fn session<B: Backend + ?Sized>(backend: &B) -> Arc<dyn Coordination> {
    ok("open a session", backend.session().await)
}

/// A new session of `backend` authenticated as `user:password`, or a panic.
pub(super) async fn digest_session<B: Backend + ?Sized>(
    backend: &B,
    user: &str,
    password: &str,
) -> Arc<dyn Coordination> {
    ok(
        &format!("open a session as {user}"),
        backend.session_with_digest(user, password).await,
    )
}

/// Has the service expire `session`'s session, or panics.
pub(super) async fn expire<B: Backend + ?Sized>(backend: &B, session: &Arc<dyn Coordination>) {
    let id = session.session().id;
    ok(&format!("expire session {id}"), backend.expire(id).await);
}

/// The value of a call that must succeed, or a panic naming the step.
#[track_caller]
pub(super) fn ok<T>(what: &str, result: Result<T>) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{what}: unexpected error: {e} ({e:?})"),
    }
}

/// Asserts that a call failed with an error matching a pattern.
macro_rules! assert_err {
    ($what:expr, $result:expr, $pat:pat $(if $guard:expr)? $(,)?) => {
        match $result {
            Err($pat) $(if $guard)? => {}
            other => panic!(
                "{}: expected Err({}), got {:?}",
                $what,
                stringify!($pat $(if $guard)?),
                other
            ),
        }
    };
}
pub(super) use assert_err;

/// Awaits `fut`, failing the case after [`EVENT_TIMEOUT`].
pub(super) async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(EVENT_TIMEOUT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: nothing after {EVENT_TIMEOUT:?}"),
    }
}

/// Waits for a watch and checks it reports `kind` on `path` in a connected session.
pub(super) async fn expect_event(
    what: &str,
    watch: Watch,
    kind: EventKind,
    path: &str,
) -> WatchedEvent {
    let event = within(what, watch).await;
    check_event(what, &event, kind, path);
    event
}

#[track_caller]
pub(super) fn check_event(what: &str, event: &WatchedEvent, kind: EventKind, path: &str) {
    assert_eq!(
        (event.kind, event.path.as_str(), event.state),
        (kind, path, SessionState::Connected),
        "{what}: wrong watch event {event:?}"
    );
}

/// Asserts a watch has not fired (yet): it is not ready when polled once.
#[track_caller]
pub(super) fn assert_not_fired(what: &str, watch: &mut Watch) {
    if let Some(event) = watch.now_or_never() {
        panic!("{what}: the watch fired with {event:?}, but nothing it watches has changed");
    }
}

/// Asserts a watch has already fired with `kind` on `path`: it is ready when polled once.
#[track_caller]
pub(super) fn assert_fired_now(what: &str, watch: &mut Watch, kind: EventKind, path: &str) {
    match watch.now_or_never() {
        Some(event) => check_event(what, &event, kind, path),
        None => panic!(
            "{what}: the {kind:?} event on {path} was not delivered before the reply that \
             reflects the change"
        ),
    }
}

/// Reads `path` on `client` (after a `sync`) until its data is `want`, so that the change is
/// known to have reached this client's server. Bounded by [`EVENT_TIMEOUT`].
pub(super) async fn read_until<C: Coordination>(
    what: &str,
    client: &C,
    path: &str,
    want: &[u8],
) -> Stat {
    within(what, async {
        loop {
            ok(what, client.sync(path).await);
            let (data, stat) = ok(what, client.get_data(path).await);
            if data == want {
                return stat;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// `exists` after a `sync`, so that writes of other sessions committed before are visible.
pub(super) async fn synced_exists<C: Coordination>(
    what: &str,
    client: &C,
    path: &str,
) -> Option<Stat> {
    ok(what, client.sync(path).await);
    ok(what, client.exists(path).await)
}

pub(super) async fn sorted_children<C: Coordination>(
    what: &str,
    client: &C,
    path: &str,
) -> Vec<String> {
    ok(what, client.sorted_children(path).await)
}

pub(super) fn persistent() -> CreateOptions {
    CreateOptions::default()
}

pub(super) fn opts(mode: CreateMode) -> CreateOptions {
    CreateOptions::new(mode)
}

/// How many children were ever created under a node: ZooKeeper's internal cversion, which
/// numbers the next sequential child. The visible `cversion` counts creates and deletes, and
/// every delete removes a created child, so creates = (cversion + numChildren) / 2.
pub(super) fn creates_under(stat: &Stat) -> i64 {
    (i64::from(stat.cversion) + i64::from(stat.num_children)) / 2
}

/// The sequence number of a sequential node's path, checking its ten-digit form.
#[track_caller]
pub(super) fn seq_of(what: &str, created: &str, prefix: &str) -> i64 {
    let suffix = created.strip_prefix(prefix).unwrap_or_else(|| {
        panic!("{what}: created {created:?}, which does not start with {prefix:?}")
    });
    assert!(
        suffix.len() == 10 && suffix.bytes().all(|b| b.is_ascii_digit()),
        "{what}: the suffix of {created:?} is not ten digits"
    );
    sequence(path::name(created)).expect("ten digits parse")
}

/// Creates an ephemeral `{parent}/{name}` and an ephemeral-sequential `{parent}/es-…` on
/// `client`; returns their paths.
pub(super) async fn create_ephemerals<C: Coordination>(
    client: &C,
    parent: &str,
    name: &str,
) -> [String; 2] {
    let eph = path::join(parent, name);
    ok(
        "create an ephemeral",
        client.create(&eph, b"", &opts(CreateMode::Ephemeral)).await,
    );
    let (es, _) = ok(
        "create an ephemeral-sequential",
        client
            .create(
                &path::join(parent, "es-"),
                b"",
                &opts(CreateMode::EphemeralSequential),
            )
            .await,
    );
    [eph, es]
}

/// A request that names one path, for the cases that expect many requests to be refused the
/// same way (a missing node, an invalid path, a node the session may not use). A create sends
/// no data, a set [`Call::DATA`]; what a success returns is kept only to show it in the failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Call {
    Create(CreateMode),
    GetData,
    GetAndWatchData,
    SetData(Option<i32>),
    Delete(Option<i32>),
    Exists,
    ExistsAndWatch,
    GetChildren,
    GetAndWatchChildren,
    GetAcl,
    Sync,
}

impl Call {
    /// The data a set sends.
    pub(super) const DATA: &[u8] = b"x";

    /// Sends the request for `path` on `client`: the error, or what it returned, formatted.
    pub(super) async fn send<C: Coordination>(self, client: &C, path: &str) -> Result<String> {
        Ok(match self {
            Call::Create(mode) => format!("{:?}", client.create(path, b"", &opts(mode)).await?),
            Call::GetData => format!("{:?}", client.get_data(path).await?),
            Call::GetAndWatchData => {
                let (data, stat, _watch) = client.get_and_watch_data(path).await?;
                format!("{:?}", (data, stat))
            }
            Call::SetData(version) => {
                format!("{:?}", client.set_data(path, Self::DATA, version).await?)
            }
            Call::Delete(version) => format!("{:?}", client.delete(path, version).await?),
            Call::Exists => format!("{:?}", client.exists(path).await?),
            Call::ExistsAndWatch => format!("{:?}", client.exists_and_watch(path).await?.0),
            Call::GetChildren => format!("{:?}", client.get_children(path).await?),
            Call::GetAndWatchChildren => {
                let (children, stat, _watch) = client.get_and_watch_children(path).await?;
                format!("{:?}", (children, stat))
            }
            Call::GetAcl => format!("{:?}", client.get_acl(path).await?),
            Call::Sync => format!("{:?}", client.sync(path).await?),
        })
    }
}

impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::Create(mode) => write!(f, "create ({mode:?})"),
            Call::GetData => f.write_str("get_data"),
            Call::GetAndWatchData => f.write_str("get_and_watch_data"),
            Call::SetData(None) => f.write_str("set_data"),
            Call::SetData(Some(v)) => write!(f, "set_data at version {v}"),
            Call::Delete(None) => f.write_str("delete"),
            Call::Delete(Some(v)) => write!(f, "delete at version {v}"),
            Call::Exists => f.write_str("exists"),
            Call::ExistsAndWatch => f.write_str("exists_and_watch"),
            Call::GetChildren => f.write_str("get_children"),
            Call::GetAndWatchChildren => f.write_str("get_and_watch_children"),
            Call::GetAcl => f.write_str("get_acl"),
            Call::Sync => f.write_str("sync"),
        }
    }
}
