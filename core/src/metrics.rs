//! What a long-running client reports, through the [`metrics`](https://docs.rs/metrics)
//! crate's facade: its sessions, connection states, reconnections, retries by cause, request
//! latencies by operation and the watches it holds.
//!
//! avout only records. The application installs a recorder (an exporter) of its choice, for
//! example `metrics-exporter-prometheus`, as the `prometheus` example of this crate does, and
//! may call [`describe`] to give each metric its help text and unit. Without a recorder every
//! call here does nothing.
//!
//! Names follow Prometheus' conventions: an `avout_` prefix, snake case, counters ending in
//! `_total`, durations in seconds.
//!
//! | name | type | labels | unit | counts or measures |
//! |---|---|---|---|---|
//! | `avout_sessions_opened_total` | counter | | sessions | sessions the managed [`Client`](crate::Client)s opened: each one's first and every replacement after an expiry |
//! | `avout_sessions_ended_total` | counter | `reason`: `expired`, `closed`, `auth_failed` | sessions | sessions of managed clients that ended (a client closed or dropped ends its session as `closed`) |
//! | `avout_sessions_open` | gauge | | sessions | sessions of managed clients open now |
//! | `avout_connection_state_changes_total` | counter | `state`: `connected`, `suspended`, `reconnected`, `lost`, `closed` | events | the connection events the clients published ([`ConnectionState`]) |
//! | `avout_clients` | gauge | `state`: as above | clients | managed clients whose latest connection event is `state` |
//! | `avout_reconnects_total` | counter | `session`: `same` (within the session), `new` (onto a new session) | reconnections | `Reconnected` events |
//! | `avout_session_open_failures_total` | counter | `error`: the error's [name](crate::Error::name), snake case | attempts | failed attempts to open a replacement session (each paced by the [`RetryPolicy`](crate::client::RetryPolicy)) |
//! | `avout_retries_total` | counter | `cause`: see below | retries | steps a handle did again |
//! | `avout_request_duration_seconds` | histogram | `op`: ZooKeeper's name of the operation, as [`Request::name`](crate::machine::Request::name) spells it (`create`, `getData`, `multi`, `addWatch`, …) | seconds | requests to a real ensemble ([`ZkClient`](crate::zk::ZkClient)), from the call to the reply, failed ones included |
//! | `avout_request_errors_total` | counter | `op` as above, `error` as above | requests | requests to a real ensemble that failed |
//! | `avout_watches` | gauge | `kind`: `one_shot`, `persistent` | watches | watches armed and not yet fired, ended or dropped, on any backend |
//!
//! The causes of `avout_retries_total`:
//!
//! - `connection_loss`, `operation_timeout`, `session_moved`, `other`: a request of a recipe's
//!   protocol (a [machine](crate::machine) run by the driver) or an idempotent call of a handle
//!   ([`until_certain`](crate::machine::until_certain)) ended in doubt; the step is sent again,
//!   or what it did is found out (a lock's node by its GUID), before the handle goes on;
//! - `conflict`: an atom's compare-and-set or an STM transaction lost to another writer and
//!   runs again;
//! - `read_fault`, `barged`, `interrupted`: an STM transaction runs again because a value it
//!   must read was trimmed from the history, an older transaction barged it (Mvcc), or a
//!   connection loss interrupted its commit, which did not take effect;
//! - `session_lost`: an operation that only reads and waits (a barrier's wait, a watcher's
//!   next change) starts over on the client's next session.
//!
//! # Determinism
//!
//! Recording draws no random number and reads no clock, so a simulated run is the same with
//! a recorder or without (its event-log hashes do not move). The only timed metric,
//! `avout_request_duration_seconds`, is recorded by the real backend alone; the simulator's
//! latencies are a function of the seed and are in its event log.
//!
//! ```
//! use metrics_util::debugging::{DebugValue, DebuggingRecorder};
//!
//! let recorder = DebuggingRecorder::new();
//! let snapshotter = recorder.snapshotter();
//! metrics::with_local_recorder(&recorder, || {
//!     avout::metrics::describe();
//!     let (tx, watch) = avout::Watch::channel();
//!     let held = snapshotter.snapshot().into_vec().into_iter().any(|(key, _, _, value)| {
//!         key.key().name() == avout::metrics::WATCHES && value == DebugValue::Gauge(1.0.into())
//!     });
//!     assert!(held);
//!     drop((tx, watch));
//! });
//! ```

use std::time::Duration;

use ::metrics::{Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge};

use crate::Error;
use crate::client::ConnectionState;

/// `avout_sessions_opened_total`; see the [module docs](self).
pub const SESSIONS_OPENED: &str = "avout_sessions_opened_total";
/// `avout_sessions_ended_total`; see the [module docs](self).
pub const SESSIONS_ENDED: &str = "avout_sessions_ended_total";
/// `avout_sessions_open`; see the [module docs](self).
pub const SESSIONS_OPEN: &str = "avout_sessions_open";
/// `avout_connection_state_changes_total`; see the [module docs](self).
pub const CONNECTION_STATE_CHANGES: &str = "avout_connection_state_changes_total";
/// `avout_clients`; see the [module docs](self).
pub const CLIENTS: &str = "avout_clients";
/// `avout_reconnects_total`; see the [module docs](self).
pub const RECONNECTS: &str = "avout_reconnects_total";
/// `avout_session_open_failures_total`; see the [module docs](self).
pub const SESSION_OPEN_FAILURES: &str = "avout_session_open_failures_total";
/// `avout_retries_total`; see the [module docs](self).
pub const RETRIES: &str = "avout_retries_total";
/// `avout_request_duration_seconds`; see the [module docs](self).
pub const REQUEST_DURATION: &str = "avout_request_duration_seconds";
/// `avout_request_errors_total`; see the [module docs](self).
pub const REQUEST_ERRORS: &str = "avout_request_errors_total";
/// `avout_watches`; see the [module docs](self).
pub const WATCHES: &str = "avout_watches";

/// Gives every metric its unit and help text in the installed recorder (an exporter then
/// prints them, Prometheus' `# HELP` lines). Call it once after installing the recorder;
/// calling it again does no harm.
///
/// ```
/// avout::metrics::describe(); // no recorder installed: nothing happens
/// ```
pub fn describe() {
    describe_counter!(
        SESSIONS_OPENED,
        Unit::Count,
        "Sessions the managed clients opened."
    );
    describe_counter!(
        SESSIONS_ENDED,
        Unit::Count,
        "Sessions of managed clients that ended, by reason."
    );
    describe_gauge!(
        SESSIONS_OPEN,
        Unit::Count,
        "Sessions of managed clients open now."
    );
    describe_counter!(
        CONNECTION_STATE_CHANGES,
        Unit::Count,
        "Connection events the managed clients published, by state."
    );
    describe_gauge!(
        CLIENTS,
        Unit::Count,
        "Managed clients whose latest connection event is the state."
    );
    describe_counter!(
        RECONNECTS,
        Unit::Count,
        "Reconnections, within the session or onto a new one."
    );
    describe_counter!(
        SESSION_OPEN_FAILURES,
        Unit::Count,
        "Failed attempts to open a replacement session, by error."
    );
    describe_counter!(RETRIES, Unit::Count, "Steps a handle did again, by cause.");
    describe_histogram!(
        REQUEST_DURATION,
        Unit::Seconds,
        "Latency of requests to a real ensemble, by operation."
    );
    describe_counter!(
        REQUEST_ERRORS,
        Unit::Count,
        "Requests to a real ensemble that failed, by operation and error."
    );
    describe_gauge!(
        WATCHES,
        Unit::Count,
        "Watches armed and not yet fired, ended or dropped, by kind."
    );
}

/// A session became a managed client's current one.
pub(crate) fn session_opened() {
    counter!(SESSIONS_OPENED).increment(1);
    gauge!(SESSIONS_OPEN).increment(1.0);
}

/// A managed client's session ended, as `reason` says.
pub(crate) fn session_ended(reason: &'static str) {
    counter!(SESSIONS_ENDED, "reason" => reason).increment(1);
    gauge!(SESSIONS_OPEN).decrement(1.0);
}

/// A client published `state`, after `previous` (`None` for its first event).
pub(crate) fn connection_state(
    previous: Option<ConnectionState>,
    state: ConnectionState,
    new_session: bool,
) {
    counter!(CONNECTION_STATE_CHANGES, "state" => state_label(state)).increment(1);
    if let Some(previous) = previous {
        gauge!(CLIENTS, "state" => state_label(previous)).decrement(1.0);
    }
    gauge!(CLIENTS, "state" => state_label(state)).increment(1.0);
    if state == ConnectionState::Reconnected {
        let session = if new_session { "new" } else { "same" };
        counter!(RECONNECTS, "session" => session).increment(1);
    }
}

/// A client whose latest event was `state` is gone.
pub(crate) fn client_dropped(state: ConnectionState) {
    gauge!(CLIENTS, "state" => state_label(state)).decrement(1.0);
}

/// An attempt to open a replacement session failed with `error`.
pub(crate) fn session_open_failed(error: &Error) {
    counter!(SESSION_OPEN_FAILURES, "error" => error_label(error)).increment(1);
}

/// A step is done again, for `cause`.
pub(crate) fn retried(cause: &'static str) {
    counter!(RETRIES, "cause" => cause).increment(1);
}

/// A step is done again after `error` left its request in doubt.
pub(crate) fn retried_after(error: &Error) {
    retried(match error.root() {
        Error::ConnectionLoss => "connection_loss",
        Error::OperationTimeout => "operation_timeout",
        Error::SessionMoved => "session_moved",
        _ => "other",
    });
}

/// A request `op` to a real ensemble took `took` and ended as `outcome` says.
#[cfg_attr(not(feature = "zookeeper"), allow(dead_code))]
pub(crate) fn request(op: &'static str, took: Duration, error: Option<&Error>) {
    ::metrics::histogram!(REQUEST_DURATION, "op" => op).record(took.as_secs_f64());
    if let Some(error) = error {
        counter!(REQUEST_ERRORS, "op" => op, "error" => error_label(error)).increment(1);
    }
}

/// A watch of `kind` (`one_shot`, `persistent`) was armed (`+1`) or is no longer held (`-1`).
pub(crate) fn watch_held(kind: &'static str, delta: f64) {
    gauge!(WATCHES, "kind" => kind).increment(delta);
}

/// How the `state` label spells a connection state.
fn state_label(state: ConnectionState) -> &'static str {
    match state {
        ConnectionState::Connected => "connected",
        ConnectionState::Suspended => "suspended",
        ConnectionState::Reconnected => "reconnected",
        ConnectionState::Lost => "lost",
        ConnectionState::Closed => "closed",
    }
}

/// How the `error` label spells an error: its [name](Error::name) in snake case (for a
/// failed `multi`, the failing operation's).
fn error_label(error: &Error) -> String {
    snake_case(error.root().name())
}

/// `CamelCase` as `snake_case`; a run of capitals is one word (`UnknownCA`: `unknown_ca`).
pub(crate) fn snake_case(camel: &str) -> String {
    let mut snake = String::with_capacity(camel.len() + 4);
    let mut after_upper = true;
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            if !after_upper {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
        after_upper = c.is_ascii_uppercase();
    }
    snake
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_snake_case() {
        assert_eq!(snake_case("ConnectionLoss"), "connection_loss");
        assert_eq!(snake_case("UnknownCA"), "unknown_ca");
        assert_eq!(snake_case("NoNode"), "no_node");
        let multi = Error::Multi {
            index: 0,
            source: Box::new(Error::BadVersion { path: "/a".into() }),
        };
        assert_eq!(error_label(&multi), "bad_version");
    }
}
