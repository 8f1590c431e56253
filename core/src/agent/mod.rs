//! Distributed agents: Clojure's `agent` (`send`, `await`, `restart-agent`, error modes,
//! validators, watches) for a serde value in a ZooKeeper node, with actions queued in
//! ZooKeeper and applied by whichever process runs the agent's executor.
//!
//! # The algorithm
//!
//! An agent at `P` is three things in ZooKeeper:
//!
//! - `P` holds an [`AgentState`]: the value (JSON), the queue position of the last action
//!   consumed (`applied`), the failure if the agent is failed, the error mode, and the last
//!   applied plain send of recent senders;
//! - `P/queue` holds the actions sent and not yet consumed, one persistent sequential node
//!   each ([`EntryName`]); ZooKeeper's sequence suffix is the queue order;
//! - `P/executor` is a [`Mutex`](crate::lock::Mutex) the executors take, so that one applies at a time.
//!
//! **Send** creates the action's node (one request). **The executor** reads `P` (after a
//! `sync`) and the queue, takes the entry with the smallest position after `applied`
//! ([`next_entry`]), reads its action, applies it to the value and consumes it with one
//! `multi`: `set_data(P, new state, version read)` and `delete(entry)`. The new state names
//! the entry's position as `applied`, so the value and the record that the action was applied
//! change together or not at all: two executors (one whose lock was lost with its session and
//! its successor) can compute the same action, but only one `multi` passes the version
//! check. Each action is applied exactly once, in queue order.
//!
//! **Await** lists the queue for this handle's entries (their names carry its id) and waits
//! until `applied` reaches the last of them.
//!
//! **Failure**: an action that fails (its `apply` returns `Err`, or the executor's validator
//! rejects its result) is consumed with the value unchanged; in [`ErrorMode::Fail`] the state
//! records the failure and executors apply nothing more until [`Agent::restart`]; in
//! [`ErrorMode::Continue`] the executor's error handler is called and it goes on.
//!
//! **Sends in a transaction** ([`Tx::send`](crate::stm::Tx::send)) are creates of the same
//! nodes put in the commit's `multi`, under both STM protocols: a try that aborts or retries
//! sends nothing; a commit sends each of its actions once.
//!
//! # Connection loss, session expiry, cancellation
//!
//! - **Connection loss** during a send makes its outcome unknown. The handle waits for the
//!   session, then lists the queue (after a `sync`) for the send's GUID and, if the entry is
//!   not there, reads the state: its sender mark says whether the send was applied. It never
//!   sends twice; if the state no longer remembers the sender (more than [`SENDERS_KEPT`]
//!   senders since) the send fails with [`AgentError::Indeterminate`]. A handle sends one
//!   action at a time, which is what makes its mark decide. During an executor's `multi` the
//!   executor reads the state again: `applied` at or past the entry means it was consumed
//!   (by this executor or another), otherwise it tries again; nothing is applied twice.
//!   A [`restart`](Agent::restart) whose reply is lost reads the state again: the restart
//!   records which failure it cleared and its own GUID ([`RestartMark`]), so a restart that
//!   did apply returns the failure it cleared, and one that did not is tried again (it
//!   never clears a later failure by mistake, and never reports `NotFailed` for its own
//!   write). A [`set_error_mode`](Agent::set_error_mode) whose reply is lost is simply
//!   written again.
//! - **Session expiry** fails a send or an await in flight with [`AgentError::Zk`] (session
//!   lost; a send then may or may not have been queued: [`AgentError::is_definite`] is
//!   `false`). The queue and the state are persistent: the next call runs on the client's
//!   next session. An executor whose session expires loses its lock; it takes the lock again
//!   on the next session and carries on, and meanwhile another executor may have taken over.
//! - **Cancellation**: dropping a send's future after its request left may still queue the
//!   action. Aborting an executor task at any point is safe: an action is consumed by its
//!   `multi` or not at all, and the lock node goes with the session (or is released in the
//!   background).
//!
//! # Example
//!
//! ```no_run
//! use avout::agent::{Action, Agent};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! enum Op { Add(i64), Halve }
//!
//! impl Action<i64> for Op {
//!     type Error = String;
//!     fn apply(&self, n: &i64) -> Result<i64, String> {
//!         match self {
//!             Op::Add(k) => Ok(n + k),
//!             Op::Halve if n % 2 == 0 => Ok(n / 2),
//!             Op::Halve => Err(format!("{n} is odd")),
//!         }
//!     }
//! }
//!
//! # async fn demo(client: &avout::Client) -> Result<(), avout::agent::AgentError> {
//! let total: Agent<i64, Op> = Agent::open(client, "/agents/total", 0).await?;
//! let executor = tokio::spawn({
//!     let total = total.clone();
//!     async move { total.run_executor().await }
//! });
//! total.send(Op::Add(4)).await?;
//! total.send(Op::Halve).await?;
//! total.await_applied().await?;
//! assert_eq!(total.deref().await?, 2);
//! executor.abort();
//! # Ok(()) }
//! ```

mod consume;
mod error;
mod executor;
mod restart;
mod state;
mod step;

pub use consume::{Consume, Consumed, consume};
pub use error::AgentError;
pub use state::{
    AgentFailure, AgentState, EntryName, ErrorMode, RestartMark, SENDERS_KEPT, SenderMark,
    next_entry,
};
pub use step::{StepError, StepMachine, Stepped};

use std::marker::PhantomData;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::client::Session;
use crate::coverage::{self, Mark};
use crate::sync::{Mutex as StdMutex, lock};
use crate::{Client, Coordination, CoordinationExt, CreateMode, Error, Op, SessionState, path};

/// An action an agent applies: a value any process can decode and run.
///
/// `apply` MUST be deterministic and free of side effects: during an executor hand-off two
/// executors may compute the same action, and only one result is kept.
///
/// ```
/// use avout::agent::Action;
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Inc;
/// impl Action<u64> for Inc {
///     type Error = std::convert::Infallible;
///     fn apply(&self, n: &u64) -> Result<u64, Self::Error> { Ok(n + 1) }
/// }
/// assert_eq!(Inc.apply(&1), Ok(2));
/// ```
pub trait Action<T>: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Why the action failed.
    type Error: std::fmt::Display;

    /// The agent's next value, or why the action fails.
    fn apply(&self, state: &T) -> Result<T, Self::Error>;
}

/// The action that changes nothing: sending `()` queues a no-op, which is consumed in order
/// like any action (an `await` after it waits for everything sent before it).
///
/// ```
/// use avout::agent::Action;
/// assert_eq!(().apply(&5u8), Ok(5));
/// ```
impl<T: Clone> Action<T> for () {
    type Error = std::convert::Infallible;

    fn apply(&self, state: &T) -> Result<T, Self::Error> {
        Ok(state.clone())
    }
}

type Validator<T> = Arc<dyn Fn(&T) -> bool + Send + Sync>;
type ErrorHandler = Arc<dyn Fn(&AgentFailure) + Send + Sync>;

struct Inner<T> {
    client: Client,
    path: String,
    /// This handle's id, in the names of the entries it sends.
    sender: u64,
    /// Keeps one plain send in flight, so that the sender's mark decides a lost one.
    sending: tokio::sync::Mutex<()>,
    validator: StdMutex<Option<Validator<T>>>,
    handler: StdMutex<Option<ErrorHandler>>,
    watches: crate::task::WatchTasks,
}

/// A distributed agent holding a `T` and applying actions of type `A`; see the
/// [module docs](self) for the algorithm and its behaviour on connection loss, expiry and
/// cancellation.
///
/// Handles are cheap to clone and share their id, validator, error handler and watches.
///
/// ```no_run
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Inc;
/// # impl avout::agent::Action<u64> for Inc { type Error = String; fn apply(&self, n: &u64) -> Result<u64, String> { Ok(n + 1) } }
/// # async fn demo(client: &avout::Client) -> Result<(), avout::agent::AgentError> {
/// let hits: avout::agent::Agent<u64, Inc> = avout::agent::Agent::open(client, "/hits", 0).await?;
/// hits.send(Inc).await?;
/// # Ok(()) }
/// ```
pub struct Agent<T, A> {
    inner: Arc<Inner<T>>,
    _action: PhantomData<fn(A)>,
}

impl<T, A> Clone for Agent<T, A> {
    fn clone(&self) -> Self {
        Agent {
            inner: self.inner.clone(),
            _action: PhantomData,
        }
    }
}

impl<T, A> std::fmt::Debug for Agent<T, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("path", &self.inner.path)
            .field("sender", &self.inner.sender)
            .finish()
    }
}

/// The state node as read: its state and version.
struct Read {
    state: AgentState,
    version: i32,
}

impl<T, A> Agent<T, A>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    A: Action<T>,
{
    /// Opens the agent at `path`, creating it with `initial` (and [`ErrorMode::Fail`]) if it
    /// does not exist; an existing agent keeps its value.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize)] struct Inc;
    /// # impl avout::agent::Action<u64> for Inc { type Error = String; fn apply(&self, n: &u64) -> Result<u64, String> { Ok(n + 1) } }
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::agent::AgentError> {
    /// let a: avout::agent::Agent<u64, Inc> = avout::agent::Agent::open(client, "/a", 0).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open(
        client: &Client,
        path: impl Into<String>,
        initial: T,
    ) -> Result<Self, AgentError> {
        let path = path.into();
        path::validate_path(&path, false)?;
        let value = serde_json::to_value(&initial).map_err(|source| AgentError::Encode {
            path: path.clone(),
            source,
        })?;
        let zk = client.current_session().await?;
        let state = AgentState::new(value).encode();
        // One `multi`, so an agent exists whole or not at all; `NodeExists` means it is there.
        if let Some(parent) = path::parent(&path).filter(|p| *p != "/") {
            zk.ensure_path(parent).await?;
        }
        let ops = [
            Op::create(&path, state, CreateMode::Persistent),
            Op::create(queue_dir(&path), Vec::new(), CreateMode::Persistent),
            Op::create(executor_dir(&path), Vec::new(), CreateMode::Persistent),
        ];
        loop {
            match zk.multi(&ops).await {
                Ok(_) => break,
                Err(e) if matches!(e.root(), Error::NodeExists { .. }) => break,
                // Creating is idempotent here: a lost create shows as `NodeExists` next time.
                Err(e) if e.is_indeterminate() => wait_connected(&*zk).await?,
                Err(e) => return Err(e.into()),
            }
        }
        let sender = zk.new_guid() as u64;
        Ok(Agent {
            inner: Arc::new(Inner {
                client: client.clone(),
                path,
                sender,
                sending: tokio::sync::Mutex::new(()),
                validator: StdMutex::new(None),
                handler: StdMutex::new(None),
                watches: Default::default(),
            }),
            _action: PhantomData,
        })
    }

    /// The agent's path.
    ///
    /// ```no_run
    /// # fn demo(a: avout::agent::Agent<u64, ()>) { println!("{}", a.path()); }
    /// ```
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// This handle's sender id (in the names of the entries it sends).
    ///
    /// ```no_run
    /// # fn demo(a: avout::agent::Agent<u64, ()>) { println!("{:x}", a.sender()); }
    /// ```
    pub fn sender(&self) -> u64 {
        self.inner.sender
    }

    async fn session(&self) -> Result<Session, AgentError> {
        Ok(self.inner.client.current_session().await?)
    }

    /// Reads the state node, linearizably (a `sync` first, sent with the read).
    async fn read(&self, zk: &dyn Coordination) -> Result<Read, AgentError> {
        let sync = zk.sync(&self.inner.path);
        let data = zk.get_data(&self.inner.path);
        let synced = sync.await;
        let read = data.await;
        synced?;
        match read {
            Ok((data, stat)) => Ok(Read {
                state: self.decode_state(&data)?,
                version: stat.version,
            }),
            Err(Error::NoNode { .. }) => Err(AgentError::Missing {
                path: self.inner.path.clone(),
            }),
            Err(e) => Err(e.into()),
        }
    }

    fn decode_state(&self, data: &[u8]) -> Result<AgentState, AgentError> {
        AgentState::decode(data).map_err(|source| AgentError::Decode {
            path: self.inner.path.clone(),
            source,
        })
    }

    fn decode_value(&self, value: &serde_json::Value) -> Result<T, AgentError> {
        T::deserialize(value).map_err(|source| AgentError::Decode {
            path: self.inner.path.clone(),
            source,
        })
    }

    /// The full state: value, position applied, failure, mode (a linearizable read).
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// if let Some(f) = a.state().await?.failure { println!("failed: {}", f.error); }
    /// # Ok(()) }
    /// ```
    pub async fn state(&self) -> Result<AgentState, AgentError> {
        let zk = self.session().await?;
        Ok(self.read(&*zk).await?.state)
    }

    /// The current value (a linearizable read). Clojure's `deref` never blocks on pending
    /// actions; neither does this.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// let n = a.deref().await?;
    /// # Ok(()) }
    /// ```
    pub async fn deref(&self) -> Result<T, AgentError> {
        let state = self.state().await?;
        self.decode_value(&state.value)
    }

    /// The failure the agent is stopped by (Clojure's `agent-error`), `None` if it runs.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// assert!(a.error().await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn error(&self) -> Result<Option<AgentFailure>, AgentError> {
        Ok(self.state().await?.failure)
    }

    /// Queues `action` (Clojure's `send`): when this returns `Ok`, the action is durably
    /// queued and some executor will apply it once, after every action queued before it.
    /// Returns its queue position. A handle sends one action at a time.
    ///
    /// Errors: [`AgentError::Indeterminate`] (a lost reply that could not be decided),
    /// [`AgentError::Zk`] (session lost: the action may have been queued).
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// let seq = a.send(()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send(&self, action: A) -> Result<i64, AgentError> {
        let data = self.encode_action(&action)?;
        let _one = self.inner.sending.lock().await;
        let zk = self.session().await?;
        let guid = zk.new_guid();
        let prefix = EntryName::prefix(true, self.inner.sender, guid);
        let node = path::join(&queue_dir(&self.inner.path), &prefix);
        match zk
            .create(
                &node,
                &data,
                &crate::CreateOptions::new(CreateMode::PersistentSequential),
            )
            .await
        {
            Ok((created, _)) => Ok(parse_created(&created)),
            Err(Error::NoNode { .. }) => Err(AgentError::Missing {
                path: self.inner.path.clone(),
            }),
            Err(e) if e.is_indeterminate() => self.recover_send(&*zk, guid, &prefix).await,
            Err(e) => Err(e.into()),
        }
    }

    /// Decides a send whose reply was lost; see the [module docs](self).
    async fn recover_send(
        &self,
        zk: &dyn Coordination,
        guid: u128,
        prefix: &str,
    ) -> Result<i64, AgentError> {
        loop {
            wait_connected(zk).await?;
            let queue = queue_dir(&self.inner.path);
            // The queue first, then the state: an entry consumed between the two reads shows
            // in the state.
            let listed = async {
                zk.sync(&queue).await?;
                zk.get_children(&queue).await
            }
            .await;
            let children = match listed {
                Ok((children, _)) => children,
                Err(e) if e.is_indeterminate() => continue,
                Err(e) => return Err(e.into()),
            };
            if let Some(name) = children.iter().find(|c| c.starts_with(prefix)) {
                coverage::reach(Mark::AgentSendLostRecovered);
                return Ok(parse_created(name));
            }
            let read = match self.read(zk).await {
                Ok(read) => read,
                Err(AgentError::Zk(e)) if e.is_indeterminate() => continue,
                Err(e) => return Err(e),
            };
            let guid = format!("{guid:032x}");
            return match read.state.sender_applied(self.inner.sender, &guid) {
                Some(true) => {
                    coverage::reach(Mark::AgentSendLostRecovered);
                    Ok(read
                        .state
                        .senders
                        .iter()
                        .find(|m| m.sender == self.inner.sender)
                        .map_or(-1, |m| m.seq))
                }
                // Not in the queue and not applied: it was never queued.
                Some(false) => Err(AgentError::NotQueued {
                    path: self.inner.path.clone(),
                }),
                // No mark was ever evicted, so a send of ours applied would have left one.
                None if read.state.evicted < 0 => Err(AgentError::NotQueued {
                    path: self.inner.path.clone(),
                }),
                None => Err(AgentError::Indeterminate {
                    path: self.inner.path.clone(),
                    detail: format!(
                        "no entry {prefix}… in the queue and the state no longer remembers \
                         sender {:016x}",
                        self.inner.sender
                    ),
                }),
            };
        }
    }

    fn encode_action(&self, action: &A) -> Result<Vec<u8>, AgentError> {
        serde_json::to_vec(action).map_err(|source| AgentError::Encode {
            path: self.inner.path.clone(),
            source,
        })
    }

    /// The create of `action`'s queue entry, for a transaction's commit `multi`
    /// ([`Tx::send`](crate::stm::Tx::send)).
    pub(crate) fn send_op(&self, action: &A, guid: u128) -> Result<Op, AgentError> {
        let data = self.encode_action(action)?;
        let prefix = EntryName::prefix(false, self.inner.sender, guid);
        Ok(Op::create(
            path::join(&queue_dir(&self.inner.path), &prefix),
            data,
            CreateMode::PersistentSequential,
        ))
    }

    /// Waits until every action this handle sent so far (plain or from a committed
    /// transaction) has been consumed (Clojure's `await`). Fails with
    /// [`AgentError::Failed`] if the agent is failed before they all are.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// a.send(()).await?;
    /// a.await_applied().await?;
    /// # Ok(()) }
    /// ```
    pub async fn await_applied(&self) -> Result<(), AgentError> {
        let zk = self.session().await?;
        let queue = queue_dir(&self.inner.path);
        zk.sync(&queue).await?;
        let (children, _) = zk.get_children(&queue).await?;
        let Some(last) = children
            .iter()
            .filter_map(|c| EntryName::parse(c))
            .filter(|e| e.sender == self.inner.sender)
            .map(|e| e.seq)
            .max()
        else {
            return Ok(());
        };
        loop {
            let (data, _, watch) = zk.get_and_watch_data(&self.inner.path).await?;
            let state = self.decode_state(&data)?;
            if state.applied >= last {
                return Ok(());
            }
            if let Some(f) = state.failure {
                return Err(AgentError::Failed {
                    path: self.inner.path.clone(),
                    seq: f.seq,
                    error: f.error,
                });
            }
            let event = watch.await;
            if let Some(e) = event.state.terminal_error() {
                return Err(e.into());
            }
        }
    }

    /// Sets the validator (Clojure's `set-validator!`): a value an action produces in an
    /// executor of this handle must pass it, or the action fails. It is local to the handle
    /// (and its clones), as on atoms: give every executor's handle the same one.
    ///
    /// ```no_run
    /// # fn demo(a: avout::agent::Agent<u64, ()>) { a.set_validator(|n| *n < 100); }
    /// ```
    pub fn set_validator(&self, valid: impl Fn(&T) -> bool + Send + Sync + 'static) {
        *lock(&self.inner.validator) = Some(Arc::new(valid));
    }

    /// Removes the validator.
    ///
    /// ```no_run
    /// # fn demo(a: avout::agent::Agent<u64, ()>) { a.clear_validator(); }
    /// ```
    pub fn clear_validator(&self) {
        *lock(&self.inner.validator) = None;
    }

    fn valid(&self, value: &T) -> bool {
        let validator = lock(&self.inner.validator).clone();
        validator.is_none_or(|v| v(value))
    }

    /// Sets the error handler (Clojure's `set-error-handler!`) an executor of this handle
    /// calls, in [`ErrorMode::Continue`], for each action it skips.
    ///
    /// ```no_run
    /// # fn demo(a: avout::agent::Agent<u64, ()>) { a.set_error_handler(|f| eprintln!("{}", f.error)); }
    /// ```
    pub fn set_error_handler(&self, handler: impl Fn(&AgentFailure) + Send + Sync + 'static) {
        *lock(&self.inner.handler) = Some(Arc::new(handler));
    }

    /// Calls `f(old, new)` on every change of the value from now on (Clojure's `add-watch`),
    /// whichever process's executor made it, from a background task, replacing any watch
    /// with the same key. Changes that come faster than they are read are coalesced. The
    /// watch follows the client to its next session and ends on
    /// [`remove_watch`](Self::remove_watch), when every handle is dropped, or when the
    /// client ends.
    ///
    /// MUST be called within a tokio runtime.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// a.add_watch("log", |old, new| println!("{old} -> {new}")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_watch(
        &self,
        key: impl Into<String>,
        f: impl Fn(&T, &T) + Send + 'static,
    ) -> Result<(), AgentError> {
        let mut old = self.deref().await?;
        let this = self.clone_weakly();
        let task = crate::task::spawn(async move {
            loop {
                let Some(agent) = this.upgrade() else { return };
                let changed = agent.next_value(&old).await;
                drop(agent);
                match changed {
                    Ok(new) => {
                        f(&old, &new);
                        old = new;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "agent watch ended");
                        return;
                    }
                }
            }
        });
        self.inner.watches.insert(key.into(), task);
        Ok(())
    }

    /// Stops the watch added under `key`; `false` if there was none.
    ///
    /// ```no_run
    /// # fn demo(a: avout::agent::Agent<u64, ()>) { a.remove_watch("log"); }
    /// ```
    pub fn remove_watch(&self, key: &str) -> bool {
        self.inner.watches.remove(key)
    }

    fn clone_weakly(&self) -> WeakAgent<T, A> {
        WeakAgent {
            inner: Arc::downgrade(&self.inner),
            _action: PhantomData,
        }
    }

    /// Waits for a value other than `old`, across sessions.
    async fn next_value(&self, old: &T) -> Result<T, AgentError>
    where
        T: Serialize,
    {
        let old = serde_json::to_value(old).map_err(|source| AgentError::Encode {
            path: self.inner.path.clone(),
            source,
        })?;
        loop {
            let zk = self.session().await?;
            let watched = zk.get_and_watch_data(&self.inner.path).await;
            let (data, _, watch) = match watched {
                Ok(read) => read,
                Err(e) if e.is_session_lost() && !self.inner.client.has_ended() => {
                    self.inner.client.past_session(zk.generation()).await?;
                    continue;
                }
                Err(e) if e.is_indeterminate() => {
                    wait_connected(&*zk).await.ok();
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let state = self.decode_state(&data)?;
            if state.value != old {
                return self.decode_value(&state.value);
            }
            watch.await;
        }
    }
}

struct WeakAgent<T, A> {
    inner: std::sync::Weak<Inner<T>>,
    _action: PhantomData<fn(A)>,
}

impl<T, A> WeakAgent<T, A> {
    fn upgrade(&self) -> Option<Agent<T, A>> {
        self.inner.upgrade().map(|inner| Agent {
            inner,
            _action: PhantomData,
        })
    }
}

fn queue_dir(path: &str) -> String {
    path::join(path, "queue")
}

fn executor_dir(path: &str) -> String {
    path::join(path, "executor")
}

/// The queue position of a created entry (its path or name).
fn parse_created(created: &str) -> i64 {
    let name = created.rsplit('/').next().unwrap_or(created);
    EntryName::parse(name)
        .unwrap_or_else(|| panic!("the service created {created:?}, not an entry name"))
        .seq
}

/// Waits until the session is connected again after a connection loss; fails with the
/// session's terminal error if it ends instead.
pub(crate) async fn wait_connected(zk: &dyn Coordination) -> Result<(), Error> {
    let mut states = zk.session_states();
    loop {
        let state = states.current();
        if let Some(e) = state.terminal_error() {
            return Err(e);
        }
        if state == SessionState::Connected {
            return Ok(());
        }
        if states.next().await.is_none() {
            return Err(Error::Closed);
        }
    }
}
