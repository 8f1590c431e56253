//! Curator's protected create, as a sub-machine: create an ephemeral-sequential node whose
//! name carries a GUID, and after a reply that never came, find it again by that GUID.
//!
//! # Why
//!
//! A sequential create is not idempotent: sent twice it makes two nodes. When its reply is
//! lost (a connection loss, a timeout) the node may or may not exist, and a second create
//! would leave the first one — owned by our live session, known to nobody — sitting in a
//! queue forever, blocking every contender behind it. So the name starts with a prefix only
//! this creator uses (`_c_<GUID>-…`, as Apache Curator names them, so Java and Rust processes
//! share the layout), and recovery lists the parent's children (behind a `sync`, so a lagging
//! server cannot hide a create the leader applied), looks for the prefix, and checks with an
//! `exists` that the node found is owned by this session before adopting it.
//!
//! # Shape
//!
//! [`ProtectedCreate`] writes into its parent machine's [`Outbox`], so the parent can send more
//! requests in the same round trip (a lock sends its children read right behind the create).
//! The parent offers it every reply; the sub-machine answers the ones it is waiting for with a
//! [`Protected`] outcome and leaves the others alone. What to do next — decide, give up,
//! create again, stall and [`recover`](ProtectedCreate::recover) — is the parent's.
//!
//! # Riding operations
//!
//! [`create_riding`](ProtectedCreate::create_riding) sends the create inside one `multi` behind
//! operations of the parent's (a lock's release of its previous node), so that both are one
//! write. ZooKeeper 3.8 answers a create inside a `multi` without its `Stat` (ZOOKEEPER-4026),
//! and the node's `czxid` is what a lock hands out as its fencing token; so the `multi` ends
//! with a *stamp*, a `set_data` of the parent directory (empty data, any version). Its `Stat`
//! carries the `multi`'s zxid, which every operation of a `multi` shares, so it is the new
//! node's `czxid`; and the directory's `numChildren` once the `multi` applied, which tells a
//! lock that finds itself alone that it holds without reading the children
//! ([`ProtectedCreate::parent_stat`]). The stamp replaces whatever data the directory had,
//! and needs write access to it: without, the `multi` is refused and nothing is applied. The
//! riding operations share the create's fate: a recovery that adopts the node knows they were
//! applied, one that finds no node knows they were not.

use super::{Outbox, Reply, Request, Token};
use crate::coverage::{self, Mark};
use crate::{CreateMode, CreateOptions, Error, Op, OpResult, Stat, path};

/// What the sub-machine knows of the node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    /// No node of ours exists (or none was created yet).
    Absent,
    /// A create is in flight or its outcome is unknown.
    Unknown,
    /// Our node: its name (not path) and czxid.
    Mine { name: String, czxid: i64 },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// The create, behind `riding` operations in one `multi` when there are any.
    Creating {
        create: Token,
        riding: usize,
    },
    Listing {
        list: Token,
    },
    Verifying {
        exists: Token,
        name: String,
    },
}

/// How a step of a [`ProtectedCreate`] ended.
///
/// ```
/// use avout::machine::Protected;
/// assert_ne!(Protected::Created, Protected::Adopted);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Protected {
    /// Our create was applied and its reply arrived: the node is ours.
    Created,
    /// Recovery found our node (our GUID, owned by this session): it is ours (and the
    /// operations that rode with its create were applied).
    Adopted,
    /// No node of ours exists. `parents_missing`: the parent directory is gone too (create it
    /// with the node next time).
    Absent {
        /// The create or the listing found no parent.
        parents_missing: bool,
    },
    /// The step failed; after an indeterminate error the node's existence is unknown, and
    /// [`ProtectedCreate::recover`] finds out.
    Failed(Error),
    /// An operation of the `multi` other than the create was refused, so nothing was applied
    /// and no node of ours exists: `op` is the index of a riding operation, `None` the stamp
    /// (the `set_data` of the parent).
    Refused {
        /// The refused riding operation's index (`None`: the stamp).
        op: Option<usize>,
        /// Why.
        error: Error,
    },
}

/// A protected create; see the module docs.
///
/// ```
/// use avout::machine::{Outbox, ProtectedCreate, Protected, Reply, Request};
/// use avout::{Error, Stat};
///
/// let mut out: Outbox<()> = Default::default();
/// let mut pc = ProtectedCreate::new("/l", "_c_42-lock-", 7);
/// let create = pc.create(&mut out, false);
/// // The reply is lost: look for the node by its prefix.
/// assert_eq!(pc.handle_reply(&mut out, create, Err(Error::ConnectionLoss)), Some(Protected::Failed(Error::ConnectionLoss)));
/// assert!(pc.unknown());
/// pc.recover(&mut out);
/// let sent: Vec<_> = std::iter::from_fn(|| out.pop()).collect();
/// assert!(matches!(sent[1].1, Request::Sync { .. }));
/// let children = Reply::Children { children: vec!["_c_42-lock-0000000003".into()], stat: Stat::default() };
/// assert_eq!(pc.handle_reply(&mut out, sent[2].0, Ok(children)), None, "checks the owner first");
/// let (exists, _) = out.pop().unwrap();
/// let owned = Stat { ephemeral_owner: 7, czxid: 9, ..Stat::default() };
/// assert_eq!(pc.handle_reply(&mut out, exists, Ok(Reply::Exists(Some(owned)))), Some(Protected::Adopted));
/// assert_eq!(pc.node(), Some(("_c_42-lock-0000000003", 9)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProtectedCreate {
    parent: String,
    prefix: String,
    data: Vec<u8>,
    session: i64,
    node: Node,
    /// The parent's `Stat` as the last riding create left it.
    parent_stat: Option<Stat>,
    phase: Phase,
}

impl ProtectedCreate {
    /// Creates nodes named `prefix` plus a sequence number under `parent`, for session
    /// `session`. `prefix` MUST be unique to this creator (carry a GUID).
    ///
    /// ```
    /// let pc = avout::machine::ProtectedCreate::new("/l", "_c_1-lock-", 1);
    /// assert_eq!(pc.prefix(), "_c_1-lock-");
    /// ```
    pub fn new(parent: &str, prefix: impl Into<String>, session: i64) -> Self {
        ProtectedCreate {
            parent: parent.to_owned(),
            prefix: prefix.into(),
            data: Vec::new(),
            session,
            node: Node::Absent,
            parent_stat: None,
            phase: Phase::Idle,
        }
    }

    /// The same, creating the node with `data`.
    ///
    /// ```
    /// let pc = avout::machine::ProtectedCreate::new("/e", "_c_1-latch-", 1).with_data(b"me".to_vec());
    /// # let _ = pc;
    /// ```
    pub fn with_data(mut self, data: Vec<u8>) -> Self {
        self.data = data;
        self
    }

    /// The node name prefix.
    ///
    /// ```
    /// assert_eq!(avout::machine::ProtectedCreate::new("/l", "p-", 1).prefix(), "p-");
    /// ```
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The parent directory.
    ///
    /// ```
    /// assert_eq!(avout::machine::ProtectedCreate::new("/l", "p-", 1).parent(), "/l");
    /// ```
    pub fn parent(&self) -> &str {
        &self.parent
    }

    /// Our node's name and czxid, if it is known to exist.
    ///
    /// ```
    /// assert_eq!(avout::machine::ProtectedCreate::new("/l", "p-", 1).node(), None);
    /// ```
    pub fn node(&self) -> Option<(&str, i64)> {
        match &self.node {
            Node::Mine { name, czxid } => Some((name, *czxid)),
            Node::Absent | Node::Unknown => None,
        }
    }

    /// Our node's full path, if it is known to exist.
    ///
    /// ```
    /// assert_eq!(avout::machine::ProtectedCreate::new("/l", "p-", 1).node_path(), None);
    /// ```
    pub fn node_path(&self) -> Option<String> {
        self.node().map(|(name, _)| path::join(&self.parent, name))
    }

    /// Whether a create may have happened whose node is not known.
    ///
    /// ```
    /// assert!(!avout::machine::ProtectedCreate::new("/l", "p-", 1).unknown());
    /// ```
    pub fn unknown(&self) -> bool {
        self.node == Node::Unknown
    }

    /// Records that our node is gone (deleted, or with the session): a create starts afresh.
    ///
    /// ```
    /// let mut pc = avout::machine::ProtectedCreate::new("/l", "p-", 1);
    /// pc.forget();
    /// assert!(!pc.unknown());
    /// ```
    pub fn forget(&mut self) {
        self.node = Node::Absent;
    }

    /// Stops waiting for replies (the parent finished or gave the step up).
    ///
    /// ```
    /// let mut pc = avout::machine::ProtectedCreate::new("/l", "p-", 1);
    /// pc.halt();
    /// ```
    pub fn halt(&mut self) {
        self.phase = Phase::Idle;
    }

    /// Queues the create (behind creates of the parent and its ancestors, if
    /// `with_parents`); returns its token. The node is unknown until the reply.
    ///
    /// ```
    /// use avout::machine::{Outbox, ProtectedCreate, Request};
    /// let mut out: Outbox<()> = Default::default();
    /// ProtectedCreate::new("/a/l", "p-", 1).create(&mut out, true);
    /// let paths: Vec<String> = std::iter::from_fn(|| out.pop()).map(|(_, r)| r.path().to_owned()).collect();
    /// assert_eq!(paths, ["/a", "/a/l", "/a/l/p-"]);
    /// ```
    pub fn create<O>(&mut self, outbox: &mut Outbox<O>, with_parents: bool) -> Token {
        self.create_riding(outbox, with_parents, Vec::new())
    }

    /// Queues the create with `riding` operations ahead of it in one `multi`, and the stamp
    /// behind it (see the module docs); without riding operations, a plain create.
    /// Returns its token. The node is unknown until the reply.
    ///
    /// ```
    /// use avout::machine::{Outbox, ProtectedCreate, Request};
    /// use avout::Op;
    /// let mut out: Outbox<()> = Default::default();
    /// ProtectedCreate::new("/l", "p-", 1).create_riding(&mut out, false, vec![Op::delete("/l/p-0000000001", None)]);
    /// let Some((_, Request::Multi(ops))) = out.pop() else { panic!("one multi") };
    /// let paths: Vec<&str> = ops.iter().map(|op| op.path()).collect();
    /// assert_eq!(paths, ["/l/p-0000000001", "/l/p-", "/l"]);
    /// ```
    pub fn create_riding<O>(
        &mut self,
        outbox: &mut Outbox<O>,
        with_parents: bool,
        riding: Vec<Op>,
    ) -> Token {
        if with_parents {
            outbox.send_ancestors(&self.parent);
        }
        self.node = Node::Unknown;
        self.parent_stat = None;
        let (path, data) = (path::join(&self.parent, &self.prefix), self.data.clone());
        let node = CreateOptions::new(CreateMode::EphemeralSequential);
        let request = if riding.is_empty() {
            Request::Create {
                path,
                data,
                options: node,
            }
        } else {
            let mut ops = riding.clone();
            ops.push(Op::Create {
                path,
                data,
                options: node,
            });
            ops.push(Op::set_data(self.parent.clone(), Vec::new(), None));
            Request::Multi(ops)
        };
        let create = outbox.send(request);
        self.phase = Phase::Creating {
            create,
            riding: riding.len(),
        };
        create
    }

    /// The parent directory's `Stat` right after a riding create applied (the stamp's; see
    /// the module docs): `None` after a plain create or a recovery.
    ///
    /// ```
    /// assert_eq!(avout::machine::ProtectedCreate::new("/l", "p-", 1).parent_stat(), None);
    /// ```
    pub fn parent_stat(&self) -> Option<&Stat> {
        self.parent_stat.as_ref()
    }

    /// Queues the recovery's listing of the parent (behind a `sync`: after a connection loss
    /// the session may have moved to a server that has not applied our lost create yet, and
    /// would list no node of ours). The `sync`'s reply needs no handling: a failure fails the
    /// listing behind it too.
    ///
    /// ```
    /// use avout::machine::{Outbox, ProtectedCreate};
    /// let mut out: Outbox<()> = Default::default();
    /// ProtectedCreate::new("/l", "p-", 1).recover(&mut out);
    /// assert_eq!(std::iter::from_fn(|| out.pop()).count(), 2);
    /// ```
    pub fn recover<O>(&mut self, outbox: &mut Outbox<O>) {
        outbox.send(Request::Sync {
            path: self.parent.clone(),
        });
        let list = outbox.send(Request::GetChildren {
            path: self.parent.clone(),
            watch: false,
        });
        self.phase = Phase::Listing { list };
    }

    /// Whether `token` names a request whose reply this sub-machine waits for.
    ///
    /// ```
    /// use avout::machine::{Outbox, ProtectedCreate, Token};
    /// let mut out: Outbox<()> = Default::default();
    /// let mut pc = ProtectedCreate::new("/l", "p-", 1);
    /// let t = pc.create(&mut out, false);
    /// assert!(pc.expects(t) && !pc.expects(Token(99)));
    /// ```
    pub fn expects(&self, token: Token) -> bool {
        match &self.phase {
            Phase::Idle => false,
            Phase::Creating { create: t, .. } | Phase::Listing { list: t } => *t == token,
            Phase::Verifying { exists, .. } => *exists == token,
        }
    }

    /// Offers a reply: `None` if it is not one this sub-machine waits for (or if it only moved
    /// recovery on to the owner check), else how the step ended.
    ///
    /// ```
    /// use avout::machine::{Outbox, ProtectedCreate, Protected, Reply, Token};
    /// use avout::Stat;
    /// let mut out: Outbox<()> = Default::default();
    /// let mut pc = ProtectedCreate::new("/l", "p-", 1);
    /// let t = pc.create(&mut out, false);
    /// assert_eq!(pc.handle_reply(&mut out, Token(99), Ok(Reply::Synced)), None);
    /// let created = Reply::Created { path: "/l/p-0000000001".into(), stat: Stat::default() };
    /// assert_eq!(pc.handle_reply(&mut out, t, Ok(created)), Some(Protected::Created));
    /// ```
    pub fn handle_reply<O>(
        &mut self,
        outbox: &mut Outbox<O>,
        token: Token,
        reply: crate::Result<Reply>,
    ) -> Option<Protected> {
        let outcome = match self.phase.clone() {
            Phase::Creating { create, riding } if token == create => {
                match Self::created(reply, riding) {
                    Ok((created, czxid, parent)) => {
                        self.node = Node::Mine {
                            name: path::name(&created).to_owned(),
                            czxid,
                        };
                        self.parent_stat = parent;
                        Protected::Created
                    }
                    Err(Error::NoNode { .. }) => self.absent(true),
                    Err(Error::Multi { index, source }) if index != riding => {
                        self.node = Node::Absent;
                        Protected::Refused {
                            op: (index < riding).then_some(index),
                            error: *source,
                        }
                    }
                    Err(e) => return Some(Protected::Failed(e)),
                }
            }
            Phase::Listing { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    match children.into_iter().find(|c| c.starts_with(&self.prefix)) {
                        Some(name) => {
                            let exists = outbox.send(Request::Exists {
                                path: path::join(&self.parent, &name),
                                watch: false,
                            });
                            self.phase = Phase::Verifying { exists, name };
                            return None;
                        }
                        None => {
                            coverage::reach(Mark::ProtectedCreateNotApplied);
                            self.absent(false)
                        }
                    }
                }
                Err(Error::NoNode { .. }) => self.absent(true),
                Err(e) => return Some(Protected::Failed(e)),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Verifying { exists, name } if token == exists => match reply {
                Ok(Reply::Exists(Some(stat))) if stat.ephemeral_owner == self.session => {
                    self.node = Node::Mine {
                        name,
                        czxid: stat.czxid,
                    };
                    coverage::reach(Mark::ProtectedCreateAdopted);
                    Protected::Adopted
                }
                // Another session's node with our prefix: not ours, whoever made it.
                Ok(Reply::Exists(_)) => self.absent(false),
                Err(e) => return Some(Protected::Failed(e)),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            _ => return None,
        };
        // A failed step keeps its phase until the parent recovers or halts; a settled one
        // waits for nothing more.
        self.phase = Phase::Idle;
        Some(outcome)
    }

    /// The created node's path and `czxid` from the create's reply, and the parent's `Stat`
    /// when it rode in a `multi` (its stamp's, whose `mzxid` is the node's `czxid`); a refusal
    /// of the create itself is unwrapped from the `multi`'s.
    fn created(
        reply: crate::Result<Reply>,
        riding: usize,
    ) -> crate::Result<(String, i64, Option<Stat>)> {
        match reply {
            Ok(Reply::Created { path, stat }) => Ok((path, stat.czxid, None)),
            Ok(Reply::Multi(results)) => match (results.get(riding), results.get(riding + 1)) {
                (Some(OpResult::Create { path, .. }), Some(OpResult::SetData { stat })) => {
                    Ok((path.clone(), stat.mzxid, Some(*stat)))
                }
                other => unreachable!("a riding create's multi replied {other:?}"),
            },
            Err(Error::Multi { index, source }) if index == riding => Err(*source),
            Err(e) => Err(e),
            Ok(other) => unreachable!("create replied {other:?}"),
        }
    }

    fn absent(&mut self, parents_missing: bool) -> Protected {
        self.node = Node::Absent;
        Protected::Absent { parents_missing }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stat;

    fn sent(out: &mut Outbox<()>) -> Vec<(Token, Request)> {
        std::iter::from_fn(|| out.pop()).collect()
    }

    fn listing(names: &[&str]) -> crate::Result<Reply> {
        Ok(Reply::Children {
            children: names.iter().map(|s| s.to_string()).collect(),
            stat: Stat::default(),
        })
    }

    #[test]
    fn a_create_refused_for_want_of_a_parent_says_so() {
        let mut out: Outbox<()> = Outbox::default();
        let mut pc = ProtectedCreate::new("/l", "p-", 1);
        let t = pc.create(&mut out, false);
        let no_node = Err(Error::NoNode { path: "/l".into() });
        assert_eq!(
            pc.handle_reply(&mut out, t, no_node),
            Some(Protected::Absent {
                parents_missing: true
            })
        );
        assert!(!pc.unknown());
    }

    #[test]
    fn recovery_without_our_prefix_finds_nothing() {
        let mut out: Outbox<()> = Outbox::default();
        let mut pc = ProtectedCreate::new("/l", "p-", 1);
        pc.create(&mut out, false);
        pc.recover(&mut out);
        let list = sent(&mut out).last().unwrap().0;
        assert_eq!(
            pc.handle_reply(&mut out, list, listing(&["q-0000000001"])),
            Some(Protected::Absent {
                parents_missing: false
            })
        );
    }

    #[test]
    fn another_sessions_node_with_our_prefix_is_not_adopted() {
        let mut out: Outbox<()> = Outbox::default();
        let mut pc = ProtectedCreate::new("/l", "p-", 1);
        pc.recover(&mut out);
        let list = sent(&mut out).last().unwrap().0;
        pc.handle_reply(&mut out, list, listing(&["p-0000000001"]));
        let exists = sent(&mut out)[0].0;
        let theirs = Stat {
            ephemeral_owner: 2,
            ..Stat::default()
        };
        assert_eq!(
            pc.handle_reply(&mut out, exists, Ok(Reply::Exists(Some(theirs)))),
            Some(Protected::Absent {
                parents_missing: false
            })
        );
        assert_eq!(pc.node(), None);
    }

    fn riding(pc: &mut ProtectedCreate, out: &mut Outbox<()>) -> Token {
        pc.create_riding(out, false, vec![Op::delete("/l/p-0000000001", None)])
    }

    fn refused(index: usize, error: Error) -> crate::Result<Reply> {
        Err(Error::Multi {
            index,
            source: Box::new(error),
        })
    }

    #[test]
    fn a_riding_create_takes_its_czxid_from_the_stamp() {
        let mut out: Outbox<()> = Outbox::default();
        let mut pc = ProtectedCreate::new("/l", "p-", 1);
        let t = riding(&mut pc, &mut out);
        let parent = Stat {
            mzxid: 41,
            num_children: 1,
            ..Stat::default()
        };
        let results = vec![
            OpResult::Delete,
            OpResult::Create {
                path: "/l/p-0000000002".into(),
                stat: None,
            },
            OpResult::SetData { stat: parent },
        ];
        assert_eq!(
            pc.handle_reply(&mut out, t, Ok(Reply::Multi(results))),
            Some(Protected::Created)
        );
        assert_eq!(pc.node(), Some(("p-0000000002", 41)));
        assert_eq!(pc.parent_stat(), Some(&parent));
    }

    #[test]
    fn a_refused_riding_operation_leaves_no_node() {
        let mut out: Outbox<()> = Outbox::default();
        let mut pc = ProtectedCreate::new("/l", "p-", 1);
        let t = riding(&mut pc, &mut out);
        let gone = Error::NoNode {
            path: "/l/p-0000000001".into(),
        };
        assert_eq!(
            pc.handle_reply(&mut out, t, refused(0, gone.clone())),
            Some(Protected::Refused {
                op: Some(0),
                error: gone
            })
        );
        assert!(!pc.unknown() && pc.node().is_none());
        // A refused stamp is told apart from the riding operations.
        let t = riding(&mut pc, &mut out);
        let denied = Error::NoAuth { path: "/l".into() };
        assert_eq!(
            pc.handle_reply(&mut out, t, refused(2, denied.clone())),
            Some(Protected::Refused {
                op: None,
                error: denied
            })
        );
    }

    #[test]
    fn a_riding_create_refused_itself_is_answered_as_a_plain_one() {
        let mut out: Outbox<()> = Outbox::default();
        let mut pc = ProtectedCreate::new("/l", "p-", 1);
        let t = riding(&mut pc, &mut out);
        let no_parent = Error::NoNode { path: "/l".into() };
        assert_eq!(
            pc.handle_reply(&mut out, t, refused(1, no_parent)),
            Some(Protected::Absent {
                parents_missing: true
            })
        );
        let t = riding(&mut pc, &mut out);
        assert_eq!(
            pc.handle_reply(&mut out, t, refused(1, Error::ConnectionLoss)),
            Some(Protected::Failed(Error::ConnectionLoss))
        );
        assert!(pc.unknown(), "the multi may have applied");
    }

    #[test]
    fn a_failed_listing_keeps_waiting_for_nothing_else() {
        let mut out: Outbox<()> = Outbox::default();
        let mut pc = ProtectedCreate::new("/l", "p-", 1);
        pc.recover(&mut out);
        let list = sent(&mut out)[1].0;
        assert_eq!(
            pc.handle_reply(&mut out, list, Err(Error::ConnectionLoss)),
            Some(Protected::Failed(Error::ConnectionLoss))
        );
        assert!(sent(&mut out).is_empty());
    }
}
