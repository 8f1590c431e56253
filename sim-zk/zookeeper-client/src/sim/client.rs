//! [`Client`]: a session and a root, and every operation on nodes.
//!
//! Each method checks its input as `zookeeper-client` does (the same errors), sends its
//! request to the simulated service before it returns (so calls pipeline in call order, as
//! the real client's do), and maps the simulator's reply to the real crate's types.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use avout::zk::convert::to_zk_stat;
use avout::{OpFuture, Reply, Request, Watch};

use super::path::Chroot;
use super::session::{Session, WatcherKind};
use super::types::Version;
use super::watcher::{OneshotWatcher, Registration, StateWatcher};
use super::{
    call_error, Connector, CreateOptions, CreateSequence, Error, Result, SessionId, SessionInfo,
    SessionState, Stat,
};

/// A ZooKeeper session with a root: every path is below the root.
///
/// Operations fail with `ConnectionLoss` when the connection drops while they are in flight
/// (they may or may not have been applied), and every one fails once the session has expired
/// (`SessionExpired`), failed authentication (`AuthFailed`) or was closed (`ClientClosed`).
/// Clones and [`chroot`](Self::chroot)s share the session and its authentication; the last
/// one dropped closes it (unless it was opened [detached](Connector::with_detached)).
///
/// Every method sends its request when it is called, not when its future is first polled:
/// requests reach the server in call order. Dropping a call's future does not take its
/// request back: it may still be applied.
///
/// ```
/// # async fn demo() -> Result<(), avout_zookeeper_client::Error> {
/// use avout_zookeeper_client::{Acls, Client, CreateMode};
/// let client = Client::connect("10.0.0.1:2181").await?;
/// let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
/// client.create("/app", b"v1", &open).await?;
/// let (data, stat) = client.get_data("/app").await?;
/// assert_eq!((data, stat.version), (b"v1".to_vec(), 0));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    pub(super) chroot: Chroot,
    version: Version,
    pub(super) session: Arc<Session>,
    info: SessionInfo,
    timeout: Duration,
    states: StateWatcher,
}

/// What a sent request's reply gives, before it is checked.
pub(super) type Sent = OpFuture<'static, (Reply, Option<Watch>)>;

/// The error for a reply of the wrong shape (the simulator broke its contract).
pub(super) fn unexpected(reply: Reply) -> Error {
    Error::UnexpectedError(format!("unexpected reply {reply:?}"))
}

/// Awaits a sent request's reply, mapping the simulator's error.
pub(super) async fn reply(sent: Result<Sent>) -> Result<(Reply, Option<Watch>)> {
    sent?.await.map_err(|e| call_error(&e))
}

/// `Reply::Data` as data and `Stat`.
pub(super) fn data(reply: Reply) -> Result<(Vec<u8>, Stat)> {
    match reply {
        Reply::Data { data, stat } => Ok((data, to_zk_stat(&stat))),
        other => Err(unexpected(other)),
    }
}

/// `Reply::Children` as children and `Stat`.
fn children(reply: Reply) -> Result<(Vec<String>, Stat)> {
    match reply {
        Reply::Children { children, stat } => Ok((children, to_zk_stat(&stat))),
        other => Err(unexpected(other)),
    }
}

/// `Reply::Exists` as a `Stat`, if the node exists.
fn exists(reply: Reply) -> Result<Option<Stat>> {
    match reply {
        Reply::Exists(stat) => Ok(stat.as_ref().map(to_zk_stat)),
        other => Err(unexpected(other)),
    }
}

/// The watch a watched read armed.
pub(super) fn armed(watch: Option<Watch>) -> Result<Watch> {
    watch.ok_or_else(|| Error::UnexpectedError("a watched read armed no watch".into()))
}

impl Client {
    pub(crate) fn new(
        chroot: Chroot,
        version: Version,
        session: Arc<Session>,
        info: SessionInfo,
        timeout: Duration,
    ) -> Client {
        let states = StateWatcher::new(session.states());
        Client {
            chroot,
            version,
            session,
            info,
            timeout,
            states,
        }
    }

    /// Connects to the ensemble at `cluster` (`host:port,…[/chroot]`) with the default
    /// options ([`Connector`]).
    ///
    /// ```
    /// # async fn demo() -> Result<(), avout_zookeeper_client::Error> {
    /// let client = avout_zookeeper_client::Client::connect("zk1:2181,zk2:2181/app").await?;
    /// assert_eq!(client.path(), "/app");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect(cluster: &str) -> Result<Self> {
        Self::connector().connect(cluster).await
    }

    /// A [`Connector`], to connect with more options.
    ///
    /// ```
    /// # async fn demo() -> Result<(), avout_zookeeper_client::Error> {
    /// use std::time::Duration;
    /// let client = avout_zookeeper_client::Client::connector()
    ///     .with_session_timeout(Duration::from_secs(10))
    ///     .connect("zk1:2181")
    ///     .await?;
    /// # let _ = client;
    /// # Ok(())
    /// # }
    /// ```
    pub fn connector() -> Connector {
        Connector::new()
    }

    pub(crate) fn sim(&self) -> &Arc<Session> {
        &self.session
    }

    /// The server path of `path`, checked; whether it is the root.
    pub(crate) fn server_path(&self, path: &str, sequential: bool) -> Result<(String, bool)> {
        self.chroot.server_path(path, sequential)
    }

    /// The client path of a server path.
    pub(crate) fn client_path(&self, server: &str) -> Result<String> {
        self.chroot.client_path(server)
    }

    /// Sends `request` now.
    pub(crate) fn send(&self, request: Request) -> Sent {
        self.session.client().send(request)
    }

    /// Checks `path` and sends the request `make` builds for its server path.
    pub(super) fn send_at(&self, path: &str, make: impl FnOnce(String) -> Request) -> Result<Sent> {
        let (server, _) = self.server_path(path, false)?;
        Ok(self.send(make(server)))
    }

    /// The root's path (`/` for none).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// println!("rooted at {}", client.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.chroot.path()
    }

    /// The session's info.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// println!("{:?}", client.session());
    /// # }
    /// ```
    pub fn session(&self) -> &SessionInfo {
        &self.info
    }

    /// The session's id.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// println!("session {}", client.session_id());
    /// # }
    /// ```
    pub fn session_id(&self) -> SessionId {
        self.info.id()
    }

    /// The session's info, this client consumed (the session closes with the last client,
    /// unless it is detached).
    ///
    /// ```
    /// # fn demo(client: avout_zookeeper_client::Client) {
    /// let info = client.into_session();
    /// # let _ = info;
    /// # }
    /// ```
    pub fn into_session(self) -> SessionInfo {
        self.info
    }

    /// The session timeout the server granted.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// assert!(client.session_timeout() >= std::time::Duration::from_secs(4));
    /// # }
    /// ```
    pub fn session_timeout(&self) -> Duration {
        self.timeout
    }

    /// The session's latest state.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// println!("{}", client.state());
    /// # }
    /// ```
    pub fn state(&self) -> SessionState {
        self.session.state()
    }

    /// A [`StateWatcher`] of the session's states from now on.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// let states = client.state_watcher();
    /// # let _ = states;
    /// # }
    /// ```
    pub fn state_watcher(&self) -> StateWatcher {
        let mut watcher = self.states.clone();
        watcher.state();
        watcher
    }

    /// The same session rooted at the absolute `path` (watchers already made are not
    /// affected). A path that is not valid gives the client back as the error.
    ///
    /// ```
    /// # fn demo(client: avout_zookeeper_client::Client) {
    /// let app = client.clone().chroot("/app").unwrap();
    /// assert!(client.chroot("relative").is_err());
    /// # let _ = app;
    /// # }
    /// ```
    #[allow(clippy::result_large_err)]
    pub fn chroot<'a>(
        mut self,
        path: impl Into<Cow<'a, str>>,
    ) -> std::result::Result<Client, Client> {
        if self.chroot.change(path) {
            Ok(self)
        } else {
            Err(self)
        }
    }

    /// Makes the directories along `path`, as `mkdir -p` does: one create after another, not
    /// atomic (it may leave some made), no `NodeExists`.
    ///
    /// Errors: `NoNode` if the root does not exist; `BadArguments` for an ephemeral or
    /// sequential mode; `InvalidAcl` for no ACL.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// client.mkdir("/a/b/c", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn mkdir(&self, path: &str, options: &CreateOptions<'_>) -> Result<()> {
        options.validate_as_directory()?;
        self.mkdir_internally(path, options).await
    }

    /// `mkdir` without checking the options again (a lock's parents).
    pub(crate) async fn mkdir_internally(
        &self,
        path: &str,
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        let mut j = path.len();
        loop {
            match self.create(&path[..j], Default::default(), options).await {
                Ok(_) | Err(Error::NodeExists) => {
                    if j >= path.len() {
                        return Ok(());
                    } else if let Some(i) = path[j + 1..].find('/') {
                        j = j + 1 + i;
                    } else {
                        j = path.len();
                    }
                }
                Err(Error::NoNode) => {
                    let i = path[..j].rfind('/').expect("a checked path is absolute");
                    if i == 0 {
                        // The root does not exist.
                        return Err(Error::NoNode);
                    }
                    j = i;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Creates a node with `data`; answers its [`Stat`] and, for a sequential node, its
    /// sequence number (`-1` otherwise).
    ///
    /// Errors: `NodeExists`; `NoNode` for a missing parent; `NoChildrenForEphemerals`;
    /// `InvalidAcl`; `BadArguments` for the root or bad options. The [`Stat`] is invalid
    /// ([`Stat::is_invalid`]) when the connector was told the server is older than 3.5.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    /// let (stat, sequence) = client.create("/workers/w-", b"", &options).await?;
    /// println!("/workers/w-{sequence}, owned by {:#x}", stat.ephemeral_owner);
    /// # Ok(())
    /// # }
    /// ```
    pub fn create<'a: 'f, 'b: 'f, 'f>(
        &'a self,
        path: &'b str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'f {
        let sent = self.send_create(path, data, options);
        let old_server = self.version < Version(3, 5, 0);
        async move {
            let (sent, sequential) = sent?;
            let (server_path, stat) = match sent.await.map_err(|e| call_error(&e))?.0 {
                Reply::Created { path, stat } => (path, stat),
                other => return Err(unexpected(other)),
            };
            let client_path = self.client_path(&server_path)?;
            let sequence = if sequential {
                parse_sequence(&client_path, path)?
            } else {
                CreateSequence(-1)
            };
            // Before 3.5 the client sends `create`, whose reply has no stat.
            let stat = if old_server {
                invalid_stat()
            } else {
                to_zk_stat(&stat)
            };
            Ok((stat, sequence))
        }
    }

    fn send_create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<(Sent, bool)> {
        options.validate()?;
        let sequential = options.mode.is_sequential();
        let (server, is_root) = self.server_path(path, sequential)?;
        if is_root {
            return Err(Error::BadArguments(&"can not create root node"));
        }
        let request = Request::Create {
            path: server,
            data: data.to_vec(),
            options: options.to_avout(),
        };
        Ok((self.send(request), sequential))
    }

    /// Deletes the node if its version matches (`None`: any).
    ///
    /// Errors: `NoNode`, `BadVersion`, `NotEmpty`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.delete("/app/old", None).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send {
        let sent = self.server_path(path, false).and_then(|(server, is_root)| {
            if is_root {
                return Err(Error::BadArguments(&"can not delete root node"));
            }
            Ok(self.send(Request::Delete {
                path: server,
                version: expected_version,
            }))
        });
        async move {
            match reply(sent).await?.0 {
                Reply::Deleted => Ok(()),
                other => Err(unexpected(other)),
            }
        }
    }

    /// The node's data and [`Stat`]. Errors: `NoNode`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (data, stat) = client.get_data("/app").await?;
    /// println!("{} bytes at version {}", data.len(), stat.version);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_data(&self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        let sent = self.send_at(path, |path| Request::GetData { path, watch: false });
        async move { data(reply(sent).await?.0) }
    }

    /// The node's data and [`Stat`], and a watcher of its next change or deletion (or the
    /// session's end). Errors: `NoNode` (no watch is left then).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (_data, _stat, watcher) = client.get_and_watch_data("/app").await?;
    /// let event = watcher.changed().await;
    /// # let _ = event;
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_and_watch_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher)>> + Send + '_ {
        let watched = self.send_watched(path, WatcherKind::Data, |path| Request::GetData {
            path,
            watch: true,
        });
        async move {
            let (sent, registration) = watched?;
            let (reply, watch) = reply(Ok(sent)).await?;
            let (data, stat) = data(reply)?;
            Ok((data, stat, self.watcher(registration, watch)?))
        }
    }

    /// Checks `path`, registers a watcher of `kind` there, and sends the watched read `make`
    /// builds for its server path.
    pub(super) fn send_watched(
        &self,
        path: &str,
        kind: WatcherKind,
        make: impl FnOnce(String) -> Request,
    ) -> Result<(Sent, Registration)> {
        let (server, _) = self.server_path(path, false)?;
        let registration = Registration::new(&self.session, &server, kind);
        Ok((self.send(make(server)), registration))
    }

    /// The watcher of a watched read that armed `watch`.
    fn watcher(&self, registration: Registration, watch: Option<Watch>) -> Result<OneshotWatcher> {
        Ok(OneshotWatcher::new(
            self.chroot.clone(),
            registration,
            armed(watch)?,
        ))
    }

    /// The node's [`Stat`], or `None` if it does not exist.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// if client.check_stat("/app").await?.is_none() {
    ///     println!("no app yet");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn check_stat(&self, path: &str) -> impl Future<Output = Result<Option<Stat>>> + Send {
        let sent = self.send_at(path, |path| Request::Exists { path, watch: false });
        async move { exists(reply(sent).await?.0) }
    }

    /// The node's [`Stat`] or `None`, and a watcher of its creation, change or deletion (or
    /// the session's end).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (_stat, watcher) = client.check_and_watch_stat("/ready").await?;
    /// watcher.changed().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn check_and_watch_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher)>> + Send + '_ {
        let watched = self.send_watched(path, WatcherKind::Data, |path| Request::Exists {
            path,
            watch: true,
        });
        async move {
            let (sent, registration) = watched?;
            let (reply, watch) = reply(Ok(sent)).await?;
            let stat = exists(reply)?;
            Ok((stat, self.watcher(registration, watch)?))
        }
    }

    /// Sets the node's data if its version matches (`None`: any); its new [`Stat`].
    ///
    /// Errors: `NoNode`, `BadVersion`, `NoAuth`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let stat = client.set_data("/app", b"v2", Some(0)).await?;
    /// assert_eq!(stat.version, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send {
        let sent = self.set_data_internally(path, data, expected_version);
        async move { sent?.await }
    }

    /// [`set_data`](Self::set_data), its input checked and its request sent before the
    /// future is made (the real crate exports it too).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let stat = client.set_data_internally("/app", b"v3", None)?.await?;
    /// # let _ = stat;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_data_internally(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<impl Future<Output = Result<Stat>>> {
        let sent = self.send_at(path, |path| Request::SetData {
            path,
            data: data.to_vec(),
            version: expected_version,
        })?;
        Ok(async move {
            match reply(Ok(sent)).await?.0 {
                Reply::Set(stat) => Ok(to_zk_stat(&stat)),
                other => Err(unexpected(other)),
            }
        })
    }

    /// The node's children's names (unordered). Errors: `NoNode`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let workers = client.list_children("/workers").await?;
    /// # let _ = workers;
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + '_ {
        let get = self.get_children(path);
        async move { Ok(get.await?.0) }
    }

    /// The node's children's names, and a watcher of a child's creation or deletion, or the
    /// node's deletion (or the session's end). Errors: `NoNode`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (_workers, watcher) = client.list_and_watch_children("/workers").await?;
    /// watcher.changed().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher)>> + Send + '_ {
        let get = self.get_and_watch_children(path);
        async move {
            let (children, _, watcher) = get.await?;
            Ok((children, watcher))
        }
    }

    /// The node's children's names and the node's [`Stat`]. Errors: `NoNode`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (workers, stat) = client.get_children("/workers").await?;
    /// assert_eq!(workers.len(), stat.num_children as usize);
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send {
        let sent = self.send_at(path, |path| Request::GetChildren { path, watch: false });
        async move { children(reply(sent).await?.0) }
    }

    /// [`get_children`](Self::get_children) and a watcher, as
    /// [`list_and_watch_children`](Self::list_and_watch_children).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let (_workers, _stat, watcher) = client.get_and_watch_children("/workers").await?;
    /// watcher.changed().await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn get_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat, OneshotWatcher)>> + Send + '_ {
        let watched = self.send_watched(path, WatcherKind::Child, |path| Request::GetChildren {
            path,
            watch: true,
        });
        async move {
            let (sent, registration) = watched?;
            let (reply, watch) = reply(Ok(sent)).await?;
            let (children, stat) = children(reply)?;
            Ok((children, stat, self.watcher(registration, watch)?))
        }
    }

    /// How many descendants the node has (children, theirs, …; not the node). Errors:
    /// `NoNode`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let n = client.count_descendants_number("/app").await?;
    /// # let _ = n;
    /// # Ok(())
    /// # }
    /// ```
    pub fn count_descendants_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<usize>> + Send {
        let sent = self.send_at(path, |path| Request::GetAllChildrenNumber { path });
        async move {
            match reply(sent).await?.0 {
                Reply::AllChildrenNumber(n) => Ok(n as usize),
                other => Err(unexpected(other)),
            }
        }
    }

    /// The session's ephemeral nodes whose path starts with `path` (a string prefix; the node
    /// itself included), relative to the root. No `NoNode`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let mine = client.list_ephemerals("/").await?;
    /// # let _ = mine;
    /// # Ok(())
    /// # }
    /// ```
    pub fn list_ephemerals(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + '_ {
        let sent = self.send_at(path, |prefix| Request::GetEphemerals { prefix });
        async move {
            match reply(sent).await?.0 {
                Reply::Ephemerals(paths) => paths.iter().map(|p| self.client_path(p)).collect(),
                other => Err(unexpected(other)),
            }
        }
    }
}

/// A stat that says "none": what a server before 3.5 answers a create with.
pub(crate) fn invalid_stat() -> Stat {
    Stat {
        czxid: -1,
        mzxid: -1,
        pzxid: -1,
        ctime: 0,
        mtime: 0,
        version: -1,
        cversion: -1,
        aversion: -1,
        ephemeral_owner: 0,
        data_length: 0,
        num_children: 0,
    }
}

/// The sequence number of the sequential node `client_path` made from `prefix`.
pub(crate) fn parse_sequence(client_path: &str, prefix: &str) -> Result<CreateSequence> {
    let Some(digits) = client_path.strip_prefix(prefix) else {
        return Err(Error::UnexpectedError(format!(
            "sequential path {client_path} does not contain prefix path {prefix}"
        )));
    };
    digits.parse::<i64>().map(CreateSequence).map_err(|_| {
        Error::UnexpectedError(format!("sequential node get no i32 path {client_path}"))
    })
}
