//! The machine every participant runs to learn the outcome (see the [module docs](super)).

use super::*;
use crate::coverage::{self, Mark};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    Discover,
    Snapshot,
    Read,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Listing the children to learn the sites.
    Discovering {
        list: Token,
    },
    /// Votes (each with a data watch) then children (with a child watch), sent together.
    /// `stale`: one of these watches fired before the last reply, so what it read may have
    /// changed and the watch is spent: if undecided, the snapshot is taken again.
    Snapshot {
        votes: BTreeMap<Token, String>,
        list: Token,
        read: BTreeMap<String, Vec<u8>>,
        children: Option<Vec<String>>,
        stale: bool,
    },
    /// Creating `outcome` with our decision.
    Deciding {
        create: Token,
    },
    /// Reading `outcome`.
    Reading {
        get: Token,
    },
    /// Undecided: waiting for any of the snapshot's watches.
    Waiting {
        watches: Vec<Token>,
    },
    /// Waiting to redo the step in `stall` after a connection loss.
    Stalled,
    Done,
}

/// Waits for a transaction's outcome, deciding it when the votes allow; see the
/// module docs.
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::recipes::two_phase_commit::OutcomeMachine;
/// use avout::SessionState;
///
/// let mut m = OutcomeMachine::new("/tx/1", Some(vec!["a".into(), "b".into()]));
/// m.handle_session(Millis(0), SessionState::Connected);
/// let sent: Vec<_> = std::iter::from_fn(|| m.poll_request()).collect();
/// assert!(matches!(&sent[0].1, Request::GetData { path, watch: true } if path == "/tx/1/s_a"));
/// assert!(matches!(&sent[2].1, Request::GetChildren { watch: true, .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OutcomeMachine {
    tx: String,
    sites: Option<Vec<String>>,
    phase: Phase,
    stall: Stall<Step>,
    outbox: Outbox<Result<Outcome, TwoPhaseError>>,
}

impl OutcomeMachine {
    /// A machine reading the outcome of the transaction at `tx`, whose sites are `sites`
    /// (read from the transaction when `None`).
    ///
    /// ```
    /// let m = avout::recipes::two_phase_commit::OutcomeMachine::new("/tx/1", None);
    /// # let _ = m;
    /// ```
    pub fn new(tx: &str, sites: Option<Vec<String>>) -> Self {
        OutcomeMachine {
            tx: tx.to_owned(),
            sites,
            phase: Phase::Done,
            stall: Stall::default(),
            outbox: Outbox::default(),
        }
    }

    fn finish(&mut self, result: Result<Outcome, TwoPhaseError>) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
    }

    fn failed(&mut self, now: Millis, step: Step, error: Error) {
        if error.is_indeterminate() {
            self.phase = Phase::Stalled;
            self.stall.start(step, now);
        } else {
            self.finish(Err(error.into()));
        }
    }

    fn missing(&mut self) {
        let path = self.tx.clone();
        self.finish(Err(TwoPhaseError::NoTransaction { path }));
    }

    fn start(&mut self) {
        if self.sites.is_some() {
            return self.snapshot();
        }
        let list = self.outbox.send(Request::GetChildren {
            path: self.tx.clone(),
            watch: false,
        });
        self.phase = Phase::Discovering { list };
    }

    fn snapshot(&mut self) {
        let sites = self
            .sites
            .clone()
            .expect("sites are known before a snapshot");
        let votes = sites
            .into_iter()
            .map(|site| {
                let token = self.outbox.send(Request::GetData {
                    path: path::join(&self.tx, &format!("{VOTE}{site}")),
                    watch: true,
                });
                (token, site)
            })
            .collect();
        let list = self.outbox.send(Request::GetChildren {
            path: self.tx.clone(),
            watch: true,
        });
        self.phase = Phase::Snapshot {
            votes,
            list,
            read: BTreeMap::new(),
            children: None,
            stale: false,
        };
    }

    fn read_outcome(&mut self) {
        let get = self.outbox.send(Request::GetData {
            path: path::join(&self.tx, OUTCOME),
            watch: false,
        });
        self.phase = Phase::Reading { get };
    }

    /// Once the snapshot is complete: read the outcome, decide it, or wait.
    fn settle(&mut self) {
        let Phase::Snapshot {
            votes,
            list,
            read,
            children: Some(children),
            stale,
        } = self.phase.clone()
        else {
            return;
        };
        if read.len() < votes.len() {
            return;
        }
        if children.iter().any(|c| c == OUTCOME) {
            return self.read_outcome();
        }
        let present: Vec<String> = children
            .iter()
            .filter_map(|c| c.strip_prefix(PRESENCE).map(str::to_owned))
            .collect();
        match decide(&read, &present) {
            Some(outcome) => {
                let create = self.outbox.send(Request::Create {
                    path: path::join(&self.tx, OUTCOME),
                    data: outcome.as_bytes().to_vec(),
                    options: CreateOptions::default(),
                });
                self.phase = Phase::Deciding { create };
            }
            // A watch of this snapshot is spent: waiting on the others could wait forever.
            None if stale => self.snapshot(),
            None => {
                let mut watches: Vec<Token> = votes.into_keys().collect();
                watches.push(list);
                self.phase = Phase::Waiting { watches };
            }
        }
    }

    fn resume(&mut self, step: Step) {
        match step {
            Step::Discover => self.start(),
            Step::Snapshot => self.snapshot(),
            Step::Read => self.read_outcome(),
        }
    }
}

impl Machine for OutcomeMachine {
    type Output = Result<Outcome, TwoPhaseError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Discovering { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    let mut sites: Vec<String> = children
                        .iter()
                        .filter_map(|c| c.strip_prefix(VOTE).map(str::to_owned))
                        .collect();
                    sites.sort();
                    self.sites = Some(sites);
                    self.snapshot();
                }
                Err(Error::NoNode { .. }) => self.missing(),
                Err(e) => self.failed(now, Step::Discover, e),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Snapshot { votes, list, .. } if votes.contains_key(&token) || token == list => {
                let is_list = token == list;
                match reply {
                    Ok(Reply::Data { data, .. }) if !is_list => {
                        if let Phase::Snapshot { read, .. } = &mut self.phase {
                            read.insert(votes[&token].clone(), data);
                        }
                        self.settle();
                    }
                    Ok(Reply::Children { children, .. }) if is_list => {
                        if let Phase::Snapshot { children: c, .. } = &mut self.phase {
                            *c = Some(children);
                        }
                        self.settle();
                    }
                    // A vote node or the transaction is gone: it was removed.
                    Err(Error::NoNode { .. }) => self.missing(),
                    Err(e) => self.failed(now, Step::Snapshot, e),
                    Ok(other) => unreachable!("snapshot read replied {other:?}"),
                }
            }
            Phase::Deciding { create } if token == create => match reply {
                // Ours, or someone decided first: `outcome` holds the answer either way.
                Ok(_) => self.read_outcome(),
                Err(Error::NodeExists { .. }) => {
                    coverage::reach(Mark::TwoPhaseDecidedByAnother);
                    self.read_outcome()
                }
                Err(Error::NoNode { .. }) => self.missing(),
                // Creating a fixed path is idempotent; its content decides.
                Err(e) => self.failed(now, Step::Read, e),
            },
            Phase::Reading { get } if token == get => match reply {
                Ok(Reply::Data { data, .. }) => match Outcome::parse(&data) {
                    Some(outcome) => self.finish(Ok(outcome)),
                    None => self.finish(Err(Error::Other(format!(
                        "{}/{OUTCOME} holds {:?}, not an outcome",
                        self.tx,
                        String::from_utf8_lossy(&data)
                    ))
                    .into())),
                },
                // Not decided after all (a create lost with the connection): look again.
                Err(Error::NoNode { .. }) => self.snapshot(),
                Err(e) => self.failed(now, Step::Read, e),
                Ok(other) => unreachable!("get_data replied {other:?}"),
            },
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        match &mut self.phase {
            Phase::Waiting { watches } if watches.contains(&token) => self.snapshot(),
            // Armed by a reply of this snapshot, fired before its last reply: not lost.
            Phase::Snapshot {
                votes, list, stale, ..
            } if votes.contains_key(&token) || *list == token => *stale = true,
            _ => {}
        }
    }

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.start(),
            Resumed::Ended(error) => self.finish(Err(error.into())),
            Resumed::Redo(step) => self.resume(step),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(step) = self.stall.due(now) {
            self.resume(step);
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        self.stall.deadline()
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}
