//! [`Replay`]: the walk of a recording's log through the model's transition relation.

use std::collections::VecDeque;

use avout::SessionState;
use avout::machine::Request;
use avout_sim_zk::{FaultKind, LogEvent};

use super::compare::{Guids, same_refs, tree};
use super::{Conformance, Divergence, Recording, Returned};
use crate::world::{Action, Agent, Faults, Msg, World};

/// A request as the simulator's log shows it: operation and path.
fn show(request: &Request) -> String {
    format!("{} {}", request.name(), request.path())
}

/// `ok`, or an error's variant name: the simulator log's outcome vocabulary.
pub(super) fn outcome<T>(result: &avout::Result<T>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => e.name().into(),
    }
}

/// A replay in progress.
pub(super) struct Replay<'r, A> {
    run: &'r Recording,
    pub(super) world: World<A>,
    guids: Guids,
    /// Per client: requests the model's client sent that the simulator has not logged yet.
    sent: Vec<VecDeque<Request>>,
    actions: Vec<(usize, Action)>,
    entries: usize,
}

impl<'r, A: Agent> Replay<'r, A> {
    pub(super) fn new(run: &'r Recording, agents: Vec<A>) -> Self {
        let agents = agents
            .into_iter()
            .zip(run.sessions.iter().copied())
            .collect();
        let world = World::from_kernel(run.start.clone(), agents, u8::MAX);
        let sent = world
            .clients
            .iter()
            .map(|c| c.outbox.iter().map(|(_, r)| r.clone()).collect())
            .collect();
        Replay {
            run,
            world,
            guids: Guids::default(),
            sent,
            actions: Vec::new(),
            entries: 0,
        }
    }

    fn client(&self, sim: usize) -> Option<usize> {
        sim.checked_sub(self.run.first)
            .filter(|c| *c < self.world.clients.len())
    }

    fn enabled(&self, action: Action) -> bool {
        let mut actions = Vec::new();
        self.world.actions(&Faults::classic(u8::MAX), &mut actions);
        actions.contains(&action)
    }

    /// Takes `action` for log entry `at`, which must be enabled unless `forced`.
    fn take(&mut self, at: usize, action: Action, forced: bool) -> Result<(), Divergence> {
        if !forced && !self.enabled(action) {
            return Err(self.diverge(at, format!("{action} is not enabled in the model")));
        }
        // The replay takes the three faults sim-zk logs as such, each a client's.
        let c = action.client().expect("a client's action");
        let before = self.world.clients[c].outbox.len();
        let kept = match action {
            Action::Apply(_) => before - 1,
            // The connection broke: everything not yet at the server failed with it.
            Action::LoseRequest(_) | Action::LoseReply(_) => 0,
            _ => before,
        };
        self.world.step(action, None);
        let outbox = &self.world.clients[c].outbox;
        if matches!(action, Action::DeliverExpiry(_)) {
            self.sent[c].clear();
        } else {
            self.sent[c].extend(outbox.iter().skip(kept).map(|(_, r)| r.clone()));
        }
        self.actions.push((at, action));
        Ok(())
    }

    /// Reads client `c`'s reconnection notices if they are next in its inbox: the production
    /// driver hands a machine its session's transitions as they come, before what arrives
    /// on the new connection.
    fn read_reconnection(&mut self, at: usize, c: usize) -> Result<(), Divergence> {
        while matches!(self.world.clients[c].inbox.front(), Some(Msg::Reconnected)) {
            self.take(at, Action::DeliverReconnected(c), false)?;
        }
        Ok(())
    }

    /// Client `c`'s own steps that make it send a request named `op`: one, or two when the
    /// first sends nothing (a lock's unlock defers its release, which the linger's end then
    /// sends); else the first own step enabled (the divergence shows at the comparison).
    fn own_steps(&self, c: usize, op: &str) -> Vec<Action> {
        let own = |world: &World<A>| -> Vec<Action> {
            let mut actions = Vec::new();
            world.actions(&Faults::classic(u8::MAX), &mut actions);
            [
                Action::DeliverReconnected(c),
                Action::Timer(c),
                Action::Script(c),
            ]
            .into_iter()
            .filter(|a| actions.contains(a))
            .collect()
        };
        // The world after `steps`, and the first request they made `c` send.
        let after = |steps: &[Action]| {
            let mut probe = self.world.clone();
            let before = probe.clients[c].outbox.len();
            for step in steps {
                probe.step(*step, None);
            }
            let sent = probe.clients[c].outbox.get(before).map(|(_, r)| r.clone());
            (probe, sent)
        };
        let first = own(&self.world);
        for a in &first {
            let (probe, sent) = after(&[*a]);
            match sent {
                Some(request) if request.name() == op => return vec![*a],
                Some(_) => {}
                None => {
                    for b in own(&probe) {
                        if after(&[*a, b]).1.is_some_and(|r| r.name() == op) {
                            return vec![*a, b];
                        }
                    }
                }
            }
        }
        first.into_iter().take(1).collect()
    }

    fn diverge(&self, at: usize, why: String) -> Divergence {
        let event = self
            .run
            .log
            .get(at)
            .map_or_else(|| "end of the run".to_owned(), ToString::to_string);
        Divergence {
            entry: at,
            event,
            why,
        }
    }

    /// Walks the log from the clients' start; `observe` sees the model after every action.
    pub(super) fn run(mut self, mut observe: impl FnMut(&World<A>)) -> Result<Self, Divergence> {
        let log = &self.run.log;
        let mut at = self.run.from;
        while at < log.len() {
            let taken = self.actions.len();
            let consumed = self.entry(at)?;
            for _ in taken..self.actions.len() {
                observe(&self.world);
            }
            at += consumed;
        }
        self.finish()?;
        Ok(self)
    }

    /// Replays log entry `at`; returns how many entries it consumed.
    fn entry(&mut self, at: usize) -> Result<usize, Divergence> {
        let log = &self.run.log;
        let event = &log[at];
        let sim_client = match event {
            LogEvent::Request { client, .. }
            | LogEvent::Applied { client, .. }
            | LogEvent::Reply { client, .. }
            | LogEvent::Watch { client, .. }
            | LogEvent::State { client, .. }
            | LogEvent::Dropped { client, .. } => Some(*client),
            LogEvent::Fault { client, .. } => *client,
            // Timers are the simulator's own (a closing session's check); connections and
            // buggify points are nothing the models have.
            LogEvent::Timer { .. } | LogEvent::Connect { .. } | LogEvent::Buggify { .. } => None,
        };
        let Some(c) = sim_client.and_then(|s| self.client(s)) else {
            if let LogEvent::Fault {
                client: None, kind, ..
            } = event
            {
                return Err(self.diverge(at, format!("the models have no {} fault", kind.name())));
            }
            return Ok(1);
        };
        self.entries += 1;
        let finished = self.world.clients[c].agent.finished();
        match event {
            LogEvent::Request { op, path, .. } => {
                if op == "close" {
                    // The workload dropping its handle, after the run.
                    return Ok(1);
                }
                if self.sent[c].is_empty() {
                    // The client sends on its own time: a retry timer, or its script. When
                    // both could, the one that sends what was logged (a leader resigns while
                    // its monitor waits to ask again: the script's delete, not the timer's
                    // exists).
                    for action in self.own_steps(c, op) {
                        self.take(at, action, false)?;
                    }
                }
                let Some(request) = self.sent[c].pop_front() else {
                    return Err(
                        self.diverge(at, format!("the model's client {c} sends nothing here"))
                    );
                };
                // The log gives no path to a request without one (`addAuth`).
                let same = request.name() == op
                    && match path {
                        Some(s) => self.guids.same(s, request.path()),
                        None => request.path().is_empty(),
                    };
                if !same {
                    return Err(self.diverge(
                        at,
                        format!("the model's client {c} sent {} instead", show(&request)),
                    ));
                }
                Ok(1)
            }
            LogEvent::Applied {
                zxid, outcome: o, ..
            } => {
                let lost = matches!(
                    log.get(at + 1),
                    Some(LogEvent::Fault { kind: FaultKind::ReplyLost, client: Some(s), .. })
                        if self.client(*s) == Some(c)
                );
                let client = &self.world.clients[c];
                if client.told_expired
                    && client.outbox.is_empty()
                    && o == "SessionExpired"
                    && !self.world.kernel.is_alive(client.session)
                {
                    // Sent before the client learnt of the expiry: the model's client drops
                    // it with the session, the server refuses it without an effect.
                    return Ok(if lost { 2 } else { 1 });
                }
                let Some((_, request)) = self.world.clients[c].outbox.front() else {
                    return Err(self.diverge(
                        at,
                        format!("the model's client {c} has no request at the server"),
                    ));
                };
                let mut probe = (*self.world.kernel).clone();
                let applied = probe.apply(0, self.world.clients[c].session, request);
                let model_outcome = outcome(&applied.result);
                let action = if lost {
                    Action::LoseReply(c)
                } else {
                    Action::Apply(c)
                };
                self.take(at, action, false)?;
                if model_outcome != *o {
                    return Err(
                        self.diverge(at, format!("the model's server answers {model_outcome}"))
                    );
                }
                let model_zxid = self.world.kernel.last_zxid();
                if model_zxid != *zxid {
                    return Err(
                        self.diverge(at, format!("the model's server is at zxid {model_zxid:#x}"))
                    );
                }
                Ok(if lost { 2 } else { 1 })
            }
            LogEvent::Fault { kind, .. } => {
                let client = &self.world.clients[c];
                if *kind == FaultKind::RequestLost
                    && client.told_expired
                    && client.outbox.is_empty()
                    && !self.world.kernel.is_alive(client.session)
                {
                    // As for an applied one above: sent before the client learnt of the
                    // expiry, failed by the library with the session (the model's client
                    // dropped it then), and lost on its way to the server, which changes
                    // nothing (STM, 4 clients, seed 128: a commit sent as the expiry
                    // notice arrived).
                    return Ok(1);
                }
                let action = match kind {
                    FaultKind::RequestLost => Action::LoseRequest(c),
                    FaultKind::SessionExpiry => Action::Expire(c),
                    FaultKind::ReplyLost => {
                        return Err(self.diverge(at, "a reply lost with no request applied".into()));
                    }
                    other => {
                        return Err(
                            self.diverge(at, format!("the models have no {} fault", other.name()))
                        );
                    }
                };
                // The model does not expire a finished client (nothing it does afterwards
                // matters), but the server's state must follow.
                let forced = finished && *kind == FaultKind::SessionExpiry;
                self.take(at, action, forced)?;
                Ok(1)
            }
            LogEvent::Reply { outcome: o, .. } => {
                // A finished client reads nothing; after its session ended, the library
                // fails what was in flight (the model's client dropped it with the session).
                if finished || self.world.clients[c].told_expired {
                    return Ok(1);
                }
                self.read_reconnection(at, c)?;
                let Some(Msg::Reply { result, .. }) = self.world.clients[c].inbox.front() else {
                    return Err(self.diverge(
                        at,
                        format!("the model's client {c} has no reply to read next"),
                    ));
                };
                let model_outcome = outcome(result);
                if model_outcome != *o {
                    return Err(self.diverge(at, format!("the model's reply is {model_outcome}")));
                }
                self.take(at, Action::DeliverReply(c), false)?;
                Ok(1)
            }
            LogEvent::Watch { kind, path, .. } => {
                if finished {
                    return Ok(1);
                }
                // One event, read by every watch the library holds for it (none: nothing).
                self.read_reconnection(at, c)?;
                let path = self.guids.to_model(path);
                while let Some(Msg::Watch { event, .. }) = self.world.clients[c].inbox.front() {
                    if event.kind != *kind || event.path != path {
                        return Err(
                            self.diverge(at, format!("the model's client {c} reads {event} first"))
                        );
                    }
                    self.take(at, Action::DeliverWatch(c), false)?;
                    if self.world.clients[c].agent.finished() {
                        break;
                    }
                }
                Ok(1)
            }
            LogEvent::State { state, .. } => match state {
                // Logged just before `Expired` by the library; the model delivers both.
                SessionState::Disconnected
                    if matches!(
                        log.get(at + 1),
                        Some(LogEvent::State {
                            state: SessionState::Expired,
                            ..
                        })
                    ) =>
                {
                    Ok(1)
                }
                SessionState::Expired if finished => Ok(1),
                SessionState::Expired => {
                    self.read_reconnection(at, c)?;
                    self.take(at, Action::DeliverExpiry(c), false)?;
                    Ok(1)
                }
                // A lost request or reply broke the connection: the model broke it then.
                SessionState::Disconnected if !self.world.clients[c].connected => Ok(1),
                SessionState::Connected if finished => Ok(1),
                SessionState::Connected => {
                    self.take(at, Action::Reconnect(c), false)?;
                    Ok(1)
                }
                other => {
                    Err(self.diverge(at, format!("the models have no {other:?} session state")))
                }
            },
            // A message of a connection that broke; the model failed its call at the break.
            LogEvent::Dropped { .. } => Ok(1),
            LogEvent::Timer { .. } | LogEvent::Connect { .. } | LogEvent::Buggify { .. } => Ok(1),
        }
    }

    /// The checks at the end: nothing the model sent is missing from the log, and the two
    /// servers agree.
    fn finish(&mut self) -> Result<(), Divergence> {
        let end = self.run.log.len();
        for (c, sent) in self.sent.iter().enumerate() {
            if let Some(request) = sent.front() {
                let request = show(request);
                return Err(self.diverge(
                    end,
                    format!(
                        "the model's client {c} sent {request}, which the implementation never did"
                    ),
                ));
            }
        }
        let model = tree(&self.world.kernel, |p| p.to_owned());
        let sim = tree(&self.run.end, |p| self.guids.to_model(p));
        if model != sim {
            let differ = model
                .iter()
                .zip(&sim)
                .find(|(a, b)| a != b)
                .map(|(a, b)| format!("model {a:?}, simulator {b:?}"))
                .unwrap_or_else(|| {
                    format!(
                        "{} nodes in the model, {} in the simulator",
                        model.len(),
                        sim.len()
                    )
                });
            return Err(self.diverge(end, format!("the servers' trees differ: {differ}")));
        }
        Ok(())
    }

    /// Compares the STM's refs at the end (see [`same_refs`]).
    pub(super) fn compare_refs(&self) -> Result<(), Divergence> {
        same_refs(&self.world.kernel, &self.run.end)
            .map_err(|why| self.diverge(self.run.log.len(), why))
    }

    /// Compares what each client's call returned.
    pub(super) fn compare_results(&self, model: &[Returned]) -> Result<(), Divergence> {
        if model != self.run.results {
            return Err(self.diverge(
                self.run.log.len(),
                format!(
                    "the clients' calls returned {:?}, the model's clients {model:?}",
                    self.run.results
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn done(self) -> Conformance {
        Conformance {
            actions: self.actions,
            entries: self.entries,
        }
    }
}
