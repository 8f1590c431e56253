//! The service's operations, on `zookeeper-client` alone: a counter written under the
//! Curator-compatible lock, and leadership taken with the same recipe under Curator's
//! `LeaderLatch` names, each leader adding one to the epoch.
//!
//! A hold's writes go through [`LockClient`](zk::LockClient), which checks in the same
//! `multi` that the lock node still stands: a holder whose session ended is refused
//! (`RuntimeInconsistent`), the lock's own fencing. Its *token* is the lock node's sequence
//! number, which grows with every contender: the order the holds were granted in.

use std::time::Duration;

use zookeeper_client as zk;

/// Where the service keeps its nodes.
pub const ROOT: &str = "/zk-counter";
/// The counter.
pub const COUNTER: &str = "/zk-counter/value";
/// The counter's lock.
pub const LOCKS: &str = "/zk-counter/lock";
/// The election.
pub const ELECTION: &str = "/zk-counter/election";
/// How many terms leaders have served: each leader adds one.
pub const EPOCH: &str = "/zk-counter/epoch";

const OPEN: &zk::CreateOptions<'static> =
    &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());

/// The sequence number at the end of a lock node's path: the hold's fencing token.
fn sequence_of(path: &str) -> i64 {
    path.get(path.len().saturating_sub(10)..)
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(-1)
}

/// One process's connection to the service.
#[derive(Clone, Debug)]
pub struct Service {
    client: zk::Client,
}

impl Service {
    /// Connects to the ensemble at `cluster` and makes the service's nodes if they are
    /// missing (idempotent, so safe to retry after `ConnectionLoss`).
    pub async fn connect(cluster: &str, session_timeout: Duration) -> Result<Service, zk::Error> {
        let client = zk::Client::connector()
            .with_session_timeout(session_timeout)
            .connect(cluster)
            .await?;
        for path in [LOCKS, ELECTION] {
            client.mkdir(path, OPEN).await?;
        }
        for path in [COUNTER, EPOCH] {
            match client.create(path, b"0", OPEN).await {
                Ok(_) | Err(zk::Error::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Service { client })
    }

    /// The session.
    pub fn client(&self) -> &zk::Client {
        &self.client
    }

    /// Whether the session is over (expired, closed or refused): a new one is needed.
    pub fn is_over(&self) -> bool {
        self.client.state().is_terminated()
    }

    /// Takes the counter's lock, waiting at most `patience` (`None` then: the wait is
    /// cancelled, which the lock allows: its node is deleted in the background).
    pub async fn lock(&self, patience: Duration) -> Result<Option<Hold<'_>>, zk::Error> {
        self.hold(LOCKS, "lock-", COUNTER, patience).await
    }

    /// Campaigns for leadership (Curator's `LeaderLatch` names), waiting at most `patience`.
    pub async fn campaign(&self, patience: Duration) -> Result<Option<Hold<'_>>, zk::Error> {
        self.hold(ELECTION, "latch-", EPOCH, patience).await
    }

    async fn hold(
        &self,
        dir: &str,
        name: &str,
        node: &'static str,
        patience: Duration,
    ) -> Result<Option<Hold<'_>>, zk::Error> {
        let prefix = zk::LockPrefix::new_curator(dir, name)?;
        let lock = self.client.lock(prefix, b"", zk::Acls::anyone_all());
        match tokio::time::timeout(patience, lock).await {
            Ok(lock) => {
                let lock = lock?;
                Ok(Some(Hold {
                    token: sequence_of(lock.lock_path()),
                    lock,
                    node,
                }))
            }
            Err(_) => Ok(None),
        }
    }
}

/// A lock (or leadership) held: writes to its node go through only while it is held.
#[derive(Debug)]
pub struct Hold<'a> {
    lock: zk::LockClient<'a>,
    token: i64,
    node: &'static str,
}

impl Hold<'_> {
    /// The hold's fencing token (for leadership, its term): the lock node's sequence number.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// Reads the node the hold guards (after a `sync`, so the read is as recent as the last
    /// write).
    pub async fn read(&self) -> Result<u64, zk::Error> {
        let client = self.lock.client();
        let sync = client.sync(self.node);
        let read = client.get_data(self.node);
        sync.await?;
        let (data, _) = read.await?;
        Ok(String::from_utf8_lossy(&data).parse().unwrap_or(0))
    }

    /// Writes `n` to the guarded node, refused once the hold is lost.
    pub async fn write(&self, n: u64) -> Result<(), zk::Error> {
        let data = n.to_string();
        self.lock
            .set_data(self.node, data.as_bytes(), None)
            .await
            .map(drop)
    }

    /// Whether the lock node still stands (an empty write fenced by it).
    pub async fn still_held(&self) -> Result<bool, zk::Error> {
        match self.lock.new_check_writer().commit().await {
            Ok(_) => Ok(true),
            Err(zk::CheckWriteError::CheckFailed { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}
