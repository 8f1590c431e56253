//! Sending one request: [`ZkClient::send`], an arm per operation, and its timing.

use futures::FutureExt;

use super::convert::{self, from_zk_acl, from_zk_stat, to_zk_acls};
use super::{ZkClient, refused};
use crate::{Error, OpFuture, Reply, Request, Watch};

impl ZkClient {
    /// One arm per operation: each validates nothing itself (`submit` did), calls the client
    /// crate now (submission happens at the call) and maps its reply.
    pub(super) fn send(&self, request: Request) -> OpFuture<'_, (Reply, Option<Watch>)> {
        match request {
            Request::Create {
                path,
                data,
                options,
            } => {
                let acl = options.acl.as_deref().map(to_zk_acls).unwrap_or_default();
                let zk_options = self.create_options(&options, &acl);
                let sequential = options.mode.is_sequential();
                self.call(
                    &path.clone(),
                    |client, p| client.create(p, &data, &zk_options).boxed(),
                    move |(stat, seq)| {
                        let path = if sequential {
                            format!("{path}{seq}")
                        } else {
                            path
                        };
                        let stat = from_zk_stat(&stat);
                        (Reply::Created { path, stat }, None)
                    },
                )
            }
            Request::Delete { path, version } => self.call(
                &path,
                |client, p| client.delete(p, version).boxed(),
                |()| (Reply::Deleted, None),
            ),
            Request::GetData { path, watch: false } => self.call(
                &path,
                |client, p| client.get_data(p).boxed(),
                |(data, stat)| {
                    let stat = from_zk_stat(&stat);
                    (Reply::Data { data, stat }, None)
                },
            ),
            Request::GetData { path, watch: true } => self.call(
                &path,
                |client, p| client.get_and_watch_data(p).boxed(),
                |(data, stat, watcher)| {
                    let stat = from_zk_stat(&stat);
                    (Reply::Data { data, stat }, Some(self.watch(watcher)))
                },
            ),
            Request::SetData {
                path,
                data,
                version,
            } => self.call(
                &path,
                |client, p| client.set_data(p, &data, version).boxed(),
                |stat| (Reply::Set(from_zk_stat(&stat)), None),
            ),
            Request::Exists { path, watch: false } => self.call(
                &path,
                |client, p| client.check_stat(p).boxed(),
                |stat| (Reply::Exists(stat.as_ref().map(from_zk_stat)), None),
            ),
            Request::Exists { path, watch: true } => self.call(
                &path,
                |client, p| client.check_and_watch_stat(p).boxed(),
                |(stat, watcher)| {
                    let stat = stat.as_ref().map(from_zk_stat);
                    (Reply::Exists(stat), Some(self.watch(watcher)))
                },
            ),
            Request::GetChildren { path, watch: false } => self.call(
                &path,
                |client, p| client.get_children(p).boxed(),
                |(children, stat)| {
                    let stat = from_zk_stat(&stat);
                    (Reply::Children { children, stat }, None)
                },
            ),
            Request::GetChildren { path, watch: true } => self.call(
                &path,
                |client, p| client.get_and_watch_children(p).boxed(),
                |(children, stat, watcher)| {
                    let stat = from_zk_stat(&stat);
                    (
                        Reply::Children { children, stat },
                        Some(self.watch(watcher)),
                    )
                },
            ),
            Request::Multi(ops) => self
                .multi(ops)
                .map(|results| results.map(|r| (Reply::Multi(r), None)))
                .boxed(),
            Request::Sync { path } => self.call(
                &path,
                |client, p| client.sync(p).boxed(),
                |()| (Reply::Synced, None),
            ),
            Request::GetAcl { path } => self.call(
                &path,
                |client, p| client.get_acl(p).boxed(),
                |(acl, stat)| {
                    let acl = acl.iter().map(from_zk_acl).collect();
                    (
                        Reply::Acl {
                            acl,
                            stat: from_zk_stat(&stat),
                        },
                        None,
                    )
                },
            ),
            Request::AddAuth { scheme, auth } => self.call(
                "",
                |client, _| client.auth(&scheme, &auth).boxed(),
                |()| (Reply::AuthAdded, None),
            ),
            Request::SetAcl { path, acl, version } => {
                let acl = to_zk_acls(&acl);
                self.call(
                    &path,
                    |client, p| client.set_acl(p, &acl, version).boxed(),
                    |stat| (Reply::AclSet(from_zk_stat(&stat)), None),
                )
            }
            Request::GetEphemerals { prefix } => self.call(
                &prefix,
                |client, p| client.list_ephemerals(p).boxed(),
                |paths| (Reply::Ephemerals(paths), None),
            ),
            Request::GetAllChildrenNumber { path } => self.call(
                &path,
                |client, p| client.count_descendants_number(p).boxed(),
                |n| (Reply::AllChildrenNumber(n as u64), None),
            ),
            // Armed and dropped: the client crate disarms a watcher nobody holds.
            Request::AddWatch { path, mode } => self.call(
                &path,
                |client, p| client.watch(p, convert::to_zk_watch_mode(mode)).boxed(),
                |_watcher| (Reply::WatchAdded, None),
            ),
            Request::RemoveWatches { path } => refused(Error::Unimplemented(format!(
                "removeWatches on {path}: the client crate removes a watch through its handle \
                 (PersistentWatch::remove)"
            ))),
            Request::MultiRead(reads) => self.multi_read_all(reads),
            Request::WhoAmI => self.who_am_i(),
        }
    }
}

/// `reply`, recording how long it took from now and how it ended under `op`
/// ([`crate::metrics::request`]).
pub(super) fn timed<'a, T: Send + 'a>(op: &'static str, reply: OpFuture<'a, T>) -> OpFuture<'a, T> {
    let sent = std::time::Instant::now();
    reply
        .map(move |result| {
            crate::metrics::request(op, sent.elapsed(), result.as_ref().err());
            result
        })
        .boxed()
}
