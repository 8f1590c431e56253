//! The managed client: one cheap handle that owns the current session and opens a new one
//! after the old one expires, so that atoms, refs, locks, elections and queues built on it
//! outlive session expiries (Curator's `CuratorFramework`).
//!
//! A ZooKeeper session ends for reasons no application controls: a GC pause longer than the
//! session timeout, a partition, a rolling restart. A [`Coordination`] backend handle *is*
//! one session and dies with it. A [`Client`] is built from a [`Connect`]or (a
//! [`ZkConfig`](crate::zk::ZkConfig), the simulator's service, or your own backend) and, when
//! its session ends, opens the next one by itself, pacing failed attempts by its
//! [`RetryPolicy`]. Its [`ConnectionEvents`] say what happened, in Curator's vocabulary:
//! [`Connected`](ConnectionState::Connected), [`Suspended`](ConnectionState::Suspended),
//! [`Reconnected`](ConnectionState::Reconnected), [`Lost`](ConnectionState::Lost) then a new
//! session, and [`Closed`](ConnectionState::Closed), each with the session's *generation*.
//!
//! # How handles use it
//!
//! Every recipe handle (`Atom<T>`, `Mutex`, `Election`, `Stm`, …) takes a `&Client` and keeps
//! a clone. Each operation [pins](Client::current_session) the session current when it starts
//! and runs on it to the end, so the session contract holds within the operation:
//!
//! - an operation in flight when its session ends fails with its typed error, which says
//!   whether it may have been applied; nothing is retried blindly on the next session;
//! - the next operation runs on the new session (waiting for it while the client opens it);
//! - what lives in the session is lost with it: a lock guard reports
//!   [`Lost`](crate::lock::LockStatus::Lost), and the next `lock()` acquires on the new
//!   session; each recipe's docs say what it does across an expiry.
//!
//! # Connection loss, expiry, cancellation
//!
//! - **Connection loss** is the backend's business: the session's handle fails over between
//!   servers, calls in flight fail with [`Error::ConnectionLoss`] (indeterminate), and the
//!   client reports [`Suspended`](ConnectionState::Suspended) then
//!   [`Reconnected`](ConnectionState::Reconnected) with the same generation.
//! - **Expiry** (or any end of the session other than [`Client::close`]): the client reports
//!   [`Lost`](ConnectionState::Lost) and opens a new session at once, then after each failed
//!   attempt waits as its [`RetryPolicy`] says. Once open, it reports
//!   [`Reconnected`](ConnectionState::Reconnected) with
//!   [`new_session`](ConnectionEvent::new_session) set. If the policy gives up (or the
//!   service refuses the client's credentials) the client ends: every call fails with that
//!   error and the events end with [`Closed`](ConnectionState::Closed).
//! - **Closing** ([`Client::close`]) closes the current session (its ephemerals go at once),
//!   stops reconnecting, fails later calls with [`Error::Closed`] and ends the events.
//!   Dropping the last clone stops reconnecting; the session closes when the last handle
//!   pinning it is dropped.
//! - **Cancellation**: dropping a call's future does not withdraw a request already sent.
//!
//! # The client as a `Coordination`
//!
//! `Client` implements [`Coordination`] itself, for one-off requests: each goes to the
//! session current at the call. A call made while the client is opening a new session waits
//! for it and is sent then; such calls are ordered among themselves only by when they are
//! first polled. Code that needs one session for several requests (ephemerals, watches, a
//! recipe of its own) pins one with [`Client::current_session`].
//!
//! ```no_run
//! use avout::Client;
//! use avout::atom::Atom;
//! use avout::zk::ZkConfig;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::connect(ZkConfig::new("127.0.0.1:2181/app")).await?;
//! let hits: Atom<u64> = Atom::open(&client, "/hits", 0).await?;
//! let mut events = client.connection_events();
//! tokio::spawn(async move {
//!     while let Some(event) = events.next().await {
//!         eprintln!("zookeeper: {event}");
//!     }
//! });
//! hits.swap(|n| n + 1).await?; // works on whichever session is current
//! client.close().await?;
//! # Ok(()) }
//! ```

mod acl;
mod events;
mod policy;
mod session;
mod supervisor;

pub use events::{ConnectionEvent, ConnectionEvents, ConnectionState};
pub use policy::RetryPolicy;
pub use session::Session;

use std::fmt;
use std::sync::Arc;

use crate::task::watch;
use futures::FutureExt;
use futures::future::BoxFuture;

use crate::fanout::Fanout;
use crate::{
    AddWatchMode, Coordination, Error, OpFuture, PersistentWatch, Reply, Request, Result,
    SessionInfo, SessionState, SessionStates, Watch,
};

/// Somewhere a [`Client`] can open sessions: a backend's configuration.
///
/// ```
/// use std::sync::Arc;
/// use avout::Coordination;
/// use avout::client::Connect;
/// use futures::future::BoxFuture;
///
/// /// Sessions on whichever backend `open` makes them.
/// struct Factory<F>(F);
///
/// impl<F> Connect for Factory<F>
/// where
///     F: Fn() -> avout::Result<Arc<dyn Coordination>> + Send + Sync + 'static,
/// {
///     fn connect(&self) -> BoxFuture<'_, avout::Result<Arc<dyn Coordination>>> {
///         Box::pin(async move { (self.0)() })
///     }
/// }
/// ```
pub trait Connect: Send + Sync + 'static {
    /// Opens a new session. Errors are those of connecting ([`Error::Unreachable`],
    /// [`Error::AuthFailed`], …); the client retries them as its [`RetryPolicy`] says,
    /// except refused credentials ([`Error::is_credentials_refused`]: a refused TLS
    /// certificate or SASL secret) and [`Error::BadArguments`], which no retry can mend.
    fn connect(&self) -> BoxFuture<'_, Result<Arc<dyn Coordination>>>;

    /// A uniformly random number for the reconnection backoff's jitter. The default draws
    /// from the operating system; a deterministic backend (the simulator) draws from the
    /// run's seed, so that runs with reconnections replay.
    fn jitter(&self) -> u64 {
        uuid::Uuid::new_v4().as_u128() as u64
    }
}

#[cfg(feature = "zookeeper")]
impl Connect for crate::zk::ZkConfig {
    fn connect(&self) -> BoxFuture<'_, Result<Arc<dyn Coordination>>> {
        Box::pin(async move {
            let zk = crate::zk::ZkClient::connect(self).await?;
            Ok(Arc::new(zk) as Arc<dyn Coordination>)
        })
    }
}

/// Where the client is with its sessions.
#[derive(Clone, Debug)]
pub(crate) enum Phase {
    /// The session in the slot is the current one.
    Live,
    /// The session in the slot ended; a new one is being opened.
    Replacing,
    /// The client ended: every call fails with this error.
    Ended(Error),
}

/// The current (or last) session and the phase.
#[derive(Clone, Debug)]
pub(crate) struct Slot {
    pub(crate) session: Session,
    pub(crate) phase: Phase,
}

/// What the client's clones and its supervisor share.
pub(crate) struct Shared {
    pub(crate) connector: Option<Arc<dyn Connect>>,
    pub(crate) policy: RetryPolicy,
    pub(crate) slot: watch::Sender<Slot>,
    pub(crate) events: Fanout<ConnectionEvent>,
}

impl Shared {
    /// Ends the client with `error`, unless it already ended.
    pub(crate) fn end(&self, error: Error) {
        let mut ended = false;
        self.slot.send_if_modified(|slot| {
            if matches!(slot.phase, Phase::Ended(_)) {
                return false;
            }
            slot.phase = Phase::Ended(error.clone());
            ended = true;
            true
        });
        if ended {
            let session = self.slot.borrow().session.clone();
            self.publish(ConnectionState::Closed, &session, false);
        }
    }

    pub(crate) fn publish(&self, state: ConnectionState, session: &Session, new_session: bool) {
        let event = ConnectionEvent {
            state,
            generation: session.generation(),
            session: session.session().id,
            new_session,
        };
        let mut previous = None;
        self.events.publish_if(event, state.is_final(), |current| {
            let accept = *current != event;
            if accept {
                previous = Some(current.state);
            }
            accept
        });
        if previous.is_some() {
            crate::metrics::connection_state(previous, state, new_session);
        }
    }
}

/// The clones' common handle; dropping the last one stops the supervisor.
struct Handle {
    shared: Arc<Shared>,
    supervisor: tokio::task::AbortHandle,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.supervisor.abort();
        // The client lets go of its session (which closes once nothing pins it).
        if matches!(self.shared.slot.borrow().phase, Phase::Live) {
            crate::metrics::session_ended("closed");
        }
        crate::metrics::client_dropped(self.shared.events.current().state);
    }
}

/// A managed ZooKeeper client; see the [module docs](self).
///
/// Cheap to clone; clones share the session and its supervisor.
#[derive(Clone)]
pub struct Client {
    handle: Arc<Handle>,
    /// The ACL this view's creates carry ([`Client::with_acl`]); `None` for the backend's.
    acl: Option<Arc<[crate::Acl]>>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slot = self.handle.shared.slot.borrow();
        f.debug_struct("Client")
            .field("session", &slot.session)
            .field("phase", &slot.phase)
            .finish()
    }
}

/// Configures a [`Client`] before its first session; from [`Client::builder`].
#[must_use = "a builder does nothing until connected"]
pub struct ClientBuilder {
    connector: Arc<dyn Connect>,
    policy: RetryPolicy,
}

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("policy", &self.policy)
            .finish()
    }
}

impl ClientBuilder {
    /// Sets how new sessions are retried (default: [`RetryPolicy::default`]).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Opens the first session (one attempt: an unreachable ensemble is an error now, not
    /// a wait) and starts the client. MUST be called within a tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo() -> avout::Result<()> {
    /// use std::time::Duration;
    /// use avout::{Client, client::RetryPolicy, zk::ZkConfig};
    /// let client = Client::builder(ZkConfig::new("127.0.0.1:2181"))
    ///     .retry(RetryPolicy::exponential(Duration::from_millis(50), Duration::from_secs(2))?)
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(self) -> Result<Client> {
        let first = self.connector.connect().await?;
        Ok(self.adopt(first))
    }

    /// Starts the client on `session`, already open, opening later sessions with the
    /// connector. MUST be called within a tokio runtime.
    pub fn adopt(self, session: Arc<dyn Coordination>) -> Client {
        Client::start(Some(self.connector), self.policy, session)
    }
}

impl Client {
    /// A builder for a client opening its sessions with `connector`.
    pub fn builder(connector: impl Connect) -> ClientBuilder {
        ClientBuilder {
            connector: Arc::new(connector),
            policy: RetryPolicy::default(),
        }
    }

    /// Opens the first session with `connector` and starts the client with the default
    /// [`RetryPolicy`]. MUST be called within a tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo() -> avout::Result<()> {
    /// let client = avout::Client::connect(avout::zk::ZkConfig::new("127.0.0.1:2181")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(connector: impl Connect) -> Result<Client> {
        Client::builder(connector).connect().await
    }

    /// A client of one session that never opens another: once `session` ends, the client
    /// ends, and every call fails with the session's terminal error. For tests, and for code
    /// that must not outlive its session. MUST be called within a tokio runtime.
    pub fn single(session: Arc<dyn Coordination>) -> Client {
        Client::start(None, RetryPolicy::default(), session)
    }

    fn start(
        connector: Option<Arc<dyn Connect>>,
        policy: RetryPolicy,
        first: Arc<dyn Coordination>,
    ) -> Client {
        let session = Session::new(first, 1);
        let event = ConnectionEvent {
            state: ConnectionState::Connected,
            generation: 1,
            session: session.session().id,
            new_session: false,
        };
        let (slot, _) = watch::channel(Slot {
            session: session.clone(),
            phase: Phase::Live,
        });
        let shared = Arc::new(Shared {
            connector,
            policy,
            slot,
            events: Fanout::new(event),
        });
        crate::metrics::session_opened();
        crate::metrics::connection_state(None, ConnectionState::Connected, false);
        let supervisor = crate::task::spawn(supervisor::supervise(shared.clone(), session));
        Client {
            handle: Arc::new(Handle {
                shared,
                supervisor: supervisor.abort_handle(),
            }),
            acl: None,
        }
    }

    /// The same client (its sessions, events and supervisor) as a view whose creates carry
    /// `acl`: every node made through it, by any recipe handle opened on it, gets that ACL
    /// (its root and parents too), unless a create names its own. Fails with
    /// [`Error::BadArguments`] for an empty ACL.
    ///
    /// This is the per-handle ACL: a recipe given a view creates every node it makes with the
    /// view's ACL, while other handles keep the backend's default
    /// ([`ZkConfig::with_default_acl`](crate::zk::ZkConfig::with_default_acl), the
    /// deployment-wide one). It works the same on every backend, the simulator's included.
    ///
    /// An ACL naming the session's own identity (`Acl::creator_all`) needs every session of
    /// the client authenticated: give the credentials to the configuration, which sends them
    /// with each new session, rather than to one session with `add_auth`.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use avout::{Acl, Client, lock::Mutex, zk::ZkConfig};
    /// let client = Client::connect(ZkConfig::new("zk1:2181").with_digest("app", "secret")).await?;
    /// let private = client.with_acl(Acl::creator_all())?;
    /// let lock = Mutex::new(&private, "/locks/ledger")?; // /locks, /locks/ledger and its nodes: app only
    /// # Ok(()) }
    /// ```
    pub fn with_acl(&self, acl: Vec<crate::Acl>) -> Result<Client> {
        Ok(Client {
            handle: self.handle.clone(),
            acl: Some(acl::checked(acl)?),
        })
    }

    /// The ACL this view's creates carry, if it is a view made by [`with_acl`](Self::with_acl).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(client.acl().is_none());
    /// # }
    /// ```
    pub fn acl(&self) -> Option<&[crate::Acl]> {
        self.acl.as_deref()
    }

    /// `session` as this view hands it out: with its ACL on every create.
    fn view(&self, session: Session) -> Session {
        match &self.acl {
            None => session,
            Some(acl) => session.wrapped(Arc::new(acl::WithAcl {
                inner: session.coordination().clone(),
                acl: acl.clone(),
            })),
        }
    }

    fn shared(&self) -> &Shared {
        &self.handle.shared
    }

    /// The current session, pinned: waits while the client opens a new one, fails with the
    /// client's error once it has ended ([`Error::Closed`] after [`close`](Self::close)).
    ///
    /// A session that has ended but whose replacement is not open yet is never returned.
    pub async fn current_session(&self) -> Result<Session> {
        let mut slots = self.shared().slot.subscribe();
        loop {
            {
                let slot = slots.borrow_and_update();
                match &slot.phase {
                    Phase::Ended(error) => return Err(error.clone()),
                    Phase::Live if !slot.session.has_ended() => {
                        return Ok(self.view(slot.session.clone()));
                    }
                    Phase::Live | Phase::Replacing => {}
                }
            }
            // The sender lives in `Shared`, which `self` keeps alive.
            slots
                .changed()
                .await
                .expect("the client's slot outlives its handles");
        }
    }

    /// Runs `op` on the current session and, if that session ends under it while the client
    /// lives, again on the next: for operations that only read and wait (a barrier's wait, a
    /// watcher's next change), which lose nothing by starting over.
    ///
    /// `op` takes the session by value and returns a plain future: an `AsyncFnMut(&Session)`
    /// would make the caller's future generic over the borrow's lifetime, which rustc cannot
    /// prove `Send` ("implementation of `Send` is not general enough"), so the public futures
    /// built on it could not be spawned.
    pub(crate) async fn across_sessions<T, E, Fut>(
        &self,
        mut op: impl FnMut(Session) -> Fut,
        session_lost: impl Fn(&E) -> bool,
    ) -> Result<T, E>
    where
        E: From<Error>,
        Fut: Future<Output = Result<T, E>>,
    {
        loop {
            let session = self.current_session().await?;
            match op(session).await {
                Err(e) if session_lost(&e) && !self.has_ended() => {
                    crate::metrics::retried("session_lost");
                }
                other => return other,
            }
        }
    }

    /// The generation of the current (or last) session: 1 for the first, one more per
    /// replacement.
    pub fn generation(&self) -> u64 {
        self.shared().slot.borrow().session.generation()
    }

    /// A subscription to the client's connection events, starting after the latest.
    pub fn connection_events(&self) -> ConnectionEvents {
        ConnectionEvents {
            sub: self.shared().events.subscribe(),
        }
    }

    /// Whether the client has ended (closed, or gave up on a new session).
    pub fn has_ended(&self) -> bool {
        matches!(self.shared().slot.borrow().phase, Phase::Ended(_))
    }

    /// Closes the client: stops reconnecting, closes the current session (its ephemerals
    /// are deleted at once) and fails every later call with [`Error::Closed`]. Closing a
    /// client that has ended does nothing.
    pub async fn close(&self) -> Result<()> {
        let shared = self.shared();
        self.handle.supervisor.abort();
        let mut closing = None;
        shared.slot.send_if_modified(|slot| {
            if matches!(slot.phase, Phase::Ended(_)) {
                return false;
            }
            let was_live = matches!(slot.phase, Phase::Live);
            slot.phase = Phase::Ended(Error::Closed);
            closing = Some((slot.session.clone(), was_live));
            true
        });
        let Some((session, was_live)) = closing else {
            return Ok(());
        };
        let closed = if was_live {
            crate::metrics::session_ended("closed");
            session.close().await
        } else {
            Ok(())
        };
        shared.publish(ConnectionState::Closed, &session, false);
        closed
    }

    /// The slot, its session as this view hands it out.
    fn slot(&self) -> Slot {
        let mut slot = self.shared().slot.borrow().clone();
        slot.session = self.view(slot.session);
        slot
    }
}

/// Runs `future` up to its first await, so that a request it submits is submitted now (the
/// [`Coordination`] contract), and hands back the rest.
fn started<T: Send + 'static>(mut future: BoxFuture<'static, T>) -> BoxFuture<'static, T> {
    let waker = futures::task::noop_waker();
    match future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(&waker))
    {
        std::task::Poll::Ready(value) => futures::future::ready(value).boxed(),
        std::task::Poll::Pending => future,
    }
}

impl Coordination for Client {
    /// The current (or last) session's id and timeout.
    fn session(&self) -> SessionInfo {
        self.slot().session.session()
    }

    /// The state transitions of the session current now; the stream ends with that
    /// session (use [`Client::connection_events`] to follow the client across sessions).
    fn session_states(&self) -> SessionStates {
        self.slot().session.session_states()
    }

    /// `Disconnected` while a new session is being opened, the terminal state once the
    /// client has ended, else the current session's.
    fn session_state(&self) -> SessionState {
        let slot = self.slot();
        match slot.phase {
            Phase::Live => slot.session.session_state(),
            Phase::Replacing => SessionState::Disconnected,
            Phase::Ended(Error::SessionExpired) => SessionState::Expired,
            Phase::Ended(Error::AuthFailed) => SessionState::AuthFailed,
            Phase::Ended(_) => SessionState::Closed,
        }
    }

    fn submit(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        if let Err(e) = request.validate() {
            return futures::future::ready(Err(e)).boxed();
        }
        let slot = self.slot();
        let future = match slot.phase {
            Phase::Live if !slot.session.has_ended() => {
                let zk = slot.session.coordination().clone();
                async move { zk.submit(request).await }.boxed()
            }
            Phase::Ended(error) => futures::future::ready(Err(error)).boxed(),
            Phase::Live | Phase::Replacing => {
                let client = self.clone();
                async move {
                    let session = client.current_session().await?;
                    session.submit(request).await
                }
                .boxed()
            }
        };
        started(future)
    }

    /// Arms the watch on the current session (waiting for one while it is being replaced).
    /// The watch lives as long as that session: its stream ends with the session's terminal
    /// event, and a new watch is needed on the next one.
    fn add_watch(&self, path: &str, mode: AddWatchMode) -> OpFuture<'_, PersistentWatch> {
        if let Err(e) = crate::path::validate_path(path, false) {
            return futures::future::ready(Err(e)).boxed();
        }
        let path = path.to_owned();
        let slot = self.slot();
        let future = match slot.phase {
            Phase::Live if !slot.session.has_ended() => {
                let zk = slot.session.coordination().clone();
                async move { zk.add_watch(&path, mode).await }.boxed()
            }
            Phase::Ended(error) => futures::future::ready(Err(error)).boxed(),
            Phase::Live | Phase::Replacing => {
                let client = self.clone();
                async move {
                    let session = client.current_session().await?;
                    session.coordination().add_watch(&path, mode).await
                }
                .boxed()
            }
        };
        started(future)
    }

    fn new_guid(&self) -> u128 {
        self.slot().session.new_guid()
    }

    fn close(&self) -> OpFuture<'_, ()> {
        Client::close(self).boxed()
    }
}
