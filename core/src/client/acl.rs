//! A client whose creates carry an ACL: [`Client::with_acl`](super::Client::with_acl).
//!
//! Every recipe creates its nodes through the session it pins ([`Session`](super::Session)),
//! with the backend's default ACL (`CreateOptions::acl` left `None`). A client view with an
//! ACL hands out sessions wrapped in [`WithAcl`], which fills that ACL into every create it
//! submits, in a `multi` too, so every node a recipe makes (its root and parents by
//! `ensure_path`, lock and queue nodes, an STM's history and tags, …) gets it, without one
//! line in any recipe. A create that names its own ACL keeps it.

use std::sync::Arc;

use crate::{
    Acl, AddWatchMode, Coordination, Error, Op, OpFuture, PersistentWatch, Reply, Request,
    SessionInfo, SessionState, SessionStates, Watch,
};

/// The ACL of a client view; checked once, when the view is made.
pub(super) fn checked(acl: Vec<Acl>) -> Result<Arc<[Acl]>, Error> {
    if acl.is_empty() {
        return Err(Error::BadArguments(
            "an empty ACL: ZooKeeper refuses a node nobody may use".into(),
        ));
    }
    Ok(acl.into())
}

/// A session whose creates without an ACL get `acl`.
pub(super) struct WithAcl {
    pub(super) inner: Arc<dyn Coordination>,
    pub(super) acl: Arc<[Acl]>,
}

impl WithAcl {
    fn fill(&self, options: &mut crate::CreateOptions) {
        if options.acl.is_none() {
            options.acl = Some(self.acl.to_vec());
        }
    }
}

impl Coordination for WithAcl {
    fn session(&self) -> SessionInfo {
        self.inner.session()
    }

    fn session_states(&self) -> SessionStates {
        self.inner.session_states()
    }

    fn session_state(&self) -> SessionState {
        self.inner.session_state()
    }

    fn submit(&self, mut request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        match &mut request {
            Request::Create { options, .. } => self.fill(options),
            Request::Multi(ops) => {
                for op in ops {
                    if let Op::Create { options, .. } = op {
                        self.fill(options);
                    }
                }
            }
            _ => {}
        }
        self.inner.submit(request)
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
