//! [`AtomBuilder`]: an atom handle's configuration (codec, value store, validator,
//! promotion), and opening the handle.

use super::*;

/// Configures an [`Atom`]: codec, value store, validator, promotion.
///
/// ```no_run
/// use avout::atom::Atom;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
/// let a: Atom<String> = Atom::builder(client, "/greeting").open("hello".to_string()).await?;
/// # Ok(()) }
/// ```
pub struct AtomBuilder<T, K = Json> {
    pub(super) client: Client,
    pub(super) path: String,
    pub(super) codec: K,
    pub(super) store: Arc<dyn StateContainer>,
    pub(super) validator: Option<Validator<T>>,
    pub(super) promote_after: Option<u32>,
    pub(super) lock_path: Option<String>,
    pub(super) planted: Bugs,
    pub(super) _value: PhantomData<fn() -> T>,
}

impl<T, K> AtomBuilder<T, K>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    K: Codec,
{
    /// Encodes values with `codec` instead.
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// use avout::atom::{Atom, Postcard};
    /// let a: Atom<u64, Postcard> = Atom::builder(client, "/n").codec(Postcard).open(0).await?;
    /// # Ok(()) }
    /// ```
    pub fn codec<K2: Codec>(self, codec: K2) -> AtomBuilder<T, K2> {
        AtomBuilder {
            client: self.client,
            path: self.path,
            codec,
            store: self.store,
            validator: self.validator,
            promote_after: self.promote_after,
            lock_path: self.lock_path,
            planted: self.planted,
            _value: PhantomData,
        }
    }

    /// Keeps value bytes in `store` (default [`ZkNode`]).
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// use avout::atom::{Atom, FileStore};
    /// let store = FileStore::new("/var/lib/app/values").expect("value directory");
    /// let a: Atom<Vec<u64>> = Atom::builder(client, "/big").store(store).open(vec![]).await?;
    /// # Ok(()) }
    /// ```
    pub fn store(mut self, store: impl StateContainer) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Rejects values for which `valid` returns `false` (Clojure's `:validator`).
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// use avout::atom::Atom;
    /// let a: Atom<i64> = Atom::builder(client, "/balance").validator(|b: &i64| *b >= 0).open(0).await?;
    /// assert!(a.swap(|b| b - 1).await.is_err());
    /// # Ok(()) }
    /// ```
    pub fn validator(mut self, valid: impl Fn(&T) -> bool + Send + Sync + 'static) -> Self {
        self.validator = Some(Arc::new(valid));
        self
    }

    /// After `failures` lost tries in a row, an update takes the atom's promotion lock before
    /// trying again; see the module docs.
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// let a: avout::atom::Atom<u64> = avout::atom::Atom::builder(client, "/hot").promote_after(3).open(0).await?;
    /// # Ok(()) }
    /// ```
    pub fn promote_after(mut self, failures: u32) -> Self {
        self.promote_after = Some(failures);
        self
    }

    /// The promotion lock's path (default `<path>/_lock`).
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// let a: avout::atom::Atom<u64> = avout::atom::Atom::builder(client, "/hot")
    ///     .promote_after(3)
    ///     .lock_path("/locks/hot")
    ///     .open(0)
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn lock_path(mut self, path: impl Into<String>) -> Self {
        self.lock_path = Some(path.into());
        self
    }

    /// Plants `bugs` in the atom's machines and its promotion lock (none by default; see
    /// [`crate::planted`]).
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// use avout::planted::Bugs;
    /// let a: avout::atom::Atom<u64> = avout::atom::Atom::builder(client, "/n").planted(Bugs::NONE).open(0).await?;
    /// # Ok(()) }
    /// ```
    pub fn planted(mut self, bugs: Bugs) -> Self {
        self.planted = bugs;
        self
    }

    /// A handle on an existing atom; nothing is sent. Operations fail with
    /// [`AtomError::Missing`] while the node does not exist.
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// let a: avout::atom::Atom<u64> = avout::atom::Atom::builder(client, "/n").connect()?;
    /// let n = a.deref().await?;
    /// # Ok(()) }
    /// ```
    pub fn connect(self) -> Result<Atom<T, K>, AtomError> {
        path::validate_path(&self.path, false)?;
        let mutex = match self.promote_after {
            Some(_) => {
                let lock_path = self
                    .lock_path
                    .unwrap_or_else(|| path::join(&self.path, "_lock"));
                Some(
                    Mutex::new(&self.client, lock_path)
                        .map_err(AtomError::Lock)?
                        .planted(self.planted),
                )
            }
            None => None,
        };
        let writer = self.client.new_guid() as u64;
        Ok(Atom {
            inner: Arc::new(Inner {
                writer,
                writing: tokio::sync::Mutex::new(()),
                core: Arc::new(Core {
                    client: self.client,
                    path: self.path,
                    codec: self.codec,
                    store: self.store,
                    planted: self.planted,
                }),
                known: Cache::new(),
                validator: StdMutex::new(self.validator),
                promote_after: self.promote_after,
                mutex,
                counters: Counters::default(),
                watches: Default::default(),
            }),
        })
    }

    /// A handle on the atom, creating the node (and its parents) with `initial` if it does
    /// not exist; an existing node keeps its value. `initial` must pass the validator.
    ///
    /// ```no_run
    /// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
    /// let a: avout::atom::Atom<Vec<String>> = avout::atom::Atom::builder(client, "/app/queue").open(vec![]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn open(self, initial: T) -> Result<Atom<T, K>, AtomError> {
        let atom = self.connect()?;
        atom.check(&initial)?;
        if let Some(parent) = path::parent(&atom.inner.core.path)
            && parent != "/"
        {
            atom.inner.core.session().await?.ensure_path(parent).await?;
        }
        atom.update_opt(
            |current| match current {
                None => Update::Write(initial.clone(), ()),
                Some(_) => Update::Keep(()),
            },
            true,
        )
        .await?;
        Ok(atom)
    }
}
