//! A distributed software transactional memory: Clojure's refs and `dosync`, with the refs
//! held in ZooKeeper and the transactions run by any number of processes.
//!
//! # The API
//!
//! An [`Stm`] is opened on a session and a root path with an [`StmConfig`]; the root is bound
//! to one [`Protocol`] the first time it is opened (opening it with the other protocol is
//! [`StmError::ProtocolMismatch`]). [`Stm::make_ref`] makes (or joins) a named [`Ref`] of
//! serde values, encoded with a [`Codec`] ([`Json`]
//! by default). [`Stm::dosync`] runs a body on a [`Tx`]:
//!
//! - [`Tx::deref`] reads a ref (the transaction's own value once it has set it);
//! - [`Tx::ref_set`] and [`Tx::alter`] write it;
//! - [`Tx::commute`] applies a function that is replayed at commit on the newest committed
//!   value: two transactions commuting the same ref never make each other run again;
//! - [`Tx::ensure`] protects a ref the transaction only reads against concurrent writers
//!   (what prevents write skew under snapshot isolation).
//!
//! The body is an async closure returning `Result<R, E>`, where `E: From<`[`Abort`]`>`: STM
//! operations return [`Abort`] when the try cannot go on, and the body propagates it with
//! `?`. On a conflict the body runs again (so it must have no side effects besides the
//! transaction's), up to [`StmConfig::retry_limit`] retries. Everything else is an
//! [`StmError`], never swallowed: the body's own error ([`StmError::Body`]), a validator's
//! rejection naming the ref ([`StmError::Invalid`]: nothing is written), the retry limit,
//! a lost session, a commit whose outcome could not be decided, codec errors. Validators
//! ([`Ref::set_validator`]) run on every value a transaction would commit; watchers
//! ([`Ref::add_watch`]) are called after a commit with the old and new values, in the process
//! that committed (as Clojure's, they are local to the handle).
//!
//! ```no_run
//! use avout::stm::{Abort, Stm, StmConfig};
//! # async fn demo(client: &avout::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let stm = Stm::open(client, "/bank", StmConfig::default()).await?;
//! let alice = stm.make_ref("alice", 100i64).await?;
//! let bob = stm.make_ref("bob", 0i64).await?;
//! alice.set_validator(|balance| *balance >= 0);
//! stm.dosync(async |tx| {
//!     tx.alter(&alice, |b| b - 30).await?;
//!     tx.alter(&bob, |b| b + 30).await?;
//!     Ok::<_, Abort>(())
//! })
//! .await?;
//! assert_eq!(bob.deref().await?, 30);
//! # Ok(()) }
//! ```
//!
//! # Protocols
//!
//! - [`Protocol::Optimistic`] ([`optimistic`]): each ref is one node; a try reads versions
//!   (a warm cache serves reads; the commit validates them) and commits with one `multi`
//!   of version checks and conditional writes. Strictly serializable; a single-ref `alter`
//!   with a warm cache is one round trip.
//! - [`Protocol::Mvcc`]: Avout's recipe (transaction points under `history`, per-ref locks,
//!   history nodes and tags, barging), made safe and fast.
//!
//! Both implement the internal seam in [`protocol`]: the frontend (this module, [`Tx`],
//! [`Ref`]) handles values, validators, watchers and retries, a protocol only bytes.
//!
//! # Round trips
//!
//! Requests and round trips per committed transaction, uncontended, counted by the
//! simulator's request counter and [`StmStats`] (tests `stm_sim::round_trips_per_kind` and
//! `stm_mvcc::mvcc_round_trips_per_kind`):
//!
//! | protocol | transaction | cache | requests | round trips |
//! |---|---|---|---|---|
//! | Optimistic | read-only, one ref | cold | 2 | 1 |
//! | Optimistic | read-only, one ref | warm | 1 | 1 |
//! | Optimistic | read-only, two refs | warm | 1 | 1 |
//! | Optimistic | alter one ref | warm | 1 | 1 |
//! | Optimistic | alter one ref | cold | 3 | 2 |
//! | Optimistic | alter two refs | warm | 1 | 1 |
//! | Optimistic | commute one ref | warm | 1 | 1 |
//! | Mvcc | read-only, one ref | – | 3 | 1 |
//! | Mvcc | read-only, two refs | – | 4 | 2 |
//! | Mvcc | alter one ref | – | 10 | 3 |
//! | Mvcc | alter two refs | – | 17 | 4 |
//! | Mvcc | commute one ref | – | 10 | 4 |
//!
//! (Mvcc's rows are counted by test `stm_mvcc::mvcc_round_trips_per_kind`; its steps are in
//! [`mvcc`]'s docs.)
//!
//! Speed, measured in one run on one standalone server (`avout zk start`, fsync on, a loaded
//! 2-core machine) with `avout bench ops --n 3000 --json` and `avout bench stm-alter --n 3000
//! --warmup 300`, twice in turn: a single-ref `alter` under Optimistic ran at 777 and 981
//! transactions/s against sequential `set_data` at 998 and 922 ops/s — 0.78× and 1.06×
//! (one request per transaction, no retries).
//!
//! # Where values live
//!
//! By default a ref's value is the data of its ZooKeeper nodes (at most about 1 MiB), and
//! the counts above are exact. [`Stm::open_with_store`] keeps the values in a
//! [`RefStore`](store::RefStore) instead ([`store::MemoryStore`] in this process,
//! `store::PostgresStore` with feature `postgres`): a writing try then also creates an
//! ephemeral marker (one request) and puts its values before its commit, whose `multi` carries
//! only pointers and deletes the marker; [`Stm::collect_garbage`] removes what no ref holds
//! and no try can still commit. See [`store`] for the protocol and its failure modes.
//!
//! # Connection loss, session expiry, cancellation
//!
//! Conflicts and connection losses before the commit are retried inside `dosync`. A commit
//! whose reply is lost is resolved by the protocol (it never sends it again blindly); if it
//! cannot tell, `dosync` fails with [`StmError::Indeterminate`]. All the tries of one
//! transaction run on one session: if it ends, the transaction fails with
//! [`StmError::SessionLost`] (a commit in flight may or may not have taken effect) and is not
//! started over. Refs are persistent nodes, so the handle's next transaction runs on the
//! client's next session. Dropping a `dosync` future abandons the transaction; a commit
//! already sent may still take effect.

pub mod mvcc;
pub mod optimistic;
#[doc(hidden)]
pub mod protocol;
pub mod store;

mod error;
mod reference;
mod root;
mod tx;

pub use error::{Abort, StmError};
pub use reference::Ref;
pub use tx::Tx;

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Client;
use crate::atom::{Codec, Json};
use crate::client::Session;

use protocol::{Counters, Engine, EngineContext, Failure};

/// Which protocol a root runs.
///
/// ```
/// use avout::stm::Protocol;
/// assert_eq!(Protocol::Optimistic.name(), "optimistic");
/// assert_eq!("mvcc".parse::<Protocol>(), Ok(Protocol::Mvcc));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// Avout's MVCC recipe: history points, per-ref locks, barging.
    Mvcc,
    /// Version checks and conditional writes in one `multi` per commit.
    Optimistic,
}

impl Protocol {
    /// Both protocols.
    ///
    /// ```
    /// assert_eq!(avout::stm::Protocol::ALL.len(), 2);
    /// ```
    pub const ALL: [Protocol; 2] = [Protocol::Mvcc, Protocol::Optimistic];

    /// The protocol's name, as the root's node and the command line spell it.
    ///
    /// ```
    /// assert_eq!(avout::stm::Protocol::Mvcc.name(), "mvcc");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Mvcc => "mvcc",
            Protocol::Optimistic => "optimistic",
        }
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown protocol {s:?} (expected mvcc or optimistic)"))
    }
}

/// How an [`Stm`] runs.
///
/// The defaults are Clojure's: BARGE-WAIT 10 ms, RETRY-LIMIT 10,000, MAX-HISTORY 10.
/// Avout used 100 ms and 100 retries ([`StmConfig::avout`]).
///
/// ```
/// use std::time::Duration;
/// use avout::stm::{Protocol, StmConfig};
/// let c = StmConfig::default();
/// assert_eq!((c.barge_wait, c.retry_limit, c.max_history), (Duration::from_millis(10), 10_000, 10));
/// let mvcc = StmConfig { protocol: Protocol::Mvcc, ..StmConfig::avout() };
/// assert_eq!(mvcc.retry_limit, 100);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StmConfig {
    /// The protocol the root runs.
    pub protocol: Protocol,
    /// How long a transaction waits before barging a younger one (Mvcc).
    pub barge_wait: Duration,
    /// Retries after which a transaction fails with [`StmError::RetryLimit`].
    pub retry_limit: u32,
    /// Past values kept per ref (Mvcc; history).
    pub max_history: usize,
    /// The bugs planted in the transactions' machines and glue (none by default; see
    /// [`crate::planted`]).
    pub planted: crate::planted::Bugs,
}

impl Default for StmConfig {
    fn default() -> Self {
        StmConfig {
            protocol: Protocol::Optimistic,
            barge_wait: Duration::from_millis(10),
            retry_limit: 10_000,
            max_history: 10,
            planted: crate::planted::Bugs::NONE,
        }
    }
}

impl StmConfig {
    /// Avout's settings: BARGE-WAIT 100 ms, RETRY-LIMIT 100 (MAX-HISTORY as Clojure's, 10).
    ///
    /// ```
    /// assert_eq!(avout::stm::StmConfig::avout().barge_wait.as_millis(), 100);
    /// ```
    pub fn avout() -> Self {
        StmConfig {
            barge_wait: Duration::from_millis(100),
            retry_limit: 100,
            ..StmConfig::default()
        }
    }

    /// The default configuration with another protocol.
    ///
    /// ```
    /// use avout::stm::{Protocol, StmConfig};
    /// assert_eq!(StmConfig::with_protocol(Protocol::Mvcc).protocol, Protocol::Mvcc);
    /// ```
    pub fn with_protocol(protocol: Protocol) -> Self {
        StmConfig {
            protocol,
            ..StmConfig::default()
        }
    }
}

/// Counts of an [`Stm`] handle's work; see [`Stm::stats`].
///
/// ```
/// let s = avout::stm::StmStats::default();
/// assert_eq!(s.commits, 0);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StmStats {
    /// Transactions committed.
    pub commits: u64,
    /// Tries abandoned for a conflict and run again.
    pub retries: u64,
    /// Of the retries, those for a conflict with another transaction: a write committed past
    /// the read point, or a lock held too long. A lone client never has one; its retries are
    /// read faults and interrupted commits ([`RetryReason`](protocol::RetryReason)).
    pub conflicts: u64,
    /// Reads of values no longer kept (each also a retry).
    pub read_faults: u64,
    /// Commit phases run again (not the body) because only a commuted ref moved.
    pub commit_redos: u64,
    /// Requests sent to the coordination service.
    pub requests: u64,
    /// Round trips waited for (requests sent back to back count once).
    pub round_trips: u64,
    /// Commits whose reply was lost, decided by reading afterwards.
    pub recoveries: u64,
    /// Younger transactions this handle's transactions barged (killed while `RUNNING`;
    /// Mvcc).
    pub barges: u64,
    /// Tries of this handle's transactions killed by an older transaction's barge (each also
    /// a retry; Mvcc).
    pub killed: u64,
}

/// What [`Stm`] and its [`Ref`]s share.
pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) engine: Box<dyn Engine>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) config: StmConfig,
    pub(crate) root: String,
    /// Where values live: `None`, in the refs' nodes; else in this store (see [`store`]).
    pub(crate) store: Option<Arc<dyn store::RefStore>>,
}

impl Shared {
    /// The session the next operation runs on (see [`Client::current_session`]).
    pub(crate) async fn session(&self) -> Result<Session, Failure> {
        self.client
            .current_session()
            .await
            .map_err(StmError::from_zk)
    }
}

/// A handle on an STM root: makes refs and runs transactions. Cheap to clone.
///
/// See the [module docs](self).
///
/// ```no_run
/// # async fn demo(client: &avout::Client) -> Result<(), avout::stm::StmError> {
/// let stm = avout::stm::Stm::open(client, "/app/stm", Default::default()).await?;
/// assert_eq!(stm.root(), "/app/stm");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Stm {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Stm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stm")
            .field("root", &self.shared.root)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Stm {
    /// Opens the STM at `root` (created if missing), binding the root to
    /// `config.protocol` if it is new.
    ///
    /// Errors: [`StmError::ProtocolMismatch`] if the root is bound to the other protocol;
    /// [`StmError::Zk`] for an invalid root path; [`StmError::SessionLost`].
    ///
    /// ```no_run
    /// use avout::stm::{Protocol, Stm, StmConfig, StmError};
    /// # async fn demo(client: &avout::Client) {
    /// Stm::open(&client, "/s", StmConfig::with_protocol(Protocol::Optimistic)).await.unwrap();
    /// let other = Stm::open(client, "/s", StmConfig::with_protocol(Protocol::Mvcc)).await;
    /// assert!(matches!(other, Err(StmError::ProtocolMismatch { .. })));
    /// # }
    /// ```
    pub async fn open(client: &Client, root: &str, config: StmConfig) -> Result<Stm, StmError> {
        Stm::open_inner(client, root, config, None).await
    }

    /// Like [`open`](Self::open), with the refs' values kept in `store` and only pointers to
    /// them in ZooKeeper (see [`store`]): values can be larger than a node holds. Every handle
    /// on the root must use the same store.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use avout::stm::{Stm, StmConfig, store::MemoryStore};
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::stm::StmError> {
    /// let store = Arc::new(MemoryStore::new());
    /// let stm = Stm::open_with_store(client, "/big", StmConfig::default(), store.clone()).await?;
    /// let blob = stm.make_ref("blob", vec![0u8; 2 << 20]).await?;
    /// stm.dosync(async |tx| tx.alter(&blob, |b| { let mut b = b.clone(); b[0] = 1; b }).await).await?;
    /// stm.collect_garbage().await?; // the first value is no longer held
    /// # Ok(()) }
    /// ```
    pub async fn open_with_store(
        client: &Client,
        root: &str,
        config: StmConfig,
        store: Arc<dyn store::RefStore>,
    ) -> Result<Stm, StmError> {
        Stm::open_inner(client, root, config, Some(store)).await
    }

    async fn open_inner(
        client: &Client,
        root: &str,
        config: StmConfig,
        store: Option<Arc<dyn store::RefStore>>,
    ) -> Result<Stm, StmError> {
        crate::path::validate_path(root, false).map_err(Failure::Zk)?;
        if root == "/" {
            return Err(StmError::Zk(crate::Error::BadArguments(
                "the STM root cannot be / (its node records the protocol)".into(),
            )));
        }
        let zk = client.current_session().await.map_err(Failure::from_zk)?;
        root::bind(&*zk, root, config.protocol).await?;
        if store.is_some() {
            use crate::CoordinationExt;
            zk.ensure_path(&store::glue::marker_dir(root))
                .await
                .map_err(Failure::from_zk)?;
        }
        let counters = Arc::new(Counters::default());
        let cx = EngineContext {
            zk,
            root: root.to_owned(),
            config: config.clone(),
            counters: counters.clone(),
        };
        let engine: Box<dyn Engine> = match config.protocol {
            Protocol::Optimistic => Box::new(optimistic::Optimistic::open(cx).await?),
            Protocol::Mvcc => Box::new(mvcc::Mvcc::open(cx).await?),
        };
        Ok(Stm {
            shared: Arc::new(Shared {
                client: client.clone(),
                engine,
                counters,
                config,
                root: root.to_owned(),
                store,
            }),
        })
    }

    /// Removes from the store every value of this root that no ref holds and no try can
    /// still commit (see [`store`]'s docs); nothing without a store. Safe to run at any time,
    /// from any process, concurrently with transactions.
    ///
    /// Errors: [`StmError::Store`] (with [`store::StoreOp::Collect`]), [`StmError::SessionLost`].
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm) -> Result<(), avout::stm::StmError> {
    /// let c = stm.collect_garbage().await?;
    /// assert_eq!(c.listed, c.kept + c.removed);
    /// # Ok(()) }
    /// ```
    pub async fn collect_garbage(&self) -> Result<store::Collected, StmError> {
        match &self.shared.store {
            None => Ok(store::Collected::default()),
            Some(s) => Ok(store::glue::collect(&self.shared, s).await?),
        }
    }

    /// The store values live in (`None`: the refs' ZooKeeper nodes).
    ///
    /// ```no_run
    /// # fn demo(stm: avout::stm::Stm) {
    /// assert!(stm.ref_store().is_none());
    /// # }
    /// ```
    pub fn ref_store(&self) -> Option<&Arc<dyn store::RefStore>> {
        self.shared.store.as_ref()
    }

    /// The root path.
    ///
    /// ```no_run
    /// # fn demo(stm: avout::stm::Stm) {
    /// println!("{}", stm.root());
    /// # }
    /// ```
    pub fn root(&self) -> &str {
        &self.shared.root
    }

    /// The configuration.
    ///
    /// ```no_run
    /// # fn demo(stm: avout::stm::Stm) {
    /// assert_eq!(stm.config().retry_limit, 10_000);
    /// # }
    /// ```
    pub fn config(&self) -> &StmConfig {
        &self.shared.config
    }

    /// The client the handle runs on.
    ///
    /// ```no_run
    /// # fn demo(stm: avout::stm::Stm) {
    /// let _client = stm.client();
    /// # }
    /// ```
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// Counts of this handle's work (all its clones and refs).
    ///
    /// ```no_run
    /// # fn demo(stm: avout::stm::Stm) {
    /// let s = stm.stats();
    /// assert!(s.round_trips <= s.requests);
    /// # }
    /// ```
    pub fn stats(&self) -> StmStats {
        self.shared.counters.snapshot()
    }

    /// The ref `name` (one path segment), made with `initial` if it does not exist yet (an
    /// existing ref keeps its value), with the JSON codec.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm) -> Result<(), avout::stm::StmError> {
    /// let hits = stm.make_ref("hits", 0u64).await?;
    /// assert!(hits.deref().await? >= 0);
    /// # Ok(()) }
    /// ```
    pub async fn make_ref<T>(&self, name: &str, initial: T) -> Result<Ref<T, Json>, StmError>
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        self.make_ref_with(name, initial, Json).await
    }

    /// Like [`make_ref`](Self::make_ref), with another codec. Every handle on a ref MUST use
    /// the same codec.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm) -> Result<(), avout::stm::StmError> {
    /// let r = stm.make_ref_with("compact", vec![1u32, 2], avout::atom::Postcard).await?;
    /// assert_eq!(r.deref().await?, vec![1, 2]);
    /// # Ok(()) }
    /// ```
    pub async fn make_ref_with<T, K>(
        &self,
        name: &str,
        initial: T,
        codec: K,
    ) -> Result<Ref<T, K>, StmError>
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
        K: Codec,
    {
        reference::validate_name(name)?;
        let bytes = codec.encode(&initial).map_err(|source| Failure::Encode {
            name: name.to_owned(),
            source,
        })?;
        let zk = self.shared.session().await?;
        match &self.shared.store {
            None => self.shared.engine.create_ref(&zk, name, &bytes).await?,
            Some(s) => store::glue::create_ref(&self.shared, s, &zk, name, bytes).await?,
        }
        Ok(Ref::new(self.shared.clone(), name.to_owned(), codec))
    }

    /// A handle on the ref `name`, which must exist (no request is sent: a missing ref
    /// shows as [`StmError::NoRef`] when used).
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm) -> Result<(), avout::stm::StmError> {
    /// let r = stm.get_ref::<u64>("hits")?;
    /// println!("{}", r.deref().await?);
    /// # Ok(()) }
    /// ```
    pub fn get_ref<T>(&self, name: &str) -> Result<Ref<T, Json>, StmError>
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        self.get_ref_with(name, Json)
    }

    /// [`get_ref`](Self::get_ref) for a ref made with another codec
    /// ([`make_ref_with`](Self::make_ref_with)): no request is sent.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm) -> Result<(), avout::stm::StmError> {
    /// let r = stm.get_ref_with::<Vec<u32>, _>("compact", avout::atom::Postcard)?;
    /// println!("{:?}", r.deref().await?);
    /// # Ok(()) }
    /// ```
    pub fn get_ref_with<T, K>(&self, name: &str, codec: K) -> Result<Ref<T, K>, StmError>
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
        K: Codec,
    {
        reference::validate_name(name)?;
        Ok(Ref::new(self.shared.clone(), name.to_owned(), codec))
    }

    /// Runs `body` as a transaction and returns its result; see the [module docs](self).
    ///
    /// The body may run several times (once per try): it must have no effects besides the
    /// transaction's.
    ///
    /// To run `dosync` in a spawned task (where the future must be `Send`), give it an
    /// `async move` closure that owns what it uses (clone the [`Ref`]s: they are cheap
    /// handles). A body that captures references makes a future the compiler cannot currently
    /// prove `Send` ("implementation of `Send` is not general enough"), a limitation of async
    /// closures; such a body runs fine where `Send` is not needed.
    ///
    /// Errors: the body's ([`StmError::Body`]), [`StmError::Invalid`],
    /// [`StmError::RetryLimit`], [`StmError::SessionLost`], [`StmError::Indeterminate`],
    /// codec errors.
    ///
    /// A body fails only through the transaction's own operations (their [`Abort`], with
    /// `?`); [`dosync_with`](Self::dosync_with) takes a body with an error of its own.
    ///
    /// ```no_run
    /// # async fn demo(stm: avout::stm::Stm, from: avout::stm::Ref<i64>, to: avout::stm::Ref<i64>) -> Result<(), avout::stm::StmError> {
    /// stm.dosync(async |tx| {
    ///     tx.alter(&from, |a| a - 10).await?;
    ///     tx.alter(&to, |b| b + 10).await?;
    ///     Ok(())
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn dosync<R, F>(&self, body: F) -> Result<R, StmError>
    where
        F: AsyncFnMut(&mut Tx<'_>) -> Result<R, Abort>,
    {
        tx::run(&self.shared, body).await.map_err(StmError::from)
    }

    /// Like [`dosync`](Self::dosync), for a body that can also fail with its own error `E`
    /// (which the transaction's [`Abort`] converts into): `E` comes back as
    /// [`StmError::Body`], and nothing is written.
    ///
    /// ```no_run
    /// use avout::stm::{Abort, StmError};
    /// # async fn demo(stm: avout::stm::Stm, a: avout::stm::Ref<i64>) {
    /// #[derive(Debug)]
    /// enum Refused { Stm(Abort), TooPoor }
    /// impl From<Abort> for Refused { fn from(a: Abort) -> Self { Refused::Stm(a) } }
    ///
    /// let out = stm.dosync_with(async |tx| {
    ///     let balance = tx.deref(&a).await?;
    ///     if balance < 10 { return Err(Refused::TooPoor); }
    ///     tx.ref_set(&a, balance - 10).await?;
    ///     Ok(balance - 10)
    /// }).await;
    /// if let Err(StmError::Body(Refused::TooPoor)) = out { println!("nothing was written"); }
    /// # }
    /// ```
    pub async fn dosync_with<R, E, F>(&self, body: F) -> Result<R, StmError<E>>
    where
        F: AsyncFnMut(&mut Tx<'_>) -> Result<R, E>,
        E: From<Abort>,
    {
        tx::run(&self.shared, body).await
    }
}
