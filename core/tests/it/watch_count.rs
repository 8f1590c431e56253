//! A backend wrapper that counts the watch notifications its session receives, for the herd
//! tests of the lock, semaphore and election recipes: one release must wake one waiter.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use avout::zk::{ZkClient, ZkConfig};
use avout::{
    Acl, Coordination, CreateOptions, EventKind, Op, OpFuture, OpResult, SessionInfo,
    SessionStates, Stat, Watch,
};

use crate::support;

/// A session whose fired node watches (not session events) are counted.
pub(crate) struct Counting {
    pub(crate) inner: ZkClient,
    fired: Arc<AtomicUsize>,
}

impl Counting {
    pub(crate) async fn connect(connect: &str) -> Arc<Counting> {
        Arc::new(Counting {
            inner: support::connect(&ZkConfig::new(connect)).await,
            fired: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Node watches fired on this session so far.
    pub(crate) fn fired(&self) -> usize {
        self.fired.load(Ordering::SeqCst)
    }

    fn count(&self, watch: Watch) -> Watch {
        let fired = self.fired.clone();
        Watch::new(async move {
            let event = watch.await;
            if event.kind != EventKind::Session {
                fired.fetch_add(1, Ordering::SeqCst);
            }
            event
        })
    }
}

impl Coordination for Counting {
    fn session(&self) -> SessionInfo {
        self.inner.session()
    }

    fn session_states(&self) -> SessionStates {
        self.inner.session_states()
    }

    fn create(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> OpFuture<'_, (String, Stat)> {
        self.inner.create(path, data, options)
    }

    fn delete(&self, path: &str, version: Option<i32>) -> OpFuture<'_, ()> {
        self.inner.delete(path, version)
    }

    fn get_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat)> {
        self.inner.get_data(path)
    }

    fn get_and_watch_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat, Watch)> {
        let reply = self.inner.get_and_watch_data(path);
        Box::pin(async move {
            let (data, stat, watch) = reply.await?;
            Ok((data, stat, self.count(watch)))
        })
    }

    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> OpFuture<'_, Stat> {
        self.inner.set_data(path, data, version)
    }

    fn exists(&self, path: &str) -> OpFuture<'_, Option<Stat>> {
        self.inner.exists(path)
    }

    fn exists_and_watch(&self, path: &str) -> OpFuture<'_, (Option<Stat>, Watch)> {
        let reply = self.inner.exists_and_watch(path);
        Box::pin(async move {
            let (stat, watch) = reply.await?;
            Ok((stat, self.count(watch)))
        })
    }

    fn get_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat)> {
        self.inner.get_children(path)
    }

    fn get_and_watch_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat, Watch)> {
        let reply = self.inner.get_and_watch_children(path);
        Box::pin(async move {
            let (children, stat, watch) = reply.await?;
            Ok((children, stat, self.count(watch)))
        })
    }

    fn multi(&self, ops: &[Op]) -> OpFuture<'_, Vec<OpResult>> {
        self.inner.multi(ops)
    }

    fn sync(&self, path: &str) -> OpFuture<'_, ()> {
        self.inner.sync(path)
    }

    fn get_acl(&self, path: &str) -> OpFuture<'_, (Vec<Acl>, Stat)> {
        self.inner.get_acl(path)
    }

    fn close(&self) -> OpFuture<'_, ()> {
        self.inner.close()
    }
}

/// Waits until `dir` has `n` children (ignoring a missing directory).
pub(crate) async fn wait_children(zk: &ZkClient, dir: &str, n: usize) -> Vec<String> {
    support::eventually(
        &format!("{n} children under {dir}"),
        std::time::Duration::from_secs(10),
        || async move {
            let (mut children, _) = zk.get_children(dir).await.ok()?;
            children.sort_by_key(|c| avout::path::sequence(c));
            (children.len() == n).then_some(children)
        },
    )
    .await
}

/// Waits until the sessions' notification counts reach `expected` (or 10 s pass), then a
/// little longer, and returns the counts: a late extra wake-up would show.
pub(crate) async fn settle(sessions: &[&Counting], expected: &[usize]) -> Vec<usize> {
    let counts = || sessions.iter().map(|s| s.fired()).collect::<Vec<_>>();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while counts().iter().sum::<usize>() < expected.iter().sum::<usize>()
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    counts()
}
