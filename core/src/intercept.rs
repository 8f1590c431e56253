//! A session that changes what it submits: [`Intercepted`] wraps a backend and hands every
//! request to an [`Intercept`]; the session, its states, GUIDs, `close` and persistent watches
//! go to the backend unchanged.
//!
//! One forwarding piece for every wrapper that only cares about requests and replies: a client
//! view that fills in an ACL ([`Client::with_acl`](crate::Client::with_acl)), and test sessions
//! that count requests, lose replies or count fired watches.

use crate::{
    AddWatchMode, Coordination, OpFuture, PersistentWatch, Reply, Request, SessionInfo,
    SessionState, SessionStates, Watch,
};

/// What an [`Intercepted`] session does with a request: submit it to `inner`, changed or not,
/// and hand back its reply, changed or not.
///
/// What the wrapped session promises on connection loss, expiry and cancellation is what
/// `inner`'s does, unless the interceptor changes a reply (a test that loses one on purpose).
///
/// ```
/// use avout::{Coordination, Intercept, OpFuture, Reply, Request, Watch};
///
/// /// Passes everything through.
/// struct Nothing;
///
/// impl Intercept for Nothing {
///     fn submit<'a>(
///         &'a self,
///         inner: &'a dyn Coordination,
///         request: Request,
///     ) -> OpFuture<'a, (Reply, Option<Watch>)> {
///         inner.submit(request)
///     }
/// }
/// ```
pub trait Intercept: Send + Sync {
    /// Submits `request` through `inner`; see [`Coordination::submit`] for the contract the
    /// wrapped session keeps (submitted before this returns, bad input refused unsent).
    fn submit<'a>(
        &'a self,
        inner: &'a dyn Coordination,
        request: Request,
    ) -> OpFuture<'a, (Reply, Option<Watch>)>;
}

/// A backend `C` whose requests go through the interceptor `I`; see the module docs.
///
/// ```
/// use std::sync::Arc;
/// use avout::{Coordination, Intercept, Intercepted, OpFuture, Reply, Request, Watch};
///
/// struct Nothing;
///
/// impl Intercept for Nothing {
///     fn submit<'a>(
///         &'a self,
///         inner: &'a dyn Coordination,
///         request: Request,
///     ) -> OpFuture<'a, (Reply, Option<Watch>)> {
///         inner.submit(request)
///     }
/// }
///
/// fn wrap(zk: Arc<dyn Coordination>) -> Arc<dyn Coordination> {
///     Arc::new(Intercepted::new(zk, Nothing))
/// }
/// ```
#[derive(Debug)]
pub struct Intercepted<I, C> {
    inner: C,
    intercept: I,
}

impl<I, C> Intercepted<I, C> {
    /// `inner`, with its requests going through `intercept`.
    ///
    /// ```
    /// let wrapped = avout::Intercepted::new("a backend", 7);
    /// assert_eq!(*wrapped.intercept(), 7);
    /// ```
    pub fn new(inner: C, intercept: I) -> Self {
        Intercepted { inner, intercept }
    }

    /// The interceptor (for what it counted, or to arm it).
    ///
    /// ```
    /// let wrapped = avout::Intercepted::new("a backend", 7);
    /// assert_eq!(*wrapped.intercept(), 7);
    /// ```
    pub fn intercept(&self) -> &I {
        &self.intercept
    }

    /// The wrapped backend.
    ///
    /// ```
    /// let wrapped = avout::Intercepted::new("a backend", 7);
    /// assert_eq!(*wrapped.inner(), "a backend");
    /// ```
    pub fn inner(&self) -> &C {
        &self.inner
    }
}

impl<I: Intercept, C: Coordination> Coordination for Intercepted<I, C> {
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
        self.intercept.submit(&self.inner, request)
    }

    fn new_guid(&self) -> u128 {
        self.inner.new_guid()
    }

    fn close(&self) -> OpFuture<'_, ()> {
        self.inner.close()
    }

    fn add_watch(&self, path: &str, mode: AddWatchMode) -> OpFuture<'_, PersistentWatch> {
        self.inner.add_watch(path, mode)
    }
}
