//! `zookeeper-client`'s lock ([`Client::lock`]): Curator-compatible, shared-prefix and custom
//! lock node names, the wait on the predecessor, and the guards that delete a lock node in the
//! background when dropped.
//!
//! This is the real crate's algorithm, step for step (ported from `zookeeper-client` 0.11.2,
//! `src/client/mod.rs`, MIT): what the simulator finds in an application's use of it, or in
//! the lock itself, is what the real crate does. Only its spawns are madsim's tasks and its
//! Curator GUIDs come from the run's seed.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::future::Future;
use std::mem::ManuallyDrop;

use avout::Coordination;

use super::client::parse_sequence;
use super::path::{split, validate};
use super::{
    Acls, CheckWriteError, CheckWriter, Client, CreateMode, CreateOptions, CreateSequence, Error,
    MultiReadResult, MultiWriteResult, Result, Stat,
};

/// `Error::has_no_data_change` of the real crate: errors after which a create surely made no
/// node.
fn has_no_data_change(err: &Error) -> bool {
    matches!(
        err,
        Error::NoNode
            | Error::NoAuth
            | Error::BadVersion
            | Error::NoChildrenForEphemerals
            | Error::NodeExists
            | Error::NotEmpty
            | Error::InvalidAcl
            | Error::AuthFailed
            | Error::SessionMoved
            | Error::NotReadOnly
            | Error::NoWatcher
            | Error::QuotaExceeded
            | Error::Throttled
            | Error::MarshallingError
            | Error::Unimplemented
            | Error::ReconfigDisabled
            | Error::UnexpectedErrorCode(_)
            | Error::SessionExpired
            | Error::ClientClosed
    )
}

/// Calls `operation` again for as long as it fails with `ConnectionLoss`.
async fn retry_on_connection_loss<T, F>(operation: impl Fn() -> F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    loop {
        match operation().await {
            Err(Error::ConnectionLoss) => continue,
            result => return result,
        }
    }
}

/// Options of a lock: the ACL of its node, and how to create its missing ancestors.
///
/// ```
/// use avout_zookeeper_client::{Acls, CreateMode, LockOptions};
/// let options = LockOptions::new(Acls::anyone_all())
///     .with_ancestor_options(CreateMode::Persistent.with_acls(Acls::anyone_all()))
///     .unwrap();
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
pub struct LockOptions<'a> {
    acls: Acls<'a>,
    parent: Option<CreateOptions<'a>>,
}

impl<'a> LockOptions<'a> {
    /// Options with the lock node's ACL, and no ancestors made.
    ///
    /// ```
    /// let options = avout_zookeeper_client::LockOptions::new(avout_zookeeper_client::Acls::anyone_all());
    /// # let _ = options;
    /// ```
    pub fn new(acls: Acls<'a>) -> Self {
        Self { acls, parent: None }
    }

    /// Makes missing ancestors of the lock node with `options`. Errors: `BadArguments` for an
    /// ephemeral or sequential mode, `InvalidAcl` for no ACL.
    ///
    /// ```
    /// use avout_zookeeper_client::{Acls, CreateMode, LockOptions};
    /// let bad = LockOptions::new(Acls::anyone_all())
    ///     .with_ancestor_options(CreateMode::Ephemeral.with_acls(Acls::anyone_all()));
    /// assert!(bad.is_err());
    /// ```
    pub fn with_ancestor_options(mut self, options: CreateOptions<'a>) -> Result<Self> {
        options.validate_as_directory()?;
        self.parent = Some(options);
        Ok(self)
    }
}

impl<'a> From<Acls<'a>> for LockOptions<'a> {
    fn from(acls: Acls<'a>) -> Self {
        LockOptions::new(acls)
    }
}

#[derive(Clone, Copy)]
enum LockPrefixKind<'a> {
    Curator { lock_name: &'a str },
    Custom { lock_name: &'a str },
    Shared { prefix: &'a str },
}

impl LockPrefixKind<'_> {
    fn filter(&self, name: &str) -> bool {
        match self {
            Self::Curator { lock_name } | Self::Custom { lock_name } => name.contains(lock_name),
            Self::Shared { prefix } => name.starts_with(prefix),
        }
    }

    fn is_unique(&self) -> bool {
        matches!(self, Self::Curator { .. })
    }
}

#[derive(Debug)]
enum LockPrefixInner<'a> {
    Curator { dir: &'a str, name: &'a str },
    Custom { prefix: String, name: &'a str },
    Shared { prefix: &'a str },
}

/// How a lock's node is named: the prefix of its ephemeral sequential node, which nodes of
/// the directory are contenders, and how to find one's own node after `ConnectionLoss`.
///
/// ```
/// use avout_zookeeper_client::LockPrefix;
/// let mutex = LockPrefix::new_curator("/locks/ledger", "lock-").unwrap();
/// # let _ = mutex;
/// ```
#[derive(Debug)]
pub struct LockPrefix<'a> {
    inner: LockPrefixInner<'a>,
}

impl<'a> LockPrefix<'a> {
    /// Apache Curator's names: `{dir}/_c_{uuid}-{name}{sequence}` (`latch-` for its
    /// `LeaderLatch`, `lock-` for `LeaderSelector` and `InterProcessMutex`). The uuid tells a
    /// contender its own node after `ConnectionLoss`.
    ///
    /// ```
    /// let latch = avout_zookeeper_client::LockPrefix::new_curator("/election", "latch-").unwrap();
    /// # let _ = latch;
    /// ```
    pub fn new_curator(dir: &'a str, name: &'a str) -> Result<Self> {
        validate(dir, false)?;
        if name.contains('/') {
            return Err(Error::BadArguments(&"lock name must not contain /"));
        }
        Ok(Self {
            inner: LockPrefixInner::Curator { dir, name },
        })
    }

    /// One prefix for every contender: `{prefix}{sequence}`. Contenders MUST NOT share a
    /// session: after `ConnectionLoss` a node is found by its owner.
    ///
    /// ```
    /// let shared = avout_zookeeper_client::LockPrefix::new_shared("/election/n-").unwrap();
    /// # let _ = shared;
    /// ```
    pub fn new_shared(prefix: &'a str) -> Result<Self> {
        validate(prefix, true)?;
        Ok(Self {
            inner: LockPrefixInner::Shared { prefix },
        })
    }

    /// A prefix of the caller's own, `{prefix}{sequence}`, that contains `name`, which picks
    /// the contenders among the directory's nodes. Do not reuse a prefix within one session.
    ///
    /// ```
    /// let custom = avout_zookeeper_client::LockPrefix::new_custom("/locks/x-42-".to_string(), "x-").unwrap();
    /// # let _ = custom;
    /// ```
    pub fn new_custom(prefix: String, name: &'a str) -> Result<Self> {
        validate(&prefix, true)?;
        if !name.is_empty() {
            let (_dir, _tree, this) = split(&prefix);
            if !this.contains(name) {
                return Err(Error::BadArguments(
                    &"lock path prefix must contain lock name",
                ));
            }
        }
        Ok(Self {
            inner: LockPrefixInner::Custom { prefix, name },
        })
    }

    fn kind(&self) -> LockPrefixKind<'a> {
        match &self.inner {
            LockPrefixInner::Curator { name, .. } => LockPrefixKind::Curator { lock_name: name },
            LockPrefixInner::Shared { prefix } => {
                let (_parent, _tree, name) = split(prefix);
                LockPrefixKind::Shared { prefix: name }
            }
            LockPrefixInner::Custom { name, .. } => LockPrefixKind::Custom { lock_name: name },
        }
    }

    /// The node's prefix; a Curator GUID comes from the session's seeded stream.
    fn into_prefix(self, client: &Client) -> String {
        match self.inner {
            LockPrefixInner::Curator { dir, name } => {
                let bytes = client.sim().client().new_guid().to_be_bytes();
                let uuid = uuid::Builder::from_random_bytes(bytes).into_uuid();
                format!("{dir}/_c_{uuid}-{name}")
            }
            LockPrefixInner::Shared { prefix } => prefix.to_string(),
            LockPrefixInner::Custom { prefix, .. } => prefix,
        }
    }
}

/// Deletes a lock node whose create may have gone through, unless forgotten.
struct LockingGuard<'a> {
    zk: &'a Client,
    prefix: &'a str,
    unique: bool,
}

impl Drop for LockingGuard<'_> {
    fn drop(&mut self) {
        self.zk
            .clone()
            .delete_ephemeral_background(self.prefix.to_string(), self.unique);
    }
}

impl Client {
    fn delete_background(self, path: String) {
        tokio::spawn(async move {
            self.delete_foreground(&path).await;
        });
    }

    async fn delete_foreground(&self, path: &str) {
        drop(retry_on_connection_loss(|| self.delete(path, None)).await);
    }

    fn delete_ephemeral_background(self, prefix: String, unique: bool) {
        tokio::spawn(async move {
            let (parent, tree, name) = split(&prefix);
            let mut children = retry_on_connection_loss(|| self.list_children(parent)).await?;
            if unique {
                if let Some(i) = children.iter().position(|s| s.starts_with(name)) {
                    self.delete_foreground(&children[i]).await;
                };
                return Ok::<(), Error>(());
            }
            children.retain(|s| s.starts_with(name));
            if let Some(mine) = self.own_child(tree, children).await? {
                self.delete_foreground(&mine).await;
            }
            Ok(())
        });
    }

    /// The first of the `children` of `tree` that this session owns (an ephemeral node), as
    /// one multi read finds it, or `None`; its whole path.
    async fn own_child(&self, tree: &str, mut children: Vec<String>) -> Result<Option<String>> {
        if children.is_empty() {
            return Ok(None);
        }
        for child in children.iter_mut() {
            child.insert_str(0, tree);
        }
        let results = retry_on_connection_loss(|| {
            let mut reader = self.new_multi_reader();
            for child in children.iter() {
                reader.add_get_data(child).expect("a child path is valid");
            }
            reader.commit()
        })
        .await?;
        for (i, result) in results.into_iter().enumerate() {
            let MultiReadResult::Data { stat, .. } = result else {
                // It could be Error::NoNode.
                continue;
            };
            if stat.ephemeral_owner == self.session_id().0 {
                return Ok(Some(std::mem::take(&mut children[i])));
            }
        }
        Ok(None)
    }

    async fn create_lock(
        &self,
        prefix: LockPrefix<'_>,
        data: &[u8],
        options: LockOptions<'_>,
    ) -> Result<(String, usize)> {
        let kind = prefix.kind();
        let prefix = prefix.into_prefix(self);
        self.server_path(&prefix, true)?;
        let (parent, _, _) = split(&prefix);
        let guard = LockingGuard {
            zk: self,
            prefix: &prefix,
            unique: kind.is_unique(),
        };
        loop {
            let mut result = self
                .create(
                    &prefix,
                    data,
                    &CreateMode::EphemeralSequential.with_acls(options.acls),
                )
                .await;
            if result == Err(Error::NoNode) {
                if let Some(options) = &options.parent {
                    match retry_on_connection_loss(|| self.mkdir_internally(parent, options)).await
                    {
                        Ok(_) => continue,
                        Err(Error::NoNode) => result = Err(Error::NoNode),
                        Err(err) => return Err(err),
                    }
                }
            }
            let sequence = match result {
                Err(Error::ConnectionLoss) => {
                    if let Some(sequence) = self.find_lock(&prefix, kind).await? {
                        sequence
                    } else {
                        continue;
                    }
                }
                Err(err) => {
                    if has_no_data_change(&err) {
                        std::mem::forget(guard);
                    }
                    return Err(err);
                }
                Ok((_stat, sequence)) => sequence,
            };
            std::mem::forget(guard);
            let prefix_len = prefix.len();
            let mut path = prefix;
            write!(&mut path, "{sequence}").expect("writing to a String");
            let sequence_len = path.len() - prefix_len;
            return Ok((path, sequence_len));
        }
    }

    async fn find_lock(
        &self,
        prefix: &str,
        kind: LockPrefixKind<'_>,
    ) -> Result<Option<CreateSequence>> {
        let (parent, tree, name) = split(prefix);
        let mut children = retry_on_connection_loss(|| self.list_children(parent)).await?;
        if kind.is_unique() {
            let Some(i) = children.iter().position(|s| s.starts_with(name)) else {
                return Ok(None);
            };
            return parse_sequence(&children[i], name).map(Some);
        }
        children.retain(|s| s.starts_with(name));
        match self.own_child(tree, children).await? {
            // As the real crate does: the child is a whole path here, `name` the prefix's
            // last step.
            Some(mine) => parse_sequence(&mine, name).map(Some),
            None => Ok(None),
        }
    }

    async fn wait_lock(
        &self,
        lock: &str,
        kind: LockPrefixKind<'_>,
        sequence_len: usize,
    ) -> Result<()> {
        let (parent, tree, this) = split(lock);
        let sequence_of = |s: &str| s.len() - sequence_len;
        loop {
            let mut children = retry_on_connection_loss(|| self.list_children(parent)).await?;
            children.retain(|s| {
                s.len() >= sequence_len
                    && kind.filter(s)
                    && s[sequence_of(s)..].parse::<i32>().is_ok()
            });
            children.sort_unstable_by(|a, b| a[sequence_of(a)..].cmp(&b[sequence_of(b)..]));
            match children.binary_search_by(|a| a[sequence_of(a)..].cmp(&this[sequence_of(this)..]))
            {
                Ok(0) => return Ok(()),
                Ok(i) => {
                    let mut child = children.swap_remove(i - 1);
                    child.insert_str(0, tree);
                    let watcher =
                        match retry_on_connection_loss(|| self.get_and_watch_data(&child)).await {
                            Err(Error::NoNode) => continue,
                            Err(err) => return Err(err),
                            Ok((_data, _stat, watcher)) => watcher,
                        };
                    watcher.changed().await;
                }
                Err(_) => return Err(Error::RuntimeInconsistent),
            }
        }
    }

    /// Contends for the lock (or leadership, or a latch) named by `prefix`, and returns once
    /// this client holds it: its node is the first contender of the directory.
    ///
    /// Errors: `RuntimeInconsistent` if the lock node vanished while waiting; `SessionExpired`
    /// before the lock was taken; `NoNode` for missing ancestors and no
    /// [ancestor options](LockOptions::with_ancestor_options); `NoChildrenForEphemerals`;
    /// `InvalidAcl`.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future leaves no lock node behind: it is deleted in the background. A
    /// timed lock is a `select!` with a sleep.
    ///
    /// # Connection loss
    ///
    /// A create that lost its connection is looked for: by its GUID for
    /// [`LockPrefix::new_curator`], by its owner otherwise. Every other step is retried.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, LockPrefix};
    /// let lock = client.lock(LockPrefix::new_curator("/locks/ledger", "lock-")?, b"", Acls::anyone_all()).await?;
    /// lock.set_data("/ledger", b"written while holding", None).await?;
    /// drop(lock); // releases it in the background
    /// # Ok(())
    /// # }
    /// ```
    pub async fn lock(
        &self,
        prefix: LockPrefix<'_>,
        data: &[u8],
        options: impl Into<LockOptions<'_>>,
    ) -> Result<LockClient<'_>> {
        let options = options.into();
        if options.acls.is_empty() {
            return Err(Error::InvalidAcl);
        }
        let prefix_kind = prefix.kind();
        let (lock, sequence_len) = self.create_lock(prefix, data, options).await?;
        let client = LockClient {
            client: self,
            lock: Cow::from(lock),
        };
        match self
            .wait_lock(&client.lock, prefix_kind, sequence_len)
            .await
        {
            Err(err @ (Error::RuntimeInconsistent | Error::SessionExpired)) => {
                std::mem::forget(client);
                Err(err)
            }
            Err(err) => Err(err),
            Ok(_) => Ok(client),
        }
    }
}

fn into_create(result: MultiWriteResult) -> Result<(String, Stat)> {
    match result {
        MultiWriteResult::Create { path, stat } => Ok((path, stat)),
        other => Err(Error::UnexpectedError(format!(
            "expect MultiWriteResult::Create, got {other:?}"
        ))),
    }
}

fn into_set_data(result: MultiWriteResult) -> Result<Stat> {
    match result {
        MultiWriteResult::SetData { stat } => Ok(stat),
        other => Err(Error::UnexpectedError(format!(
            "expect MultiWriteResult::SetData, got {other:?}"
        ))),
    }
}

fn into_delete(result: MultiWriteResult) -> Result<()> {
    match result {
        MultiWriteResult::Delete => Ok(()),
        other => Err(Error::UnexpectedError(format!(
            "expect MultiWriteResult::Delete, got {other:?}"
        ))),
    }
}

/// A held lock: writes that go through only while its node stands, and the node deleted in
/// the background when it is dropped.
///
/// ```
/// # async fn demo(lock: avout_zookeeper_client::LockClient<'_>) -> Result<(), avout_zookeeper_client::Error> {
/// use avout_zookeeper_client::Error;
/// match lock.set_data("/ledger", b"x", None).await {
///     Err(Error::RuntimeInconsistent) => println!("lost the lock {}", lock.lock_path()),
///     other => { other?; }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct LockClient<'a> {
    client: &'a Client,
    lock: Cow<'a, str>,
}

impl<'a> LockClient<'a> {
    async fn resolve_one_write(
        future: impl Future<Output = std::result::Result<Vec<MultiWriteResult>, CheckWriteError>>,
    ) -> Result<MultiWriteResult> {
        let mut results = future.await?;
        Ok(results.remove(0))
    }

    /// The client the lock was taken with.
    ///
    /// ```
    /// # fn demo(lock: &avout_zookeeper_client::LockClient<'_>) {
    /// println!("{}", lock.client().session_id());
    /// # }
    /// ```
    pub fn client(&self) -> &'a Client {
        self.client
    }

    /// The lock node's path (watch it to learn that it was deleted under the holder,
    /// ZOOKEEPER-91).
    ///
    /// ```
    /// # fn demo(lock: &avout_zookeeper_client::LockClient<'_>) {
    /// println!("holding {}", lock.lock_path());
    /// # }
    /// ```
    pub fn lock_path(&self) -> &str {
        &self.lock
    }

    /// [`Client::create`], refused with `RuntimeInconsistent` if the lock is lost.
    ///
    /// ```
    /// # async fn demo(lock: &avout_zookeeper_client::LockClient<'_>) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// lock.create("/ledger/entry-", b"", &CreateMode::PersistentSequential.with_acls(Acls::anyone_all())).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'a {
        let created = self.create_internally(path, data, options);
        async move { created?.await }
    }

    fn create_internally(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'a> {
        let mut writer = self.client.new_check_writer(&self.lock, None)?;
        writer.add_create(path, data, options)?;
        let write = writer.commit();
        let path_len = path.len();
        Ok(async move {
            let result = Self::resolve_one_write(write).await?;
            let (created_path, stat) = into_create(result)?;
            let sequence = if created_path.len() <= path_len {
                CreateSequence(-1)
            } else {
                parse_sequence(&created_path, &created_path[..path_len])?
            };
            Ok((stat, sequence))
        })
    }

    /// [`Client::set_data`], refused with `RuntimeInconsistent` if the lock is lost.
    ///
    /// ```
    /// # async fn demo(lock: &avout_zookeeper_client::LockClient<'_>) -> Result<(), avout_zookeeper_client::Error> {
    /// lock.set_data("/ledger", b"x", None).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'a {
        let write = self.check_writer().and_then(|mut writer| {
            writer.add_set_data(path, data, expected_version)?;
            Ok(writer.commit())
        });
        async move { into_set_data(Self::resolve_one_write(write?).await?) }
    }

    /// [`Client::delete`], refused with `RuntimeInconsistent` if the lock is lost.
    ///
    /// ```
    /// # async fn demo(lock: &avout_zookeeper_client::LockClient<'_>) -> Result<(), avout_zookeeper_client::Error> {
    /// lock.delete("/ledger/old", None).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'a {
        let write = self.check_writer().and_then(|mut writer| {
            writer.add_delete(path, expected_version)?;
            Ok(writer.commit())
        });
        async move { into_delete(Self::resolve_one_write(write?).await?) }
    }

    fn check_writer(&self) -> Result<CheckWriter<'a>> {
        self.client.new_check_writer(&self.lock, None)
    }

    /// A [`CheckWriter`] that checks the lock node.
    ///
    /// ```
    /// # async fn demo(lock: &avout_zookeeper_client::LockClient<'_>) -> Result<(), avout_zookeeper_client::Error> {
    /// let mut writer = lock.new_check_writer();
    /// writer.add_set_data("/a", b"1", None)?;
    /// writer.add_set_data("/b", b"1", None)?;
    /// writer.commit().await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new_check_writer(&self) -> CheckWriter<'a> {
        self.check_writer().expect("the lock path is valid")
    }

    /// The lock, owning its client (a clone).
    ///
    /// ```
    /// # fn demo(lock: avout_zookeeper_client::LockClient<'_>) {
    /// let owned = lock.into_owned();
    /// # let _ = owned;
    /// # }
    /// ```
    pub fn into_owned(self) -> OwnedLockClient {
        let client = self.client.clone();
        let mut drop = ManuallyDrop::new(self);
        let lock = std::mem::take(drop.lock.to_mut());
        OwnedLockClient {
            client: ManuallyDrop::new(client),
            lock,
        }
    }
}

/// Deletes the lock node in the background.
impl Drop for LockClient<'_> {
    fn drop(&mut self) {
        let path = std::mem::take(self.lock.to_mut());
        self.client.clone().delete_background(path);
    }
}

/// A [`LockClient`] that owns its client.
///
/// ```
/// # async fn demo(lock: avout_zookeeper_client::OwnedLockClient) -> Result<(), avout_zookeeper_client::Error> {
/// lock.set_data("/ledger", b"x", None).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct OwnedLockClient {
    client: ManuallyDrop<Client>,
    lock: String,
}

impl OwnedLockClient {
    fn lock_client(&self) -> ManuallyDrop<LockClient<'_>> {
        ManuallyDrop::new(LockClient {
            client: &self.client,
            lock: Cow::from(&self.lock),
        })
    }

    /// The client the lock was taken with.
    ///
    /// ```
    /// # fn demo(lock: &avout_zookeeper_client::OwnedLockClient) {
    /// println!("{}", lock.client().session_id());
    /// # }
    /// ```
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// See [`LockClient::lock_path`].
    ///
    /// ```
    /// # fn demo(lock: &avout_zookeeper_client::OwnedLockClient) {
    /// println!("{}", lock.lock_path());
    /// # }
    /// ```
    pub fn lock_path(&self) -> &str {
        &self.lock
    }

    /// See [`LockClient::create`].
    ///
    /// ```
    /// # async fn demo(lock: &avout_zookeeper_client::OwnedLockClient) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// lock.create("/ledger/e", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn create<'a: 'f, 'b: 'f, 'f>(
        &'a self,
        path: &'b str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'f {
        self.lock_client().create(path, data, options)
    }

    /// See [`LockClient::set_data`].
    ///
    /// ```
    /// # async fn demo(lock: &avout_zookeeper_client::OwnedLockClient) -> Result<(), avout_zookeeper_client::Error> {
    /// lock.set_data("/ledger", b"x", None).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ {
        self.lock_client().set_data(path, data, expected_version)
    }

    /// See [`LockClient::delete`].
    ///
    /// ```
    /// # async fn demo(lock: &avout_zookeeper_client::OwnedLockClient) -> Result<(), avout_zookeeper_client::Error> {
    /// lock.delete("/ledger/e", None).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + '_ {
        self.lock_client().delete(path, expected_version)
    }

    /// See [`LockClient::new_check_writer`].
    ///
    /// ```
    /// # fn demo(lock: &avout_zookeeper_client::OwnedLockClient) {
    /// let writer = lock.new_check_writer();
    /// # let _ = writer;
    /// # }
    /// ```
    pub fn new_check_writer(&self) -> CheckWriter<'_> {
        self.lock_client().new_check_writer()
    }
}

/// Deletes the lock node in the background.
impl Drop for OwnedLockClient {
    fn drop(&mut self) {
        // SAFETY: the client is taken once, here, and never used after.
        let client = unsafe { ManuallyDrop::take(&mut self.client) };
        let path = std::mem::take(&mut self.lock);
        client.delete_background(path);
    }
}
