//! The commit path of a try: the prepare (write locks, commutes' newest values) and the
//! commit record that makes the try's writes visible.

use crate::machine::Millis;
use crate::{CreateMode, Error, Op};

use super::super::super::protocol::Change;
use super::super::layout;
use super::super::{Halt, LOCK_WAIT_MS, PrepareMachine, Prepared, WriteMachine, max_value_len};
use super::{AfterCleanup, CommitOrder, Phase, Step, TryMachine};

impl TryMachine {
    pub(super) fn prepare(&mut self, now: Millis, mut order: CommitOrder) {
        // Writes the body did not announce (a commute of a ref it also read becomes a write
        // at commit) are tagged now; a commit of commutes only still needs its point.
        let untagged: Vec<String> = order
            .writes
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| !self.tagged.contains(n))
            .collect();
        if !untagged.is_empty() || !self.point_made {
            self.start_tag(now, untagged, order.may_barge);
        }
        let age = self.age.expect("tagging fixed it");
        let release_first: Vec<String> = order
            .lock
            .iter()
            .filter_map(|(n, _)| self.ensured.remove(n))
            .collect();
        let prep = PrepareMachine::new(
            &self.config.root,
            &self.txid,
            age,
            std::mem::take(&mut order.lock),
            order.commutes.clone(),
            release_first,
            self.config.session,
            LOCK_WAIT_MS,
        )
        .planted(self.config.planted);
        self.current = Some(self.launch(now, Step::Prepare(prep)));
        self.phase = Phase::Preparing(order);
    }

    /// Builds the commit record and sends it.
    pub(super) fn write_record(
        &mut self,
        now: Millis,
        order: CommitOrder,
        prepared: Prepared,
        recomputed: Vec<Vec<u8>>,
    ) {
        let l = self.layout.clone();
        let max_history = self.config.max_history;
        let txid = self.txid.clone();
        let mut ops = vec![Op::delete(
            l.point(&txid),
            Some(prepared.committing_version),
        )];
        // The agent sends ride in the commit record: queued if and only if it applies.
        ops.extend(order.sends);
        let mut deletes: Vec<String> = Vec::new();
        let mut changes = Vec::new();
        let add = |ops: &mut Vec<Op>,
                   deletes: &mut Vec<String>,
                   name: &str,
                   version: i32,
                   history: &[String],
                   new: Vec<u8>| {
            let node = l.history_node(name, &txid, version + 1);
            ops.push(Op::create(node, new.clone(), CreateMode::Persistent));
            ops.push(Op::set_data(l.ref_node(name), new, Some(version)));
            deletes.extend(
                layout::trim_after_commit(history, max_history)
                    .into_iter()
                    .map(|n| crate::path::join(&l.history(name), &n)),
            );
        };
        for (name, new) in order.writes {
            let base = self
                .bases
                .get(&name)
                .expect("every write is tagged")
                .clone();
            if new.len() > max_value_len() {
                let len = new.len();
                return self.start_cleanup(now, AfterCleanup::Report(Halt::TooLarge { name, len }));
            }
            add(
                &mut ops,
                &mut deletes,
                &name,
                base.version,
                &base.history,
                new.clone(),
            );
            ops.push(Op::delete(l.tag(&name, &txid), None));
            changes.push(Change {
                name,
                old: base.value,
                new,
            });
        }
        for (newest, new) in prepared.commuted.iter().zip(recomputed) {
            if new.len() > max_value_len() {
                let halt = Halt::TooLarge {
                    name: newest.name.clone(),
                    len: new.len(),
                };
                return self.start_cleanup(now, AfterCleanup::Report(halt));
            }
            add(
                &mut ops,
                &mut deletes,
                &newest.name,
                newest.version,
                &newest.history,
                new.clone(),
            );
            changes.push(Change {
                name: newest.name.clone(),
                old: newest.value.clone(),
                new,
            });
        }
        if let Err(Error::DataTooLarge { len, .. }) = Op::validate_all(&ops) {
            let name = changes.first().map_or("", |c| c.name.as_str()).to_owned();
            return self.start_cleanup(now, AfterCleanup::Report(Halt::TooLarge { name, len }));
        }
        // The lock nodes and the trimmed history go in the same `multi`: one write instead of
        // three. The history was listed with the ref version the `multi` checks, so it is the
        // history the trim applies to whenever the `multi` applies at all.
        let lock_nodes = prepared.locks.iter().map(|(_, n)| n.clone());
        for node in lock_nodes
            .chain(self.ensured.values().cloned())
            .chain(deletes)
        {
            ops.push(Op::delete(node, None));
        }
        let point = l.point(&txid);
        let write = WriteMachine::new(ops, Vec::new(), &point, &l.points());
        self.current = Some(self.launch(now, Step::Write(write)));
        changes.sort_by(|a, b| a.name.cmp(&b.name));
        self.phase = Phase::Writing(changes);
    }
}
