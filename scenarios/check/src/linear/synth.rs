//! Synthetic histories of a register that is linearizable by construction, for testing and
//! measuring checkers.
//!
//! Each process runs one operation at a time through three steps — invoke, take effect
//! atomically on the shared register, complete — and at every tick one process, chosen at random,
//! takes its next step. Operations therefore overlap at random, and every history is
//! linearizable: ordering the operations by the tick at which they took effect is a witness.
//! Some operations end `info`: either the request was lost before taking effect, or the reply
//! was lost after; as in Jepsen, the process then continues under a fresh number. A cas whose
//! expected value is not there completes `fail`. Everything is drawn from one ChaCha8 stream
//! seeded by [`Synth::seed`], so a configuration names one history.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::history::{Event, F, History};

/// The shape of a synthetic history.
///
/// ```
/// use avout_check::linear::synth::Synth;
/// let h = Synth { operations: 50, ..Synth::default() }.history();
/// assert_eq!(h.operations(Default::default()).unwrap().len(), 50);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Synth {
    /// Seeds the one random stream.
    pub seed: u64,
    /// Concurrent processes.
    pub processes: u64,
    /// Invocations in the history.
    pub operations: usize,
    /// Registers; more than one adds a `key` field (0, 1, …) to every event.
    pub keys: u64,
    /// Writes and cas draw values from `0..values`; few values make reads ambiguous.
    pub values: u64,
    /// Whether to issue cas operations as well as reads and writes.
    pub cas: bool,
    /// The probability that an operation ends `info` (half lost before taking effect, half
    /// after).
    pub info_rate: f64,
}

impl Default for Synth {
    /// 10 processes, 1,000 operations on one key, 10 values, with cas, 2% `info`.
    fn default() -> Self {
        Synth {
            seed: 0,
            processes: 10,
            operations: 1_000,
            keys: 1,
            values: 10,
            cas: true,
            info_rate: 0.02,
        }
    }
}

enum Step {
    Idle,
    Invoked(Pending),
    Applied(Pending, Completion),
}

#[derive(Clone)]
struct Pending {
    key: u64,
    f: F,
    value: Value,
}

enum Completion {
    Ok(Value),
    Fail,
}

struct Proc {
    id: u64,
    step: Step,
}

impl Synth {
    /// Generates the history.
    ///
    /// ```
    /// use avout_check::Checker;
    /// use avout_check::linear::synth::Synth;
    /// use avout_check::linear::{Linearizable, Model};
    /// let h = Synth { seed: 7, operations: 200, ..Synth::default() }.history();
    /// assert!(Linearizable::new(Model::CasRegister).check(&h).unwrap().is_valid());
    /// ```
    pub fn history(&self) -> History {
        assert!(self.processes > 0 && self.keys > 0 && self.values > 0);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut registers = vec![Value::Null; self.keys as usize];
        let mut procs: Vec<Proc> = (0..self.processes)
            .map(|id| Proc {
                id,
                step: Step::Idle,
            })
            .collect();
        let mut history = History::new();
        let (mut invoked, mut busy, mut time) = (0, 0, 0u64);
        while invoked < self.operations || busy > 0 {
            time += rng.random_range(1..1_000);
            let chosen = rng.random_range(0..procs.len());
            let proc = &mut procs[chosen];
            let mut emit = |event: Event, key: u64| {
                let event = event.with_time(time);
                history.push(if self.keys > 1 {
                    event.with_key(key.into())
                } else {
                    event
                });
            };
            match std::mem::replace(&mut proc.step, Step::Idle) {
                Step::Idle if invoked < self.operations => {
                    let op = self.draw(&mut rng, &registers);
                    emit(
                        Event::invoke(proc.id, op.f.clone(), op.value.clone()),
                        op.key,
                    );
                    invoked += 1;
                    busy += 1;
                    proc.step = Step::Invoked(op);
                }
                Step::Idle => {}
                Step::Invoked(op) if rng.random_bool(self.info_rate / 2.0) => {
                    emit(Event::info(proc.id, op.f, op.value), op.key);
                    proc.id += self.processes;
                    busy -= 1;
                }
                Step::Invoked(op) => {
                    let register = &mut registers[op.key as usize];
                    let completion = match op.f {
                        F::Read => Completion::Ok(register.clone()),
                        F::Write => {
                            *register = op.value.clone();
                            Completion::Ok(op.value.clone())
                        }
                        _ if *register == op.value[0] => {
                            *register = op.value[1].clone();
                            Completion::Ok(op.value.clone())
                        }
                        _ => Completion::Fail,
                    };
                    proc.step = Step::Applied(op, completion);
                }
                Step::Applied(op, completion) => {
                    busy -= 1;
                    if rng.random_bool(self.info_rate / 2.0) {
                        emit(Event::info(proc.id, op.f, op.value), op.key);
                        proc.id += self.processes;
                    } else {
                        let event = match completion {
                            Completion::Ok(value) => Event::ok(proc.id, op.f, value),
                            Completion::Fail => Event::fail(proc.id, op.f, op.value),
                        };
                        emit(event, op.key);
                    }
                }
            }
        }
        history
    }

    fn draw(&self, rng: &mut ChaCha8Rng, registers: &[Value]) -> Pending {
        let key = rng.random_range(0..self.keys);
        let choice = rng.random_range(0..if self.cas { 3 } else { 2 });
        match choice {
            0 => Pending {
                key,
                f: F::Read,
                value: Value::Null,
            },
            1 => Pending {
                key,
                f: F::Write,
                value: json!(rng.random_range(0..self.values)),
            },
            _ => {
                // Half the cas expect the value there at invocation, so many succeed.
                let expected = if rng.random_bool(0.5) {
                    registers[key as usize].clone()
                } else {
                    json!(rng.random_range(0..self.values))
                };
                let new = json!(rng.random_range(0..self.values));
                Pending {
                    key,
                    f: F::Cas,
                    value: json!([expected, new]),
                }
            }
        }
    }
}
