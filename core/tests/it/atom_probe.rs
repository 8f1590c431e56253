//! A [`Coordination`] wrapper for the atom tests: counts the requests a client sends, and can
//! lose the reply of the next `set_data` *after* the server applied it (the case that makes a
//! naive retry apply a swap twice). It also keeps the names of the requests it counted, for
//! tests that tell one kind of exchange from another.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use avout::{Coordination, Error, Intercept, Intercepted, OpFuture, Reply, Request, Watch};
use futures::FutureExt;

/// A real client whose requests go through [`Counters`]; see the module docs.
pub(crate) type Probe<C> = Intercepted<Counters, C>;

/// Wraps `inner` in a [`Probe`].
pub(crate) fn probe<C: Coordination>(inner: C) -> Arc<Probe<C>> {
    Arc::new(Intercepted::new(
        inner,
        Counters {
            names: Mutex::new(Vec::new()),
            lose_next_set_reply: AtomicBool::new(false),
            lost: AtomicUsize::new(0),
        },
    ))
}

/// What a [`Probe`] counts, and the loss it is armed with.
pub(crate) struct Counters {
    /// The name of every request sent, in order (their count is the request count).
    names: Mutex<Vec<&'static str>>,
    lose_next_set_reply: AtomicBool,
    lost: AtomicUsize,
}

impl Counters {
    /// Requests sent so far.
    pub(crate) fn requests(&self) -> usize {
        self.names.lock().expect("the probe's log").len()
    }

    /// The names ([`Request::name`]) of the requests sent from the `from`th on.
    pub(crate) fn names_from(&self, from: usize) -> Vec<&'static str> {
        self.names.lock().expect("the probe's log")[from..].to_vec()
    }

    /// The next `set_data` is applied, but its caller gets `ConnectionLoss`.
    pub(crate) fn lose_next_set_reply(&self) {
        self.lose_next_set_reply.store(true, Ordering::SeqCst);
    }

    /// Replies lost so far.
    pub(crate) fn lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Intercept for Counters {
    fn submit<'a>(
        &'a self,
        inner: &'a dyn Coordination,
        request: Request,
    ) -> OpFuture<'a, (Reply, Option<Watch>)> {
        self.names
            .lock()
            .expect("the probe's log")
            .push(request.name());
        let lose = matches!(request, Request::SetData { .. })
            && self.lose_next_set_reply.swap(false, Ordering::SeqCst);
        let reply = inner.submit(request);
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
}
