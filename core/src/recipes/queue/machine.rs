//! The consumer's machine: take the lowest element exactly once (see the [module docs](super)).

use super::select::Select;
use super::*;
use crate::coverage::{self, Mark};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Step {
    List,
    Read,
    Verify,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    /// Listing the elements.
    Listing {
        list: Token,
    },
    /// Creating the queue node and the receipts node.
    Ensuring {
        last: Token,
    },
    /// Reading the first candidate's data.
    Reading {
        get: Token,
    },
    /// The claim `multi` is in flight.
    Claiming {
        multi: Token,
    },
    /// Catching our server up with the leader before checking the receipt.
    Syncing {
        sync: Token,
    },
    /// Checking our receipt after the claim's outcome was lost.
    Verifying {
        exists: Token,
    },
    /// The queue was empty: waiting for the children watch armed by `list`.
    Waiting {
        list: Token,
    },
    /// Waiting to redo the step in `stall` after a connection loss.
    Stalled,
    Done,
}

/// Takes one element; see the module docs.
///
/// The output is `Ok(None)` when the queue stayed empty for the machine's patience.
///
/// ```
/// use avout::lock::Patience;
/// use avout::machine::{Machine, Millis, Request};
/// use avout::recipes::queue::TakeMachine;
/// use avout::SessionState;
///
/// let mut m = TakeMachine::new("/jobs", 0x42, Patience::Forever);
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::GetChildren { watch: false, .. }))));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TakeMachine {
    queue: String,
    receipts: String,
    receipt: String,
    patience: Patience,
    deadline: Option<Millis>,
    /// Arm the children watch when listing: set once the queue was seen empty.
    watching: bool,
    /// Candidates in order; the first is the one being read, claimed or verified.
    candidates: VecDeque<String>,
    /// The first candidate's data and version, once read.
    read: Option<(Vec<u8>, i32)>,
    /// Which elements to take, in which order.
    select: Select,
    /// While waiting: when the earliest element not yet due becomes due (delay queue).
    wake: Option<Millis>,
    phase: Phase,
    stall: Stall<Step>,
    outbox: Outbox<Result<Option<Element>, QueueError>>,
    planted: Bugs,
}

impl TakeMachine {
    /// A machine taking from `queue`, naming its receipt with `guid`.
    ///
    /// ```
    /// use avout::lock::Patience;
    /// let m = avout::recipes::queue::TakeMachine::new("/jobs", 1, Patience::None);
    /// assert!(m.in_doubt().is_none());
    /// ```
    pub fn new(queue: &str, guid: u128, patience: Patience) -> Self {
        let receipts = path::join(queue, RECEIPTS);
        TakeMachine {
            queue: queue.to_owned(),
            receipt: path::join(&receipts, &guid_hex(guid)),
            receipts,
            patience,
            deadline: None,
            watching: false,
            candidates: VecDeque::new(),
            read: None,
            select: Select::All,
            wake: None,
            phase: Phase::Done,
            stall: Stall::default(),
            outbox: Outbox::default(),
            planted: Bugs::NONE,
        }
    }

    /// The same machine with `planted` bugs on (none by default; see [`crate::planted`]).
    ///
    /// ```
    /// use avout::lock::Patience;
    /// let m = avout::recipes::queue::TakeMachine::new("/jobs", 1, Patience::None)
    ///     .planted(avout::planted::Bugs::NONE);
    /// assert!(m.in_doubt().is_none());
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.planted = planted;
        self
    }

    /// The same machine taking only the elements `select` picks, in its order.
    pub(crate) fn selecting(mut self, select: Select) -> Self {
        self.select = select;
        self
    }

    /// If a claim was sent whose outcome is unknown: the receipt that proves it and the element
    /// it claims. A cancelled take must settle it (see the module docs).
    ///
    /// ```
    /// use avout::lock::Patience;
    /// let m = avout::recipes::queue::TakeMachine::new("/jobs", 1, Patience::None);
    /// assert_eq!(m.in_doubt(), None);
    /// ```
    pub fn in_doubt(&self) -> Option<(String, Element)> {
        let claimed = match self.phase {
            Phase::Claiming { .. } | Phase::Syncing { .. } | Phase::Verifying { .. } => true,
            Phase::Stalled => self.stall.step() == Some(&Step::Verify),
            _ => false,
        };
        if !claimed {
            return None;
        }
        let (data, _) = self.read.clone().expect("a claim follows a read");
        let name = self
            .candidates
            .front()
            .expect("a claim has a candidate")
            .clone();
        Some((self.receipt.clone(), Element { name, data }))
    }

    fn finish(&mut self, result: Result<Option<Element>, QueueError>) {
        self.phase = Phase::Done;
        self.stall.cancel();
        self.outbox.finish(result);
    }

    fn list(&mut self) {
        self.read = None;
        self.wake = None;
        let list = self.outbox.send(Request::GetChildren {
            path: self.queue.clone(),
            watch: self.watching,
        });
        self.phase = Phase::Listing { list };
    }

    fn ensure(&mut self) {
        let last = self.outbox.send_ancestors(&self.receipts);
        self.phase = Phase::Ensuring { last };
    }

    /// Reads the first candidate, or lists again when none is left.
    fn read_first(&mut self) {
        self.read = None;
        match self.candidates.front() {
            Some(name) => {
                let get = self.outbox.send(Request::GetData {
                    path: path::join(&self.queue, name),
                    watch: false,
                });
                self.phase = Phase::Reading { get };
            }
            None => self.list(),
        }
    }

    fn next_candidate(&mut self) {
        self.candidates.pop_front();
        self.read_first();
    }

    fn claim(&mut self) {
        let name = self.candidates.front().expect("claiming a candidate");
        let (_, version) = self.read.clone().expect("claiming after a read");
        let multi = self.outbox.send(Request::Multi(vec![
            Op::delete(path::join(&self.queue, name), Some(version)),
            Op::create(self.receipt.clone(), Vec::new(), CreateMode::Ephemeral),
        ]));
        self.phase = Phase::Claiming { multi };
    }

    /// Checks the receipt, after a `sync`: a follower we reconnected to may not have applied
    /// our claim yet, and "no receipt" there would make us claim another element while the
    /// first one is already ours (and lost).
    fn verify(&mut self) {
        let sync = self.outbox.send(Request::Sync { path: "/".into() });
        self.phase = Phase::Syncing { sync };
    }

    fn check_receipt(&mut self) {
        let exists = self.outbox.send(Request::Exists {
            path: self.receipt.clone(),
            watch: false,
        });
        self.phase = Phase::Verifying { exists };
    }

    /// The claim succeeded: deliver, and drop the receipt without waiting (if that delete is
    /// lost, the ephemeral receipt goes with the session).
    fn taken(&mut self) {
        let (data, _) = self.read.take().expect("taken after a read");
        let name = self.candidates.pop_front().expect("taken a candidate");
        self.finish(Ok(Some(Element { name, data })));
        self.outbox.send(Request::Delete {
            path: self.receipt.clone(),
            version: None,
        });
    }

    fn failed(&mut self, now: Millis, step: Step, error: Error) {
        if error.is_indeterminate() {
            self.stalled(now, step);
        } else {
            self.fail(error);
        }
    }

    fn stalled(&mut self, now: Millis, step: Step) {
        self.phase = Phase::Stalled;
        self.stall.start(step, now);
    }

    fn fail(&mut self, error: Error) {
        let error = match self.in_doubt() {
            Some((_, element)) if error.is_session_lost() => QueueError::TakeInDoubt {
                element: element.name,
                error,
            },
            _ => QueueError::from(error),
        };
        self.finish(Err(error));
    }

    fn resume(&mut self, step: Step) {
        match step {
            Step::List => self.list(),
            Step::Read => self.read_first(),
            Step::Verify => self.verify(),
        }
    }

    /// Whether a timed take may stop now: nothing claimed or in doubt, so giving up loses
    /// nothing.
    fn may_give_up(&self) -> bool {
        self.phase != Phase::Done && self.in_doubt().is_none()
    }

    fn empty(&mut self, now: Millis, watch: Option<Token>, next_due: Option<u64>) {
        self.wake = next_due
            .and_then(|due| self.select.millis_at(due))
            .map(Millis);
        if self.patience == Patience::None || self.deadline.is_some_and(|d| now >= d) {
            return self.finish(Ok(None));
        }
        match watch {
            Some(list) => self.phase = Phase::Waiting { list },
            None => {
                // Look again with a watch armed, so that a put in between is not missed.
                self.watching = true;
                self.list();
            }
        }
    }
}

impl Machine for TakeMachine {
    type Output = Result<Option<Element>, QueueError>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        match self.phase.clone() {
            Phase::Listing { list } if token == list => match reply {
                Ok(Reply::Children { children, .. }) => {
                    let offer = self.select.offer(children, now.0);
                    self.candidates = offer.candidates.into();
                    if self.candidates.is_empty() {
                        self.empty(now, self.watching.then_some(list), offer.next_due);
                    } else {
                        self.read_first();
                    }
                }
                Err(Error::NoNode { .. }) if self.patience == Patience::None => {
                    self.finish(Ok(None))
                }
                Err(Error::NoNode { .. }) => {
                    self.watching = true;
                    self.ensure();
                }
                // The planted CURATOR-623: the listing that was to arm the watch failed, and
                // the consumer waits for that watch anyway.
                Err(e)
                    if e.is_indeterminate()
                        && self.watching
                        && self.planted.contains(Bug::Curator623) =>
                {
                    self.phase = Phase::Waiting { list };
                }
                Err(e) => self.failed(now, Step::List, e),
                Ok(other) => unreachable!("children replied {other:?}"),
            },
            Phase::Ensuring { last } if token == last => match reply {
                // NoNode: an ancestor's create was lost; the listing finds out and starts over.
                Ok(_) | Err(Error::NodeExists { .. } | Error::NoNode { .. }) => self.list(),
                Err(e) => self.failed(now, Step::List, e),
            },
            Phase::Reading { get } if token == get => match reply {
                Ok(Reply::Data { data, stat }) => {
                    self.read = Some((data, stat.version));
                    self.claim();
                }
                // Taken by someone else since the listing.
                Err(Error::NoNode { .. }) => self.next_candidate(),
                Err(e) => self.failed(now, Step::Read, e),
                Ok(other) => unreachable!("get_data replied {other:?}"),
            },
            Phase::Claiming { multi } if token == multi => match reply {
                Ok(Reply::Multi(_)) => self.taken(),
                Err(Error::Multi { index: 0, source })
                    if matches!(*source, Error::NoNode { .. } | Error::BadVersion { .. }) =>
                {
                    // Lost the race for this element (or it was rewritten: read it again
                    // from a fresh listing).
                    self.next_candidate()
                }
                Err(Error::Multi { index: 1, source })
                    if matches!(*source, Error::NoNode { .. }) =>
                {
                    // No receipts node yet (a queue made by hand): create it and start over.
                    self.ensure()
                }
                Err(Error::Multi { index: 1, source })
                    if matches!(*source, Error::NodeExists { .. }) =>
                {
                    panic!(
                        "receipt {} exists before its claim was applied: a GUID was reused",
                        self.receipt
                    )
                }
                Err(e) if e.is_indeterminate() => self.stalled(now, Step::Verify),
                Err(e) => self.fail(e),
                Ok(other) => unreachable!("multi replied {other:?}"),
            },
            Phase::Syncing { sync } if token == sync => match reply {
                Ok(_) => self.check_receipt(),
                Err(e) => self.failed(now, Step::Verify, e),
            },
            Phase::Verifying { exists } if token == exists => match reply {
                Ok(Reply::Exists(Some(_))) => {
                    coverage::reach(Mark::QueueClaimLostApplied);
                    self.taken()
                }
                // The claim was not applied and, our session's requests being ordered, never
                // will be: the element may still be first in line.
                Ok(Reply::Exists(None)) => {
                    coverage::reach(Mark::QueueClaimLostNotApplied);
                    self.read_first()
                }
                Err(e) => self.failed(now, Step::Verify, e),
                Ok(other) => unreachable!("exists replied {other:?}"),
            },
            // Replies to parents' creates, superseded reads, the receipt's cleanup.
            _ => {}
        }
    }

    fn handle_watch(&mut self, _now: Millis, token: Token, _event: WatchedEvent) {
        if self.phase == (Phase::Waiting { list: token }) {
            self.list();
        }
    }

    fn handle_session(&mut self, now: Millis, state: SessionState) {
        if !self.outbox.started() {
            self.deadline = match self.patience {
                Patience::Millis(ms) => Some(now.plus(ms)),
                Patience::Forever | Patience::None => None,
            };
        }
        match self.outbox.session_stalled(state, &mut self.stall) {
            Resumed::Start => self.list(),
            Resumed::Ended(error) => self.fail(error),
            Resumed::Redo(step) => self.resume(step),
            Resumed::Quiet => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(step) = self.stall.due(now) {
            self.resume(step);
        }
        // The earliest element not yet due has come due: look again (the watch covers puts).
        if matches!(self.phase, Phase::Waiting { .. }) && self.wake.is_some_and(|w| now >= w) {
            self.list();
        }
        if let Some(deadline) = self.deadline
            && now >= deadline
            && self.may_give_up()
        {
            self.finish(Ok(None));
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        // While a claim is in doubt the deadline is not armed: the take must settle it first
        // (and a past deadline would otherwise fire again and again).
        let deadline = self.deadline.filter(|_| self.may_give_up());
        let wake = self
            .wake
            .filter(|_| matches!(self.phase, Phase::Waiting { .. }));
        earliest(earliest(self.stall.deadline(), deadline), wake)
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.outbox.take_output()
    }
}
