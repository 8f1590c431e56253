//! A node that stays (Curator's `PersistentNode` and `PersistentTtlNode`): created at start,
//! created again whenever it goes (deleted by someone, or an ephemeral gone with its
//! session), its data set through the handle, and deleted on [`PersistentNode::close`].
//!
//! A background task owns the node. It creates it (with any missing parents), then watches it
//! with an `exists` watch: on `NodeDeleted` it creates it again. An ephemeral node found at
//! the path but owned by another session (another process, or this client's previous session
//! before the server removed it) is left alone, watched, and taken once it goes. A persistent
//! node found there is taken over: its data is set to the handle's. A node with a TTL
//! ([`CreateMode::PersistentWithTtl`]) is touched (its data written again) every half TTL,
//! so the server removes it only once its owner is gone for longer than the TTL; each touch is
//! a data change to watchers.
//!
//! Sequential modes are refused ([`Error::BadArguments`]): a node that comes back under a new
//! name is a different recipe.
//!
//! # Sessions
//!
//! - **Connection loss**: the node's session lives on, and so does an ephemeral node; the
//!   task's calls that fail indeterminately are retried after a pause (a create whose reply
//!   was lost is found on the next try, owned by this session, and kept).
//! - **Session expiry**: an ephemeral node goes with the session. On a managed
//!   [`Client`], the task creates it again on the client's next session, as soon as the
//!   server has removed the old one (it waits for that, watching the node). With
//!   [`Client::single`] (no next session) the task stops and [`PersistentNode::error`] says
//!   why.
//! - **Cancellation**: [`PersistentNode::close`] stops the task and deletes the node (if it
//!   stands and, for an ephemeral, is this client's). Dropping the handle stops the task
//!   without deleting: an ephemeral goes with its session, a persistent node stays, a TTL
//!   node goes once its TTL passes untouched.
//!
//! ```
//! # async fn demo(client: &avout::Client) -> avout::Result<()> {
//! use std::time::Duration;
//! use avout::CreateMode;
//! use avout::recipes::persistent_node::PersistentNode;
//!
//! let node = PersistentNode::start(client, "/services/api/host-1", b"10.0.0.1:80", CreateMode::Ephemeral, None)?;
//! node.wait_created(Duration::from_secs(5)).await?;
//! node.set_data(b"10.0.0.1:8080").await?;
//! node.close().await?;
//! # Ok(()) }
//! ```

mod keeper;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::task::watch;

use crate::sync::{Mutex, lock};
use crate::{Client, Coordination, CreateMode, CreateOptions, Error, Result, Stat};

/// What the task and the handle share.
#[derive(Debug, Default)]
struct Shared {
    /// Why the task stopped, if it did on an error.
    error: Option<Error>,
}

/// A node kept in place by a background task; see the [module docs](self).
pub struct PersistentNode {
    client: Client,
    path: String,
    mode: CreateMode,
    shared: Arc<Mutex<Shared>>,
    /// The data the node should have.
    data: watch::Sender<Vec<u8>>,
    /// The node as this handle's task last created or confirmed it (`None` while it is not
    /// there, or not ours).
    stat: watch::Receiver<Option<Stat>>,
    stop: Option<futures::channel::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl fmt::Debug for PersistentNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PersistentNode")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("stat", &*self.stat.borrow())
            .field("error", &lock(&self.shared).error)
            .finish()
    }
}

impl PersistentNode {
    /// Starts keeping `path` with `data` in `mode` (`ttl` for
    /// [`CreateMode::PersistentWithTtl`], `None` otherwise). Returns at once; the node is
    /// created by the task ([`wait_created`](Self::wait_created)). Must be called within a
    /// tokio runtime.
    ///
    /// Errors: [`Error::InvalidPath`]; [`Error::BadArguments`] for a sequential mode, or a
    /// TTL missing or given where the mode has none.
    ///
    /// ```
    /// # async fn demo(client: &avout::Client) -> avout::Result<()> {
    /// use avout::recipes::persistent_node::PersistentNode;
    /// let node = PersistentNode::start(client, "/a", b"", avout::CreateMode::PersistentSequential, None);
    /// assert!(matches!(node, Err(avout::Error::BadArguments(_))));
    /// # Ok(()) }
    /// ```
    pub fn start(
        client: &Client,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        ttl: Option<Duration>,
    ) -> Result<PersistentNode> {
        crate::path::validate_path(path, false)?;
        if path == "/" {
            return Err(Error::BadArguments("the root cannot be kept".into()));
        }
        let ttl_mode = mode == CreateMode::PersistentWithTtl;
        match mode {
            CreateMode::PersistentSequential
            | CreateMode::EphemeralSequential
            | CreateMode::PersistentSequentialWithTtl => {
                return Err(Error::BadArguments(format!(
                    "a persistent node cannot be {mode:?}: it would come back under a new name"
                )));
            }
            _ if ttl_mode != ttl.is_some() => {
                return Err(Error::BadArguments(format!(
                    "mode {mode:?} with ttl {ttl:?}: a TTL goes with PersistentWithTtl only"
                )));
            }
            _ => {}
        }
        let options = CreateOptions {
            mode,
            acl: None,
            ttl,
        };
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (data_tx, data_rx) = watch::channel(data.to_vec());
        let (stat_tx, stat) = watch::channel(None);
        let (stop, stopped) = futures::channel::oneshot::channel();
        let keeper = keeper::Keeper {
            client: client.clone(),
            path: path.to_owned(),
            options,
            shared: shared.clone(),
            data: data_rx,
            stat: stat_tx,
        };
        let task = crate::task::spawn(keeper.run(stopped));
        Ok(PersistentNode {
            client: client.clone(),
            path: path.to_owned(),
            mode,
            shared,
            data: data_tx,
            stat,
            stop: Some(stop),
            task: Some(task),
        })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The node as the task last created or confirmed it: `None` while it is missing, owned
    /// by another session, or being created again.
    pub fn stat(&self) -> Option<Stat> {
        *self.stat.borrow()
    }

    /// Waits until the task has created (or confirmed) the node, for at most `timeout`.
    ///
    /// Errors: [`Error::OperationTimeout`] when it is not there in time; the task's error if
    /// it stopped.
    pub async fn wait_created(&self, timeout: Duration) -> Result<Stat> {
        let mut stat = self.stat.clone();
        let wait = async {
            loop {
                if let Some(s) = *stat.borrow_and_update() {
                    return Ok(s);
                }
                if stat.changed().await.is_err() {
                    return Err(self.error().unwrap_or(Error::Closed));
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or(Err(Error::OperationTimeout))
    }

    /// Sets the node's data: the data it is created with from now on, written to the node now
    /// if it stands. A node that is missing (being created again) gets it from the task.
    ///
    /// Errors: those of `set_data` other than `NoNode` (a connection loss: the write may have
    /// been applied; the task creates the node with the new data in any case if it goes).
    pub async fn set_data(&self, data: &[u8]) -> Result<()> {
        self.data.send_replace(data.to_vec());
        match self.client.set_data(&self.path, data, None).await {
            Ok(_) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The data the node is kept with.
    pub fn data(&self) -> Vec<u8> {
        self.data.borrow().clone()
    }

    /// Why the task stopped, if it did on an error (a lost session with no next one, `NoAuth`,
    /// …).
    pub fn error(&self) -> Option<Error> {
        lock(&self.shared).error.clone()
    }

    /// Stops the task and deletes the node if it stands and is this client's (an ephemeral
    /// of another session is left alone).
    ///
    /// Errors: the delete's (a connection loss: it may have been applied).
    pub async fn close(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        let session = self.client.current_session().await?;
        let stat = match session.exists(&self.path).await? {
            Some(stat) => stat,
            None => return Ok(()),
        };
        if stat.is_ephemeral() && stat.ephemeral_owner != session.session().id.0 {
            return Ok(());
        }
        match session.delete(&self.path, Some(stat.version)).await {
            Ok(()) | Err(Error::NoNode { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for PersistentNode {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
