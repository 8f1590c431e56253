//! A session as the clients sharing it see it: the simulated session, its states as
//! `zookeeper-client` names them, the watchers registered on it, and its end.
//!
//! The session lives as long as a [`Client`](super::Client) does (clones and chroots share
//! it). When the last goes, the session is closed, or, if it was opened detached, left for
//! the service to expire unless `Connector::with_session` takes it up again. A task of the
//! process that opened it carries the simulator's session states to its
//! [`StateWatcher`]s, and gives the session up after 7/5 of its timeout without a server, as
//! the real client does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use avout::task::watch;
use avout::zk::convert::to_zk_state;
use avout::{Coordination, SessionStates};
use avout_sim_zk::{SimClient, SimZk};

use super::SessionState;

/// How long a client goes on trying to reach a server before it gives its session up: the
/// real client's `session_expired_timeout`, 7/5 of the negotiated timeout.
pub(crate) fn give_up_after(timeout: Duration) -> Duration {
    timeout * 7 / 5
}

/// What a watcher watches: the kinds `zookeeper-client` tells apart when it removes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WatcherKind {
    Data,
    Child,
    Persistent,
}

/// The session's watchers, by server path, so that removing one asks the server only when it
/// was the last there.
#[derive(Debug, Default)]
struct WatchBook {
    next: u64,
    paths: BTreeMap<String, Vec<(u64, WatcherKind)>>,
}

/// One session, shared by the clients that use it.
pub(crate) struct Session {
    /// Taken when the session ends here (closed, or detached).
    client: Option<SimClient>,
    index: usize,
    detached: bool,
    state: Arc<watch::Sender<SessionState>>,
    watchers: Mutex<WatchBook>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("index", &self.index)
            .field("detached", &self.detached)
            .finish()
    }
}

impl Session {
    /// Takes over `client`, a session just opened (or resumed) from the calling process, and
    /// starts the task that reports its states there.
    pub(crate) fn new(zk: SimZk, client: SimClient, detached: bool) -> Arc<Session> {
        let timeout = client.session().timeout;
        let states = client.session_states();
        let (tx, _) = watch::channel(to_zk_state(states.current()));
        let state = Arc::new(tx);
        tokio::spawn(report(states, state.clone(), zk, client.index(), timeout));
        Arc::new(Session {
            index: client.index(),
            client: Some(client),
            detached,
            state,
            watchers: Mutex::new(WatchBook::default()),
        })
    }

    /// The simulated session.
    pub(crate) fn client(&self) -> &SimClient {
        self.client
            .as_ref()
            .expect("the session is live while a client holds it")
    }

    /// A new receiver of the session's states.
    pub(crate) fn states(&self) -> watch::Receiver<SessionState> {
        self.state.subscribe()
    }

    /// The session's state now: the simulated session's own, so that a call that failed
    /// because the session ended finds it ended here too, as the real client's session task
    /// changes its state before it fails the calls.
    pub(crate) fn state(&self) -> SessionState {
        let reported = *self.state.borrow();
        if reported.is_terminated() {
            return reported;
        }
        to_zk_state(self.client().session_state())
    }

    /// Registers a watcher on `path` (a server path); its id.
    pub(crate) fn add_watcher(&self, path: &str, kind: WatcherKind) -> u64 {
        let mut book = self.watchers.lock().expect("never poisoned");
        book.next += 1;
        let id = book.next;
        book.paths
            .entry(path.to_owned())
            .or_default()
            .push((id, kind));
        id
    }

    /// Unregisters watcher `id`; whether it was the last watcher on `path`.
    pub(crate) fn remove_watcher(&self, path: &str, id: u64) -> bool {
        let mut book = self.watchers.lock().expect("never poisoned");
        let Some(watchers) = book.paths.get_mut(path) else {
            return false;
        };
        let before = watchers.len();
        watchers.retain(|(w, _)| *w != id);
        let removed = watchers.len() < before;
        let last = watchers.is_empty();
        if last {
            book.paths.remove(path);
        }
        removed && last
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        if self.detached {
            // The connection closes, the session stays for `with_session` to take up.
            self.state.send_replace(SessionState::Closed);
            client.detach();
        }
        // Otherwise dropping the last handle closes the session (its states follow).
    }
}

/// Carries the simulated session's states to the watch channel, and gives the session up
/// once it has been disconnected for longer than the real client waits.
async fn report(
    mut states: SessionStates,
    state: Arc<watch::Sender<SessionState>>,
    zk: SimZk,
    client: usize,
    timeout: Duration,
) {
    let mut down_since = None;
    loop {
        if state.borrow().is_terminated() {
            return;
        }
        let next = match down_since {
            None => states.next().await,
            Some(since) => {
                let deadline = since + give_up_after(timeout);
                tokio::select! {
                    biased;
                    next = states.next() => next,
                    () = tokio::time::sleep_until(deadline) => {
                        zk.give_up(client);
                        down_since = None;
                        continue;
                    }
                }
            }
        };
        let Some(next) = next else {
            return;
        };
        let next = to_zk_state(next);
        down_since = match next {
            SessionState::Disconnected => down_since.or_else(|| Some(tokio::time::Instant::now())),
            _ => None,
        };
        if !state.borrow().is_terminated() {
            state.send_replace(next);
        }
    }
}
