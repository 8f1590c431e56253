//! Reading refs: [`ReadMachine`] reads several nodes in one round trip (the requests travel
//! together), optionally after a `sync`, and reads again after a connection loss (reads are
//! idempotent).

use crate::machine::{Machine, Millis, Outbox, Reply, Request, Token};
use crate::{Error, ErrorClass, SessionState, Stat, WatchedEvent};

// The toolkit's pause before reading again after a connection loss (unless the session reconnects first).
pub(crate) use crate::machine::RETRY_PAUSE_MS;

/// A node as read: its data and metadata.
///
/// ```
/// let n = avout::stm::optimistic::Node { data: vec![], stat: avout::Stat::default() };
/// assert_eq!(n.stat.version, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// The data.
    pub data: Vec<u8>,
    /// The metadata.
    pub stat: Stat,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Start,
    Reading { first: Token },
    Paused { until: Millis },
    Done,
}

/// Reads `paths` in one round trip; the output has one entry per path, `None` for a node
/// that does not exist.
///
/// With `sync`, a `sync` goes first, so the reads see every write committed before it
/// (linearizable); without, a lagging server may answer with an older version (still a
/// version that was committed, and the commit's version checks catch it).
///
/// ```
/// use avout::machine::{Machine, Millis, Request};
/// use avout::stm::optimistic::ReadMachine;
/// use avout::SessionState;
///
/// let mut m = ReadMachine::new(vec!["/s/refs/a".into(), "/s/refs/b".into()], true);
/// m.handle_session(Millis(0), SessionState::Connected);
/// assert!(matches!(m.poll_request(), Some((_, Request::Sync { .. }))));
/// assert!(matches!(m.poll_request(), Some((_, Request::GetData { .. }))));
/// assert!(matches!(m.poll_request(), Some((_, Request::GetData { .. }))));
/// assert!(m.poll_request().is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReadMachine {
    paths: Vec<String>,
    sync: bool,
    phase: Phase,
    outbox: Outbox<()>,
    got: Vec<Option<Option<Node>>>,
    output: Option<crate::Result<Vec<Option<Node>>>>,
}

impl ReadMachine {
    /// A machine that reads `paths`, after a `sync` if asked.
    ///
    /// ```
    /// let m = avout::stm::optimistic::ReadMachine::new(vec!["/a".into()], false);
    /// assert_eq!(m.paths(), ["/a".to_string()]);
    /// ```
    pub fn new(paths: Vec<String>, sync: bool) -> Self {
        let n = paths.len();
        ReadMachine {
            paths,
            sync,
            phase: Phase::Start,
            outbox: Outbox::default(),
            got: vec![None; n],
            output: None,
        }
    }

    /// The paths read.
    ///
    /// ```
    /// assert!(avout::stm::optimistic::ReadMachine::new(vec![], true).paths().is_empty());
    /// ```
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    fn read(&mut self) {
        if self.paths.is_empty() {
            return self.finish(Ok(Vec::new()));
        }
        self.got = vec![None; self.paths.len()];
        if self.sync {
            self.outbox.send(Request::Sync {
                path: self.paths[0].clone(),
            });
        }
        let mut first = None;
        for path in self.paths.clone() {
            let t = self.outbox.send(Request::GetData { path, watch: false });
            first.get_or_insert(t);
        }
        self.phase = Phase::Reading {
            first: first.expect("at least one path"),
        };
    }

    fn finish(&mut self, result: crate::Result<Vec<Option<Node>>>) {
        self.phase = Phase::Done;
        self.outbox.clear();
        self.output = Some(result);
    }
}

impl Machine for ReadMachine {
    type Output = crate::Result<Vec<Option<Node>>>;

    fn poll_request(&mut self) -> Option<(Token, Request)> {
        self.outbox.pop()
    }

    fn handle_reply(&mut self, now: Millis, token: Token, reply: crate::Result<Reply>) {
        let Phase::Reading { first } = self.phase else {
            return;
        };
        // The sync's token precedes `first`; its failure shows in the reads after it.
        if token.0 < first.0 || token.0 >= first.0 + self.paths.len() as u64 {
            return;
        }
        let i = (token.0 - first.0) as usize;
        let node = match reply {
            Ok(Reply::Data { data, stat }) => Some(Node { data, stat }),
            Err(Error::NoNode { .. }) => None,
            Err(e) => {
                return match e.class() {
                    ErrorClass::Indeterminate => {
                        self.outbox.clear();
                        self.phase = Phase::Paused {
                            until: now.plus(RETRY_PAUSE_MS),
                        };
                    }
                    ErrorClass::Rejected | ErrorClass::SessionLost => self.finish(Err(e)),
                };
            }
            Ok(other) => unreachable!("a read replied {other:?}"),
        };
        self.got[i] = Some(node);
        if self.got.iter().all(Option::is_some) {
            let nodes = self.got.drain(..).map(|n| n.expect("all in")).collect();
            self.finish(Ok(nodes));
        }
    }

    fn handle_watch(&mut self, _now: Millis, _token: Token, _event: WatchedEvent) {}

    fn handle_session(&mut self, _now: Millis, state: SessionState) {
        if let Some(error) = state.terminal_error() {
            if self.phase != Phase::Done {
                self.finish(Err(error));
            }
            return;
        }
        match self.phase {
            Phase::Start => self.read(),
            Phase::Paused { .. } if state == SessionState::Connected => self.read(),
            _ => {}
        }
    }

    fn handle_timer(&mut self, now: Millis) {
        if let Phase::Paused { until } = self.phase
            && now >= until
        {
            self.read();
        }
    }

    fn poll_timer(&self) -> Option<Millis> {
        match self.phase {
            Phase::Paused { until } => Some(until),
            _ => None,
        }
    }

    fn poll_output(&mut self) -> Option<Self::Output> {
        self.output.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::testing::drain;

    #[test]
    fn reads_again_after_a_connection_loss_and_reports_missing_nodes() {
        let mut m = ReadMachine::new(vec!["/a".into(), "/b".into()], false);
        m.handle_session(Millis(0), SessionState::Connected);
        let sent = drain(&mut m);
        assert_eq!(sent.len(), 2);
        m.handle_reply(Millis(1), sent[0].0, Err(Error::ConnectionLoss));
        assert!(drain(&mut m).is_empty());
        // A late reply of the abandoned round is ignored.
        m.handle_reply(Millis(2), sent[1].0, Err(Error::ConnectionLoss));
        m.handle_session(Millis(3), SessionState::Connected);
        let again = drain(&mut m);
        assert_eq!(again.len(), 2);
        m.handle_reply(
            Millis(4),
            again[1].0,
            Err(Error::NoNode { path: "/b".into() }),
        );
        assert!(m.poll_output().is_none());
        m.handle_reply(
            Millis(5),
            again[0].0,
            Ok(Reply::Data {
                data: b"x".to_vec(),
                stat: Stat::default(),
            }),
        );
        let out = m.poll_output().unwrap().unwrap();
        assert_eq!(out[0].as_ref().unwrap().data, b"x");
        assert!(out[1].is_none());
    }

    #[test]
    fn a_lost_session_fails_the_read() {
        let mut m = ReadMachine::new(vec!["/a".into()], true);
        m.handle_session(Millis(0), SessionState::Connected);
        drain(&mut m);
        m.handle_session(Millis(1), SessionState::Expired);
        assert!(m.poll_output().unwrap().unwrap_err().is_session_lost());
    }
}
