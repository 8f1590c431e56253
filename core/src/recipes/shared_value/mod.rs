//! A value every process sees and sets (Curator's `SharedValue` and `SharedCount`): one node's
//! data, followed by a [node cache](crate::recipes::cache) so that reads are local and
//! listeners hear each change, set unconditionally or only if the version one read is still
//! current.
//!
//! [`SharedValue`] holds bytes; [`SharedCount`] an `i64` (8 bytes, big-endian).
//!
//! # Sessions
//!
//! - **Connection loss**: reads stay local (the last value seen); a set that fails with
//!   [`Error::ConnectionLoss`] may have been applied (a `try_set` retried blindly could apply
//!   twice: read again and decide). The cache re-reads on reconnection, so a change made
//!   meanwhile is still heard, once.
//! - **Session expiry**: on a managed [`Client`] the cache follows on the next session and
//!   sets run there; nothing is lost but changes made between two values (a listener hears the
//!   latest, not every intermediate one). On [`Client::single`], the cache stops:
//!   [`SharedValue::error`] says why and later sets fail with the session's error.
//! - **Cancellation**: [`SharedValue::close`] (or dropping) stops the cache; the node stays.
//!
//! ```
//! # async fn demo(client: &avout::Client) -> avout::Result<()> {
//! use avout::recipes::shared_value::SharedCount;
//!
//! let count = SharedCount::start(client, "/jobs/seen", 0).await?;
//! loop {
//!     let now = count.get().expect("the node stands");
//!     if count.try_set(&now, now.value + 1).await? {
//!         break;
//!     }
//! }
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use crate::recipes::cache::{Cache, CacheEvent, CacheScope};
use crate::{Client, Coordination, CoordinationExt, CreateOptions, Error, Result};

/// A value as read, with the node version it was read at (for [`SharedValue::try_set`]).
///
/// ```
/// let v = avout::recipes::shared_value::Versioned { version: 3, value: 7i64 };
/// assert_eq!(v.map(|n| n * 2).value, 14);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned<T> {
    /// The node's data version.
    pub version: i32,
    /// The value.
    pub value: T,
}

impl<T> Versioned<T> {
    /// The same version with the value mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Versioned<U> {
        Versioned {
            version: self.version,
            value: f(self.value),
        }
    }
}

/// A shared byte value; see the [module docs](self).
pub struct SharedValue {
    client: Client,
    path: String,
    cache: Cache,
    /// Whether the cache's initial load was taken from its events (its value is [`get`]'s,
    /// not a change).
    ///
    /// [`get`]: SharedValue::get
    loaded: bool,
}

impl fmt::Debug for SharedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedValue")
            .field("path", &self.path)
            .field("value", &self.get())
            .finish()
    }
}

impl SharedValue {
    /// Opens the value at `path`, creating the node (and its parents) with `seed` if it is
    /// missing, and returns once its current value is known.
    ///
    /// Errors: the creation's or the cache's (a lost session with no next one, `NoAuth`, …).
    pub async fn start(client: &Client, path: &str, seed: &[u8]) -> Result<SharedValue> {
        crate::path::validate_path(path, false)?;
        if let Some(parent) = crate::path::parent(path) {
            client.ensure_path(parent).await?;
        }
        match client.create(path, seed, &CreateOptions::default()).await {
            Ok(_) | Err(Error::NodeExists { .. }) => {}
            Err(e) => return Err(e),
        }
        let cache = Cache::start(Arc::new(client.clone()), path, CacheScope::Node).await?;
        Ok(SharedValue {
            client: client.clone(),
            path: path.to_owned(),
            cache,
            loaded: false,
        })
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The value as last seen (`None` while the node is deleted).
    pub fn get(&self) -> Option<Versioned<Vec<u8>>> {
        self.cache.get(&self.path).map(|e| Versioned {
            version: e.stat.version,
            value: e.data,
        })
    }

    /// Sets the value whatever it is (creating the node if it was deleted); returns it with
    /// its new version.
    ///
    /// Errors: indeterminate ones (it may have been applied) and a lost session.
    pub async fn set(&self, value: &[u8]) -> Result<Versioned<Vec<u8>>> {
        loop {
            match self.client.set_data(&self.path, value, None).await {
                Ok(stat) => {
                    return Ok(Versioned {
                        version: stat.version,
                        value: value.to_vec(),
                    });
                }
                Err(Error::NoNode { .. }) => {}
                Err(e) => return Err(e),
            }
            match self
                .client
                .create(&self.path, value, &CreateOptions::default())
                .await
            {
                Ok(_) => {
                    return Ok(Versioned {
                        version: 0,
                        value: value.to_vec(),
                    });
                }
                // Created by someone else in between: set it.
                Err(Error::NodeExists { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Sets the value only if the node is still at `seen`'s version; whether it did.
    ///
    /// Errors: indeterminate ones (it may have been applied: read again before retrying) and
    /// a lost session.
    pub async fn try_set(&self, seen: &Versioned<Vec<u8>>, value: &[u8]) -> Result<bool> {
        match self
            .client
            .set_data(&self.path, value, Some(seen.version))
            .await
        {
            Ok(_) => Ok(true),
            Err(Error::BadVersion { .. } | Error::NoNode { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The next value set after the start (each change heard once, in order; `None` when
    /// deleted); waits for it. Returns `Err` once the cache has stopped (see [`error`](Self::error)).
    pub async fn next_change(&mut self) -> Result<Option<Versioned<Vec<u8>>>> {
        loop {
            match self.cache.next_event().await {
                Some(CacheEvent::Initialized) => self.loaded = true,
                Some(_) if !self.loaded => {}
                Some(
                    CacheEvent::Created { data, stat, .. } | CacheEvent::Changed { data, stat, .. },
                ) => {
                    return Ok(Some(Versioned {
                        version: stat.version,
                        value: data,
                    }));
                }
                Some(CacheEvent::Deleted { .. }) => return Ok(None),
                None => return Err(self.cache.error().unwrap_or(Error::Closed)),
            }
        }
    }

    /// Why the value stopped following the node, if it did.
    pub fn error(&self) -> Option<Error> {
        self.cache.error()
    }

    /// Stops following the node (the node stays).
    pub async fn close(self) {
        self.cache.close().await;
    }
}

/// A shared `i64` (8 bytes, big-endian); see the [module docs](self).
#[derive(Debug)]
pub struct SharedCount {
    value: SharedValue,
}

fn decode(bytes: &[u8]) -> Result<i64> {
    <[u8; 8]>::try_from(bytes)
        .map(i64::from_be_bytes)
        .map_err(|_| Error::BadArguments(format!("not a count: {} bytes", bytes.len())))
}

impl SharedCount {
    /// Opens the count at `path`, creating it with `seed` if it is missing.
    ///
    /// Errors: as [`SharedValue::start`].
    pub async fn start(client: &Client, path: &str, seed: i64) -> Result<SharedCount> {
        let value = SharedValue::start(client, path, &seed.to_be_bytes()).await?;
        Ok(SharedCount { value })
    }

    /// The count as last seen (`None` while the node is deleted or holds something else).
    pub fn get(&self) -> Option<Versioned<i64>> {
        let v = self.value.get()?;
        let n = decode(&v.value).ok()?;
        Some(v.map(|_| n))
    }

    /// Sets the count whatever it is.
    ///
    /// Errors: as [`SharedValue::set`].
    pub async fn set(&self, n: i64) -> Result<Versioned<i64>> {
        Ok(self.value.set(&n.to_be_bytes()).await?.map(|_| n))
    }

    /// Sets the count only if it is still at `seen`'s version; whether it did.
    ///
    /// Errors: as [`SharedValue::try_set`].
    pub async fn try_set(&self, seen: &Versioned<i64>, n: i64) -> Result<bool> {
        let seen = Versioned {
            version: seen.version,
            value: seen.value.to_be_bytes().to_vec(),
        };
        self.value.try_set(&seen, &n.to_be_bytes()).await
    }

    /// The next count set (`None` when deleted). Errors: the cache stopped, or the node holds
    /// something else than a count ([`Error::BadArguments`]).
    pub async fn next_change(&mut self) -> Result<Option<Versioned<i64>>> {
        match self.value.next_change().await? {
            Some(v) => {
                let n = decode(&v.value)?;
                Ok(Some(v.map(|_| n)))
            }
            None => Ok(None),
        }
    }

    /// Why the count stopped following the node, if it did.
    pub fn error(&self) -> Option<Error> {
        self.value.error()
    }

    /// Stops following the node (the node stays).
    pub async fn close(self) {
        self.value.close().await;
    }
}
