//! Routing a client's calls: a request or a close leaves its session ([`Sessions`]) on its
//! link ([`Network`]) for the agenda ([`Timeline`]); every call a broken connection carried
//! fails.
//!
//! [`Sessions`]: super::Sessions
//! [`Network`]: super::Network
//! [`Timeline`]: super::Timeline

use avout::{Error, Request, Result};
use tokio::sync::oneshot;

use super::calls::{Answer, Message, Persistent, Waiter};
use super::{Pending, SESSION_CHECK_WHILE_CLOSING, World, nanos};
use crate::hash::{Canonical, canon_close};
use crate::log::{LogEvent, canon_request};

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
        self.sessions.next_watch_id()
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
        if self.sessions.terminal(client).is_some()
            || !self
                .sessions
                .watches_mut(client)
                .remove_persistent(path, id)
        {
            return None;
        }
        Some(self.submit(
            client,
            Request::RemoveWatches {
                path: path.to_owned(),
            },
        ))
    }

    /// Submits the close of `client`'s session; the answer arrives on the returned channel.
    pub(crate) fn close(&mut self, client: usize) -> oneshot::Receiver<Result<()>> {
        let (tx, rx) = oneshot::channel();
        self.send(client, Message::Close, Waiter::Close(tx));
        rx
    }

    fn send(&mut self, client: usize, message: Message, waiter: Waiter) {
        let now = self.time.now();
        if let Some(error) = self.sessions.refusal(client) {
            waiter.fail(error);
            return;
        }
        let close = matches!(message, Message::Close);
        // Nothing leaves before an outage ends.
        let not_before = self.ensemble.outage_until().unwrap_or(0);
        let (at, epoch) = self.net.send_to_server(client, now, not_before);
        let xid = self.sessions.add_call(client, &message, waiter);
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
        self.time.schedule(
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
            let check = now + nanos(self.sessions.timeout(client));
            self.time.schedule(
                check,
                Pending::SessionCheck {
                    client,
                    since: SESSION_CHECK_WHILE_CLOSING,
                },
            );
        }
    }

    /// Every call of `client` still waiting fails with `error`; a close among them ends the
    /// session.
    pub(super) fn fail_calls(&mut self, client: usize, error: &Error) {
        let calls = self.sessions.take_calls(client);
        let mut closed = false;
        for (xid, call) in calls {
            self.log_reply(client, xid, error.name().into());
            closed |= call.is_close();
            call.fail(error.clone());
        }
        if closed {
            self.terminate(client, avout::SessionState::Closed);
        }
    }

    /// Logs the answer of call `xid` reaching `client` now.
    pub(super) fn log_reply(
        &mut self,
        client: usize,
        xid: u64,
        outcome: std::borrow::Cow<'static, str>,
    ) {
        let t = self.time.clock();
        self.log.push(
            LogEvent::Reply {
                t,
                client,
                xid,
                outcome,
            },
            |_| {},
        );
    }
}
