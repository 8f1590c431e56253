//! The world's queue of pending happenings.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use super::Pending;

/// The pending happenings in (time, insertion) order: a heap of small keys over a slab of
/// entries, so that neither an event's allocation nor its bytes move as the heap reorders.
#[derive(Default)]
pub(super) struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    slots: Vec<Option<Pending>>,
    free: Vec<usize>,
}

impl Queue {
    pub(super) fn next_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    pub(super) fn push(&mut self, at: u64, seq: u64, what: Pending) {
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot] = Some(what);
                slot
            }
            None => {
                self.slots.push(Some(what));
                self.slots.len() - 1
            }
        };
        self.heap.push(Reverse((at, seq, slot)));
    }

    /// The xids of `client`'s requests of `epoch` still on their way to the service.
    pub(super) fn requests_on(&self, client: usize, epoch: u64) -> BTreeSet<u64> {
        self.slots
            .iter()
            .filter_map(|slot| match slot {
                Some(Pending::ToServer {
                    client: c,
                    epoch: e,
                    xid,
                    ..
                }) if *c == client && *e == epoch => Some(*xid),
                _ => None,
            })
            .collect()
    }

    pub(super) fn pop(&mut self) -> Option<(u64, Pending)> {
        let Reverse((at, _, slot)) = self.heap.pop()?;
        let what = self.slots[slot].take().expect("a queued slot is full");
        self.free.push(slot);
        Some((at, what))
    }
}
