//! A [`Coordination`] wrapper for the atom tests: counts the requests a client sends, and can
//! lose the reply of the next `set_data` *after* the server applied it (the case that makes a
//! naive retry apply a swap twice).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use avout::{
    Acl, Coordination, CreateOptions, Error, Op, OpFuture, OpResult, SessionInfo, SessionStates,
    Stat, Watch,
};
use futures::FutureExt;

/// Wraps a real client; see the module docs.
pub(crate) struct Probe<C> {
    inner: C,
    requests: AtomicUsize,
    lose_next_set_reply: AtomicBool,
    lost: AtomicUsize,
}

impl<C: Coordination> Probe<C> {
    pub(crate) fn new(inner: C) -> Arc<Self> {
        Arc::new(Probe {
            inner,
            requests: AtomicUsize::new(0),
            lose_next_set_reply: AtomicBool::new(false),
            lost: AtomicUsize::new(0),
        })
    }

    /// Requests sent so far.
    pub(crate) fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// The next `set_data` is applied, but its caller gets `ConnectionLoss`.
    pub(crate) fn lose_next_set_reply(&self) {
        self.lose_next_set_reply.store(true, Ordering::SeqCst);
    }

    /// Replies lost so far.
    pub(crate) fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }

    fn count(&self) {
        self.requests.fetch_add(1, Ordering::SeqCst);
    }
}

impl<C: Coordination> Coordination for Probe<C> {
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
        self.count();
        self.inner.create(path, data, options)
    }

    fn delete(&self, path: &str, version: Option<i32>) -> OpFuture<'_, ()> {
        self.count();
        self.inner.delete(path, version)
    }

    fn get_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat)> {
        self.count();
        self.inner.get_data(path)
    }

    fn get_and_watch_data(&self, path: &str) -> OpFuture<'_, (Vec<u8>, Stat, Watch)> {
        self.count();
        self.inner.get_and_watch_data(path)
    }

    fn set_data(&self, path: &str, data: &[u8], version: Option<i32>) -> OpFuture<'_, Stat> {
        self.count();
        let reply = self.inner.set_data(path, data, version);
        let lose = self.lose_next_set_reply.swap(false, Ordering::SeqCst);
        async move {
            let result = reply.await;
            if lose && result.is_ok() {
                self.lost.fetch_add(1, Ordering::SeqCst);
                return Err(Error::ConnectionLoss);
            }
            result
        }
        .boxed()
    }

    fn exists(&self, path: &str) -> OpFuture<'_, Option<Stat>> {
        self.count();
        self.inner.exists(path)
    }

    fn exists_and_watch(&self, path: &str) -> OpFuture<'_, (Option<Stat>, Watch)> {
        self.count();
        self.inner.exists_and_watch(path)
    }

    fn get_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat)> {
        self.count();
        self.inner.get_children(path)
    }

    fn get_and_watch_children(&self, path: &str) -> OpFuture<'_, (Vec<String>, Stat, Watch)> {
        self.count();
        self.inner.get_and_watch_children(path)
    }

    fn multi(&self, ops: &[Op]) -> OpFuture<'_, Vec<OpResult>> {
        self.count();
        self.inner.multi(ops)
    }

    fn sync(&self, path: &str) -> OpFuture<'_, ()> {
        self.count();
        self.inner.sync(path)
    }

    fn get_acl(&self, path: &str) -> OpFuture<'_, (Vec<Acl>, Stat)> {
        self.count();
        self.inner.get_acl(path)
    }

    fn new_guid(&self) -> u128 {
        self.inner.new_guid()
    }

    fn close(&self) -> OpFuture<'_, ()> {
        self.inner.close()
    }
}
