//! The event log of a run, and its hash.
//!
//! Everything that happens in a run is appended here in the order it happens: requests as
//! clients submit them, their arrival at the service, replies and watch events as clients
//! receive them, session state changes, faults and timers. Each entry is compact (names and
//! paths, not payloads); the hash, updated as entries are appended, covers the full content
//! of requests and replies (data, stats, errors) through their [canonical
//! encoding](crate::hash), so two runs with equal hashes saw the same bytes at the same
//! virtual nanoseconds.

use std::borrow::Cow;
use std::fmt;

use avout::{EventKind, SessionId, SessionState};
use serde::{Deserialize, Serialize};

use crate::FaultKind;
use crate::hash::StableHasher;

/// One entry of the log. `t` is virtual time in nanoseconds since the start of the run;
/// `client` the client's index; `xid` the client's request counter.
///
/// ```
/// use avout_sim_zk::LogEvent;
/// let e = LogEvent::Timer { t: 5_000, timer: "reap".into() };
/// // Names are static in the simulator's own entries; parsed logs own theirs.
/// assert_eq!(e.to_string(), "[0.000005 s] timer reap");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LogEvent {
    /// A client submitted a request.
    Request {
        /// Time.
        t: u64,
        /// Client.
        client: usize,
        /// Request number.
        xid: u64,
        /// Operation.
        op: Cow<'static, str>,
        /// Path, if any.
        path: Option<String>,
    },
    /// The service received and processed a request.
    Applied {
        /// Time.
        t: u64,
        /// Client.
        client: usize,
        /// Request number.
        xid: u64,
        /// The last zxid after it.
        zxid: i64,
        /// `ok` or the error's name.
        outcome: Cow<'static, str>,
    },
    /// A client received a reply.
    Reply {
        /// Time.
        t: u64,
        /// Client.
        client: usize,
        /// Request number.
        xid: u64,
        /// `ok` or the error's name.
        outcome: Cow<'static, str>,
    },
    /// A message was dropped (its connection was gone).
    Dropped {
        /// Time.
        t: u64,
        /// Client.
        client: usize,
        /// Request number, if it was a request or reply.
        xid: Option<u64>,
    },
    /// A client received a watch event.
    Watch {
        /// Time.
        t: u64,
        /// Client.
        client: usize,
        /// Event kind.
        kind: EventKind,
        /// Path.
        path: String,
    },
    /// A client's session changed state.
    State {
        /// Time.
        t: u64,
        /// Client.
        client: usize,
        /// New state.
        state: SessionState,
    },
    /// A fault fired.
    Fault {
        /// Time.
        t: u64,
        /// Kind.
        kind: FaultKind,
        /// Target client, if any.
        client: Option<usize>,
        /// How long it lasts, in nanoseconds (disconnects, pauses, stale reads, outages),
        /// so that a drawn fault can be scheduled again exactly. Not hashed: the events
        /// it causes (the reconnect, the resume, the outage's end) are.
        #[serde(default)]
        duration: Option<u64>,
    },
    /// A timer fired (`reconnect`, `resume`, `outage-end`, `session-expired`, `follower`,
    /// `reap`, …).
    Timer {
        /// Time.
        t: u64,
        /// Which timer.
        timer: Cow<'static, str>,
    },
    /// A buggify point in client code fired.
    Buggify {
        /// Time.
        t: u64,
        /// The point's source location, `file:line:column`.
        site: String,
    },
    /// A client connected (a new session).
    Connect {
        /// Time.
        t: u64,
        /// Client.
        client: usize,
        /// The session id.
        session: SessionId,
    },
}

impl LogEvent {
    fn canon(&self, h: &mut StableHasher) {
        match self {
            LogEvent::Request {
                t,
                client,
                xid,
                op,
                path,
            } => canon_request(h, *t, *client, *xid, op, path.as_deref()),
            LogEvent::Applied {
                t,
                client,
                xid,
                zxid,
                outcome,
            } => {
                h.tag(1);
                h.u64(*t);
                h.u64(*client as u64);
                h.u64(*xid);
                h.i64(*zxid);
                h.str(outcome);
            }
            LogEvent::Reply {
                t,
                client,
                xid,
                outcome,
            } => {
                h.tag(2);
                h.u64(*t);
                h.u64(*client as u64);
                h.u64(*xid);
                h.str(outcome);
            }
            LogEvent::Dropped { t, client, xid } => {
                h.tag(3);
                h.u64(*t);
                h.u64(*client as u64);
                h.u64(xid.map_or(u64::MAX, |x| x));
            }
            LogEvent::Watch {
                t,
                client,
                kind,
                path,
            } => canon_watch(h, *t, *client, *kind, path),
            LogEvent::State { t, client, state } => {
                h.tag(5);
                h.u64(*t);
                h.u64(*client as u64);
                h.str(crate::hash::state_name(*state));
            }
            LogEvent::Fault {
                t, kind, client, ..
            } => {
                h.tag(6);
                h.u64(*t);
                h.str(kind.name());
                h.u64(client.map_or(u64::MAX, |c| c as u64));
            }
            LogEvent::Timer { t, timer } => {
                h.tag(7);
                h.u64(*t);
                h.str(timer);
            }
            LogEvent::Buggify { t, site } => {
                h.tag(9);
                h.u64(*t);
                h.str(site);
            }
            LogEvent::Connect { t, client, session } => {
                h.tag(8);
                h.u64(*t);
                h.u64(*client as u64);
                h.i64(session.0);
            }
        }
    }

    /// The entry's virtual time (nanoseconds since the run's start).
    ///
    /// ```
    /// let e = avout_sim_zk::LogEvent::Connect { t: 7, client: 0, session: avout::SessionId(1) };
    /// assert_eq!(e.time(), 7);
    /// ```
    pub fn time(&self) -> u64 {
        match self {
            LogEvent::Request { t, .. }
            | LogEvent::Applied { t, .. }
            | LogEvent::Reply { t, .. }
            | LogEvent::Dropped { t, .. }
            | LogEvent::Watch { t, .. }
            | LogEvent::State { t, .. }
            | LogEvent::Fault { t, .. }
            | LogEvent::Timer { t, .. }
            | LogEvent::Buggify { t, .. }
            | LogEvent::Connect { t, .. } => *t,
        }
    }
}

impl fmt::Display for LogEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.time();
        write!(
            f,
            "[{}.{:06} s] ",
            t / 1_000_000_000,
            (t / 1_000) % 1_000_000
        )?;
        match self {
            LogEvent::Request {
                client,
                xid,
                op,
                path,
                ..
            } => write!(
                f,
                "c{client} #{xid} -> {op} {}",
                path.as_deref().unwrap_or("")
            ),
            LogEvent::Applied {
                client,
                xid,
                zxid,
                outcome,
                ..
            } => write!(f, "c{client} #{xid} applied at zxid {zxid:#x}: {outcome}"),
            LogEvent::Reply {
                client,
                xid,
                outcome,
                ..
            } => write!(f, "c{client} #{xid} <- {outcome}"),
            LogEvent::Dropped { client, xid, .. } => match xid {
                Some(x) => write!(f, "c{client} #{x} dropped"),
                None => write!(f, "c{client} event dropped"),
            },
            LogEvent::Watch {
                client, kind, path, ..
            } => write!(f, "c{client} watch {kind:?} {path}"),
            LogEvent::State { client, state, .. } => write!(f, "c{client} state {state:?}"),
            LogEvent::Fault { kind, client, .. } => match client {
                Some(c) => write!(f, "fault {} on c{c}", kind.name()),
                None => write!(f, "fault {}", kind.name()),
            },
            LogEvent::Timer { timer, .. } => write!(f, "timer {timer}"),
            LogEvent::Buggify { site, .. } => write!(f, "buggify fired at {site}"),
            LogEvent::Connect {
                client, session, ..
            } => write!(f, "c{client} connected as session {session}"),
        }
    }
}

/// The encoding of [`LogEvent::Request`].
pub(crate) fn canon_request(
    h: &mut StableHasher,
    t: u64,
    client: usize,
    xid: u64,
    op: &str,
    path: Option<&str>,
) {
    h.tag(0);
    h.u64(t);
    h.u64(client as u64);
    h.u64(xid);
    h.str(op);
    h.str(path.unwrap_or(""));
}

/// The encoding of [`LogEvent::Watch`].
pub(crate) fn canon_watch(
    h: &mut StableHasher,
    t: u64,
    client: usize,
    kind: EventKind,
    path: &str,
) {
    h.tag(4);
    h.u64(t);
    h.u64(client as u64);
    h.str(crate::hash::event_kind_name(kind));
    h.str(path);
}

/// The log of a run and its running hash.
#[derive(Clone, Debug)]
pub(crate) struct EventLog {
    entries: Vec<LogEvent>,
    hasher: StableHasher,
    keep: bool,
    len: u64,
}

impl EventLog {
    pub(crate) fn new(keep: bool) -> Self {
        EventLog {
            entries: Vec::new(),
            hasher: StableHasher::new(),
            keep,
            len: 0,
        }
    }

    /// Appends an entry made by `make` only if it is kept or traced: `canon` must feed the
    /// hash exactly what [`LogEvent`]'s own encoding of it would (see [`canon_request`] and
    /// [`canon_watch`]), plus any detail. This spares the allocations of an entry nobody reads.
    pub(crate) fn push_with(
        &mut self,
        canon: impl FnOnce(&mut StableHasher),
        make: impl FnOnce() -> LogEvent,
    ) {
        canon(&mut self.hasher);
        self.len += 1;
        if self.keep || tracing::enabled!(target: "avout_sim_zk", tracing::Level::TRACE) {
            let event = make();
            tracing::trace!(target: "avout_sim_zk", "{event}");
            if self.keep {
                self.entries.push(event);
            }
        }
    }

    /// Appends an entry; `detail` feeds the full content behind it into the hash.
    pub(crate) fn push(&mut self, event: LogEvent, detail: impl FnOnce(&mut StableHasher)) {
        tracing::trace!(target: "avout_sim_zk", "{event}");
        event.canon(&mut self.hasher);
        detail(&mut self.hasher);
        self.len += 1;
        if self.keep {
            self.entries.push(event);
        }
    }

    /// Appends that request or reply `xid` of `client` was dropped at `t` (it belonged to a
    /// connection that has since been replaced).
    pub(crate) fn dropped(&mut self, t: u64, client: usize, xid: u64) {
        self.push(
            LogEvent::Dropped {
                t,
                client,
                xid: Some(xid),
            },
            |_| {},
        );
    }

    pub(crate) fn hash(&self) -> u64 {
        self.hasher.finish()
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The entries kept so far (none unless kept).
    pub(crate) fn entries(&self) -> &[LogEvent] {
        &self.entries
    }

    pub(crate) fn take(&mut self) -> Vec<LogEvent> {
        std::mem::take(&mut self.entries)
    }
}
