//! The production backend: a real ZooKeeper ensemble through the `zookeeper-client` crate.
//!
//! [`ZkClient`] is one ZooKeeper session. Every operation validates its input client-side, is
//! sent when the method is called (so successive calls pipeline, and the server applies them in
//! call order), and maps the client's errors to [`Error`] so that the retry meaning is explicit:
//! a connection that drops mid-request, including the `ConnectionReset` a killed server
//! produces, is [`Error::ConnectionLoss`] (indeterminate), never a silent success or failure.
//!
//! # Connection loss and session expiry
//!
//! While the client fails over between the servers of the connect string, requests in flight
//! fail with [`Error::ConnectionLoss`] and the session state goes to
//! [`SessionState::Disconnected`] and back to [`SessionState::Connected`]; the session, its
//! ephemerals and its watches survive if a server is reached within the session timeout. If
//! not, the state becomes [`SessionState::Expired`], every later call fails with
//! [`Error::SessionExpired`], and a new [`ZkClient`] is needed. The client also declares the
//! session expired by itself when it has heard nothing from any server for 1.4 times the
//! session timeout, so a partitioned client learns of its expiry without a server telling it.
//!
//! # Access control
//!
//! [`ZkConfig::with_digest`] authenticates the session; [`ZkConfig::with_default_acl`] sets the
//! ACL of nodes created without one, so a deployment can keep other clients away from every
//! node it creates (for example with [`Acl::creator_all`](crate::Acl::creator_all)).
//!
//! # TLS and SASL
//!
//! Behind cargo features, so that a deployment that needs neither builds no rustls nor SASL:
//!
//! - `tls`: [`ZkConfig::with_tls`] reaches the servers' secure client ports
//!   (`secureClientPort`, ZooKeeper 3.5+) with a [`TlsConfig`]: the CA, this client's
//!   certificate and key, hostname verification. A refused certificate, on either side, fails
//!   [`ZkClient::connect`] with [`Error::TlsRefused`] and a [`TlsRefusal`](crate::TlsRefusal)
//!   saying why, as soon as every TLS server refused. (zookeeper-client takes a failed
//!   handshake for a connection loss and tries again until the connect times out, so the
//!   connect makes one handshake of its own with each TLS server, with the same settings,
//!   beside it, to learn why: one extra handshake per server per connect.)
//! - `sasl-digest-md5`, `sasl-gssapi`: [`ZkConfig::with_sasl`] authenticates the session with a
//!   [`Sasl`] mechanism; a refused secret fails the connect with [`Error::SaslRefused`] at
//!   once.
//!
//! Both errors are [credentials refused](Error::is_credentials_refused): the managed
//! [`Client`](crate::Client) does not retry them.
//!
//! ```no_run
//! # #[cfg(all(feature = "tls", feature = "sasl-digest-md5"))]
//! # async fn demo() -> avout::Result<()> {
//! use avout::zk::{Sasl, TlsConfig, ZkClient, ZkConfig};
//! let tls = TlsConfig::from_ca_file("ca.pem")?.with_identity_files("app.pem", "app.key")?;
//! let config = ZkConfig::new("zk1:2281,zk2:2281/app")
//!     .with_tls(tls)
//!     .with_sasl(Sasl::digest_md5("app", "secret"));
//! match ZkClient::connect(&config).await {
//!     Err(avout::Error::TlsRefused { server, reason }) => eprintln!("{server}: {reason}"),
//!     other => drop(other?),
//! }
//! # Ok(()) }
//! ```

mod config;
pub mod convert;
mod reads;
#[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
mod sasl;
mod send;
#[cfg(feature = "tls")]
mod tls;

pub use config::ZkConfig;
#[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
pub use sasl::Sasl;
#[cfg(feature = "tls")]
pub use tls::TlsConfig;

use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use zookeeper_client as zk;

use crate::sync::{Mutex, lock};
use crate::{
    AddWatchMode, Coordination, CreateOptions, Error, EventKind, Op, OpFuture, OpResult,
    PersistentWatch, Reply, Request, Result, SessionId, SessionInfo, SessionState,
    SessionStatePublisher, SessionStates, Watch,
};
use convert::{from_zk_error, from_zk_event, from_zk_state, to_zk_acls};

/// One session with a real ZooKeeper ensemble; see the [module docs](self).
///
/// Dropping the client (or calling [`Coordination::close`]) closes the session.
///
/// ```no_run
/// use avout::{Coordination, CoordinationExt, CreateMode};
/// use avout::zk::{ZkClient, ZkConfig};
///
/// # async fn demo() -> avout::Result<()> {
/// let zk = ZkClient::connect(&ZkConfig::new("127.0.0.1:2181")).await?;
/// zk.ensure_path("/app").await?;
/// let (path, _) = zk.create("/app/worker-", b"up", &CreateMode::EphemeralSequential.into()).await?;
/// let (data, stat) = zk.get_data(&path).await?;
/// assert_eq!(data, b"up");
/// assert_eq!(stat.ephemeral_owner, zk.session().id.0);
/// # Ok(()) }
/// ```
pub struct ZkClient {
    /// The session's handle; `None` once closed. The crate closes a session when its last
    /// handle is dropped, so `close` takes this one and every request in flight holds a clone
    /// until its reply: the session ends right after the last of them.
    client: Mutex<Option<StdArc<zk::Client>>>,
    config: ZkConfig,
    info: SessionInfo,
    default_acl: Vec<zk::Acl>,
    states: SessionStatePublisher,
    /// Set by `close`, so pending watches report a closed rather than an expired session.
    closed: StdArc<AtomicBool>,
    /// Set by `expire_session`: the session was ended from this handle and is reported, to
    /// its state subscribers, its watches and its later requests, as expired.
    expired: StdArc<AtomicBool>,
    forwarder: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ZkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZkClient")
            .field("connect", &self.config.connect)
            .field("session", &self.info.id)
            .field("state", &self.states.current())
            .finish()
    }
}

impl Drop for ZkClient {
    fn drop(&mut self) {
        self.forwarder.abort();
    }
}

impl ZkClient {
    /// Establishes a session. Must be called within a tokio runtime.
    ///
    /// Fails with [`Error::Unreachable`] if no server answers within
    /// [`ZkConfig::connect_timeout`], [`Error::TlsRefused`] if a TLS certificate is refused,
    /// [`Error::SaslRefused`] (or [`Error::AuthFailed`] without SASL) if authentication is
    /// refused, and [`Error::BadArguments`] for a malformed connect string. It returns within
    /// the connect timeout whatever happens.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// use avout::zk::{ZkClient, ZkConfig};
    /// match ZkClient::connect(&ZkConfig::new("127.0.0.1:1")).await {
    ///     Err(avout::Error::Unreachable { servers, .. }) => eprintln!("nobody at {servers}"),
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// ```
    pub async fn connect(config: &ZkConfig) -> Result<ZkClient> {
        let client = Self::open(config).await?;
        let info = SessionInfo {
            id: SessionId(client.session_id().0),
            timeout: client.session_timeout(),
        };
        let states = SessionStatePublisher::new(SessionState::Connected);
        let mut watcher = client.state_watcher();
        let publisher = states.clone();
        let expired = StdArc::new(AtomicBool::new(false));
        let expiring = expired.clone();
        let forwarder = tokio::spawn(async move {
            loop {
                let mut state = from_zk_state(watcher.changed().await);
                if state.is_terminal() && expiring.load(Ordering::Acquire) {
                    state = SessionState::Expired;
                }
                publisher.publish(state);
                if state.is_terminal() {
                    break;
                }
            }
        });
        Ok(ZkClient {
            default_acl: to_zk_acls(&config.default_acl),
            client: Mutex::new(Some(StdArc::new(client))),
            config: config.clone(),
            info,
            states,
            closed: StdArc::new(AtomicBool::new(false)),
            expired,
            forwarder,
        })
    }

    async fn open(config: &ZkConfig) -> Result<zk::Client> {
        let connector = config.connector()?;
        #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
        if let Some(sasl) = &config.sasl {
            sasl.ready(&config.connect, config.connect_timeout).await?;
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &config.tls {
            let probes = tls.probes(&config.connect);
            let connect = connector.secure_connect(&config.connect);
            let outcome = tls::explained(config.connect_timeout, connect, probes).await?;
            return Self::settle(config, outcome);
        }
        let outcome =
            tokio::time::timeout(config.connect_timeout, connector.connect(&config.connect)).await;
        Self::settle(config, outcome.ok())
    }

    /// What a connect's outcome (`None`: it timed out) means for the caller.
    fn settle(
        config: &ZkConfig,
        outcome: Option<std::result::Result<zk::Client, zk::Error>>,
    ) -> Result<zk::Client> {
        match outcome {
            Some(Ok(client)) => Ok(client),
            None | Some(Err(zk::Error::NoHosts | zk::Error::Timeout)) => Err(Error::Unreachable {
                servers: config.connect.clone(),
                timeout: config.connect_timeout,
            }),
            #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
            Some(Err(zk::Error::AuthFailed)) if config.sasl.is_some() => {
                let sasl = config.sasl.as_ref().expect("checked by the guard");
                Err(sasl.refused(
                    &config.connect,
                    "the server answered AUTHFAILED and closed the session",
                ))
            }
            Some(Err(e)) => Err(from_zk_error(e, "")),
        }
    }

    /// The underlying `zookeeper-client` handle, for what the trait does not cover; `None`
    /// once the session was closed.
    ///
    /// ```no_run
    /// # async fn demo(zk: &avout::zk::ZkClient) {
    /// if let Some(raw) = zk.raw() {
    ///     println!("chroot: {:?}", raw.path());
    /// }
    /// # }
    /// ```
    pub fn raw(&self) -> Option<StdArc<zk::Client>> {
        lock(&self.client).clone()
    }

    /// The configuration this client connected with.
    ///
    /// ```no_run
    /// # fn demo(zk: &avout::zk::ZkClient) {
    /// println!("{}", zk.config().connect);
    /// # }
    /// ```
    pub fn config(&self) -> &ZkConfig {
        &self.config
    }

    /// Ends this session at the service, for tests of expiry handling, and reports it to this
    /// handle as expired: its state subscribers see [`SessionState::Expired`], its pending
    /// watches an expired session, and its later requests fail with [`Error::SessionExpired`].
    /// Returns once the service has ended the session, so its ephemeral nodes are gone and
    /// the other sessions' watches on them have fired.
    ///
    /// For the service and every other session, an expired session and one closed by its
    /// owner are the same thing (its ephemerals deleted, the same watch events), so the session
    /// is ended by a `CloseSession` on its own connection, and only this handle's view is
    /// rewritten. Requests already in flight finish first (they hold the connection), as do
    /// handles taken with [`raw`](Self::raw): the session ends when the last is dropped.
    ///
    /// Curator's `KillSession` trick (a second connection on the same session, closed) is not
    /// used: it races with this client's own reconnection. The second connection takes the
    /// session over, this client reconnects at once and takes it back before the second one's
    /// handshake (a connect and a ping) is over, and the two can alternate for longer than a
    /// test waits (seen: ten seconds without a close getting through).
    ///
    /// Fails with [`Error::Closed`] if the session was closed, and with
    /// [`Error::OperationTimeout`] if the service does not confirm the end within twice the
    /// session timeout (a later call waits again). Expiring an expired session does nothing.
    ///
    /// ```no_run
    /// # async fn demo(zk: &avout::zk::ZkClient) -> avout::Result<()> {
    /// use avout::Coordination;
    /// zk.expire_session().await?;
    /// assert!(matches!(zk.get_data("/").await, Err(avout::Error::SessionExpired)));
    /// # Ok(()) }
    /// ```
    pub async fn expire_session(&self) -> Result<()> {
        // Subscribed first, so the end cannot be published unseen in between.
        let mut states = self.states.subscribe();
        let client = {
            let mut slot = lock(&self.client);
            if slot.is_none() && !self.expired.load(Ordering::Acquire) {
                return Err(Error::Closed);
            }
            // Set before the handle goes, so the forwarder reports the end as an expiry.
            self.expired.store(true, Ordering::Release);
            slot.take()
        };
        // Dropping the last handle sends CloseSession; the client's state turns terminal (and
        // the forwarder publishes `Expired`) once the service has answered it, that is once the
        // session is gone there. A repeated call only waits for that.
        drop(client);
        let wait = self.info.timeout.max(Duration::from_secs(1)) * 2;
        tokio::time::timeout(wait, states.terminated())
            .await
            .map(drop)
            .map_err(|_| Error::OperationTimeout)
    }

    /// A clone of the session's handle, or `SessionExpired` after `expire_session`, or
    /// `Closed`.
    fn handle(&self) -> Result<StdArc<zk::Client>> {
        lock(&self.client).clone().ok_or_else(|| {
            if self.expired.load(Ordering::Acquire) {
                Error::SessionExpired
            } else {
                Error::Closed
            }
        })
    }

    /// Wraps a client watcher, reporting the end of a session this handle closed as `Closed`,
    /// and of one it expired (`expire_session`) as `Expired`.
    fn watch(&self, watcher: zk::OneshotWatcher) -> Watch {
        let closed = self.closed.clone();
        let expired = self.expired.clone();
        Watch::new(async move {
            let mut event = from_zk_event(watcher.changed().await);
            relabel_end(&mut event, &closed, &expired);
            event
        })
    }

    fn create_options<'a>(
        &'a self,
        options: &CreateOptions,
        acl: &'a [zk::Acl],
    ) -> zk::CreateOptions<'a> {
        let acls = if options.acl.is_some() {
            zk::Acls::new(acl)
        } else {
            zk::Acls::new(&self.default_acl)
        };
        let zk_options = convert::to_zk_mode(options.mode).with_acls(acls);
        match options.ttl {
            Some(ttl) => zk_options.with_ttl(ttl),
            None => zk_options,
        }
    }

    /// A [`PersistentWatch`] over a client persistent watcher, polled directly (no task in
    /// between), so its events keep their order against replies; ends after a terminal
    /// session event, reported as `watch` does. Removal drops the watcher: the client crate
    /// then sends `removeWatches` itself.
    fn persistent(
        &self,
        watcher: zk::PersistentWatcher,
        path: &str,
        mode: AddWatchMode,
    ) -> PersistentWatch {
        let closed = self.closed.clone();
        let expired = self.expired.clone();
        let events = futures::stream::unfold(Some(watcher), move |watcher| {
            let closed = closed.clone();
            let expired = expired.clone();
            async move {
                // After a terminal event the crate's watcher must not be polled again.
                let mut watcher = watcher?;
                let mut event = from_zk_event(watcher.changed().await);
                if relabel_end(&mut event, &closed, &expired) {
                    return Some((event, None));
                }
                Some((event, Some(watcher)))
            }
        });
        PersistentWatch::from_stream(path, mode, futures::StreamExt::boxed(events), None)
    }

    /// Sends a `multi` (validated by `submit`) and maps its results.
    fn multi(&self, ops: Vec<Op>) -> OpFuture<'_, Vec<OpResult>> {
        let acls: Vec<Vec<zk::Acl>> = ops
            .iter()
            .map(|op| match op {
                Op::Create { options, .. } => {
                    options.acl.as_deref().map(to_zk_acls).unwrap_or_default()
                }
                _ => Vec::new(),
            })
            .collect();
        let paths: Vec<String> = ops.iter().map(|op| op.path().to_owned()).collect();
        let mut refusal = None;
        let reply = self.call(
            "",
            |client, _| {
                let mut writer = client.new_multi_writer();
                for (op, acl) in ops.iter().zip(&acls) {
                    let added = match op {
                        Op::Check { path, version } => {
                            writer.add_check_version(path, version.unwrap_or(-1))
                        }
                        Op::Create {
                            path,
                            data,
                            options,
                        } => writer.add_create(path, data, &self.create_options(options, acl)),
                        Op::SetData {
                            path,
                            data,
                            version,
                        } => writer.add_set_data(path, data, *version),
                        Op::Delete { path, version } => writer.add_delete(path, *version),
                    };
                    if let Err(e) = added {
                        refusal = Some(from_zk_error(e, op.path()));
                        return futures::future::ready(Ok(MultiOutcome::Refused)).boxed();
                    }
                }
                writer.commit().map(|r| Ok(MultiOutcome::Done(r))).boxed()
            },
            |reply| reply,
        );
        async move {
            let outcome = match reply.await? {
                MultiOutcome::Done(outcome) => outcome,
                MultiOutcome::Refused => {
                    return Err(refusal.expect("a refused multi records why"));
                }
            };
            let results = outcome.map_err(|e| match e {
                zk::MultiWriteError::OperationFailed { index, source } => Error::Multi {
                    index,
                    source: Box::new(from_zk_error(source, &paths[index])),
                },
                zk::MultiWriteError::RequestFailed { source } => from_zk_error(source, ""),
            })?;
            Ok(results
                .into_iter()
                .map(convert::from_zk_multi_result)
                .collect())
        }
        .boxed()
    }

    /// Sends one request and maps its reply.
    ///
    /// `send` is called at once (submission happens at the call) with a handle and the path,
    /// both borrowed for as long as the reply future lives: several of the client's futures
    /// borrow them until the reply arrives, while ours must outlive the caller's `path`.
    /// `finish` maps the reply; errors are mapped with the path attached.
    ///
    /// The reply is awaited on a task of its own, which owns the handle until the reply is
    /// in: so a request's answer arrives whether or not its caller polls (as on the
    /// simulator), a caller dropping its future cancels nothing already sent, and `close`,
    /// which ends the session once every handle is let go, waits for the replies in flight
    /// and never for a caller that holds a request unpolled (the task that closes, say).
    fn call<'s, R, T>(
        &'s self,
        path: &str,
        send: impl FnOnce(&'static zk::Client, &'static str) -> ZkReply<R>,
        finish: impl FnOnce(R) -> T + Send + 's,
    ) -> OpFuture<'s, T>
    where
        R: Send + 'static,
        T: Send + 's,
    {
        let client = match self.handle() {
            Ok(client) => client,
            Err(e) => return refused(e),
        };
        let path: StdArc<str> = StdArc::from(path);
        // SAFETY: both references point into `Arc` allocations that are never mutated and that
        // `Borrowing` keeps alive after `reply`: struct fields drop in declaration order, so
        // the future holding the references is always dropped before what they point to, and
        // `Borrowing::wait` takes the struct by value, so its future owns every field.
        #[allow(unsafe_code)]
        let (client_ref, path_ref): (&'static zk::Client, &'static str) =
            unsafe { (&*StdArc::as_ptr(&client), &*StdArc::as_ptr(&path)) };
        let reply = send(client_ref, path_ref);
        let answer = crate::task::spawn(
            Borrowing {
                reply,
                _client: client,
                _path: path.clone(),
            }
            .wait(),
        );
        async move {
            match answer.await {
                Ok(Ok(reply)) => Ok(finish(reply)),
                Ok(Err(e)) => Err(from_zk_error(e, &path)),
                // The runtime is shutting down: the request may have been applied.
                Err(_cancelled) => Err(Error::ConnectionLoss),
            }
        }
        .boxed()
    }
}

/// Reports the end of a session this handle closed as `Closed`, and of one it expired
/// (`expire_session`) as `Expired`; whether the event ends the session.
fn relabel_end(event: &mut crate::WatchedEvent, closed: &AtomicBool, expired: &AtomicBool) -> bool {
    if event.kind != EventKind::Session || !event.state.is_terminal() {
        return false;
    }
    if expired.load(Ordering::Acquire) {
        event.state = SessionState::Expired;
    } else if closed.load(Ordering::Acquire) {
        event.state = SessionState::Closed;
    }
    true
}

/// A reply from the client crate, boxed so that `call` can hold it beside what it borrows.
type ZkReply<R> = BoxFuture<'static, std::result::Result<R, zk::Error>>;

/// A reply future and the allocations it borrows. `reply` MUST stay the first field, so that it
/// is dropped before them.
struct Borrowing<R> {
    reply: ZkReply<R>,
    /// Held, never read: what `reply` borrows.
    _client: StdArc<zk::Client>,
    /// Held, never read: what `reply` borrows.
    _path: StdArc<str>,
}

impl<R> Borrowing<R> {
    /// Awaits the reply. By value, so that the future owns every field: an `async move`
    /// block naming only `held.reply` captures just that field (edition 2021's disjoint
    /// captures apply to async blocks too), and the handle was dropped when the request was
    /// sent, leaving `reply` to read it freed once `close` let go of the last other one (a
    /// SIGSEGV in CI on 2026-11-29).
    async fn wait(mut self) -> std::result::Result<R, zk::Error> {
        (&mut self.reply).await
    }
}

/// An already-failed operation: bad input never reaches the server.
fn refused<'a, T: Send + 'a>(error: Error) -> OpFuture<'a, T> {
    futures::future::ready(Err(error)).boxed()
}

macro_rules! check {
    ($($check:expr),*) => {
        if let Err(e) = Ok(()) $(.and_then(|()| $check))* {
            return refused(e);
        }
    };
}

impl Coordination for ZkClient {
    fn session(&self) -> SessionInfo {
        self.info
    }

    fn session_states(&self) -> SessionStates {
        self.states.subscribe()
    }

    fn session_state(&self) -> SessionState {
        self.states.current()
    }

    /// Validates, then sends (timed for [`crate::metrics::REQUEST_DURATION`]).
    fn submit(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        check!(request.validate());
        let op = request.name();
        send::timed(op, self.send(request))
    }

    fn add_watch(&self, path: &str, mode: AddWatchMode) -> OpFuture<'_, PersistentWatch> {
        check!(crate::path::validate_path(path, false));
        let owned = path.to_owned();
        let reply = self.call(
            path,
            |client, p| client.watch(p, convert::to_zk_watch_mode(mode)).boxed(),
            move |watcher| self.persistent(watcher, &owned, mode),
        );
        send::timed("addWatch", reply)
    }

    fn close(&self) -> OpFuture<'_, ()> {
        let Some(client) = lock(&self.client).take() else {
            return futures::future::ready(Ok(())).boxed();
        };
        self.closed.store(true, Ordering::Release);
        self.states.publish(SessionState::Closed);
        let mut watcher = client.state_watcher();
        // Dropping the last handle sends CloseSession; requests in flight hold handles and
        // finish first.
        drop(client);
        let wait = self.info.timeout.max(Duration::from_secs(1)) * 2;
        async move {
            let ended = tokio::time::timeout(wait, async {
                while !matches!(
                    watcher.peek_state(),
                    zk::SessionState::Closed | zk::SessionState::Expired
                ) {
                    watcher.changed().await;
                }
            })
            .await;
            ended.map_err(|_| Error::OperationTimeout)
        }
        .boxed()
    }
}

/// What sending a `multi` gave.
enum MultiOutcome {
    /// The client crate refused to build it (its own validation); nothing was sent.
    Refused,
    /// The server's verdict.
    Done(std::result::Result<Vec<zk::MultiWriteResult>, zk::MultiWriteError>),
}
