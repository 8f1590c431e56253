//! The simulator's side of the page: its event log, drawn generically by kind.
//!
//! Every entry of the log except the per-request traffic (requests, their application,
//! replies, dropped messages) becomes an event on the page, read through the entry's serde
//! form rather than by matching its variants: its kind is the variant's name, its time the
//! `t` field, and its span `t .. t + duration` when it has a `duration`. What it concerns is
//! read from its fields too: `client` puts it in that client's lane, `server`/`servers`/
//! `from`/`to` are named in its detail and put a client-less event in a server's lane. So an
//! event kind the simulator gains later (the ensemble's partitions, elections, moved sessions)
//! is drawn with its name, its client or server and its span without a change here.
//!
//! Events of a simulator client (a *session*) go to the lane of the workload client that
//! opened it, as they are matched by their requests and replies (see `sessions.rs`); the rest to lanes of the service, of each
//! server, or of the sessions nobody could be matched to.

use std::collections::BTreeMap;

use avout_sim_zk::LogEvent;
use serde::Serialize;
use serde_json::Value;

use super::timeline::{Lane, Op};

/// One event beside the operations: a simulator log entry, or a nemesis event of the history.
///
/// ```
/// use avout_scenarios::scenario::case::Case;
/// use avout_scenarios::scenario::{FaultPlan, Registry};
/// use avout_cli::view::Page;
/// let registry = Registry::builtins();
/// let mut w = registry.workload("counter", 9).unwrap();
/// w.ops = 4;
/// let case = Case::record(&registry, &w, &FaultPlan::none(), None).unwrap();
/// let page = Page::of_case(&registry, &case).unwrap();
/// let connect = page.events.iter().find(|e| e.kind == "connect").unwrap();
/// assert_eq!(page.lanes[connect.lane].kind, "client", "in the lane of the client it is");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimEvent {
    /// Its kind: the log entry's variant in kebab case (`fault`, `state`, `watch`,
    /// `connect`, `timer`, `buggify`, …) or `nemesis`.
    pub kind: String,
    /// What happened: the fault's kind, the new session state, the watch's event, the timer.
    pub name: String,
    /// Its lane.
    pub lane: usize,
    /// When it began, on the axis.
    pub start: u64,
    /// When it ended, for events that last (a fault's duration, a session state until the
    /// next); `None` for an instant, or a state that lasted to the end.
    pub end: Option<u64>,
    /// Everything else the entry says, as text.
    pub detail: String,
    /// The simulator client (session) it concerns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<usize>,
}

/// Log entries that are per-request traffic: used to match sessions, not drawn.
const TRAFFIC: [&str; 4] = ["request", "applied", "reply", "dropped"];

/// A client lane's traffic: when its sessions sent requests or heard replies, and what they
/// asked for.
#[derive(Clone, Debug, Default)]
pub(crate) struct Traffic {
    /// Request and reply times, in order.
    pub(crate) times: Vec<u64>,
    /// Each request's time, operation and path, in order.
    pub(crate) requests: Vec<(u64, String)>,
}

impl Traffic {
    /// The last request sent at or before `t`.
    pub(crate) fn last_request(&self, t: u64) -> Option<&str> {
        let i = self.requests.partition_point(|r| r.0 <= t);
        i.checked_sub(1).map(|i| self.requests[i].1.as_str())
    }
}

/// What the log shows beside the operations.
pub(crate) struct Drawn {
    /// The drawable events.
    pub(crate) events: Vec<SimEvent>,
    /// Per client lane, its sessions' traffic.
    pub(crate) traffic: Vec<Traffic>,
    /// The paths client lanes asked to create, with when, in order.
    pub(crate) creates: Vec<(String, usize, u64)>,
}

impl Drawn {
    /// How many times operation `op` asked to create the node at `path` (its requested path).
    pub(crate) fn creates_in(
        &self,
        op: usize,
        timeline: &super::timeline::Timeline,
        path: &str,
    ) -> usize {
        let o = &timeline.ops[op];
        let end = o.end.unwrap_or(u64::MAX);
        let asked = requested(path);
        self.creates
            .iter()
            .filter(|(p, lane, t)| *lane == o.lane && (o.start..=end).contains(t) && p == asked)
            .count()
    }

    /// The client lane that created the node at `path`, and when it asked to: the first
    /// request to create `path`, or (a sequential node) `path` less its ten-digit sequence
    /// number. (Requests of one path by two clients never happen with the recipes' GUID
    /// prefixes; the first is named.)
    pub(crate) fn creator(&self, path: &str) -> Option<(usize, u64)> {
        let asked = requested(path);
        self.creates
            .iter()
            .find(|(p, _, _)| p == path || p == asked)
            .map(|&(_, lane, t)| (lane, t))
    }
}

/// The path a node's creator asked for: a sequential node's less its ten-digit number.
fn requested(path: &str) -> &str {
    match path.len().checked_sub(10).map(|i| path.split_at(i)) {
        Some((prefix, seq)) if seq.bytes().all(|b| b.is_ascii_digit()) => prefix,
        _ => path,
    }
}

/// The drawable events of `log`, placing them in `lanes` (adding the service's, the servers'
/// and the unmatched sessions' lanes as needed), with each client lane's note naming its
/// sessions; and each client lane's traffic.
pub(crate) fn events(log: &[LogEvent], ops: &[Op], lanes: &mut Vec<Lane>) -> Drawn {
    let matched = super::sessions::match_sessions(log, ops, lanes.len());
    let mut traffic: Vec<Traffic> = vec![Traffic::default(); lanes.len()];
    let mut creates = Vec::new();
    for entry in log {
        match entry {
            LogEvent::Request {
                t,
                client,
                op,
                path,
                ..
            } => {
                if let Some(&lane) = matched.get(client) {
                    let path = path.as_deref().unwrap_or_default();
                    if op == "create" {
                        creates.push((path.to_owned(), lane, *t));
                    }
                    let lane = &mut traffic[lane];
                    lane.times.push(*t);
                    lane.requests
                        .push((*t, format!("{op} {path}").trim_end().to_owned()));
                }
            }
            LogEvent::Reply { t, client, .. } => {
                if let Some(&lane) = matched.get(client) {
                    traffic[lane].times.push(*t);
                }
            }
            _ => {}
        }
    }
    let mut sessions_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (&session, &lane) in &matched {
        sessions_of.entry(lane).or_default().push(session);
    }
    for (lane, sessions) in &sessions_of {
        let names: Vec<String> = sessions.iter().map(|s| format!("c{s}")).collect();
        lanes[*lane].note = format!(
            "{}; simulator sessions {} (matched by their requests and replies)",
            lanes[*lane].note,
            names.join(", ")
        );
    }
    let mut extra = ExtraLanes::default();
    let mut out: Vec<SimEvent> = Vec::new();
    for entry in log {
        // The traffic is most of a log; skipping it here spares its serde form.
        let traffic = matches!(
            entry,
            LogEvent::Request { .. }
                | LogEvent::Applied { .. }
                | LogEvent::Reply { .. }
                | LogEvent::Dropped { .. }
        );
        let Some(e) = (!traffic)
            .then(|| serde_json::to_value(entry).ok())
            .flatten()
            .and_then(read_entry)
        else {
            continue;
        };
        let lane = match (e.client, &e.server) {
            (Some(c), _) => match matched.get(&c) {
                Some(&lane) => lane,
                None => extra.lane(lanes, "session", "sessions not matched to a client"),
            },
            (None, Some(s)) => extra.lane(lanes, "server", &format!("server {s}")),
            (None, None) => extra.lane(lanes, "service", "service"),
        };
        out.push(SimEvent {
            kind: e.kind,
            name: e.name,
            lane,
            start: e.start,
            end: e.end,
            detail: e.detail,
            client: e.client,
        });
    }
    close_states(&mut out, &matched);
    Drawn {
        events: out,
        traffic,
        creates,
    }
}

/// A log entry read generically: what [`SimEvent`] needs, and the server it concerns.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) start: u64,
    pub(crate) end: Option<u64>,
    pub(crate) client: Option<usize>,
    pub(crate) server: Option<String>,
    pub(crate) detail: String,
}

/// Reads one log entry in its serde form (`{"Variant": {fields}}`); `None` for per-request
/// traffic and for anything not shaped like an entry.
pub(crate) fn read_entry(value: Value) -> Option<Entry> {
    let Value::Object(outer) = value else {
        return None;
    };
    let (variant, Value::Object(fields)) = outer.into_iter().next()? else {
        return None;
    };
    let kind = kebab(&variant);
    if TRAFFIC.contains(&kind.as_str()) {
        return None;
    }
    let start = fields.get("t").and_then(Value::as_u64)?;
    let client = fields
        .get("client")
        .and_then(Value::as_u64)
        .map(|c| c as usize);
    let server = ["server", "servers", "from", "to"]
        .iter()
        .find_map(|k| fields.get(*k).filter(|v| !v.is_null()))
        .map(name_of);
    let name = ["kind", "state", "timer", "name", "op"]
        .iter()
        .find_map(|k| fields.get(*k))
        .map_or_else(|| kind.clone(), name_of);
    let end = fields
        .get("duration")
        .and_then(Value::as_u64)
        .map(|d| start + d);
    let detail: Vec<String> = fields
        .iter()
        .filter(|(k, v)| !v.is_null() && !matches!(k.as_str(), "t" | "duration"))
        .map(|(k, v)| format!("{k}: {}", name_of(v)))
        .collect();
    Some(Entry {
        kind,
        name,
        start,
        end,
        client,
        server,
        detail: detail.join(", "),
    })
}

/// Lanes for events outside the clients', made on first use.
#[derive(Default)]
struct ExtraLanes {
    made: Vec<(String, usize)>,
}

impl ExtraLanes {
    fn lane(&mut self, lanes: &mut Vec<Lane>, kind: &'static str, name: &str) -> usize {
        if let Some(&(_, l)) = self.made.iter().find(|(n, _)| n == name) {
            return l;
        }
        lanes.push(Lane {
            kind,
            name: name.to_owned(),
            note: match kind {
                "service" => "events of the whole service: outages, timers".into(),
                "session" => "sessions that could not be told to be one client's".into(),
                _ => String::new(),
            },
            rows: 0,
        });
        self.made.push((name.to_owned(), lanes.len() - 1));
        lanes.len() - 1
    }
}

/// A session state lasts until the session's next state, or, in a client's lane, until its
/// client's next session reports one: a managed client opens a new session after an expiry,
/// and the old one's `Expired` ends there rather than running to the end of the run.
fn close_states(events: &mut [SimEvent], matched: &BTreeMap<usize, usize>) {
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Owner {
        Lane(usize),
        Session(usize),
    }
    let mut last: BTreeMap<Owner, usize> = BTreeMap::new();
    for i in 0..events.len() {
        let Some(c) = events[i].client else { continue };
        let owner = matched
            .get(&c)
            .map_or(Owner::Session(c), |&l| Owner::Lane(l));
        match events[i].kind.as_str() {
            "state" => {
                if let Some(prev) = last.insert(owner, i) {
                    events[prev].end = Some(events[i].start);
                }
            }
            // A new session begins connected, without a state of its own.
            "connect" => {
                if let Some(&prev) = last.get(&owner)
                    && events[prev].client != Some(c)
                {
                    events[prev].end = Some(events[i].start);
                    last.remove(&owner);
                }
            }
            _ => {}
        }
    }
}

/// `ReplyLost` → `reply-lost`.
pub(crate) fn kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.extend(ch.to_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// A field's value as a name: strings (enum variants) in kebab case, the rest as JSON.
fn name_of(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().next().is_some_and(char::is_uppercase) => kebab(s),
        Value::String(s) => s.clone(),
        Value::Object(map) if map.len() == 1 => {
            // A unit-like enum with data, e.g. `{"Leader": 2}`.
            let (k, inner) = map.iter().next().expect("one entry");
            format!("{} {}", kebab(k), name_of(inner))
        }
        other => other.to_string(),
    }
}
