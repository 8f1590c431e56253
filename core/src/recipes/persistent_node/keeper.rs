//! The persistent node's task: create the node, watch it, create it again when it goes.

use std::sync::Arc;
use std::time::Duration;

use crate::task::watch;
use futures::FutureExt;
use futures::channel::oneshot;

use crate::client::Session;
use crate::sync::{Mutex, lock};
use crate::{Client, CoordinationExt, CreateMode, CreateOptions, Error, EventKind, Result, Stat};

use super::Shared;

/// How long to wait before trying again after an indeterminate error.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

pub(super) struct Keeper {
    pub(super) client: Client,
    pub(super) path: String,
    pub(super) options: CreateOptions,
    pub(super) shared: Arc<Mutex<Shared>>,
    pub(super) data: watch::Receiver<Vec<u8>>,
    pub(super) stat: watch::Sender<Option<Stat>>,
}

/// Asked to stop.
struct Stopped;

impl Keeper {
    /// Keeps the node until stopped, or an error no retry or new session cures.
    pub(super) async fn run(mut self, stop: oneshot::Receiver<()>) {
        let mut stop = stop.fuse();
        loop {
            let session = futures::select_biased! {
                session = self.client.current_session().fuse() => session,
                _ = stop => return,
            };
            let session = match session {
                Ok(session) => session,
                Err(e) => return self.fail(e),
            };
            let error = match self.keep(&session, &mut stop).await {
                Ok(Stopped) => return,
                Err(e) => e,
            };
            self.stat.send_replace(None);
            if error.is_indeterminate() {
                futures::select_biased! {
                    () = tokio::time::sleep(RETRY_PAUSE).fuse() => {}
                    _ = stop => return,
                }
            } else if !error.is_session_lost() || self.client.has_ended() {
                return self.fail(error);
            } else {
                // A lost session: the next loop pins the client's next one, once the client
                // is past this one (see `Client::past_session`).
                futures::select_biased! {
                    _ = self.client.past_session(session.generation()).fuse() => {}
                    _ = stop => return,
                }
            }
        }
    }

    fn fail(&self, error: Error) {
        self.stat.send_replace(None);
        lock(&self.shared).error = Some(error);
    }

    fn ours(&self, session: &Session, stat: &Stat) -> bool {
        match self.options.mode {
            CreateMode::Ephemeral => stat.ephemeral_owner == session.session().id.0,
            _ => !stat.is_ephemeral(),
        }
    }

    /// On one session: creates the node (or finds it), then watches it and creates it again
    /// each time it goes, until stopped or an error.
    async fn keep(
        &mut self,
        session: &Session,
        stop: &mut futures::future::Fuse<oneshot::Receiver<()>>,
    ) -> Result<Stopped> {
        loop {
            let created_with = self.ensure(session).await?;
            let (stat, watch) = session.exists_and_watch(&self.path).await?;
            let Some(stat) = stat else { continue };
            let ours = self.ours(session, &stat);
            let wanted = self.data.borrow().clone();
            let stale = match created_with {
                Some(data) => data != wanted,
                // Found there (a persistent node taken over, a create whose reply was lost).
                None if ours => match session.get_data(&self.path).await {
                    Ok((data, _)) => data != wanted,
                    // Gone since: created again by the next turn.
                    Err(Error::NoNode { .. }) => continue,
                    Err(e) => return Err(e),
                },
                None => false,
            };
            if ours && stale {
                // Other data than the handle's (or a `set_data` raced the creation): write
                // the handle's, then watch again.
                match session.set_data(&self.path, &wanted, None).await {
                    Ok(_) | Err(Error::NoNode { .. }) => continue,
                    Err(e) => return Err(e),
                }
            }
            self.stat.send_replace(ours.then_some(stat));
            let touch = match self.options.ttl {
                Some(ttl) if ours => ttl / 2,
                _ => Duration::from_secs(3600),
            };
            let mut watch = watch.fuse();
            let mut data = self.data.clone();
            // A stop wins over everything else ready with it; the data's change is marked seen
            // once taken, or every later turn would find it changed again and spin.
            futures::select_biased! {
                _ = &mut *stop => return Ok(Stopped),
                event = watch => {
                    if event.kind == EventKind::Session {
                        return Err(event.state.terminal_error().unwrap_or(Error::Closed));
                    }
                    // Deleted: created again by the next turn; anything else: watched again.
                }
                changed = data.changed().fuse() => match changed {
                    // The handle wrote it already; the next turn checks it is there.
                    Ok(()) => self.data.mark_unchanged(),
                    // The handle is gone (its stop with it).
                    Err(_) => return Ok(Stopped),
                },
                () = tokio::time::sleep(touch).fuse() => {
                    let data = self.data.borrow().clone();
                    match session.set_data(&self.path, &data, None).await {
                        Ok(_) | Err(Error::NoNode { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }

    /// Creates the node (and any missing parents) unless something stands at its path;
    /// returns the data it created it with (`None`: found there).
    async fn ensure(&self, session: &Session) -> Result<Option<Vec<u8>>> {
        loop {
            let data = self.data.borrow().clone();
            match session.create(&self.path, &data, &self.options).await {
                Ok(_) => return Ok(Some(data)),
                Err(Error::NodeExists { .. }) => return Ok(None),
                Err(Error::NoNode { .. }) => {
                    let parent = crate::path::parent(&self.path).unwrap_or("/");
                    session.ensure_path(parent).await?;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
