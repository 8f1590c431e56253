//! Several operations in one request: reads from one state ([`MultiReader`]), writes all or
//! none ([`MultiWriter`]), and writes that also check a path ([`CheckWriter`]).

use std::future::Future;

use avout::zk::convert::to_zk_stat;
use avout::{Op, ReadOp, ReadResult, Reply, Request};

use super::client::invalid_stat;
use super::{
    call_error, CheckWriteError, Client, CreateOptions, Error, MultiReadResult, MultiWriteError,
    MultiWriteResult, Result,
};

/// Reads several nodes in one request, all from one state of the tree.
///
/// ```
/// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
/// let mut reader = client.new_multi_reader();
/// reader.add_get_data("/config")?;
/// reader.add_get_children("/workers")?;
/// let results = reader.commit().await?;
/// assert_eq!(results.len(), 2);
/// # Ok(())
/// # }
/// ```
pub struct MultiReader<'a> {
    client: &'a Client,
    reads: Vec<ReadOp>,
}

impl<'a> MultiReader<'a> {
    pub(crate) fn new(client: &'a Client) -> MultiReader<'a> {
        MultiReader {
            client,
            reads: Vec::new(),
        }
    }

    /// Adds a read of the node's data and [`Stat`](super::Stat) (see [`Client::get_data`]).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_multi_reader().add_get_data("/config")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_get_data(&mut self, path: &str) -> Result<()> {
        let (path, _) = self.client.server_path(path, false)?;
        self.reads.push(ReadOp::GetData { path });
        Ok(())
    }

    /// Adds a read of the node's children (see [`Client::get_children`]).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_multi_reader().add_get_children("/workers")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_get_children(&mut self, path: &str) -> Result<()> {
        let (path, _) = self.client.server_path(path, false)?;
        self.reads.push(ReadOp::GetChildren { path });
        Ok(())
    }

    /// Sends the reads in one request (none: answers at once, sending nothing) and leaves the
    /// reader empty. A read's own failure (`NoNode`, `NoAuth`) is its result
    /// ([`MultiReadResult::Error`]).
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let mut reader = client.new_multi_reader();
    /// assert!(reader.commit().await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn commit(&mut self) -> impl Future<Output = Result<Vec<MultiReadResult>>> + Send + 'a {
        let reads = std::mem::take(&mut self.reads);
        let sent = (!reads.is_empty()).then(|| self.client.send(Request::MultiRead(reads)));
        async move {
            let Some(sent) = sent else {
                return Ok(Vec::new());
            };
            match sent.await.map_err(|e| call_error(&e))?.0 {
                Reply::MultiRead(results) => Ok(results.into_iter().map(read_result).collect()),
                other => Err(Error::UnexpectedError(format!(
                    "unexpected reply {other:?}"
                ))),
            }
        }
    }

    /// Drops the reads added so far.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let mut reader = client.new_multi_reader();
    /// reader.add_get_data("/config")?;
    /// reader.abort();
    /// # Ok(())
    /// # }
    /// ```
    pub fn abort(&mut self) {
        self.reads.clear();
    }
}

fn read_result(result: ReadResult) -> MultiReadResult {
    match result {
        ReadResult::Data { data, stat } => MultiReadResult::Data {
            data,
            stat: to_zk_stat(&stat),
        },
        ReadResult::Children { children } => MultiReadResult::Children { children },
        ReadResult::NoNode { .. } => MultiReadResult::Error { err: Error::NoNode },
        ReadResult::NoAuth { .. } => MultiReadResult::Error { err: Error::NoAuth },
    }
}

/// Writes and version checks applied in one request, all or none.
///
/// ```
/// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::MultiWriteError> {
/// use avout_zookeeper_client::{Acls, CreateMode};
/// let mut writer = client.new_multi_writer();
/// writer.add_check_version("/config", 3)?;
/// writer.add_create("/jobs/j-", b"work", &CreateMode::PersistentSequential.with_acls(Acls::anyone_all()))?;
/// let results = writer.commit().await?;
/// assert_eq!(results.len(), 2);
/// # Ok(())
/// # }
/// ```
pub struct MultiWriter<'a> {
    client: &'a Client,
    ops: Vec<Op>,
}

impl<'a> MultiWriter<'a> {
    pub(crate) fn new(client: &'a Client) -> MultiWriter<'a> {
        MultiWriter {
            client,
            ops: Vec::new(),
        }
    }

    /// Adds a check that the node has `version` (seeing the effect of the operations before
    /// it in this writer).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_multi_writer().add_check_version("/config", 0)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<()> {
        let (path, _) = self.client.server_path(path, false)?;
        self.ops.push(Op::Check {
            path,
            version: Some(version),
        });
        Ok(())
    }

    /// Adds a create (see [`Client::create`]).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// client.new_multi_writer().add_create("/a", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all()))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        options.validate()?;
        let (path, _) = self
            .client
            .server_path(path, options.mode.is_sequential())?;
        self.ops.push(Op::Create {
            path,
            data: data.to_vec(),
            options: options.to_avout(),
        });
        Ok(())
    }

    /// Adds a data update (see [`Client::set_data`]).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_multi_writer().add_set_data("/a", b"x", None)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<()> {
        let (path, _) = self.client.server_path(path, false)?;
        self.ops.push(Op::SetData {
            path,
            data: data.to_vec(),
            version: expected_version,
        });
        Ok(())
    }

    /// Adds a delete (see [`Client::delete`]).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_multi_writer().add_delete("/a", Some(0))?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        let (path, is_root) = self.client.server_path(path, false)?;
        if is_root {
            return Err(Error::BadArguments(&"can not delete root node"));
        }
        self.ops.push(Op::Delete {
            path,
            version: expected_version,
        });
        Ok(())
    }

    /// Sends the operations in one request (none: answers at once, sending nothing) and
    /// leaves the writer empty. One operation's failure fails them all, none applied:
    /// [`MultiWriteError::OperationFailed`] names it.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) {
    /// use avout_zookeeper_client::{Error, MultiWriteError};
    /// let mut writer = client.new_multi_writer();
    /// writer.add_check_version("/config", 99).unwrap();
    /// let failed = writer.commit().await.unwrap_err();
    /// assert_eq!(failed, MultiWriteError::OperationFailed { index: 0, source: Error::BadVersion });
    /// # }
    /// ```
    pub fn commit(
        &mut self,
    ) -> impl Future<Output = std::result::Result<Vec<MultiWriteResult>, MultiWriteError>> + Send + 'a
    {
        let ops = std::mem::take(&mut self.ops);
        let client = self.client;
        let sent = (!ops.is_empty()).then(|| client.send(Request::Multi(ops)));
        async move {
            let Some(sent) = sent else {
                return Ok(Vec::new());
            };
            let results = match sent.await {
                Ok((Reply::Multi(results), _)) => results,
                Ok((other, _)) => {
                    let source = Error::UnexpectedError(format!("unexpected reply {other:?}"));
                    return Err(MultiWriteError::RequestFailed { source });
                }
                Err(avout::Error::Multi { index, source }) => {
                    let source = call_error(&source);
                    return Err(MultiWriteError::OperationFailed { index, source });
                }
                Err(e) => {
                    return Err(MultiWriteError::RequestFailed {
                        source: call_error(&e),
                    })
                }
            };
            results
                .into_iter()
                .map(|result| write_result(client, result))
                .collect::<Result<Vec<_>>>()
                .map_err(|source| MultiWriteError::RequestFailed { source })
        }
    }

    /// Drops the operations added so far.
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// let mut writer = client.new_multi_writer();
    /// writer.add_delete("/a", None).unwrap();
    /// writer.abort();
    /// # }
    /// ```
    pub fn abort(&mut self) {
        self.ops.clear();
    }
}

fn write_result(client: &Client, result: avout::OpResult) -> Result<MultiWriteResult> {
    Ok(match result {
        avout::OpResult::Check => MultiWriteResult::Check,
        avout::OpResult::Delete => MultiWriteResult::Delete,
        avout::OpResult::SetData { stat } => MultiWriteResult::SetData {
            stat: to_zk_stat(&stat),
        },
        // A server before 3.8.2 answers an invalid stat (ZOOKEEPER-4026).
        avout::OpResult::Create { path, stat } => MultiWriteResult::Create {
            path: client.client_path(&path)?,
            stat: stat.as_ref().map_or_else(invalid_stat, to_zk_stat),
        },
    })
}

/// A [`MultiWriter`] whose first operation checks a path's version: its
/// [`commit`](Self::commit) reports that check's failure on its own
/// ([`CheckWriteError::CheckFailed`]).
///
/// ```
/// # async fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
/// let mut writer = client.new_check_writer("/leader", None)?;
/// writer.add_set_data("/config", b"x", None)?;
/// writer.commit().await?;
/// # Ok(())
/// # }
/// ```
pub struct CheckWriter<'a> {
    pub(crate) writer: MultiWriter<'a>,
}

impl<'a> CheckWriter<'a> {
    /// See [`MultiWriter::add_check_version`].
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_check_writer("/leader", None)?.add_check_version("/config", 1)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_check_version(&mut self, path: &str, version: i32) -> Result<()> {
        self.writer.add_check_version(path, version)
    }

    /// See [`MultiWriter::add_create`].
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// use avout_zookeeper_client::{Acls, CreateMode};
    /// let open = CreateMode::Persistent.with_acls(Acls::anyone_all());
    /// client.new_check_writer("/leader", None)?.add_create("/a", b"", &open)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_create(
        &mut self,
        path: &str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> Result<()> {
        self.writer.add_create(path, data, options)
    }

    /// See [`MultiWriter::add_set_data`].
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_check_writer("/leader", None)?.add_set_data("/a", b"x", None)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_set_data(
        &mut self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> Result<()> {
        self.writer.add_set_data(path, data, expected_version)
    }

    /// See [`MultiWriter::add_delete`].
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// client.new_check_writer("/leader", None)?.add_delete("/a", None)?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn add_delete(&mut self, path: &str, expected_version: Option<i32>) -> Result<()> {
        self.writer.add_delete(path, expected_version)
    }

    /// Commits as [`MultiWriter::commit`], the check's failure apart: `CheckFailed`.
    ///
    /// ```
    /// # async fn demo(client: &avout_zookeeper_client::Client) {
    /// use avout_zookeeper_client::{CheckWriteError, Error};
    /// let writer = client.new_check_writer("/gone", None).unwrap();
    /// let failed = writer.commit().await.unwrap_err();
    /// assert_eq!(failed, CheckWriteError::CheckFailed { source: Error::NoNode });
    /// # }
    /// ```
    pub fn commit(
        mut self,
    ) -> impl Future<Output = std::result::Result<Vec<MultiWriteResult>, CheckWriteError>> + Send + 'a
    {
        let commit = self.writer.commit();
        async move {
            let mut results = commit.await?;
            if results.is_empty() {
                return Err(CheckWriteError::RequestFailed {
                    source: Error::UnexpectedError("expect path check, got none".to_string()),
                });
            }
            match results.remove(0) {
                MultiWriteResult::Check => Ok(results),
                other => Err(CheckWriteError::RequestFailed {
                    source: Error::UnexpectedError(format!(
                        "expect MultiWriteResult::Check, got {other:?}"
                    )),
                }),
            }
        }
    }
}

impl Client {
    /// A [`MultiReader`].
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// let reader = client.new_multi_reader();
    /// # let _ = reader;
    /// # }
    /// ```
    pub fn new_multi_reader(&self) -> MultiReader<'_> {
        MultiReader::new(self)
    }

    /// A [`MultiWriter`].
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) {
    /// let writer = client.new_multi_writer();
    /// # let _ = writer;
    /// # }
    /// ```
    pub fn new_multi_writer(&self) -> MultiWriter<'_> {
        MultiWriter::new(self)
    }

    /// A [`CheckWriter`] whose commit first checks `path`'s version (`None`: that it exists).
    ///
    /// ```
    /// # fn demo(client: &avout_zookeeper_client::Client) -> Result<(), avout_zookeeper_client::Error> {
    /// let writer = client.new_check_writer("/leader", Some(0))?;
    /// # let _ = writer;
    /// # Ok(())
    /// # }
    /// ```
    pub fn new_check_writer(&self, path: &str, version: Option<i32>) -> Result<CheckWriter<'_>> {
        let mut writer = self.new_multi_writer();
        writer.add_check_version(path, version.unwrap_or(-1))?;
        Ok(CheckWriter { writer })
    }
}
