//! One client of the checked world: its agent, session, the two directions of its link, and
//! the watches its library holds.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use avout::machine::{Reply, Request, Token};
use avout::{Error, EventKind, SessionId, SessionState, WatchedEvent};
use avout_sim_zk::kernel::Fired;

use super::{Action, Agent, Say, Served, show_request, show_result};

/// What the server sent a client.
///
/// ```
/// let m = avout_models::world::Msg::Expired;
/// assert_eq!(m.clone(), m);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Msg {
    /// A reply (or the `ConnectionLoss` the client library reports for a lost one).
    Reply {
        /// The request's token.
        token: Token,
        /// The result.
        result: avout::Result<Reply>,
    },
    /// A watch event for the watch armed by request `token`.
    Watch {
        /// The arming request's token.
        token: Token,
        /// The event.
        event: WatchedEvent,
    },
    /// The session expired.
    Expired,
    /// The client library is connected again after its connection broke.
    Reconnected,
}

/// Which of ZooKeeper's two watch tables a watch sits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Table {
    Data,
    Child,
}

/// One client: its agent, session and the two directions of its link.
///
/// ```
/// use avout_models::{lock::LockAgent, world::{Faults, World}};
/// let w = World::new(vec![LockAgent::new(0, avout::lock::LockKind::Exclusive, 1)], Faults::NONE, &[]);
/// assert_eq!(w.clients[0].outbox.len(), 2, "create and children read, back to back");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client<A> {
    /// The client's behaviour.
    pub agent: A,
    /// Its session.
    pub session: SessionId,
    /// Requests sent, not yet processed by the server, in order.
    pub outbox: VecDeque<(Token, Request)>,
    /// What the server sent, not yet read by the client, in order.
    pub inbox: VecDeque<Msg>,
    /// The client library's watches: which requests' watches an event on a path fans out to.
    pub(super) watches: BTreeMap<(String, Table), Vec<Token>>,
    /// Whether the client has been told its session expired.
    pub told_expired: bool,
    /// Whether its connection is up. A lost request or reply breaks it (see
    /// [`Action::LoseRequest`]); requests made meanwhile wait for [`Action::Reconnect`].
    pub connected: bool,
    /// Ghost: a read of this client was served by a follower that lagged behind the leader.
    pub read_stale: bool,
    /// Ghost: its connection was cut by a disconnect or an outage (not by a lost message).
    pub cut: bool,
    /// The requests that are the agent's `sync`s, sent as every backend sends them
    /// ([`Request::quorum_sync`]); their replies go back as `Synced`.
    pub(super) syncs: BTreeSet<Token>,
}

impl<A: Agent> Client<A> {
    /// Moves what the agent wants sent into the outbox; drops what a finished agent would
    /// ignore anyway (fewer states, same behaviour).
    pub(super) fn flush(&mut self) {
        while let Some((token, request)) = self.agent.poll_request() {
            let request = match request {
                Request::Sync { path } => {
                    self.syncs.insert(token);
                    Request::quorum_sync(&path)
                }
                other => other,
            };
            self.outbox.push_back((token, request));
        }
        if self.agent.finished() {
            self.inbox.clear();
            self.watches.clear();
        }
    }

    /// Client `i` reads the head of its inbox (with `batch`, every reply at its head; with
    /// `expiry`, the expiry notice behind the watch events at its head, which it drops).
    pub(super) fn read(&mut self, i: usize, expiry: bool, batch: bool, say: &mut Say<'_>) {
        if expiry {
            while matches!(self.inbox.front(), Some(Msg::Watch { .. })) {
                self.inbox.pop_front();
            }
        }
        match self.inbox.pop_front().expect("a message") {
            Msg::Reply { token, result } => {
                let mut next = Some((token, result));
                while let Some((token, result)) = next.take() {
                    let result = if self.syncs.remove(&token) {
                        Request::quorum_synced(result)
                    } else {
                        result
                    };
                    say(&|| format!("client {i} reads reply {}", show_result(&result)));
                    self.agent.handle_reply(token, result);
                    if batch
                        && let Some(Msg::Reply { .. }) = self.inbox.front()
                        && let Some(Msg::Reply { token, result }) = self.inbox.pop_front()
                    {
                        next = Some((token, result));
                    }
                }
            }
            Msg::Watch { token, event } => {
                say(&|| format!("client {i} reads watch event {event}"));
                self.agent.handle_watch(token, event);
            }
            Msg::Reconnected => {
                say(&|| format!("client {i} learns it is connected again"));
                self.agent.handle_session(SessionState::Connected);
            }
            Msg::Expired => {
                say(&|| format!("client {i} learns its session EXPIRED"));
                self.told_expired = true;
                self.agent.handle_session(SessionState::Disconnected);
                self.agent.handle_session(SessionState::Expired);
                // The client library fails every call and fires every watch with the
                // session event: the machines ended above, so both are moot.
                self.outbox.clear();
                self.syncs.clear();
                self.inbox.clear();
                self.watches.clear();
            }
        }
    }
}

impl<A: Agent> Client<A> {
    /// The client takes its share of what follows the server's applying `request`, its
    /// next request (`token`), losing the reply when `lost`: the watch the reply arms, the
    /// events the server fired for it, the reply or its lost connection, and what its agent
    /// sends then. Returns every event the request fired (said, each of them), for the other
    /// clients.
    pub(super) fn take_applied(
        &mut self,
        i: usize,
        (token, request): (Token, Request),
        served: Served,
        lost: bool,
        say: &mut Say<'_>,
    ) -> Vec<Fired> {
        let Served { applied, stale, .. } = served;
        if stale {
            self.read_stale = true;
        }
        let result = applied.result;
        say(&|| {
            format!(
                "server applies client {i}'s {}: {}{}",
                show_request(&request),
                show_result(&result),
                if lost { " — REPLY LOST" } else { "" }
            )
        });
        // The client library registers a watch when the reply arrives: a lost reply leaves
        // the server's watch with nobody to fan its event out to (found by trace
        // conformance: the model used to deliver that event to the machine).
        if result.is_ok() && !lost && request.arms_watch() {
            let table = match request {
                Request::GetChildren { .. } => Table::Child,
                _ => Table::Data,
            };
            self.watches
                .entry((request.path().to_owned(), table))
                .or_default()
                .push(token);
        }
        self.agent.observe_applied(&request, &result, lost);
        for fired in &applied.events {
            if fired.session == self.session {
                self.fire(fired);
            }
            say(&|| format!("    fires {}", fired.event));
        }
        if lost {
            self.break_connection(i, Some(token), say);
        } else {
            self.inbox.push_back(Msg::Reply { token, result });
        }
        self.flush();
        applied.events
    }

    /// Client `i` takes `action`, a move of its own (see [`Action::is_local`]), reading
    /// replies in batches if `batch`.
    pub(super) fn take(&mut self, i: usize, action: Action, batch: bool, say: &mut Say<'_>) {
        match action {
            Action::DeliverReply(_)
            | Action::DeliverWatch(_)
            | Action::DeliverExpiry(_)
            | Action::DeliverReconnected(_) => {
                let expiry = matches!(action, Action::DeliverExpiry(_));
                self.read(i, expiry, batch, say);
            }
            Action::Timer(_) => {
                let at = self.agent.poll_timer().expect("a timer");
                say(&|| format!("client {i}'s timer fires"));
                self.agent.handle_timer(at);
            }
            Action::Script(_) => {
                let agent = &self.agent;
                say(&|| format!("client {i} {}", agent.script_step().expect("a script step")));
                self.agent.take_script_step();
            }
            other => unreachable!("{other} is not a move of the client's own"),
        }
        self.flush();
    }

    /// Whether the library holds a watch `fired` goes to (on this client's session).
    pub(super) fn watching(&self, fired: &Fired) -> bool {
        watch_keys(fired).any(|key| self.watches.contains_key(&key))
    }

    /// The library fans `fired` out to the watches it holds for it (on this client's
    /// session), which it forgets.
    pub(super) fn fire(&mut self, fired: &Fired) {
        for key in watch_keys(fired) {
            for token in self.watches.remove(&key).unwrap_or_default() {
                self.inbox.push_back(Msg::Watch {
                    token,
                    event: fired.event.clone(),
                });
            }
        }
    }

    /// Client `i`'s connection breaks, with `lost` the request it lost: the replies on their
    /// way and every request not yet at the server go with it, and each of those calls, the
    /// lost one in its place, fails with `ConnectionLoss` (as sim-zk and ZooKeeper's client
    /// library do), ahead of anything else in its inbox. Watch events still come. The `Disconnected` state itself is not told:
    /// no machine acts on it (only `Connected` and the terminal states change what they do),
    /// and [`Action::Reconnect`] tells `Connected`.
    pub(super) fn break_connection(&mut self, i: usize, lost: Option<Token>, say: &mut Say<'_>) {
        let c = self;
        let mut failed = Vec::new();
        c.inbox.retain(|m| match m {
            Msg::Reply { token, .. } => {
                failed.push(*token);
                false
            }
            _ => true,
        });
        failed.extend(lost);
        failed.extend(c.outbox.drain(..).map(|(token, _)| token));
        say(&|| {
            format!(
                "client {i}'s connection BREAKS: {} call(s) fail with ConnectionLoss",
                failed.len()
            )
        });
        // The failures reach the client at once, ahead of watch events still on their way.
        for token in failed.into_iter().rev() {
            c.inbox.push_front(Msg::Reply {
                token,
                result: Err(Error::ConnectionLoss),
            });
        }
        c.connected = false;
    }
}

/// The watches an event goes to: its path in the tables its kind fires.
fn watch_keys(fired: &Fired) -> impl Iterator<Item = (String, Table)> + Clone + '_ {
    let tables: &[Table] = match fired.event.kind {
        EventKind::NodeCreated | EventKind::NodeDataChanged => &[Table::Data],
        EventKind::NodeChildrenChanged => &[Table::Child],
        EventKind::NodeDeleted => &[Table::Data, Table::Child],
        _ => &[],
    };
    tables.iter().map(|t| (fired.event.path.clone(), *t))
}
