//! [`MvccAgent`]: a client running one transaction through the production `TryMachine`, and
//! the glue the frontend has around it.

use avout::machine::{Machine, Millis, Reply, Request, Token};
use avout::planted::Bugs;
use avout::stm::mvcc::{CommitOrder, Outcome, TryConfig, TryMachine};
use avout::{Op, SessionState, WatchedEvent};

use super::{BARGE_WAIT_TRIES, Body, Command, Ended, POINTS, ROOT};
use crate::world::{Agent, NOW, Run};

/// A client running one Mvcc transaction.
///
/// ```
/// use avout_models::mvcc::MvccAgent;
/// let a = MvccAgent::new(0, avout_models::mvcc::Body::Increment, 100, 1, true, 2);
/// assert_eq!((a.tries, a.applied), (0, 0));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MvccAgent {
    /// The client's index.
    pub index: u8,
    /// Its transaction.
    pub body: Body,
    retry_limit: u32,
    max_history: usize,
    session: i64,
    /// Whether BARGE-WAIT has passed.
    pub may_barge: bool,
    /// Timer firings left.
    timers_left: u8,
    /// The transaction's age, once its first read fixed it.
    pub age: Option<i64>,
    /// Tries started.
    pub tries: u32,
    guids: u32,
    generation: u32,
    run: Option<Run<TryMachine>>,
    /// The next command of the body.
    next: usize,
    read_a: Option<u64>,
    read_b: Option<u64>,
    /// How the transaction ended, once it has.
    pub ended: Option<Ended>,
    /// Ghost: writing commits the server applied.
    pub applied: u8,
    /// Ghost: a try was retried.
    pub conflicted: bool,
    /// Ghost: a commit was decided by the recovery read after a lost reply.
    pub recovered: bool,
    /// Ghost: younger transactions barged.
    pub barges: u32,
    /// Ghost: a read found its value trimmed.
    pub read_fault: bool,
    /// Ghost: a compare-and-set to `KILLED` this client sent that broke the barging rule.
    pub bad_barge: Option<String>,
    /// The bugs planted in its tries.
    planted: Bugs,
}

impl MvccAgent {
    /// Client `index` running `body`; `may_barge`: BARGE-WAIT has passed from the start;
    /// `timers`: timer firings allowed. See [`MvccAgent`].
    pub fn new(
        index: u8,
        body: Body,
        retry_limit: u32,
        max_history: usize,
        may_barge: bool,
        timers: u8,
    ) -> Self {
        MvccAgent {
            index,
            body,
            retry_limit,
            max_history,
            session: 0,
            may_barge,
            timers_left: timers,
            age: None,
            tries: 0,
            guids: 0,
            generation: 0,
            run: None,
            next: 0,
            read_a: None,
            read_b: None,
            ended: None,
            applied: 0,
            conflicted: false,
            recovered: false,
            barges: 0,
            read_fault: false,
            bad_barge: None,
            planted: Bugs::NONE,
        }
    }

    /// The same client with `planted` bugs in its tries.
    ///
    /// ```
    /// use avout_models::mvcc::{Body, MvccAgent};
    /// let a = MvccAgent::new(0, Body::Increment, 100, 1, true, 2).planted(avout::planted::Bugs::NONE);
    /// assert_eq!(a.tries, 0);
    /// ```
    pub fn planted(mut self, planted: Bugs) -> Self {
        self.planted = planted;
        self
    }

    /// A GUID of this client's: the client in the high bits, so trace lines stay readable.
    fn guid(&mut self) -> u128 {
        self.guids += 1;
        (u128::from(self.index) + 1) << 80 | u128::from(self.guids)
    }

    fn machine(&mut self) -> &mut TryMachine {
        &mut self.run.as_mut().expect("a try").machine
    }

    /// A new try: the body runs again from its first command.
    fn begin(&mut self) {
        self.tries += 1;
        // BARGE-WAIT is shorter than two tries (see the module docs).
        self.may_barge |= self.tries > BARGE_WAIT_TRIES;
        self.generation += 1;
        let config = TryConfig {
            root: ROOT.into(),
            guid: self.guid(),
            session: self.session,
            age: self.age,
            max_history: self.max_history,
            planted: self.planted,
        };
        self.run = Some(Run::start(self.generation, TryMachine::new(config)));
        self.next = 0;
        self.read_a = None;
        self.read_b = None;
        self.issue();
    }

    /// Gives the machine the body's next command.
    fn issue(&mut self) {
        match self.body.script()[self.next] {
            // As the frontend does: a read the body writes next is a read for writing.
            Command::Read(name)
                if self.body.script().get(self.next + 1) == Some(&Command::Write(name)) =>
            {
                self.machine().read_for_write(NOW, name)
            }
            Command::Read(name) => self.machine().read(NOW, name),
            Command::Write(name) => {
                let may_barge = self.may_barge;
                self.machine().write(NOW, name, may_barge);
            }
            Command::Commit => {
                let order = match self.body {
                    Body::Increment => {
                        let a = self.read_a.expect("read");
                        CommitOrder {
                            writes: vec![("a".into(), (a + 1).to_string().into_bytes())],
                            commutes: Vec::new(),
                            lock: vec![("a".to_owned(), self.guid())],
                            may_barge: self.may_barge,
                            sends: Vec::new(),
                        }
                    }
                    Body::Transfer => {
                        let (a, b) = (self.read_a.expect("read"), self.read_b.expect("read"));
                        let mut lock =
                            vec![("a".to_owned(), self.guid()), ("b".to_owned(), self.guid())];
                        lock.sort();
                        CommitOrder {
                            writes: vec![
                                ("a".into(), (a - 1).to_string().into_bytes()),
                                ("b".into(), (b + 1).to_string().into_bytes()),
                            ],
                            commutes: Vec::new(),
                            lock,
                            may_barge: self.may_barge,
                            sends: Vec::new(),
                        }
                    }
                    Body::Reader => CommitOrder {
                        writes: Vec::new(),
                        commutes: Vec::new(),
                        lock: Vec::new(),
                        may_barge: self.may_barge,
                        sends: Vec::new(),
                    },
                };
                self.machine().commit(NOW, order);
            }
        }
        self.settle();
    }

    /// Takes the machine's answer, if any, and moves the body on.
    fn settle(&mut self) {
        let Some(run) = &mut self.run else { return };
        let Some(outcome) = run.machine.poll_output() else {
            return;
        };
        let stats = run.machine.take_stats();
        if let Some(age) = run.machine.age() {
            self.age.get_or_insert(age);
        }
        self.barges += stats.barges as u32;
        self.recovered |= stats.recoveries > 0;
        self.read_fault |= stats.read_faults > 0;
        match outcome {
            Outcome::Read(value) => {
                let n = decode(&value);
                match self.body.script()[self.next] {
                    Command::Read("a") => self.read_a = Some(n),
                    _ => self.read_b = Some(n),
                }
                self.next += 1;
                self.issue();
            }
            Outcome::Done if self.body.script()[self.next] == Command::Commit => self.commit(),
            Outcome::Done => {
                self.next += 1;
                self.issue();
            }
            Outcome::Committed(_) => self.commit(),
            Outcome::Failed(halt) if halt.retries() => {
                self.conflicted = true;
                // `dosync`'s loop: a retry past the limit fails.
                if self.tries > self.retry_limit {
                    self.run = None;
                    self.ended = Some(Ended::RetryLimit);
                } else {
                    self.begin();
                }
            }
            Outcome::Failed(halt) => {
                self.run = None;
                self.ended = Some(Ended::Failed(halt));
            }
            Outcome::Recompute(_) => unreachable!("nothing is commuted"),
        }
    }

    fn commit(&mut self) {
        self.run = None;
        self.ended = Some(Ended::Committed {
            a: self.read_a.expect("read"),
            b: self.read_b.unwrap_or(0),
        });
    }

    /// Checks a compare-and-set to `KILLED` this client's machine sent and the server
    /// applied: the victim is younger (its transaction id, age then GUID, is greater) and
    /// BARGE-WAIT has passed.
    fn check_barge(&mut self, path: &str) {
        let Some(victim) = path.strip_prefix(POINTS).and_then(|p| p.strip_prefix('/')) else {
            return;
        };
        let me = self.run.as_ref().map(|r| r.machine.txid().to_owned());
        let older = me
            .as_deref()
            .is_some_and(|me| !me.is_empty() && me < victim);
        if !older || !self.may_barge {
            self.bad_barge = Some(format!(
                "{} killed {victim} (older: {older}, BARGE-WAIT passed: {})",
                me.unwrap_or_default(),
                self.may_barge
            ));
        }
    }
}

/// The number in a ref's value.
///
/// ```
/// assert_eq!(avout_models::mvcc::decode(b"41"), 41);
/// ```
pub fn decode(value: &[u8]) -> u64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("a number")
}

pub(super) fn is_kill(data: &[u8]) -> bool {
    data.starts_with(b"KILLED ")
}

crate::tx::tx_client!(MvccAgent);

impl Agent for MvccAgent {
    fn start(&mut self, session: i64) {
        self.session = session;
        self.begin();
    }

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.run.as_mut()?.poll_request()
    }

    fn handle_reply(&mut self, token: Token, reply: avout::Result<Reply>) {
        if let Some(run) = &mut self.run {
            run.handle_reply(token, reply);
            self.settle();
        }
    }

    fn handle_watch(&mut self, token: Token, event: WatchedEvent) {
        if let Some(run) = &mut self.run {
            run.handle_watch(token, event);
            self.settle();
        }
    }

    fn handle_session(&mut self, state: SessionState) {
        if let Some(run) = &mut self.run {
            run.machine.handle_session(NOW, state);
            self.settle();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        if self.timers_left == 0 {
            return None;
        }
        self.run.as_ref()?.machine.poll_timer()
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Some(run) = &mut self.run {
            self.timers_left -= 1;
            run.machine.handle_timer(now);
            self.settle();
        }
    }

    fn script_step(&self) -> Option<&'static str> {
        (!self.may_barge && self.ended.is_none()).then_some("lets BARGE-WAIT pass")
    }

    fn take_script_step(&mut self) {
        self.may_barge = true;
    }

    fn observe_applied(&mut self, request: &Request, result: &avout::Result<Reply>, _lost: bool) {
        match (request, result) {
            (Request::Multi(ops), Ok(_))
                if ops.iter().any(|op| matches!(op, Op::SetData { .. })) =>
            {
                self.applied += 1;
            }
            (Request::SetData { path, data, .. }, Ok(_)) if is_kill(data) => self.check_barge(path),
            _ => {}
        }
    }

    fn finished(&self) -> bool {
        self.ended.is_some()
    }

    fn summary(&self) -> String {
        let what = match self.body {
            Body::Increment => "increment",
            Body::Transfer => "transfer",
            Body::Reader => "reader",
        };
        let state = match &self.ended {
            Some(Ended::Committed { a, b }) => format!("committed, read a={a} b={b}"),
            Some(Ended::Failed(h)) => format!("failed: {h:?}"),
            Some(Ended::RetryLimit) => "failed: retry limit".into(),
            None => match self.body.script().get(self.next) {
                Some(Command::Read(n)) => format!("reading {n}"),
                Some(Command::Write(n)) => format!("tagging {n}"),
                Some(Command::Commit) => "committing".into(),
                None => "between steps".into(),
            },
        };
        let mut line = format!("{what} try {}: {state}", self.tries);
        if let Some(age) = self.age {
            line.push_str(&format!(" (age {age})"));
        }
        if self.may_barge {
            line.push_str(" [may barge]");
        }
        if self.applied > 0 {
            line.push_str(&format!("; the server applied {} commit(s)", self.applied));
        }
        line
    }
}
