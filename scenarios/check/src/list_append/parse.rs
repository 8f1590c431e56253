//! A list-append history as compact transactions: keys numbered densely, elements as
//! [`Atom`]s, each transaction's micro-operations as completed (an `ok` one) or as invoked
//! (any other: its reads unknown). Events come one at a time, from a [`History`] or streamed
//! from a file (`stream.rs`), so a file of millions of transactions is never held as JSON.

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::CheckError;
use super::fast::{FastMop, FastV};
use crate::elle::atom::{Atom, Atoms, Dense};
use crate::elle::parse::micro_ops;
use crate::history::{
    ErrorCode, EventType, F, History, HistoryError, Operation, Outcome, Pairing, Position, Process,
    outcome,
};

/// What a read saw.
#[derive(Clone, Debug)]
pub(super) enum Read {
    /// Unknown: an invocation, or a transaction that did not complete `ok`; the value the
    /// history gave (as a rule `null`), kept to print the operation as it was.
    Unknown(Atom),
    /// `null`: the key did not exist, the empty list.
    Null,
    List(Box<[Atom]>),
}

impl Read {
    /// The list read, if known.
    pub(super) fn list(&self) -> Option<&[Atom]> {
        match self {
            Read::Unknown(_) => None,
            Read::Null => Some(&[]),
            Read::List(l) => Some(l),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) enum Mop {
    Append { key: u32, elem: Atom },
    Read { key: u32, read: Read },
}

impl Mop {
    fn key_mut(&mut self) -> &mut u32 {
        match self {
            Mop::Append { key, .. } | Mop::Read { key, .. } => key,
        }
    }
}

pub(super) struct Txn {
    pub(super) process: u64,
    pub(super) outcome: Outcome,
    pub(super) invoke: Position,
    pub(super) complete: Option<Position>,
    pub(super) error: Option<ErrorCode>,
    pub(super) mops: Box<[Mop]>,
    /// What few transactions have, boxed to keep the many small.
    rare: Option<Box<Rare>>,
}

#[derive(Default)]
struct Rare {
    /// The operation's `key` field.
    key: Option<Atom>,
    /// The function, if not `txn` (refused once every event is read).
    f: Option<String>,
    /// Why its value is no list of micro-operations, and the value (parsed again if an `ok`
    /// completion without a value makes its reads known).
    bad: Option<(CheckError, Value)>,
}

impl Rare {
    /// Kept only if it says something: most transactions have nothing rare.
    fn boxed(self) -> Option<Box<Rare>> {
        (self.key.is_some() || self.f.is_some() || self.bad.is_some()).then(|| Box::new(self))
    }
}

/// A transaction's value as an event carries it.
pub(super) enum Incoming<'a> {
    Json(&'a Value),
    /// Micro-operations of the usual shapes, parsed straight from the text.
    Fast(&'a [FastMop<'a>]),
    /// Text the fast parse did not take: parsed as JSON, then read as `Json`.
    Text(&'a str),
}

/// An event, as the builder needs it.
pub(super) struct Event<'a> {
    pub(super) here: Position,
    pub(super) kind: EventType,
    pub(super) process: &'a Process,
    pub(super) f: &'a str,
    pub(super) value: Incoming<'a>,
    pub(super) key: Option<&'a Value>,
    pub(super) error: Option<ErrorCode>,
}

pub(super) struct Parsed {
    pub(super) txns: Vec<Txn>,
    pub(super) keys: Dense,
    pub(super) atoms: Atoms,
    /// Who appended each (key, element), and at which micro-operation.
    pub(super) appender: FxHashMap<(u32, Atom), (u32, u32)>,
}

/// Builds [`Parsed`] from events in history order.
#[derive(Default)]
pub(super) struct Builder {
    txns: Vec<Txn>,
    keys: Dense,
    atoms: Atoms,
    pairing: Pairing,
    null: Option<Atom>,
}

impl Parsed {
    pub(super) fn new(history: &History) -> Result<Parsed, CheckError> {
        let mut b = Builder::default();
        for (index, e) in history.events().iter().enumerate() {
            b.event(Event {
                here: history.position(index),
                kind: e.kind,
                process: &e.process,
                f: e.f.as_str(),
                value: Incoming::Json(&e.value),
                key: e.key.as_ref(),
                error: e.error,
            })?;
        }
        b.finish()
    }

    pub(super) fn key(&self, key: u32) -> Value {
        self.atoms.value(self.keys.atom(key))
    }

    pub(super) fn elem(&self, elem: Atom) -> Value {
        self.atoms.value(elem)
    }

    pub(super) fn elems(&self, list: &[Atom]) -> Vec<Value> {
        list.iter().map(|&e| self.elem(e)).collect()
    }

    pub(super) fn outcome(&self, t: u32) -> Outcome {
        self.txns[t as usize].outcome
    }

    /// Transaction `t` as an operation, its value as it was read.
    pub(super) fn op(&self, t: u32) -> Operation {
        let txn = &self.txns[t as usize];
        Operation {
            process: txn.process,
            f: F::Other("txn".into()),
            key: txn
                .rare
                .as_ref()
                .and_then(|r| r.key)
                .map(|k| self.atoms.value(k)),
            value: self.value(&txn.mops),
            outcome: txn.outcome,
            invoke: txn.invoke,
            complete: txn.complete,
            error: txn.error,
        }
    }

    fn value(&self, mops: &[Mop]) -> Value {
        value_of(&self.keys, &self.atoms, mops)
    }
}

/// Micro-operations as the JSON they were read from.
fn value_of(keys: &Dense, atoms: &Atoms, mops: &[Mop]) -> Value {
    let key = |k: u32| atoms.value(keys.atom(k));
    let mop = |m: &Mop| match m {
        Mop::Append { key: k, elem } => vec!["append".into(), key(*k), atoms.value(*elem)],
        Mop::Read { key: k, read } => {
            let v = match read {
                Read::Unknown(v) => atoms.value(*v),
                Read::Null => Value::Null,
                Read::List(l) => Value::Array(l.iter().map(|&e| atoms.value(e)).collect()),
            };
            vec!["r".into(), key(*k), v]
        }
    };
    Value::Array(mops.iter().map(|m| Value::Array(mop(m))).collect())
}

impl Builder {
    /// Takes the next event; `Err` only for an event that cannot be paired (a value that is no
    /// list of micro-operations is reported by [`Builder::finish`], as `History` would).
    pub(super) fn event(&mut self, e: Event<'_>) -> Result<(), CheckError> {
        let Process::Client(process) = *e.process else {
            return Ok(());
        };
        let line = e.here.line;
        if e.kind == EventType::Invoke {
            let t = self.txns.len();
            self.pairing
                .invoke(process, t, e.here, |open| self.txns[open].invoke.line)?;
            let mut rare = Rare {
                key: e.key.map(|k| self.atoms.of(k)),
                ..Rare::default()
            };
            let mops = if e.f == "txn" {
                self.mops(&e.value, line, false, &mut rare)
            } else {
                rare.f = Some(e.f.to_owned());
                Box::default()
            };
            let rare = rare.boxed();
            self.txns.push(Txn {
                process,
                outcome: Outcome::Info,
                invoke: e.here,
                complete: None,
                error: None,
                mops,
                rare,
            });
            return Ok(());
        }
        let t = self.pairing.complete(process, e.here)?;
        let invoked = self.txns[t].rare.as_ref().and_then(|r| r.f.as_deref());
        if invoked.unwrap_or("txn") != e.f {
            return Err(HistoryError::MismatchedF {
                line,
                invoke_line: self.txns[t].invoke.line,
                invoked: F::from(invoked.unwrap_or("txn").to_owned()),
                completed: F::from(e.f.to_owned()),
            }
            .into());
        }
        let ended = outcome(e.kind, e.error, line)?;
        let mut rare = self.txns[t].rare.take().map(|r| *r).unwrap_or_default();
        if rare.key.is_none() {
            rare.key = e.key.map(|k| self.atoms.of(k));
        }
        if ended == Outcome::Ok && rare.f.is_none() {
            let mops = if matches!(e.value, Incoming::Json(Value::Null)) {
                self.known(t, &mut rare)
            } else {
                rare.bad = None;
                self.mops(&e.value, line, true, &mut rare)
            };
            self.txns[t].mops = mops;
        }
        let txn = &mut self.txns[t];
        txn.outcome = ended;
        txn.error = e.error;
        txn.complete = Some(e.here);
        txn.rare = rare.boxed();
        Ok(())
    }

    /// An `ok` transaction completed without a value: its invoked micro-operations, with the
    /// reads' values now known.
    fn known(&mut self, t: usize, rare: &mut Rare) -> Box<[Mop]> {
        let line = self.txns[t].invoke.line;
        if let Some((_, value)) = rare.bad.take() {
            return self.mops(&Incoming::Json(&value), line, true, rare);
        }
        let null = self.null_atom();
        let unknown = self.txns[t]
            .mops
            .iter()
            .any(|m| matches!(m, Mop::Read { read: Read::Unknown(v), .. } if *v != null));
        if !unknown {
            let mops = std::mem::take(&mut self.txns[t].mops);
            return mops
                .into_iter()
                .map(|m| match m {
                    Mop::Read { key, .. } => Mop::Read {
                        key,
                        read: Read::Null,
                    },
                    append => append,
                })
                .collect();
        }
        // A read invoked with a value: the whole value read again, as known.
        let value = value_of(&self.keys, &self.atoms, &self.txns[t].mops);
        self.mops(&Incoming::Json(&value), line, true, rare)
    }

    fn mops(
        &mut self,
        value: &Incoming<'_>,
        line: usize,
        known: bool,
        rare: &mut Rare,
    ) -> Box<[Mop]> {
        let parsed = match value {
            Incoming::Fast(fast) => match self.fast(fast, known) {
                Some(mops) => return mops,
                None => None,
            },
            Incoming::Text(text) => Some(
                serde_json::from_str::<Value>(text)
                    .expect("the text is a JSON value: the event it came from parsed"),
            ),
            Incoming::Json(_) => None,
        };
        let json = match (&parsed, value) {
            (Some(v), _) => v.clone(),
            (None, Incoming::Json(v)) => (*v).clone(),
            (None, Incoming::Fast(fast)) => Value::Array(fast.iter().map(FastMop::json).collect()),
            (None, Incoming::Text(_)) => unreachable!("text is parsed above"),
        };
        match self.json(&json, line, known) {
            Ok(mops) => mops,
            Err(e) => {
                rare.bad = Some((e, json));
                Box::default()
            }
        }
    }

    fn json(&mut self, value: &Value, line: usize, known: bool) -> Result<Box<[Mop]>, CheckError> {
        let mops = micro_ops(value, line, |f, k, v, bad| {
            let key = self.atoms.of(k);
            let key = self.key(key);
            match f.as_str() {
                Some("append") => Ok(Mop::Append {
                    key,
                    elem: self.atoms.of(v),
                }),
                Some("r") => {
                    let read = match (known, v) {
                        (false, v) => Read::Unknown(self.atoms.of(v)),
                        (true, Value::Null) => Read::Null,
                        (true, Value::Array(l)) => {
                            Read::List(l.iter().map(|e| self.atoms.of(e)).collect())
                        }
                        (true, _) => return Err(bad("a read's value is not a list or null")),
                    };
                    Ok(Mop::Read { key, read })
                }
                _ => Err(bad("a micro-operation is neither \"append\" nor \"r\"")),
            }
        })?;
        Ok(mops.into_boxed_slice())
    }

    /// Micro-operations of the usual shapes; `None` for any other, which [`Builder::json`]
    /// reads (or refuses) as the JSON it is.
    fn fast(&mut self, fast: &[FastMop<'_>], known: bool) -> Option<Box<[Mop]>> {
        let null = self.null_atom();
        fast.iter()
            .map(|FastMop(append, k, v)| {
                let key = k.atom(&mut self.atoms);
                let key = self.key(key);
                Some(match (append, v, known) {
                    (true, FastV::Null, _) => Mop::Append { key, elem: null },
                    (true, FastV::Atom(e), _) => Mop::Append {
                        key,
                        elem: e.atom(&mut self.atoms),
                    },
                    (false, FastV::Null, false) => Mop::Read {
                        key,
                        read: Read::Unknown(null),
                    },
                    (false, FastV::Atom(e), false) => Mop::Read {
                        key,
                        read: Read::Unknown(e.atom(&mut self.atoms)),
                    },
                    (false, FastV::Null, true) => Mop::Read {
                        key,
                        read: Read::Null,
                    },
                    (false, FastV::List(l), true) => Mop::Read {
                        key,
                        read: Read::List(l.iter().map(|e| e.atom(&mut self.atoms)).collect()),
                    },
                    _ => return None,
                })
            })
            .collect()
    }

    fn null_atom(&mut self) -> Atom {
        *self.null.get_or_insert_with(|| self.atoms.of(&Value::Null))
    }

    fn key(&mut self, atom: Atom) -> u32 {
        self.keys.id(atom)
    }

    /// Every event read: refuses an operation other than `txn` (the first in invocation
    /// order), then a value that is no list of micro-operations or an element appended to a
    /// key twice, in transaction order, as a `History` read in full would.
    pub(super) fn finish(self) -> Result<Parsed, CheckError> {
        if let Some(txn) = self
            .txns
            .iter()
            .find(|t| t.rare.as_ref().is_some_and(|r| r.f.is_some()))
        {
            let f = txn
                .rare
                .as_ref()
                .and_then(|r| r.f.clone())
                .unwrap_or_default();
            return Err(CheckError::Unsupported {
                line: txn.invoke.line,
                f: F::from(f),
                model: "list-append",
                known: "txn",
            });
        }
        // Keys numbered again by first sight in the transactions as read, as a `History` read
        // in full numbers them (here an invocation numbered the keys it named before its
        // completion's value replaced it): the order findings on several keys come in.
        let mut txns = self.txns;
        let mut renumbered = vec![u32::MAX; self.keys.len()];
        let mut keys = Dense::default();
        for mop in txns.iter_mut().flat_map(|t| t.mops.iter_mut()) {
            let key = mop.key_mut();
            if renumbered[*key as usize] == u32::MAX {
                renumbered[*key as usize] = keys.id(self.keys.atom(*key));
            }
            *key = renumbered[*key as usize];
        }
        let mut parsed = Parsed {
            txns,
            keys,
            atoms: self.atoms,
            appender: FxHashMap::default(),
        };
        for t in 0..parsed.txns.len() {
            if let Some((e, _)) = parsed.txns[t].rare.as_mut().and_then(|r| r.bad.take()) {
                return Err(e);
            }
            for (m, mop) in parsed.txns[t].mops.iter().enumerate() {
                let Mop::Append { key, elem } = *mop else {
                    continue;
                };
                if let Some(&(first, _)) = parsed.appender.get(&(key, elem)) {
                    return Err(CheckError::DuplicateAppend {
                        key: parsed.key(key),
                        element: parsed.elem(elem),
                        first_line: parsed.txns[first as usize].invoke.line,
                        line: parsed.txns[t].invoke.line,
                    });
                }
                parsed.appender.insert((key, elem), (t as u32, m as u32));
            }
        }
        Ok(parsed)
    }
}
