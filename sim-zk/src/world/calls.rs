//! A client's calls: what it sends the service, who waits for the answer, and how the answer
//! (a reply, a watch to register, or the failure of every call a broken connection carried)
//! reaches the caller.

use std::collections::BTreeMap;

use avout::{
    AddWatchMode, Error, EventKind, PersistentSender, Reply, Request, Result, SessionState, Watch,
    WatchSender, WatchedEvent,
};
use tokio::sync::oneshot;

use crate::hash::CLOSE;

/// What a request's call waits for: the reply and, for a read that armed one, the watch.
pub(super) type Answer = Result<(Reply, Option<Watch>)>;

/// What a client sends the service: one of avout's requests, or the end of its session
/// (which the trait offers as `close`, not as a request).
pub(super) enum Message {
    Request(Request),
    Close,
}

impl Message {
    /// The name the log gives it.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Message::Request(r) => r.name(),
            Message::Close => CLOSE,
        }
    }

    /// The path the log gives it, if any.
    pub(super) fn path(&self) -> Option<&str> {
        match self {
            Message::Request(Request::AddAuth { .. }) | Message::Close => None,
            Message::Request(r) => Some(r.path()),
        }
    }

    pub(super) fn is_write(&self) -> bool {
        match self {
            Message::Request(r) => r.is_write(),
            Message::Close => true,
        }
    }

    /// The client-side watch table a read's watch joins, and the watched path.
    pub(super) fn watch(&self) -> Option<(WatchKind, String)> {
        let (kind, path) = match self {
            Message::Request(Request::GetData { path, watch: true })
            | Message::Request(Request::Exists { path, watch: true }) => (WatchKind::Data, path),
            Message::Request(Request::GetChildren { path, watch: true }) => {
                (WatchKind::Child, path)
            }
            _ => return None,
        };
        Some((kind, path.clone()))
    }
}

/// Who waits for a call's answer.
pub(super) enum Waiter {
    Request(oneshot::Sender<Answer>),
    Close(oneshot::Sender<Result<()>>),
    /// An `addWatch` made by `Coordination::add_watch`: the watch joins the client's table
    /// when the service has armed it.
    Persistent(oneshot::Sender<Result<()>>, Persistent),
}

impl Waiter {
    pub(super) fn fail(self, error: Error) {
        // The caller may have dropped its future; nobody needs to hear of it then.
        let _ = match self {
            Waiter::Request(tx) => tx.send(Err(error)).map_err(drop),
            Waiter::Close(tx) | Waiter::Persistent(tx, _) => tx.send(Err(error)).map_err(drop),
        };
    }
}

/// A persistent watch of a client: its id (to remove it), path, mode and stream.
pub(crate) struct Persistent {
    pub(crate) id: u64,
    pub(crate) path: String,
    pub(crate) mode: AddWatchMode,
    pub(crate) sender: PersistentSender,
}

impl Persistent {
    /// Whether it reports a node event for `path` (the changed node).
    fn covers(&self, kind: EventKind, path: &str) -> bool {
        if self.path == path {
            return !(self.mode.is_recursive() && kind == EventKind::NodeChildrenChanged);
        }
        self.mode.is_recursive()
            && kind != EventKind::NodeChildrenChanged
            && avout::path::is_descendant(path, &self.path)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WatchKind {
    Data,
    Child,
}

/// A call waiting for its answer: who waits, and the watch its read arms, if any.
pub(super) struct Call {
    waiter: Waiter,
    watch: Option<(WatchKind, String)>,
}

impl Call {
    pub(super) fn new(message: &Message, waiter: Waiter) -> Self {
        Call {
            watch: message.watch(),
            waiter,
        }
    }

    pub(super) fn fail(self, error: Error) {
        self.waiter.fail(error);
    }

    pub(super) fn is_close(&self) -> bool {
        matches!(self.waiter, Waiter::Close(_))
    }

    /// Hands the service's answer to the caller; a watch the call armed, or a persistent one
    /// it added, joins `watches` first.
    pub(super) fn complete(self, result: Result<Option<Reply>>, watches: &mut Watches) {
        // The caller may have dropped its future; the request still happened.
        match (self.waiter, result) {
            (waiter, Err(e)) => waiter.fail(e),
            (Waiter::Close(tx), Ok(None)) => {
                let _ = tx.send(Ok(()));
            }
            (Waiter::Request(tx), Ok(Some(reply))) => {
                let watch = self.watch.map(|(kind, path)| watches.arm(kind, path));
                let _ = tx.send(Ok((reply, watch)));
            }
            (Waiter::Persistent(tx, watch), Ok(Some(_))) => {
                watches.add_persistent(watch);
                let _ = tx.send(Ok(()));
            }
            (Waiter::Close(_), Ok(Some(_)))
            | (Waiter::Request(_) | Waiter::Persistent(..), Ok(None)) => {
                unreachable!("the service answers a close with None and a request with a reply")
            }
        }
    }
}

/// The watches of one path.
#[derive(Default)]
struct WatchSet {
    data: Vec<WatchSender>,
    child: Vec<WatchSender>,
    persistent: Vec<Persistent>,
}

impl WatchSet {
    /// Fires every watch of the set with the end of the session.
    fn end(self, state: SessionState) {
        for tx in self.data.into_iter().chain(self.child) {
            tx.fire(WatchedEvent::session_ended(state));
        }
        for p in self.persistent {
            p.sender.end(state);
        }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty() && self.child.is_empty() && self.persistent.is_empty()
    }
}

/// A client's watch table, by path, as ZooKeeper's client keeps it.
#[derive(Default)]
pub(super) struct Watches(BTreeMap<String, WatchSet>);

impl Watches {
    /// Arms a one-shot watch of `kind` on `path`.
    fn arm(&mut self, kind: WatchKind, path: String) -> Watch {
        let (sender, watch) = Watch::channel();
        let set = self.0.entry(path).or_default();
        match kind {
            WatchKind::Data => set.data.push(sender),
            WatchKind::Child => set.child.push(sender),
        }
        watch
    }

    fn add_persistent(&mut self, watch: Persistent) {
        self.0
            .entry(watch.path.clone())
            .or_default()
            .persistent
            .push(watch);
    }

    /// Drops persistent watch `id` on `path`; returns whether the client now watches nothing
    /// there (then `removeWatches` goes out: the client crate sends it only for a path
    /// nothing else watches).
    pub(super) fn remove_persistent(&mut self, path: &str, id: u64) -> bool {
        let Some(set) = self.0.get_mut(path) else {
            return false;
        };
        let before = set.persistent.len();
        set.persistent.retain(|p| p.id != id);
        if set.persistent.len() == before || !set.is_empty() {
            return false;
        }
        self.0.remove(path);
        true
    }

    /// Forgets every watch on `path`: none of them fires any more.
    #[cfg(madsim)]
    pub(super) fn forget(&mut self, path: &str) {
        self.0.remove(path);
    }

    /// Reports a connection change to every persistent watch.
    pub(super) fn tell(&mut self, state: SessionState) {
        for set in self.0.values_mut() {
            set.persistent.retain(|p| p.sender.connection(state));
        }
    }

    /// Fans a server event out, as ZooKeeper's client does: data and exists watches for
    /// created, changed and deleted; child watches for children changed and deleted;
    /// persistent watches on the path for all four; recursive ones on the path or an ancestor
    /// for all but children changed.
    ///
    /// `lost_to_persistent`: the event reached the client across a broken connection (sent on
    /// an older one, or held while it was down). A one-shot watch still hears it (ZooKeeper
    /// re-arms one-shot watches on reconnection and reports what they missed); a persistent
    /// one does not (re-armed without catching up, ZOOKEEPER-4698).
    pub(super) fn fire(&mut self, event: WatchedEvent, lost_to_persistent: bool) {
        use avout::EventKind::*;
        if !lost_to_persistent && !matches!(event.kind, Session) {
            for (path, set) in self.0.iter_mut() {
                if !avout::path::is_descendant(&event.path, path) && *path != event.path {
                    continue;
                }
                set.persistent
                    .retain(|p| !p.covers(event.kind, &event.path) || p.sender.send(event.clone()));
            }
        }
        let Some(set) = self.0.get_mut(&event.path) else {
            return;
        };
        let mut fire: Vec<WatchSender> = Vec::new();
        match event.kind {
            NodeCreated | NodeDataChanged => fire.append(&mut set.data),
            NodeChildrenChanged => fire.append(&mut set.child),
            NodeDeleted => {
                fire.append(&mut set.data);
                fire.append(&mut set.child);
            }
            _ => {}
        }
        if set.is_empty() {
            self.0.remove(&event.path);
        }
        for tx in fire {
            tx.fire(event.clone());
        }
    }

    /// Fires every watch with the end of the session, and forgets them.
    pub(super) fn end(&mut self, state: SessionState) {
        for (_, set) in std::mem::take(&mut self.0) {
            set.end(state);
        }
    }
}

pub(super) enum ClientMsg {
    /// A reply; `None` answers a close.
    Reply {
        xid: u64,
        result: Result<Option<Reply>>,
    },
    Event(WatchedEvent),
    /// The service closed the connection of an expired session.
    Expired,
}
