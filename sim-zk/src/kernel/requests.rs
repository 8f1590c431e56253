//! Requests: reads answered from the tree of the session's replica, writes prepared against
//! the leader's tree through an overlay and committed as one transaction (see the
//! [module docs](super) for the pipeline), and a session's close.

use std::sync::Arc;

use avout::{
    Acl, Error, Identity, Op, OpResult, Perms, ReadOp, ReadResult, Reply, Request, Result,
    SessionId, Stat,
};

use super::op_ref::{OPEN_UNSAFE, OpRef};
use super::{Applied, DataTree, Fired, Kernel, Node, Overlay, Record, Server, Txn, TxnKind, acl};

impl Kernel {
    /// Processes one request of a session. See the module docs for the pipeline.
    ///
    /// A request of a session that is not alive fails with `SessionExpired`.
    ///
    /// ```
    /// use avout::Request;
    /// use avout_sim_zk::kernel::Kernel;
    /// let mut k = Kernel::new();
    /// let s = k.create_session(0, std::time::Duration::from_secs(1));
    /// let r = k.apply(1, s, &Request::Delete { path: "/nope".into(), version: None });
    /// assert_eq!(r.result, Err(avout::Error::NoNode { path: "/nope".into() }));
    /// ```
    pub fn apply(&mut self, now_ms: i64, session: SessionId, request: &Request) -> Applied {
        self.apply_checked(now_ms, session, request, true)
    }

    /// [`apply`](Self::apply) for a request its client already validated, as the simulated
    /// clients do before anything leaves them (the check would only repeat theirs).
    pub(crate) fn apply_valid(
        &mut self,
        now_ms: i64,
        session: SessionId,
        request: &Request,
    ) -> Applied {
        debug_assert!(request.validate().is_ok(), "{request:?} was not validated");
        self.apply_checked(now_ms, session, request, false)
    }

    fn apply_checked(
        &mut self,
        now_ms: i64,
        session: SessionId,
        request: &Request,
        validate: bool,
    ) -> Applied {
        let mut events = Vec::new();
        let result = if self.sessions.contains_key(&session) {
            self.process(now_ms, session, request, validate, &mut events)
        } else {
            Err(Error::SessionExpired)
        };
        Applied { result, events }
    }

    /// Closes a session, as its client's `closeSession` request does: a transaction that
    /// deletes its ephemerals (firing others' watches) and drops its watches. A session that
    /// is not alive fails with `SessionExpired`.
    ///
    /// ```
    /// let mut k = avout_sim_zk::kernel::Kernel::new();
    /// let s = k.create_session(0, std::time::Duration::from_secs(1));
    /// assert_eq!(k.close_session(1, s).result, Ok(()));
    /// assert!(!k.is_alive(s));
    /// ```
    pub fn close_session(&mut self, now_ms: i64, session: SessionId) -> Applied<()> {
        let mut events = Vec::new();
        let result = if self.sessions.contains_key(&session) {
            self.end_session(now_ms, session, &mut events);
            Ok(())
        } else {
            Err(Error::SessionExpired)
        };
        Applied { result, events }
    }

    pub(super) fn process(
        &mut self,
        now_ms: i64,
        session: SessionId,
        request: &Request,
        validate: bool,
        events: &mut Vec<Fired>,
    ) -> Result<Reply> {
        // Bad input is refused before it becomes a transaction (clients check it first).
        if validate {
            request.validate()?;
        }
        if matches!(request, Request::Multi(ops) if ops.is_empty()) {
            return Err(Error::BadArguments("empty multi".into()));
        }
        let server = self.sessions[&session].server;
        match request {
            Request::GetData { path, watch } => {
                let node = self.readable(server, session, path, Perms::READ)?;
                let reply = Reply::Data {
                    data: node.data.to_vec(),
                    stat: node.stat,
                };
                if *watch {
                    self.read_tree_mut(server).add_data_watch(path, session);
                }
                Ok(reply)
            }
            Request::Exists { path, watch } => {
                let tree = self.read_tree_mut(server);
                let stat = tree.node(path).map(|n| n.stat);
                if *watch {
                    tree.add_data_watch(path, session);
                }
                Ok(Reply::Exists(stat))
            }
            Request::GetChildren { path, watch } => {
                let node = self.readable(server, session, path, Perms::READ)?;
                let reply = Reply::Children {
                    children: node.children.iter().cloned().collect(),
                    stat: node.stat,
                };
                if *watch {
                    self.read_tree_mut(server).add_child_watch(path, session);
                }
                Ok(reply)
            }
            Request::GetAcl { path } => {
                let node =
                    self.readable(server, session, path, Perms(Perms::READ.0 | Perms::ADMIN.0))?;
                let ids = &self.sessions[&session].ids;
                let acl = if acl::allows(&node.acl, Perms::ADMIN, ids) {
                    node.acl.to_vec()
                } else {
                    acl::redact(&node.acl)
                };
                Ok(Reply::Acl {
                    acl,
                    stat: node.stat,
                })
            }
            Request::Sync { .. } => {
                if let Server::Follower(i) = server
                    && self.leader_queue != Some(i)
                {
                    events.extend(self.sync_follower_of(i));
                }
                Ok(Reply::Synced)
            }
            Request::AddAuth { scheme, auth } => {
                let mut id = match scheme.as_str() {
                    "digest" => acl::digest_identity(auth).ok_or(Error::AuthFailed)?,
                    _ => return Err(Error::AuthFailed),
                };
                if self.super_digest.as_ref() == Some(&id.1) {
                    id = acl::superuser();
                }
                self.sessions
                    .get_mut(&session)
                    .expect("session checked by apply")
                    .ids
                    .insert(id);
                Ok(Reply::AuthAdded)
            }
            Request::GetEphemerals { prefix } => {
                let all = self.read_tree(server).ephemerals(session);
                let paths = if prefix == "/" {
                    all.map(str::to_owned).collect()
                } else {
                    all.filter(|p| p.starts_with(prefix.as_str()))
                        .map(str::to_owned)
                        .collect()
                };
                Ok(Reply::Ephemerals(paths))
            }
            Request::GetAllChildrenNumber { path } => {
                self.readable(server, session, path, Perms::READ)?;
                let tree = self.read_tree(server);
                // ZooKeeper counts the keys under `path/`; for the root, every node but it.
                let n = if path == "/" {
                    tree.len() - 1
                } else {
                    tree.count_under(path)
                };
                Ok(Reply::AllChildrenNumber(n as u64))
            }
            Request::AddWatch { path, mode } => {
                if !self.features.persistent_watches {
                    return Err(Error::Unimplemented(format!("addWatch on {path}")));
                }
                self.read_tree_mut(server)
                    .add_persistent_watch(path, session, mode.is_recursive());
                Ok(Reply::WatchAdded)
            }
            Request::RemoveWatches { path } => {
                if self.read_tree_mut(server).remove_watches(path, session) {
                    Ok(Reply::WatchesRemoved)
                } else {
                    Err(Error::NoWatcher { path: path.clone() })
                }
            }
            Request::MultiRead(reads) => {
                let results = reads
                    .iter()
                    .map(|read| self.read_one(server, session, read))
                    .collect();
                Ok(Reply::MultiRead(results))
            }
            Request::WhoAmI => {
                let ids = self.sessions[&session]
                    .ids
                    .iter()
                    .map(|(scheme, id)| Identity {
                        scheme: scheme.clone(),
                        // A digest identity is `user:hash`; `whoAmI` shows the user.
                        user: id.split(':').next().unwrap_or_default().to_owned(),
                    })
                    .collect();
                Ok(Reply::WhoAmI(ids))
            }
            Request::SetAcl { .. } => self.write(now_ms, session, server, request, events),
            Request::Create { .. }
            | Request::Delete { .. }
            | Request::SetData { .. }
            | Request::Multi(_) => self.write(now_ms, session, server, request, events),
        }
    }

    /// One read of a `multiRead`, which fails on its own.
    fn read_one(&self, server: Server, session: SessionId, read: &ReadOp) -> ReadResult {
        let path = read.path();
        match self.readable(server, session, path, Perms::READ) {
            Ok(node) => match read {
                ReadOp::GetData { .. } => ReadResult::Data {
                    data: node.data.to_vec(),
                    stat: node.stat,
                },
                ReadOp::GetChildren { .. } => ReadResult::Children {
                    children: node.children.iter().cloned().collect(),
                },
            },
            Err(Error::NoAuth { .. }) => ReadResult::NoAuth {
                path: path.to_owned(),
            },
            Err(_) => ReadResult::NoNode {
                path: path.to_owned(),
            },
        }
    }

    /// The node at `path` in the session's replica, if the session may `perm` it.
    fn readable(
        &self,
        server: Server,
        session: SessionId,
        path: &str,
        perm: Perms,
    ) -> Result<&Node> {
        let node = self
            .read_tree(server)
            .node(path)
            .ok_or_else(|| no_node(path))?;
        check(&self.sessions[&session].ids, &node.acl, perm, path)?;
        Ok(node)
    }

    pub(super) fn read_tree(&self, server: Server) -> &DataTree {
        match server {
            Server::Leader => &self.tree,
            Server::Follower(i) => {
                &self
                    .followers
                    .get(usize::from(i))
                    .expect("a session attached to a missing follower")
                    .tree
            }
        }
    }

    pub(super) fn read_tree_mut(&mut self, server: Server) -> &mut DataTree {
        match server {
            Server::Leader => &mut self.tree,
            Server::Follower(i) => {
                &mut self
                    .followers
                    .get_mut(usize::from(i))
                    .expect("a session attached to a missing follower")
                    .tree
            }
        }
    }

    pub(super) fn write(
        &mut self,
        now_ms: i64,
        session: SessionId,
        server: Server,
        request: &Request,
        events: &mut Vec<Fired>,
    ) -> Result<Reply> {
        let zxid = self.zxid + 1;
        let mut overlay = match request {
            Request::Multi(_) => Overlay::multi(),
            _ => Overlay::single(),
        };
        let prepared: Result<(TxnKind, Vec<Option<String>>)> = match request {
            Request::Multi(ops) => {
                let mut kinds = Vec::with_capacity(ops.len());
                let mut paths = Vec::with_capacity(ops.len());
                let mut failed = None;
                for (index, op) in ops.iter().enumerate() {
                    match self.prepare(session, OpRef::of(op), zxid, now_ms, &mut overlay) {
                        Ok((kind, path)) => {
                            kinds.extend(kind);
                            paths.push(path);
                        }
                        Err(source) => {
                            failed = Some(Error::Multi {
                                index,
                                source: Box::new(source),
                            });
                            break;
                        }
                    }
                }
                match failed {
                    Some(e) => Err(e),
                    None => Ok((TxnKind::Multi(kinds), paths)),
                }
            }
            Request::SetAcl { path, acl, version } => self
                .prepare_set_acl(session, path, acl, *version)
                .map(|kind| (kind, vec![None])),
            single => {
                let op = OpRef::of_single(single).expect("multi and setACL handled above");
                self.prepare(session, op, zxid, now_ms, &mut overlay)
                    .map(|(kind, path)| (kind.expect("a single op is never a check"), vec![path]))
            }
        };
        let (kind, paths) = match prepared {
            Ok(p) => p,
            Err(e) => {
                // An error transaction is committed and answered like any other: a failed
                // write orders later reads too.
                self.commit_and_answer(now_ms, session, server, TxnKind::Error, events);
                return Err(e);
            }
        };
        let is_multi = matches!(kind, TxnKind::Multi(_));
        let stats = self.commit_and_answer(now_ms, session, server, kind, events);
        let mut stats = stats.into_iter();
        let mut next_stat = || stats.next().expect("one stat per create and set");
        match request {
            Request::Create { .. } => Ok(Reply::Created {
                path: paths[0].clone().expect("create has a path"),
                stat: next_stat(),
            }),
            Request::Delete { .. } => Ok(Reply::Deleted),
            Request::SetData { .. } => Ok(Reply::Set(next_stat())),
            Request::SetAcl { .. } => Ok(Reply::AclSet(next_stat())),
            Request::Multi(ops) => {
                assert!(is_multi, "multi prepared into a single transaction");
                let results = ops
                    .iter()
                    .zip(paths)
                    .map(|(op, path)| match op {
                        Op::Check { .. } => OpResult::Check,
                        Op::Create { .. } => {
                            let stat = next_stat();
                            OpResult::Create {
                                path: path.expect("create has a path"),
                                stat: self.features.multi_create_stats.then_some(stat),
                            }
                        }
                        Op::SetData { .. } => OpResult::SetData { stat: next_stat() },
                        Op::Delete { .. } => OpResult::Delete,
                    })
                    .collect();
                Ok(Reply::Multi(results))
            }
            _ => unreachable!("write() called with a read"),
        }
    }

    /// Commits `kind` for a session on `server`, which answers only after applying it: a
    /// follower catches up first.
    fn commit_and_answer(
        &mut self,
        now_ms: i64,
        session: SessionId,
        server: Server,
        kind: TxnKind,
        events: &mut Vec<Fired>,
    ) -> Vec<Stat> {
        let stats = self.commit(now_ms, session, kind, events);
        if let Server::Follower(i) = server {
            events.extend(self.sync_follower_of(i));
        }
        stats
    }

    /// Assigns the next zxid to `kind`, applies it to the leader and queues it for the
    /// follower.
    pub(super) fn commit(
        &mut self,
        now_ms: i64,
        session: SessionId,
        kind: TxnKind,
        events: &mut Vec<Fired>,
    ) -> Vec<Stat> {
        self.zxid += 1;
        let txn = Txn {
            zxid: self.zxid,
            time_ms: now_ms,
            session,
            kind,
        };
        let stats = self.tree.apply(&txn, events);
        if !self.followers.is_empty() {
            let txn = std::sync::Arc::new(txn);
            for f in &mut self.followers {
                f.backlog.push_back(txn.clone());
            }
        }
        stats
    }

    pub(super) fn end_session(&mut self, now_ms: i64, session: SessionId, events: &mut Vec<Fired>) {
        let server = self.sessions[&session].server;
        self.commit(now_ms, session, TxnKind::CloseSession, events);
        if let Server::Follower(i) = server {
            // The session's watches live in the follower's tree: drop them now, since the
            // follower may apply the close much later.
            events.extend(self.sync_follower_of(i));
        }
        self.sessions.remove(&session);
        events.retain(|f| f.session != session);
    }

    pub(super) fn record(&self, overlay: &Overlay, path: &str) -> Option<Record> {
        match overlay.get(path) {
            Some(r) => r.clone(),
            None => self.tree.node(path).map(|n| Record {
                stat: n.stat,
                acl: n.acl.clone(),
            }),
        }
    }

    /// Checks a `setACL` as ZooKeeper's `PrepRequestProcessor` does, in its order: the ACL
    /// (`InvalidAcl`), the node (`NoNode`), the session's `ADMIN` right (`NoAuth`), the ACL
    /// version (`BadVersion`).
    fn prepare_set_acl(
        &self,
        session: SessionId,
        path: &str,
        acl: &[Acl],
        version: Option<i32>,
    ) -> Result<TxnKind> {
        let ids = &self.sessions[&session].ids;
        let acl = acl::fixup(acl, ids).ok_or_else(|| Error::InvalidAcl {
            path: path.to_owned(),
        })?;
        let node = self.tree.node(path).ok_or_else(|| no_node(path))?;
        check(ids, &node.acl, Perms::ADMIN, path)?;
        if let Some(v) = version
            && v != -1
            && v != node.stat.aversion
        {
            return Err(Error::BadVersion {
                path: path.to_owned(),
            });
        }
        Ok(TxnKind::SetAcl {
            path: path.to_owned(),
            acl: acl.into(),
        })
    }

    /// Checks one operation against the leader's tree plus `overlay`, records its effect in
    /// the overlay, and returns its transaction (none for a check) and, for a create, the
    /// actual path.
    pub(super) fn prepare(
        &self,
        session: SessionId,
        op: OpRef<'_>,
        zxid: i64,
        now_ms: i64,
        overlay: &mut Overlay,
    ) -> Result<(Option<TxnKind>, Option<String>)> {
        let ids = &self.sessions[&session].ids;
        match op {
            OpRef::Check { path, version } => {
                let node = self.record(overlay, path).ok_or_else(|| no_node(path))?;
                check(ids, &node.acl, Perms::READ, path)?;
                check_version(&node.stat, version, path)?;
                Ok((None, None))
            }
            OpRef::Create {
                path,
                data,
                options,
            } => {
                if options.mode.is_ttl() && !self.features.ttl_nodes {
                    // ZooKeeper checks this first, before the ACL and the parent.
                    return Err(Error::Unimplemented(format!(
                        "{:?} without extendedTypesEnabled (creating {path})",
                        options.mode
                    )));
                }
                let acl: Arc<[Acl]> = match options.acl.as_deref() {
                    // The default fixes up to itself whoever the session is.
                    None => OPEN_UNSAFE.clone(),
                    Some(requested) => acl::fixup(requested, ids)
                        .ok_or_else(|| Error::InvalidAcl {
                            path: path.to_owned(),
                        })?
                        .into(),
                };
                let parent_path = avout::path::parent(path).ok_or_else(|| {
                    Error::BadArguments(format!("cannot create the root ({path})"))
                })?;
                let mut parent = self
                    .record(overlay, parent_path)
                    .ok_or_else(|| no_node(path))?;
                check(ids, &parent.acl, Perms::CREATE, path)?;
                let actual = if options.mode.is_sequential() {
                    format!(
                        "{path}{}",
                        avout::path::format_sequence(child_creates(&parent.stat))
                    )
                } else {
                    path.to_owned()
                };
                if self.record(overlay, &actual).is_some() {
                    return Err(Error::NodeExists { path: actual });
                }
                if parent.stat.ephemeral_owner != 0 {
                    return Err(Error::NoChildrenForEphemerals {
                        path: path.to_owned(),
                    });
                }
                let ephemeral_owner = if options.mode.is_ephemeral() {
                    session.0
                } else {
                    0
                };
                let ttl_ms = options
                    .ttl
                    .filter(|_| options.mode.is_ttl())
                    .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
                parent.stat.cversion += 1;
                parent.stat.num_children += 1;
                parent.stat.pzxid = zxid;
                overlay.set(parent_path, || Some(parent));
                overlay.set(&actual, || {
                    Some(Record {
                        stat: Stat {
                            czxid: zxid,
                            mzxid: zxid,
                            pzxid: zxid,
                            ctime: now_ms,
                            mtime: now_ms,
                            ephemeral_owner,
                            data_length: data.len() as i32,
                            ..Stat::default()
                        },
                        acl: acl.clone(),
                    })
                });
                Ok((
                    Some(TxnKind::Create {
                        path: actual.clone(),
                        data: data.into(),
                        acl,
                        ephemeral_owner,
                        container: options.mode == avout::CreateMode::Container,
                        ttl_ms,
                    }),
                    Some(actual),
                ))
            }
            OpRef::Delete { path, version } => {
                if is_special(path) {
                    return Err(Error::BadArguments(format!("cannot delete {path}")));
                }
                let parent_path = avout::path::parent(path).expect("special paths include /");
                let mut parent = self
                    .record(overlay, parent_path)
                    .ok_or_else(|| no_node(path))?;
                // ZooKeeper checks the parent's DELETE right before it looks the node up: a
                // missing node under a parent the session may not delete from is NoAuth.
                check(ids, &parent.acl, Perms::DELETE, path)?;
                let node = self.record(overlay, path).ok_or_else(|| no_node(path))?;
                check_version(&node.stat, version, path)?;
                if node.stat.num_children > 0 {
                    return Err(Error::NotEmpty {
                        path: path.to_owned(),
                    });
                }
                parent.stat.cversion += 1;
                parent.stat.num_children -= 1;
                parent.stat.pzxid = zxid;
                overlay.set(parent_path, || Some(parent));
                overlay.set(path, || None);
                Ok((
                    Some(TxnKind::Delete {
                        path: path.to_owned(),
                    }),
                    None,
                ))
            }
            OpRef::SetData {
                path,
                data,
                version,
            } => {
                let mut node = self.record(overlay, path).ok_or_else(|| no_node(path))?;
                check(ids, &node.acl, Perms::WRITE, path)?;
                check_version(&node.stat, version, path)?;
                node.stat.version += 1;
                node.stat.mzxid = zxid;
                node.stat.mtime = now_ms;
                node.stat.data_length = data.len() as i32;
                overlay.set(path, || Some(node));
                Ok((
                    Some(TxnKind::SetData {
                        path: path.to_owned(),
                        data: data.into(),
                    }),
                    None,
                ))
            }
        }
    }
}

/// How many children were ever created under a node (ZooKeeper's internal cversion).
fn child_creates(stat: &Stat) -> i64 {
    (i64::from(stat.cversion) + i64::from(stat.num_children)) / 2
}

fn no_node(path: &str) -> Error {
    Error::NoNode {
        path: path.to_owned(),
    }
}

fn check(ids: &acl::Identities, acl: &[Acl], perm: Perms, path: &str) -> Result<()> {
    if acl::allows(acl, perm, ids) {
        Ok(())
    } else {
        Err(Error::NoAuth {
            path: path.to_owned(),
        })
    }
}

fn check_version(stat: &Stat, expected: Option<i32>, path: &str) -> Result<()> {
    match expected {
        Some(v) if v != -1 && v != stat.version => Err(Error::BadVersion {
            path: path.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// ZooKeeper's `isSpecialPath`: nodes that cannot be deleted.
fn is_special(path: &str) -> bool {
    matches!(
        path,
        "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config"
    )
}
