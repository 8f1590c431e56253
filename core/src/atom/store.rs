//! Where an atom's value bytes live: Avout's `AtomState`/StateContainer, as the
//! [`StateContainer`] trait.
//!
//! The compare-and-set is always the ZooKeeper node's version check, so every container gets
//! the same linearizable CAS, the same recovery after a connection loss and the same change
//! notifications. What a container decides is where the bytes are:
//!
//! - [`ZkNode`] (the default) keeps them in the node itself, up to ZooKeeper's 1 MiB limit.
//! - [`FileStore`] keeps large values as immutable files in a directory (a shared filesystem
//!   such as NFS or EFS for several hosts, a local disk for several processes on one host), and
//!   the node holds only the file's key. Each write puts a new file under a key no other write
//!   uses; the CAS on the node then publishes it, and the writer removes the file it replaced.
//!   A reader that finds a file gone re-reads the node: the value changed.
//!
//! Any store with immutable put/get/delete (an object store, a database table) fits the same
//! trait: immutability is what makes a pointer swap in ZooKeeper a safe CAS for the value.

use std::path::{Path, PathBuf};

use futures::FutureExt;
use futures::future::BoxFuture;

use super::envelope::Envelope;

/// A failure of a [`StateContainer`].
///
/// ```
/// let e = avout::atom::StoreError::Io("disk full".into());
/// assert_eq!(e.to_string(), "value store: disk full");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store could not be read or written.
    #[error("value store: {0}")]
    Io(String),
    /// The node refers to a value this container cannot hold (for example a blob key in a
    /// [`ZkNode`] atom: another program uses a different container on the same node).
    #[error("value store: the node refers to {0:?}, which this container does not hold")]
    Foreign(String),
}

/// Where an atom keeps its value bytes; see the [module docs](self).
///
/// # Contract
///
/// - [`put`](Self::put) MUST store the bytes durably under a key that no other write uses
///   (build it from `write_id`, which is unique per write), and never overwrite a key.
/// - [`get`](Self::get) MUST return `Ok(None)` for a key that was removed (the reader then
///   re-reads the node), and the bytes put under the key otherwise.
/// - [`remove`](Self::remove) is called for a key no committed version refers to any more
///   (replaced, or written by a losing attempt); removing a missing key is not an error.
///
/// ```
/// use avout::atom::{StateContainer, ZkNode};
/// let store = ZkNode;
/// assert!(store.inline(100));
/// assert!(store.max_value_len() < avout::MAX_DATA_LEN);
/// ```
pub trait StateContainer: Send + Sync + 'static {
    /// The largest encoded value accepted; larger values fail before anything is written.
    ///
    /// ```
    /// use avout::atom::{StateContainer, ZkNode};
    /// assert!(ZkNode.max_value_len() > 1_000_000);
    /// ```
    fn max_value_len(&self) -> usize;

    /// Whether a value of `len` bytes is kept inline in the node.
    ///
    /// ```
    /// use avout::atom::{FileStore, StateContainer};
    /// let store = FileStore::new(std::env::temp_dir().join("avout-doc-inline")).unwrap();
    /// assert!(store.inline(10) && !store.inline(1 << 20));
    /// ```
    fn inline(&self, len: usize) -> bool;

    /// Stores `value` for the atom at `atom` (a ZooKeeper path); returns its key.
    ///
    /// ```
    /// use avout::atom::{FileStore, StateContainer};
    /// let store = FileStore::new(std::env::temp_dir().join("avout-doc-put")).unwrap();
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// # rt.block_on(async {
    /// let key = store.put("/a", 42, b"value").await.unwrap();
    /// assert_eq!(store.get("/a", &key).await.unwrap().as_deref(), Some(&b"value"[..]));
    /// store.remove("/a", &key).await.unwrap();
    /// assert_eq!(store.get("/a", &key).await.unwrap(), None);
    /// # });
    /// ```
    fn put<'a>(
        &'a self,
        atom: &'a str,
        write_id: u64,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<String, StoreError>>;

    /// The bytes under `key`, or `None` if they were removed.
    ///
    /// ```
    /// use avout::atom::{StateContainer, ZkNode};
    /// // A node that refers to a blob is foreign to the inline-only container.
    /// assert!(futures::executor::block_on(ZkNode.get("/a", "k")).is_err());
    /// ```
    fn get<'a>(
        &'a self,
        atom: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>>;

    /// Removes the bytes under `key`.
    ///
    /// ```
    /// use avout::atom::{StateContainer, ZkNode};
    /// assert!(futures::executor::block_on(ZkNode.remove("/a", "k")).is_ok());
    /// ```
    fn remove<'a>(&'a self, atom: &'a str, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// Values inline in the ZooKeeper node: the default container. Values up to ZooKeeper's
/// limit less the atom's header ([`MAX_DATA_LEN`](crate::MAX_DATA_LEN) minus 521 bytes).
///
/// ```
/// use avout::atom::{StateContainer, ZkNode};
/// assert!(ZkNode.inline(usize::MAX));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ZkNode;

impl StateContainer for ZkNode {
    fn max_value_len(&self) -> usize {
        crate::MAX_DATA_LEN - Envelope::overhead()
    }

    fn inline(&self, _len: usize) -> bool {
        true
    }

    fn put<'a>(
        &'a self,
        _atom: &'a str,
        _write_id: u64,
        _value: &'a [u8],
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        unreachable!("ZkNode keeps every value inline")
    }

    fn get<'a>(
        &'a self,
        _atom: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let key = key.to_owned();
        async move { Err(StoreError::Foreign(key)) }.boxed()
    }

    fn remove<'a>(
        &'a self,
        _atom: &'a str,
        _key: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        async { Ok(()) }.boxed()
    }
}

/// Large values as immutable files in a directory, ZooKeeper holding the key; see the
/// [module docs](self).
///
/// Files go under `dir/<atom path with / as %2F>/<write id>.v`, written to a temporary name,
/// synced and renamed into place, so a reader never sees a partial file. Values of at most
/// [`inline_below`](Self::inline_below) bytes (default 4 KiB) stay in the node, where a read
/// costs no file access. Every process using the atom MUST see the same directory.
///
/// On a crash between a file's put and the node's update, the file stays behind unreferenced
/// (the node never pointed at it); so does the file of a write whose outcome could not be
/// determined. Both are garbage a sweep may remove by age.
///
/// ```no_run
/// use avout::atom::{Atom, FileStore};
/// # async fn demo(client: &avout::Client) -> Result<(), avout::atom::AtomError> {
/// let store = FileStore::new("/mnt/shared/avout-values").expect("value directory");
/// let big: Atom<Vec<u8>> = Atom::builder(client, "/atoms/model")
///     .store(store)
///     .open(vec![0; 8 << 20])
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileStore {
    dir: PathBuf,
    inline_below: usize,
    max_value_len: usize,
}

impl FileStore {
    /// A store in `dir`, created if missing.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("avout-doc-filestore");
    /// let store = avout::atom::FileStore::new(&dir).unwrap();
    /// assert_eq!(store.dir(), dir);
    /// ```
    pub fn new(dir: impl Into<PathBuf>) -> Result<FileStore, StoreError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        Ok(FileStore {
            dir,
            inline_below: 4096,
            max_value_len: 1 << 30,
        })
    }

    /// Keeps values of at most `len` bytes in the node (0: every value in a file).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("avout-doc-filestore");
    /// let store = avout::atom::FileStore::new(&dir).unwrap().inline_below(0);
    /// use avout::atom::StateContainer;
    /// assert!(!store.inline(1));
    /// ```
    pub fn inline_below(mut self, len: usize) -> Self {
        self.inline_below = len.min(ZkNode.max_value_len());
        self
    }

    /// Refuses values over `len` bytes (default 1 GiB).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join("avout-doc-filestore");
    /// let store = avout::atom::FileStore::new(&dir).unwrap().max_len(1 << 20);
    /// use avout::atom::StateContainer;
    /// assert_eq!(store.max_value_len(), 1 << 20);
    /// ```
    pub fn max_len(mut self, len: usize) -> Self {
        self.max_value_len = len;
        self
    }

    /// The directory.
    ///
    /// ```
    /// let store = avout::atom::FileStore::new(std::env::temp_dir().join("avout-doc-fs")).unwrap();
    /// assert!(store.dir().is_dir());
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn atom_dir(&self, atom: &str) -> PathBuf {
        self.dir.join(atom.replace('%', "%25").replace('/', "%2F"))
    }

    fn file(&self, atom: &str, key: &str) -> Result<PathBuf, StoreError> {
        // Keys come from node data another program may have written: never a path.
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.') {
            return Err(StoreError::Foreign(key.to_owned()));
        }
        Ok(self.atom_dir(atom).join(key))
    }
}

fn io_error(path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Io(format!("{}: {e}", path.display()))
}

/// Runs blocking file I/O off the async threads.
// madsim deprecates blocking tasks: a file store has no place in a simulation.
#[cfg_attr(madsim, allow(deprecated))]
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Io(format!("file task failed: {e}")))?
}

impl StateContainer for FileStore {
    fn max_value_len(&self) -> usize {
        self.max_value_len
    }

    fn inline(&self, len: usize) -> bool {
        len <= self.inline_below
    }

    fn put<'a>(
        &'a self,
        atom: &'a str,
        write_id: u64,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        let key = format!("{write_id:016x}.v");
        let dir = self.atom_dir(atom);
        let value = value.to_vec();
        async move {
            blocking(move || {
                use std::io::Write as _;
                std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
                let tmp = dir.join(format!("{key}.tmp"));
                let dest = dir.join(&key);
                let mut file = std::fs::File::create(&tmp).map_err(|e| io_error(&tmp, e))?;
                file.write_all(&value).map_err(|e| io_error(&tmp, e))?;
                // Durable before the node may point at it.
                file.sync_all().map_err(|e| io_error(&tmp, e))?;
                std::fs::rename(&tmp, &dest).map_err(|e| io_error(&dest, e))?;
                if let Ok(d) = std::fs::File::open(&dir) {
                    // Best effort: persists the rename on filesystems that need it.
                    let _ = d.sync_all();
                }
                Ok(key)
            })
            .await
        }
        .boxed()
    }

    fn get<'a>(
        &'a self,
        atom: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        let file = self.file(atom, key);
        async move {
            let file = file?;
            blocking(move || match std::fs::read(&file) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io_error(&file, e)),
            })
            .await
        }
        .boxed()
    }

    fn remove<'a>(&'a self, atom: &'a str, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let file = self.file(atom, key);
        async move {
            let file = file?;
            blocking(move || match std::fs::remove_file(&file) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(io_error(&file, e)),
            })
            .await
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::{FileStore, StateContainer, StoreError};

    /// A key comes from node data that another program may have written: one that names a
    /// path, or none at all, is refused before any file is read or removed.
    #[test]
    fn a_key_that_is_a_path_is_refused_and_touches_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::new(tmp.path().join("values")).unwrap();
        let outside = tmp.path().join("secret");
        std::fs::write(&outside, b"kept").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            // A well-formed key works, so the refusals below are the keys' own.
            let key = store.put("/a", 7, b"value").await.unwrap();
            assert_eq!(
                store.get("/a", &key).await.unwrap().as_deref(),
                Some(&b"value"[..])
            );
            for bad in ["../../secret", "../secret", "a/b", "", "x\\y"] {
                match store.get("/a", bad).await {
                    Err(StoreError::Foreign(k)) => assert_eq!(k, bad),
                    other => panic!("get {bad:?}: expected Foreign, got {other:?}"),
                }
                match store.remove("/a", bad).await {
                    Err(StoreError::Foreign(k)) => assert_eq!(k, bad),
                    other => panic!("remove {bad:?}: expected Foreign, got {other:?}"),
                }
            }
        });
        assert_eq!(std::fs::read(&outside).unwrap(), b"kept");
    }
}
