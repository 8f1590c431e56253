//! Child machines: a machine that runs other machines inside it gives each of their requests
//! a token of its own and routes the reply (and the watch) back to the child that asked,
//! under the child's token.
//!
//! A child numbers its requests from 1 like any machine, so its tokens collide with its
//! parent's and its siblings'. [`Routes`] maps each outer token — drawn from the parent's
//! [`Outbox`](super::Outbox) when the child's request is relayed — to the child (a key of the
//! parent's choosing) and the child's own token. Routes of children that are gone are
//! forgotten with [`Routes::retain`], so their late replies are dropped.

use std::collections::BTreeMap;

use super::{Outbox, Request, Token};

/// Outer tokens of child machines' requests; see the module docs.
///
/// ```
/// use avout::machine::{Outbox, Request, Routes, Token};
///
/// let mut out: Outbox<()> = Default::default();
/// let own = out.send(Request::Sync { path: "/".into() });
/// let mut routes = Routes::default();
/// // A child's first request, relayed by the parent.
/// let (outer, _) = routes.relay(&mut out, "lock", (Token(1), Request::Sync { path: "/l".into() }));
/// assert_ne!(outer, own);
/// assert_eq!(routes.get(outer), Some(("lock", Token(1))));
/// assert_eq!(routes.get(own), None, "the parent's own request");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Routes<K> {
    routes: BTreeMap<u64, (K, Token)>,
}

impl<K> Default for Routes<K> {
    fn default() -> Self {
        Routes {
            routes: BTreeMap::new(),
        }
    }
}

impl<K: Clone> Routes<K> {
    /// Gives `child`'s request a fresh token of `outbox` (the parent's), remembering whose it
    /// is; returns the request as the parent sends it.
    ///
    /// ```
    /// use avout::machine::{Outbox, Request, Routes, Token};
    /// let mut out: Outbox<()> = Default::default();
    /// let mut routes = Routes::default();
    /// let (outer, _) = routes.relay(&mut out, 0u8, (Token(7), Request::Sync { path: "/".into() }));
    /// assert_eq!(outer, Token(1));
    /// ```
    pub fn relay<O>(
        &mut self,
        outbox: &mut Outbox<O>,
        child: K,
        (token, request): (Token, Request),
    ) -> (Token, Request) {
        let outer = outbox.token();
        self.routes.insert(outer.0, (child, token));
        (outer, request)
    }

    /// The child an outer token belongs to, and the child's own token (`None`: the parent's
    /// own, or a forgotten child's).
    ///
    /// ```
    /// let routes: avout::machine::Routes<u8> = Default::default();
    /// assert_eq!(routes.get(avout::machine::Token(1)), None);
    /// ```
    pub fn get(&self, outer: Token) -> Option<(K, Token)> {
        self.routes.get(&outer.0).cloned()
    }

    /// Forgets the routes of every child `keep` refuses: their replies and watches are then
    /// the parent's to drop.
    ///
    /// ```
    /// use avout::machine::{Outbox, Request, Routes, Token};
    /// let mut out: Outbox<()> = Default::default();
    /// let mut routes = Routes::default();
    /// let (outer, _) = routes.relay(&mut out, 1u8, (Token(1), Request::Sync { path: "/".into() }));
    /// routes.retain(|child| *child != 1);
    /// assert_eq!(routes.get(outer), None);
    /// ```
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.routes.retain(|_, (child, _)| keep(child));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siblings_with_the_same_token_are_told_apart() {
        let mut out: Outbox<()> = Outbox::default();
        let mut routes = Routes::default();
        let sync = || Request::Sync { path: "/".into() };
        let (a, _) = routes.relay(&mut out, 'a', (Token(1), sync()));
        let (b, _) = routes.relay(&mut out, 'b', (Token(1), sync()));
        assert_eq!(routes.get(a), Some(('a', Token(1))));
        assert_eq!(routes.get(b), Some(('b', Token(1))));
    }

    #[test]
    fn a_forgotten_child_keeps_its_siblings() {
        let mut out: Outbox<()> = Outbox::default();
        let mut routes = Routes::default();
        let sync = || Request::Sync { path: "/".into() };
        let (a, _) = routes.relay(&mut out, 'a', (Token(1), sync()));
        let (b, _) = routes.relay(&mut out, 'b', (Token(1), sync()));
        routes.retain(|c| *c == 'b');
        assert_eq!(routes.get(a), None);
        assert!(routes.get(b).is_some());
    }
}
