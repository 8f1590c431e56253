//! One workload client and the operations it records.
//!
//! Every client of every scenario does the same around each operation: record its
//! invocation, run it within [`OP_DEADLINE`], record how it ended (`ok` with its output,
//! `fail` or `info` as its error says, `info` and a stall when it did not finish in time), and
//! retire its process number when the outcome is in doubt. [`Worker::call`] does that once.

use std::future::Future;

use avout::Client;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::codes;
use avout_sim_zk::rng::ClientStream;

use super::env::{Env, Process, Recorder};
use super::error::WorkloadError;
use super::{OP_DEADLINE, Workload};
use avout_check::history::{ErrorCode, Event, EventType, F};

/// How an error ends the operation it interrupted: `fail` when the operation surely did not
/// take effect, `info` when it may have, and, for the errors of the Maelstrom workloads
/// (lin-kv's, atoms', the STM's), Maelstrom's code for it ([`super::codes`]), which always
/// agrees with the type (a definite code with `fail`, 13 with `info`).
pub(crate) trait Ends {
    /// `fail` or `info`.
    fn end(&self) -> EventType;
    /// Maelstrom's code, for errors that have one; an operation that fails with such an error
    /// type and outruns the deadline is recorded with 0 (timeout).
    fn code(&self) -> Option<ErrorCode> {
        None
    }
    /// Whether [`code`](Self::code) gives codes.
    const CODED: bool = false;
}

impl Ends for avout::Error {
    fn end(&self) -> EventType {
        super::env::outcome_of(self)
    }
}

/// [`Ends`] for errors that say themselves whether they are definite (`fail`) or may have
/// taken effect (`info`), with the code `codes::$code` gives them.
macro_rules! ends_as_definite {
    ($(<$g:ident>)? for $t:ty, $code:ident) => {
        impl$(<$g>)? Ends for $t {
            fn end(&self) -> EventType {
                if self.is_definite() {
                    EventType::Fail
                } else {
                    EventType::Info
                }
            }
            fn code(&self) -> Option<ErrorCode> {
                Some(codes::$code(self))
            }
            const CODED: bool = true;
        }
    };
}

ends_as_definite!(for avout::atom::AtomError, atom);
ends_as_definite!(for avout::atom::linkv::KvError, kv);
ends_as_definite!(<E> for avout::stm::StmError<E>, stm);

/// An operation as the history names it: `f`, its input, its key, and what to call it should
/// it stall (by default "process P's F").
#[derive(Clone, Debug)]
pub(crate) struct Invoke<'a> {
    f: &'a str,
    input: Value,
    key: Option<Value>,
    stall: Option<String>,
    in_hold: bool,
}

impl<'a> Invoke<'a> {
    /// Operation `f` with `input`.
    pub(crate) fn new(f: &'a str, input: Value) -> Self {
        Invoke {
            f,
            input,
            key: None,
            stall: None,
            in_hold: false,
        }
    }

    /// The key the operation is on (for per-key checkers).
    pub(crate) fn key(self, key: Option<Value>) -> Self {
        Invoke { key, ..self }
    }

    /// How to describe a stall of this operation.
    pub(crate) fn stall(self, what: String) -> Self {
        Invoke {
            stall: Some(what),
            ..self
        }
    }
}

impl Invoke<'_> {
    /// The event of this operation ending as `kind` in process `p`, failed with Maelstrom's
    /// `code` if any.
    fn ended(&self, kind: EventType, p: u64, code: Option<ErrorCode>) -> Event {
        let mut event = Event::new(kind, p, F::from(self.f.to_owned()), self.input.clone());
        event.key = self.key.clone();
        event.error = code;
        event
    }

    /// Marks an operation done inside a hold: its process is not retired when it ends in
    /// doubt, since the hold's release, which follows in the same process, settles that.
    pub(crate) fn in_hold(self) -> Self {
        Invoke {
            in_hold: true,
            ..self
        }
    }
}

/// How a recorded operation ended.
#[derive(Debug)]
pub(crate) enum Ended<T, E> {
    /// It returned (recorded `ok`).
    Ok(T),
    /// It failed (recorded as [`Ends::end`] says).
    Err(E),
    /// It did not finish within [`OP_DEADLINE`] (recorded `info`, and a stall).
    Stuck,
}

/// A process of the history and the recorder it writes to: what recording an operation
/// takes. A [`Worker`] is one; so is a scenario's last reader (the queue's drain), and each
/// role of a two-phase-commit client.
pub(crate) struct Caller<'a> {
    /// Where it records.
    pub(crate) rec: &'a Recorder,
    /// Its process number now.
    pub(crate) process: Process,
}

impl<'a> Caller<'a> {
    /// `process`, recording to `rec`.
    pub(crate) fn new(rec: &'a Recorder, process: Process) -> Self {
        Caller { rec, process }
    }

    /// The process number now.
    pub(crate) fn p(&self) -> u64 {
        self.process.id()
    }

    /// Records `op` around `call`, run within [`OP_DEADLINE`]: its invocation, then `ok`
    /// with `output` of what it returned, the [`Ends::end`] of its error, or `info` and a
    /// stall. A process whose operation ended in doubt is retired (so that every process has
    /// at most one operation in doubt), unless the operation is [`Invoke::in_hold`].
    pub(crate) async fn call<T, E: Ends, Fut>(
        &mut self,
        op: Invoke<'_>,
        call: impl FnOnce() -> Fut,
        output: impl FnOnce(&T) -> Value,
    ) -> Ended<T, E>
    where
        Fut: Future<Output = Result<T, E>>,
    {
        let p = self.process.id();
        let rec = self.rec;
        rec.invoke(p, op.f, op.input.clone(), op.key.clone());
        match tokio::time::timeout(OP_DEADLINE, call()).await {
            Err(_) => {
                let timeout = E::CODED.then_some(ErrorCode::TIMEOUT);
                rec.record(op.ended(EventType::Info, p, timeout));
                rec.stall(
                    op.stall
                        .unwrap_or_else(|| format!("process {p}'s {}", op.f)),
                );
                Ended::Stuck
            }
            Ok(Ok(t)) => {
                rec.complete(EventType::Ok, p, op.f, output(&t), op.key);
                Ended::Ok(t)
            }
            Ok(Err(e)) => {
                let end = e.end();
                rec.record(op.ended(end, p, e.code()));
                if end == EventType::Info && !op.in_hold {
                    self.process.retire();
                }
                Ended::Err(e)
            }
        }
    }

    /// Records `op` as refused before anything was sent, with Maelstrom's 11
    /// (temporarily unavailable: definitely not applied), when `client`'s connection is down
    /// (suspended, or its session lost and not yet replaced); `false`, recording nothing, when
    /// it is up. The Maelstrom workloads call it before each operation, as a Maelstrom node
    /// that cannot reach its leader answers 11 at once.
    pub(crate) fn unavailable(&mut self, client: &Client, op: &Invoke<'_>) -> bool {
        if !codes::disconnected(client) {
            return false;
        }
        self.refuse(op, ErrorCode::TEMPORARILY_UNAVAILABLE);
        true
    }

    /// Records `op` as refused, unsent, with the definite `code` (its invocation and a `fail`).
    pub(crate) fn refuse(&mut self, op: &Invoke<'_>, code: ErrorCode) {
        debug_assert!(code.is_definite());
        let p = self.process.id();
        self.rec.invoke(p, op.f, op.input.clone(), op.key.clone());
        self.rec.record(op.ended(EventType::Fail, p, Some(code)));
    }

    /// Records the end of the hold given `token`: `ok` when it was released cleanly, else
    /// `info` (the hold may have been lost before the release), retiring the process.
    pub(crate) fn released(&mut self, token: Value, clean: bool) {
        let p = self.process.id();
        if clean {
            self.rec.complete(EventType::Ok, p, "release", token, None);
        } else {
            self.rec
                .complete(EventType::Info, p, "release", token, None);
            self.process.retire();
        }
    }
}

/// One client of a workload: where it runs, its index, its own random stream, and its
/// [`Caller`]. It opens one managed [`Client`] ([`Worker::client`]) and keeps it for the
/// whole run.
pub(crate) struct Worker<'a> {
    /// Where it opens sessions, with the run's settings.
    pub(crate) env: &'a Env<'a>,
    /// The workload it is a client of.
    pub(crate) w: &'a Workload,
    /// The client's index, from 0.
    pub(crate) index: usize,
    /// Its choices ([`ClientStream::CHOICES`]).
    pub(crate) rng: ChaCha8Rng,
    /// Its process and recorder.
    pub(crate) caller: Caller<'a>,
}

impl<'a> Worker<'a> {
    /// Opens the worker's managed client, on which it builds its handles once: they outlive
    /// every expiry of its sessions.
    pub(crate) async fn client(&self) -> Result<Client, WorkloadError> {
        Ok(self.env.backend.client().await?)
    }

    /// Client `index` of workload `w` on `env`.
    pub(crate) fn new(env: &'a Env<'a>, w: &'a Workload, rec: &'a Recorder, index: usize) -> Self {
        Worker {
            env,
            w,
            index,
            rng: ClientStream::CHOICES.rng(w.seed, index),
            caller: Caller::new(rec, Process::new(index, w.clients)),
        }
    }
}

/// Runs one [`Worker`] per client of `w` concurrently, each doing `worker`, to completion, and
/// returns the first error (every client finishes first, so the history is complete).
///
/// `worker` is a scenario's client, as `bank::client`: every scenario whose clients are alike
/// is run by this one call, so that none keeps its own copy of the setting up.
pub(crate) async fn all_workers<'a, Fut>(
    env: &'a Env<'a>,
    w: &'a Workload,
    rec: &'a Recorder,
    mut worker: impl FnMut(Worker<'a>) -> Fut,
) -> Result<(), WorkloadError>
where
    Fut: Future<Output = Result<(), WorkloadError>>,
{
    super::env::all_clients(w.clients, |i| worker(Worker::new(env, w, rec, i))).await
}
