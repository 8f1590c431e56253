//! A client whose creates carry an ACL: [`Client::with_acl`](super::Client::with_acl).
//!
//! Every recipe creates its nodes through the session it pins ([`Session`](super::Session)),
//! with the backend's default ACL (`CreateOptions::acl` left `None`). A client view with an
//! ACL hands out [`Intercepted`](crate::Intercepted) sessions whose requests go through
//! [`WithAcl`], which fills that ACL into every create they submit, in a `multi` too, so every node a recipe makes (its root and parents by
//! `ensure_path`, lock and queue nodes, an STM's history and tags, …) gets it, without one
//! line in any recipe. A create that names its own ACL keeps it.

use std::sync::Arc;

use crate::{Acl, Coordination, Error, Intercept, Op, OpFuture, Reply, Request, Watch};

/// The ACL of a client view; checked once, when the view is made.
pub(super) fn checked(acl: Vec<Acl>) -> Result<Arc<[Acl]>, Error> {
    if acl.is_empty() {
        return Err(Error::BadArguments(
            "an empty ACL: ZooKeeper refuses a node nobody may use".into(),
        ));
    }
    Ok(acl.into())
}

/// Gives creates without an ACL this one.
pub(super) struct WithAcl(pub(super) Arc<[Acl]>);

impl WithAcl {
    fn fill(&self, options: &mut crate::CreateOptions) {
        if options.acl.is_none() {
            options.acl = Some(self.0.to_vec());
        }
    }
}

impl Intercept for WithAcl {
    fn submit<'a>(
        &'a self,
        inner: &'a dyn Coordination,
        mut request: Request,
    ) -> OpFuture<'a, (Reply, Option<Watch>)> {
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
        inner.submit(request)
    }
}
