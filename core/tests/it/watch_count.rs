//! A backend wrapper that counts the watch notifications its session receives, for the herd
//! tests of the lock, semaphore and election recipes: one release must wake one waiter.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, EventKind, Intercept, Intercepted, OpFuture, Reply, Request, Watch};

use crate::support;

/// A session whose fired node watches (not session events) are counted.
pub(crate) type Counting = Intercepted<Fired, ZkClient>;

/// Connects a [`Counting`] session to `connect`.
pub(crate) async fn connect(connect: &str) -> Arc<Counting> {
    Arc::new(Intercepted::new(
        support::connect(&ZkConfig::new(connect)).await,
        Fired(Arc::new(AtomicUsize::new(0))),
    ))
}

/// Node watches fired on a session so far.
pub(crate) struct Fired(Arc<AtomicUsize>);

impl Fired {
    /// Node watches fired on this session so far.
    pub(crate) fn fired(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn count(&self, watch: Watch) -> Watch {
        let fired = self.0.clone();
        Watch::new(async move {
            let event = watch.await;
            if event.kind != EventKind::Session {
                fired.fetch_add(1, Ordering::SeqCst);
            }
            event
        })
    }
}

impl Intercept for Fired {
    fn submit<'a>(
        &'a self,
        inner: &'a dyn Coordination,
        request: Request,
    ) -> OpFuture<'a, (Reply, Option<Watch>)> {
        let reply = inner.submit(request);
        Box::pin(async move {
            let (reply, watch) = reply.await?;
            Ok((reply, watch.map(|w| self.count(w))))
        })
    }
}

/// Waits until `dir` has `n` children (ignoring a missing directory).
pub(crate) async fn wait_children<C: Coordination + ?Sized>(
    zk: &C,
    dir: &str,
    n: usize,
) -> Vec<String> {
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
    let counts = || {
        sessions
            .iter()
            .map(|s| s.intercept().fired())
            .collect::<Vec<_>>()
    };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while counts().iter().sum::<usize>() < expected.iter().sum::<usize>()
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    counts()
}
