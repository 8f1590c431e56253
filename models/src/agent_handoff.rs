//! The agent executor's hand-off (`core/src/agent/executor.rs`), as a stateright model of its
//! protocol.
//!
//! The executor is async code over the coordination trait, not a sans-IO machine, so this
//! model restates its protocol step for step rather than running it:
//!
//! - An executor takes the executor lock (an ephemeral node of its session), then loops:
//!   read the agent's state (its `applied` position and node version) and the queue; take the
//!   first entry past `applied`; commit one fenced `multi` — the lock node must still be its
//!   own, `set_data` of the state with `applied = seq` conditional on the version read, and
//!   `delete` of the entry.
//! - The commit fails as a whole on a changed version or a missing entry (`Raced`: read
//!   again). Its request may be lost (not applied) or its reply (applied): after a lost reply
//!   the executor reads the state and counts the entry consumed if `applied >= seq`, else
//!   read again.
//! - An executor may crash at any point (its session expires): its lock node goes, and a
//!   request it had not yet had applied never is. Another executor takes the lock.
//!
//! Properties: every action is applied at most once, actions are applied in queue order, and
//! every action is eventually applied when at least one executor survives (crashes are
//! bounded below the number of executors).

use stateright::{Model, Property};

/// One executor's place in the protocol.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Waiting for the executor lock.
    Waiting,
    /// Holding the lock, about to read the state and the queue.
    Idle,
    /// Read the state at `version` and chose entry `seq`; about to commit.
    Ready {
        /// The state's node version read.
        version: u32,
        /// The entry chosen.
        seq: u8,
    },
    /// Its commit of `seq` was sent and the reply lost; about to read the state to decide.
    InDoubt {
        /// The entry whose commit is in doubt.
        seq: u8,
    },
    /// Its session expired.
    Crashed,
}

/// The coordination service's data and every executor's phase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The state node's `applied` position.
    pub applied: u8,
    /// The state node's version.
    pub version: u32,
    /// The actions applied to the value, in the order applied.
    pub log: Vec<u8>,
    /// Queue entries not yet deleted.
    pub queue: Vec<u8>,
    /// Which executor's session holds the lock.
    pub lock: Option<usize>,
    /// Each executor.
    pub executors: Vec<Phase>,
    /// Crashes so far.
    pub crashes: u8,
}

/// A step of one executor (its index) or a fault.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Takes the free lock.
    Lock(usize),
    /// Reads the state and the queue.
    Read(usize),
    /// Commits; the reply arrives.
    Commit(usize),
    /// Commits; the request is lost (nothing applied).
    CommitRequestLost(usize),
    /// Commits; the reply is lost (applied if it would have succeeded).
    CommitReplyLost(usize),
    /// Reads the state after a lost reply.
    Recover(usize),
    /// Its session expires.
    Crash(usize),
}

/// The hand-off of `actions` queued actions between `executors` executors, at most `crashes`
/// of which crash.
///
/// ```
/// use avout_models::agent_handoff::Handoff;
/// use stateright::{Checker, Model};
/// let model = Handoff { executors: 2, actions: 2, crashes: 1, flawed: false };
/// let checker = model.checker().spawn_bfs().join();
/// checker.assert_properties();
/// ```
#[derive(Clone, Debug)]
pub struct Handoff {
    /// Executors.
    pub executors: usize,
    /// Actions queued before the executors start.
    pub actions: u8,
    /// Crashes allowed (fewer than `executors` for progress to hold).
    pub crashes: u8,
    /// A flaw planted for the tests: after a lost reply, commit again without reading
    /// `applied`, with a commit that does not delete the entry.
    pub flawed: bool,
}

impl Handoff {
    /// The entry an executor reading `s` would apply next: the first past `applied`.
    fn next_entry(s: &State) -> Option<u8> {
        s.queue.iter().copied().filter(|&q| q > s.applied).min()
    }

    fn remaining(s: &State) -> bool {
        Self::next_entry(s).is_some()
    }

    /// The commit's effect if it succeeds: the fence (lock), the version check, the entry.
    fn commit(&self, s: &mut State, i: usize, version: u32, seq: u8) {
        let ok = s.lock == Some(i) && s.version == version && s.queue.contains(&seq);
        if ok {
            s.applied = seq;
            s.version += 1;
            s.log.push(seq);
            if !self.flawed {
                s.queue.retain(|&q| q != seq);
            }
        }
    }
}

impl Model for Handoff {
    type State = State;
    type Action = Step;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            applied: 0,
            version: 0,
            log: Vec::new(),
            queue: (1..=self.actions).collect(),
            lock: None,
            executors: vec![Phase::Waiting; self.executors],
            crashes: 0,
        }]
    }

    fn actions(&self, s: &State, out: &mut Vec<Step>) {
        // Bounds the flawed model's space (its log can grow past the actions): a state that
        // already applied more than were queued is a violation, and ends the schedule.
        if s.log.len() > usize::from(self.actions) {
            return;
        }
        for (i, phase) in s.executors.iter().enumerate() {
            match phase {
                Phase::Crashed => continue,
                Phase::Waiting if s.lock.is_none() => out.push(Step::Lock(i)),
                Phase::Waiting => {}
                Phase::Idle if Self::next_entry(s).is_some() => out.push(Step::Read(i)),
                // Nothing to apply: the executor waits on its watches.
                Phase::Idle => {}
                Phase::Ready { .. } => {
                    out.push(Step::Commit(i));
                    out.push(Step::CommitRequestLost(i));
                    out.push(Step::CommitReplyLost(i));
                }
                Phase::InDoubt { .. } => out.push(Step::Recover(i)),
            }
            // An executor with nothing left to do is not crashed: it has finished its part.
            let busy = !matches!(phase, Phase::Idle | Phase::Waiting) || Self::remaining(s);
            if s.crashes < self.crashes && busy {
                out.push(Step::Crash(i));
            }
        }
    }

    fn next_state(&self, last: &State, step: Step) -> Option<State> {
        let mut s = last.clone();
        match step {
            Step::Lock(i) => {
                s.lock = Some(i);
                s.executors[i] = Phase::Idle;
            }
            Step::Read(i) => {
                let seq = Self::next_entry(&s)?;
                s.executors[i] = Phase::Ready {
                    version: s.version,
                    seq,
                };
            }
            Step::Commit(i) | Step::CommitReplyLost(i) => {
                let Phase::Ready { version, seq } = s.executors[i] else {
                    return None;
                };
                self.commit(&mut s, i, version, seq);
                // Consumed or raced: either way the executor reads again.
                s.executors[i] = match step {
                    Step::CommitReplyLost(_) => Phase::InDoubt { seq },
                    _ => Phase::Idle,
                };
            }
            Step::CommitRequestLost(i) => {
                s.executors[i] = Phase::InDoubt {
                    seq: match s.executors[i] {
                        Phase::Ready { seq, .. } => seq,
                        _ => return None,
                    },
                }
            }
            // `applied >= seq`: consumed; else raced. Both read again from Idle.
            Step::Recover(i) if !self.flawed => s.executors[i] = Phase::Idle,
            Step::Recover(i) => {
                let Phase::InDoubt { seq } = s.executors[i] else {
                    return None;
                };
                s.executors[i] = Phase::Ready {
                    version: s.version,
                    seq,
                };
            }
            Step::Crash(i) => {
                s.executors[i] = Phase::Crashed;
                s.crashes += 1;
                if s.lock == Some(i) {
                    s.lock = None;
                }
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("each action applied at most once", |_, s: &State| {
                let mut seen = s.log.clone();
                seen.sort_unstable();
                seen.dedup();
                seen.len() == s.log.len()
            }),
            Property::always("actions applied in queue order", |_, s: &State| {
                s.log.windows(2).all(|w| w[0] < w[1])
                    && s.log.last().copied().unwrap_or(0) == s.applied
            }),
            Property::always("no action skipped", |_, s: &State| {
                s.log.iter().copied().eq(1..=s.applied)
            }),
            Property::eventually("every action applied", |m: &Handoff, s: &State| {
                s.log.len() == usize::from(m.actions)
            }),
            Property::sometimes("an action applied after a crash", |_, s: &State| {
                s.crashes > 0 && !s.log.is_empty() && !Handoff::remaining(s)
            }),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stateright::Checker;

    #[test]
    fn the_hand_off_holds_while_one_executor_survives() {
        for (executors, actions, crashes) in [(2, 3, 1), (3, 3, 2)] {
            let model = Handoff {
                executors,
                actions,
                crashes,
                flawed: false,
            };
            let started = std::time::Instant::now();
            let checker = model.checker().spawn_bfs().join();
            eprintln!(
                "agent hand-off, {executors} executors, {actions} actions, {crashes} crashes: \
                 {} states, {} unique, {:?}",
                checker.state_count(),
                checker.unique_state_count(),
                started.elapsed()
            );
            checker.assert_properties();
        }
    }

    #[test]
    fn progress_fails_when_every_executor_may_crash() {
        let model = Handoff {
            executors: 2,
            actions: 2,
            crashes: 2,
            flawed: false,
        };
        let checker = model.checker().spawn_bfs().join();
        assert!(
            checker.discovery("every action applied").is_some(),
            "with every executor crashed nothing applies the rest"
        );
        assert!(
            checker
                .discovery("each action applied at most once")
                .is_none()
        );
    }

    #[test]
    fn a_blind_retry_after_a_lost_reply_is_found_applying_twice() {
        let model = Handoff {
            executors: 2,
            actions: 2,
            crashes: 1,
            flawed: true,
        };
        let checker = model.checker().spawn_bfs().join();
        assert!(
            checker
                .discovery("each action applied at most once")
                .is_some()
        );
    }
}
