//! Typed helpers over any [`Coordination`] backend.

use std::future::Future;

use crate::{Coordination, CreateMode, CreateOptions, Error, Result, Stat, path};

/// Helpers every backend gets for free.
///
/// Each helper is built from idempotent steps, so it may be retried as a whole after an
/// indeterminate error.
///
/// ```
/// use avout::{Coordination, CoordinationExt};
///
/// async fn setup<C: Coordination>(zk: &C) -> avout::Result<()> {
///     zk.ensure_path("/app/config").await?;
///     let missing = zk.get_data_opt("/app/config/none").await?;
///     assert!(missing.is_none());
///     zk.delete_recursive("/app").await
/// }
/// ```
pub trait CoordinationExt: Coordination {
    /// Creates `path` and any missing ancestors as empty persistent nodes; existing nodes are
    /// left alone.
    fn ensure_path(&self, path: &str) -> impl Future<Output = Result<()>> + Send {
        async move {
            path::validate_path(path, false)?;
            let mut end = 0;
            while end < path.len() {
                end = path[end + 1..]
                    .find('/')
                    .map_or(path.len(), |i| end + 1 + i);
                match self
                    .create(&path[..end], &[], &CreateOptions::default())
                    .await
                {
                    Ok(_) | Err(Error::NodeExists { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
    }

    /// Creates a node, first creating missing ancestors as empty persistent nodes.
    fn create_with_parents(
        &self,
        path: &str,
        data: &[u8],
        options: &CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send {
        async move {
            match self.create(path, data, options).await {
                Err(Error::NoNode { .. }) => {
                    let parent = path::parent(path).unwrap_or("/");
                    if parent != "/" {
                        self.ensure_path(parent).await?;
                    }
                    self.create(path, data, options).await
                }
                other => other,
            }
        }
    }

    /// A node's data and metadata, or `None` if it does not exist.
    fn get_data_opt(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<(Vec<u8>, Stat)>>> + Send {
        async move {
            match self.get_data(path).await {
                Ok(found) => Ok(Some(found)),
                Err(Error::NoNode { .. }) => Ok(None),
                Err(e) => Err(e),
            }
        }
    }

    /// The names of a node's children, sorted (sequential names sort by sequence).
    fn sorted_children(&self, path: &str) -> impl Future<Output = Result<Vec<String>>> + Send {
        async move {
            let (mut children, _) = self.get_children(path).await?;
            children.sort_unstable();
            Ok(children)
        }
    }

    /// Deletes a node and everything below it; a missing node is not an error. Children
    /// created concurrently are deleted too (the delete is retried until the node is empty).
    fn delete_recursive(&self, path: &str) -> impl Future<Output = Result<()>> + Send {
        async move {
            path::validate_path(path, false)?;
            if path == "/" {
                return Err(Error::BadArguments("cannot delete the root".into()));
            }
            // Depth-first with an explicit stack: a boxed recursive future per level is costlier.
            let mut stack = vec![(path.to_owned(), false)];
            while let Some((node, expanded)) = stack.pop() {
                if !expanded {
                    match self.get_children(&node).await {
                        Ok((children, _)) => {
                            stack.push((node.clone(), true));
                            stack.extend(children.iter().map(|c| (path::join(&node, c), false)));
                        }
                        Err(Error::NoNode { .. }) => {}
                        Err(e) => return Err(e),
                    }
                    continue;
                }
                match self.delete(&node, None).await {
                    Ok(()) | Err(Error::NoNode { .. }) => {}
                    Err(Error::NotEmpty { .. }) => stack.push((node, false)),
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }
    }

    /// Creates an ephemeral node, with the default ACL.
    fn create_ephemeral(
        &self,
        path: &str,
        data: &[u8],
    ) -> impl Future<Output = Result<String>> + Send {
        async move {
            let (path, _) = self
                .create(path, data, &CreateMode::Ephemeral.into())
                .await?;
            Ok(path)
        }
    }
}

impl<C: Coordination + ?Sized> CoordinationExt for C {}
