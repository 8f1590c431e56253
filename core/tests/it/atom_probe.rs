//! A [`Coordination`] wrapper for the atom tests: counts the requests a client sends, and can
//! lose the reply of the next `set_data` *after* the server applied it (the case that makes a
//! naive retry apply a swap twice).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use avout::{
    Coordination, Error, OpFuture, Reply, Request, SessionInfo, SessionState, SessionStates, Watch,
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

    fn session_state(&self) -> SessionState {
        self.inner.session_state()
    }

    fn submit(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        self.count();
        let lose = matches!(request, Request::SetData { .. })
            && self.lose_next_set_reply.swap(false, Ordering::SeqCst);
        let reply = self.inner.submit(request);
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

    fn new_guid(&self) -> u128 {
        self.inner.new_guid()
    }

    fn close(&self) -> OpFuture<'_, ()> {
        self.inner.close()
    }
}
