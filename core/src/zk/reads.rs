//! The real backend's many-node reads and identity query: `multiRead` and `whoAmI`.

use futures::FutureExt;
use zookeeper_client as zk;

use super::ZkClient;
use super::convert::{from_zk_error, from_zk_stat};
use crate::{Error, Identity, OpFuture, ReadOp, ReadResult, Reply, Result, Watch};

impl ZkClient {
    /// The session's identities, through the client crate's `list_auth_users` (`whoAmI`).
    pub(super) fn who_am_i(&self) -> OpFuture<'_, (Reply, Option<Watch>)> {
        self.call(
            "",
            |client, _| client.list_auth_users().boxed(),
            |users| {
                let ids = users
                    .iter()
                    .map(|u| Identity {
                        scheme: u.scheme().to_owned(),
                        user: u.user().to_owned(),
                    })
                    .collect();
                (Reply::WhoAmI(ids), None)
            },
        )
    }

    /// A `multiRead` through the client crate's `MultiReader`: each read's own failure
    /// (`NoNode`, `NoAuth`) is its result; any other fails the request.
    pub(super) fn multi_read_all(
        &self,
        reads: Vec<ReadOp>,
    ) -> OpFuture<'_, (Reply, Option<Watch>)> {
        let paths: Vec<String> = reads.iter().map(|r| r.path().to_owned()).collect();
        let reply = self.call(
            "",
            |client, _| {
                let mut reader = client.new_multi_reader();
                for read in &reads {
                    let added = match read {
                        ReadOp::GetData { path } => reader.add_get_data(path),
                        ReadOp::GetChildren { path } => reader.add_get_children(path),
                    };
                    if let Err(e) = added {
                        return futures::future::ready(Err(e)).boxed();
                    }
                }
                reader.commit().boxed()
            },
            |results| results,
        );
        async move {
            let results = reply.await?;
            let read = results
                .into_iter()
                .zip(paths)
                .map(|(result, path)| match result {
                    zk::MultiReadResult::Data { data, stat } => Ok(ReadResult::Data {
                        data,
                        stat: from_zk_stat(&stat),
                    }),
                    zk::MultiReadResult::Children { children } => {
                        Ok(ReadResult::Children { children })
                    }
                    zk::MultiReadResult::Error {
                        err: zk::Error::NoNode,
                    } => Ok(ReadResult::NoNode { path }),
                    zk::MultiReadResult::Error {
                        err: zk::Error::NoAuth,
                    } => Ok(ReadResult::NoAuth { path }),
                    zk::MultiReadResult::Error { err } => Err(from_zk_error(err, &path)),
                    other => Err(Error::Other(format!("multiRead answered {other:?}"))),
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((Reply::MultiRead(read), None))
        }
        .boxed()
    }
}
