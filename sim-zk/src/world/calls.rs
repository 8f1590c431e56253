//! A client's calls: what it sends the service, who waits for the answer, and how the answer
//! (a reply, a watch to register, or the failure of every call a broken connection carried)
//! reaches the caller.

use avout::{
    AddWatchMode, Error, EventKind, PersistentSender, Reply, Request, Result, SessionState, Watch,
    WatchSender, WatchedEvent,
};
use futures::channel::oneshot;

use super::{Link, Pending, SESSION_CHECK_WHILE_CLOSING, World, nanos};
use crate::hash::{CLOSE, Canonical, canon_close};
use crate::log::{LogEvent, canon_request};

/// What a request's call waits for: the reply and, for a read that armed one, the watch.
type Answer = Result<(Reply, Option<Watch>)>;

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

pub(super) struct Call {
    waiter: Waiter,
    watch: Option<(WatchKind, String)>,
}

impl Call {
    pub(super) fn fail(self, error: Error) {
        self.waiter.fail(error);
    }

    pub(super) fn is_close(&self) -> bool {
        matches!(self.waiter, Waiter::Close(_))
    }
}

#[derive(Default)]
pub(super) struct WatchSet {
    data: Vec<WatchSender>,
    child: Vec<WatchSender>,
    persistent: Vec<Persistent>,
}

impl WatchSet {
    /// Fires every watch of the set with the end of the session.
    pub(super) fn end(self, state: SessionState) {
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

impl World {
    /// Submits a request of `client`; the reply (or error) arrives on the returned channel.
    pub(crate) fn submit(&mut self, client: usize, request: Request) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        self.send(client, Message::Request(request), Waiter::Request(tx));
        rx
    }

    /// Submits an `addWatch` of `client` whose events go to `watch` once the service armed it;
    /// the outcome arrives on the returned channel.
    pub(crate) fn submit_persistent(
        &mut self,
        client: usize,
        watch: Persistent,
    ) -> oneshot::Receiver<Result<()>> {
        let (tx, rx) = oneshot::channel();
        let request = Request::AddWatch {
            path: watch.path.clone(),
            mode: watch.mode,
        };
        self.send(
            client,
            Message::Request(request),
            Waiter::Persistent(tx, watch),
        );
        rx
    }

    /// A fresh id for a persistent watch.
    pub(crate) fn next_watch_id(&mut self) -> u64 {
        self.watch_ids += 1;
        self.watch_ids
    }

    /// Drops persistent watch `id` of `client` on `path` and, if the client has no other
    /// watch there, asks the service to remove its watches there (the client crate does the
    /// same: `removeWatches` goes out only for a path nothing else watches). `None` if nothing
    /// is sent (another watch remains, or the session is over).
    pub(crate) fn remove_persistent(
        &mut self,
        client: usize,
        path: &str,
        id: u64,
    ) -> Option<oneshot::Receiver<Answer>> {
        let c = &mut self.clients[client];
        if c.terminal.is_some() {
            return None;
        }
        let set = c.watches.get_mut(path)?;
        let before = set.persistent.len();
        set.persistent.retain(|p| p.id != id);
        if set.persistent.len() == before {
            return None;
        }
        if !set.is_empty() {
            return None;
        }
        c.watches.remove(path);
        Some(self.submit(
            client,
            Request::RemoveWatches {
                path: path.to_owned(),
            },
        ))
    }

    /// Reports a connection change to every persistent watch of `client`.
    pub(super) fn tell_persistent(&mut self, client: usize, state: SessionState) {
        for set in self.clients[client].watches.values_mut() {
            set.persistent.retain(|p| p.sender.connection(state));
        }
    }

    /// Submits the close of `client`'s session; the answer arrives on the returned channel.
    pub(crate) fn close(&mut self, client: usize) -> oneshot::Receiver<Result<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(client, Message::Close, Waiter::Close(tx));
        rx
    }

    pub(super) fn send(&mut self, client: usize, message: Message, waiter: Waiter) {
        let now = self.now();
        let c = &self.clients[client];
        if let Some(state) = c.terminal {
            waiter.fail(state.terminal_error().expect("terminal state has an error"));
            return;
        }
        if c.closing {
            waiter.fail(Error::Closed);
            return;
        }
        let close = matches!(message, Message::Close);
        let base = match c.link {
            Link::Up => now,
            Link::Down { until, .. } => now.max(until),
        };
        let base = base.max(self.outage_until.unwrap_or(0));
        let latency = self.latency();
        let c = &mut self.clients[client];
        let at = (base + latency).max(c.to_server_last);
        c.to_server_last = at;
        c.next_xid += 1;
        let xid = c.next_xid;
        let epoch = c.epoch;
        c.calls.insert(
            xid,
            Call {
                watch: message.watch(),
                waiter,
            },
        );
        if close {
            c.closing = true;
        }
        let (op, path) = (message.name(), message.path());
        self.log.push_with(
            |h| {
                canon_request(h, now, client, xid, op, path);
                match &message {
                    Message::Request(r) => r.canon(h),
                    Message::Close => canon_close(h),
                }
            },
            || LogEvent::Request {
                t: now,
                client,
                xid,
                op: op.into(),
                path: path.map(str::to_owned),
            },
        );
        self.schedule(
            at,
            Pending::ToServer {
                client,
                epoch,
                xid,
                message,
            },
        );
        if close {
            // A close whose request or reply is lost leaves the session to time out.
            let check = now + nanos(self.clients[client].timeout);
            self.schedule(
                check,
                Pending::SessionCheck {
                    client,
                    since: SESSION_CHECK_WHILE_CLOSING,
                },
            );
        }
    }

    pub(super) fn complete(&mut self, client: usize, call: Call, result: Result<Option<Reply>>) {
        // The caller may have dropped its future; the request still happened.
        match (call.waiter, result) {
            (waiter, Err(e)) => waiter.fail(e),
            (Waiter::Close(tx), Ok(None)) => {
                let _ = tx.send(Ok(()));
            }
            (Waiter::Request(tx), Ok(Some(reply))) => {
                let watch = call.watch.map(|(kind, path)| {
                    let (sender, watch) = Watch::channel();
                    let set = self.clients[client].watches.entry(path).or_default();
                    match kind {
                        WatchKind::Data => set.data.push(sender),
                        WatchKind::Child => set.child.push(sender),
                    }
                    watch
                });
                let _ = tx.send(Ok((reply, watch)));
            }
            (Waiter::Persistent(tx, watch), Ok(Some(_))) => {
                let set = self.clients[client]
                    .watches
                    .entry(watch.path.clone())
                    .or_default();
                set.persistent.push(watch);
                let _ = tx.send(Ok(()));
            }
            (Waiter::Close(_), Ok(Some(_)))
            | (Waiter::Request(_) | Waiter::Persistent(..), Ok(None)) => {
                unreachable!("the service answers a close with None and a request with a reply")
            }
        }
    }

    /// Fans a server event out to the client's watches, as ZooKeeper's client does: data and
    /// exists watches for created, changed and deleted; child watches for children changed
    /// and deleted; persistent watches on the path for all four; recursive ones on the path
    /// or an ancestor for all but children changed.
    ///
    /// `lost_to_persistent`: the event reached the client across a broken connection (sent on
    /// an older one, or held while it was down). A one-shot watch still hears it (ZooKeeper
    /// re-arms one-shot watches on reconnection and reports what they missed); a persistent
    /// one does not (re-armed without catching up, ZOOKEEPER-4698).
    pub(super) fn fire_watches(
        &mut self,
        client: usize,
        event: WatchedEvent,
        lost_to_persistent: bool,
    ) {
        use avout::EventKind::*;
        let watches = &mut self.clients[client].watches;
        if !lost_to_persistent && !matches!(event.kind, Session) {
            for (path, set) in watches.iter_mut() {
                if !avout::path::is_descendant(&event.path, path) && *path != event.path {
                    continue;
                }
                set.persistent
                    .retain(|p| !p.covers(event.kind, &event.path) || p.sender.send(event.clone()));
            }
        }
        let Some(set) = watches.get_mut(&event.path) else {
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
            watches.remove(&event.path);
        }
        for tx in fire {
            tx.fire(event.clone());
        }
    }

    pub(super) fn fail_calls(&mut self, client: usize, error: &Error) {
        let calls = std::mem::take(&mut self.clients[client].calls);
        let mut closed = false;
        for (xid, call) in calls {
            let t = self.clock;
            self.log.push(
                LogEvent::Reply {
                    t,
                    client,
                    xid,
                    outcome: error.name().into(),
                },
                |_| {},
            );
            closed |= call.is_close();
            call.waiter.fail(error.clone());
        }
        if closed {
            self.terminate(client, SessionState::Closed);
        }
    }
}
