//! Why stalled operations waited: their wait-for chain, read from the simulator's log.
//!
//! An operation that never finished went quiet at some point: its client's sessions sent and
//! heard nothing for the rest of it, waiting for a watch that never fired. Its longest silence
//! is that wait (a `wait` span), and the last request before it says what it waited on: with
//! ZooKeeper's recipes, a node (an `exists` or `getData` with a watch). Whoever asked to
//! create that node (its path, or its path less the sequence number of a sequential node) is
//! what the stalled operation waited for: an arrow from it to that operation, which joins the
//! finding. If that operation waited too, its own wait is followed, until an operation that
//! did not wait (or was seen already). A lock waiting behind an orphaned node thus leads to
//! the operation that left the node behind, and its faults to what caused it. Without a
//! simulator's log (a real server) there is no chain: the stall counts from its start.

use std::collections::{BTreeSet, VecDeque};

use super::{Arrow, Mark, Span};
use crate::view::sim::Drawn;
use crate::view::timeline::Timeline;

/// A silence counts as a wait from this long (virtual nanoseconds): a recipe's requests and
/// replies come milliseconds apart.
const WAIT: u64 = 1_000_000_000;

/// What a stall's chain adds to its finding.
#[derive(Default)]
pub(super) struct Waits {
    /// Each operation of the chain: its lane, and its stretch up to its wait.
    pub(super) stretches: Vec<(usize, u64, u64)>,
    /// The waits.
    pub(super) spans: Vec<Span>,
    /// Who waited on whom.
    pub(super) arrows: Vec<Arrow>,
    /// The operations waited on.
    pub(super) marks: Vec<Mark>,
    /// The lanes of a cycle of waits, first one again at the end, if the chain closes.
    pub(super) cycle: Option<Vec<usize>>,
}

/// The wait-for chain of the `stuck` operations.
pub(super) fn chain(stuck: &[usize], timeline: &Timeline, log: &Drawn) -> Waits {
    let mut queue: VecDeque<usize> = stuck.iter().copied().collect();
    let mut seen: BTreeSet<usize> = stuck.iter().copied().collect();
    let mut w = Waits::default();
    while let Some(i) = queue.pop_front() {
        let op = &timeline.ops[i];
        let end = op.end.unwrap_or(timeline.end);
        let traffic = log.traffic.get(op.lane);
        let wait = quietest(traffic.map(|l| &l.times[..]), op.start, end)
            .filter(|&(quiet, resumed)| resumed - quiet >= WAIT);
        let Some((quiet, resumed)) = wait else {
            let to = if stuck.contains(&i) { op.start } else { end };
            w.stretches.push((op.lane, op.start, to));
            continue;
        };
        w.stretches.push((op.lane, op.start, quiet));
        let last = traffic.and_then(|l| l.last_request(quiet));
        let creator = last
            .and_then(|r| r.split_once(' '))
            .and_then(|(_, path)| Some((path, log.creator(path)?)));
        let whose = match creator {
            Some((_, (c, _))) if c == op.lane => ", a node it created itself".to_owned(),
            Some((_, (c, _))) => format!(", a node {} created", timeline.lanes[c].name),
            None => String::new(),
        };
        let after = last
            .map(|r| format!(" after its {r}{whose}"))
            .unwrap_or_default();
        w.spans.push(Span {
            lanes: vec![op.lane],
            start: quiet,
            end: resumed,
            role: "wait",
            label: format!(
                "nothing sent or heard for {:.1} s{after}",
                (resumed - quiet) as f64 / 1e9
            ),
        });
        let Some((path, (lane, at))) = creator else {
            continue;
        };
        let Some(maker) = timeline.op_at(lane, at) else {
            continue;
        };
        // The same node asked for twice in the operation: the first one's reply was lost, and
        // the node left behind (what GUID recovery is for).
        let twice = log.creates_in(maker, timeline, path) > 1;
        w.arrows.push(Arrow {
            from: i,
            to: maker,
            kind: "waits".into(),
            // Several waits start together: their arrows speak through the legend and hover.
            label: String::new(),
            detail: format!(
                "waits for {path} to go, which this operation created{}",
                if twice {
                    " (it asked to create such a node twice: one of the two is left behind)"
                } else {
                    ""
                }
            ),
            at: Some([quiet, at]),
        });
        if seen.insert(maker) {
            w.marks.push(Mark {
                op: maker,
                role: "party",
                label: "created what they wait on".into(),
            });
            queue.push_back(maker);
        }
    }
    w.cycle = cycle(&w.arrows, timeline);
    w
}

/// The lanes round a cycle of `waits` arrows, if there is one.
fn cycle(arrows: &[Arrow], timeline: &Timeline) -> Option<Vec<usize>> {
    for start in arrows.iter().map(|a| a.from) {
        let mut path = vec![start];
        let mut at = start;
        while let Some(next) = arrows.iter().find(|a| a.from == at).map(|a| a.to) {
            if let Some(k) = path.iter().position(|&o| o == next) {
                let mut lanes: Vec<usize> =
                    path[k..].iter().map(|&o| timeline.ops[o].lane).collect();
                lanes.push(timeline.ops[next].lane);
                return Some(lanes);
            }
            path.push(next);
            at = next;
        }
    }
    None
}

/// The longest stretch of `[start, end]` without traffic: when an operation stopped hearing
/// anything, and when it heard again (or gave up).
fn quietest(traffic: Option<&[u64]>, start: u64, end: u64) -> Option<(u64, u64)> {
    let times = traffic?;
    let inside = &times[times.partition_point(|&t| t < start)..times.partition_point(|&t| t < end)];
    let points: Vec<u64> = [start]
        .into_iter()
        .chain(inside.iter().copied())
        .chain([end])
        .collect();
    points
        .windows(2)
        .map(|w| (w[0], w[1]))
        .max_by_key(|&(a, b)| (b - a, std::cmp::Reverse(a)))
        .filter(|&(a, b)| b > a && !inside.is_empty())
}
