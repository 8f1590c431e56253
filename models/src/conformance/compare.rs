//! What the replay compares and how: lock GUIDs and commit ids paired as bijections, the
//! STM's ref nodes decoded, the servers' trees as shapes.

use std::collections::BTreeMap;

use avout_sim_zk::kernel::{Kernel, Node};

use crate::stm::{REF_A, REF_B};

/// An Optimistic ref's node data, decoded by the layout core documents (`stm/optimistic/
/// envelope.rs`: magic `A7 'S' 01`, the count of commit ids, the chain length (u32 BE), the
/// commit ids (u128 BE each, newest first), the count of previous values, each previous value
/// as commit point (u64 BE), length (u32 BE) and bytes, then the value). Decoded here, not by
/// core, whose decoder is private: the comparison also checks that both sides write that
/// layout.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RefNode {
    txns: Vec<u128>,
    chain: u32,
    history: Vec<(u64, Vec<u8>)>,
    value: Vec<u8>,
}

impl RefNode {
    fn parse(data: &[u8]) -> Option<RefNode> {
        let rest = data.strip_prefix(&[0xA7, b'S', 1][..])?;
        let (&n, rest) = rest.split_first()?;
        let (chain, mut rest) = rest.split_at_checked(4)?;
        let chain = u32::from_be_bytes(chain.try_into().ok()?);
        let mut txns = Vec::new();
        for _ in 0..n {
            let (txn, after) = rest.split_at_checked(16)?;
            txns.push(u128::from_be_bytes(txn.try_into().ok()?));
            rest = after;
        }
        let (&h, mut rest) = rest.split_first()?;
        let mut history = Vec::new();
        for _ in 0..h {
            let (point, after) = rest.split_at_checked(8)?;
            let (len, after) = after.split_at_checked(4)?;
            let len = u32::from_be_bytes(len.try_into().ok()?) as usize;
            let (value, after) = after.split_at_checked(len)?;
            history.push((u64::from_be_bytes(point.try_into().ok()?), value.to_vec()));
            rest = after;
        }
        Some(RefNode {
            txns,
            chain,
            history,
            value: rest.to_vec(),
        })
    }
}

/// Lock node names carry a GUID (`_c_<36 characters>-…`) that the two sides draw
/// differently: the replay pairs them as they first appear and holds the pairing to them.
#[derive(Default)]
pub(super) struct Guids {
    sim_to_model: BTreeMap<String, String>,
    model_to_sim: BTreeMap<String, String>,
}

fn guid(path: &str) -> Option<&str> {
    let at = path.find("_c_")? + 3;
    path.get(at..at + 36)
}

impl Guids {
    /// Whether the simulator's `sim` path and the model's `model` path name the same node,
    /// pairing their GUIDs if neither is paired yet.
    pub(super) fn same(&mut self, sim: &str, model: &str) -> bool {
        match (guid(sim), guid(model)) {
            (Some(s), Some(m)) => {
                let paired = match (self.sim_to_model.get(s), self.model_to_sim.get(m)) {
                    (None, None) => {
                        self.sim_to_model.insert(s.to_owned(), m.to_owned());
                        self.model_to_sim.insert(m.to_owned(), s.to_owned());
                        true
                    }
                    (Some(m2), Some(s2)) => m2 == m && s2 == s,
                    _ => false,
                };
                paired && sim.replacen(s, m, 1) == model
            }
            (None, None) => sim == model,
            _ => false,
        }
    }

    /// The simulator's path in the model's GUIDs.
    pub(super) fn to_model(&self, sim: &str) -> String {
        match guid(sim).and_then(|s| self.sim_to_model.get(s).map(|m| (s, m))) {
            Some((s, m)) => sim.replacen(s, m, 1),
            None => sim.to_owned(),
        }
    }
}

/// Commit ids (the STM's), drawn differently on the two sides: paired as they first appear
/// in the same place of a node's header, and held to the pairing.
#[derive(Default)]
struct Txns {
    sim_to_model: BTreeMap<u128, u128>,
    model_to_sim: BTreeMap<u128, u128>,
}

impl Txns {
    fn same(&mut self, sim: u128, model: u128) -> bool {
        match (self.sim_to_model.get(&sim), self.model_to_sim.get(&model)) {
            (None, None) => {
                self.sim_to_model.insert(sim, model);
                self.model_to_sim.insert(model, sim);
                true
            }
            (Some(m), Some(s)) => *m == model && *s == sim,
            _ => false,
        }
    }
}

/// Whether the STM's refs agree on the model's server and the simulator's: value, history
/// (values and commit points) and chain length equal, commit ids paired as a bijection
/// across both refs. `Err` says how they differ.
pub(super) fn same_refs(model: &Kernel, sim: &Kernel) -> Result<(), String> {
    let mut txns = Txns::default();
    for path in [REF_A, REF_B] {
        let data = |kernel: &Kernel| {
            kernel
                .tree()
                .node(path)
                .and_then(|n| RefNode::parse(&n.data))
        };
        let (Some(model), Some(sim)) = (data(model), data(sim)) else {
            return Err(format!("{path} is missing or not a ref's node"));
        };
        let paired = model.txns.len() == sim.txns.len()
            && sim
                .txns
                .iter()
                .zip(&model.txns)
                .all(|(s, m)| txns.same(*s, *m));
        let rest = |n: &RefNode| (n.chain, n.history.clone(), n.value.clone());
        if !paired || rest(&model) != rest(&sim) {
            return Err(format!(
                "{path} differs: model {model:?}, simulator {sim:?}"
            ));
        }
    }
    Ok(())
}

/// What the comparison of two servers looks at, per node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Shape {
    path: String,
    czxid: i64,
    mzxid: i64,
    pzxid: i64,
    version: i32,
    cversion: i32,
    ephemeral_owner: i64,
    children: i32,
}

/// Every node of `kernel`'s tree, its path renamed by `rename`, in path order.
pub(super) fn tree(kernel: &Kernel, rename: impl Fn(&str) -> String) -> Vec<Shape> {
    let mut out = Vec::new();
    let mut stack = vec!["/".to_owned()];
    while let Some(path) = stack.pop() {
        let node: &Node = kernel.tree().node(&path).expect("a listed child exists");
        let s = &node.stat;
        out.push(Shape {
            path: rename(&path),
            czxid: s.czxid,
            mzxid: s.mzxid,
            pzxid: s.pzxid,
            version: s.version,
            cversion: s.cversion,
            ephemeral_owner: s.ephemeral_owner,
            children: s.num_children,
        });
        for child in &node.children {
            stack.push(avout::path::join(&path, child));
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use avout::machine::Request;
    use avout::stm::optimistic::{CommitSpec, Node, initial_data};
    use avout_sim_zk::kernel::Kernel;

    use super::{REF_A, REF_B, RefNode, same_refs};
    use crate::stm::ROOT;

    /// A server with the two refs, each written by the commits `txns` (oldest first) from
    /// its initial value, one unit at a time, as production's `CommitSpec` writes them.
    fn server(txns_a: &[u128], txns_b: &[u128]) -> Kernel {
        let mut kernel = Kernel::new();
        let session = kernel.create_session(0, Duration::from_secs(10));
        let apply = |kernel: &mut Kernel, request: Request| {
            assert!(kernel.apply(0, session, &request).result.is_ok());
        };
        for (path, data) in [
            (ROOT, Vec::new()),
            ("/stm/refs", Vec::new()),
            (REF_A, initial_data(b"0")),
            (REF_B, initial_data(b"0")),
        ] {
            let options = Default::default();
            apply(
                &mut kernel,
                Request::Create {
                    path: path.into(),
                    data,
                    options,
                },
            );
        }
        for (path, txns) in [(REF_A, txns_a), (REF_B, txns_b)] {
            for (n, txn) in txns.iter().enumerate() {
                let node = kernel.tree().node(path).unwrap();
                let base = Node {
                    data: node.data.to_vec(),
                    stat: node.stat,
                };
                let value = (n + 1).to_string().into_bytes();
                let spec = CommitSpec::of(
                    *txn,
                    9,
                    vec![],
                    vec![(path.into(), base, value)],
                    vec![],
                    vec![],
                );
                apply(&mut kernel, Request::Multi(spec.ops));
            }
        }
        kernel
    }

    #[test]
    fn ref_nodes_decode_as_production_writes_them() {
        let kernel = server(&[7, 8], &[]);
        let a = RefNode::parse(&kernel.tree().node(REF_A).unwrap().data).unwrap();
        assert_eq!((a.txns, a.chain, a.value), (vec![8, 7], 3, b"2".to_vec()));
        assert_eq!(a.history.len(), 2);
        assert_eq!(a.history[1].1, b"0");
        let b = RefNode::parse(&initial_data(b"41")).unwrap();
        assert_eq!(
            (b.txns.len(), b.chain, b.history.len(), b.value),
            (0, 1, 0, b"41".to_vec())
        );
        assert_eq!(RefNode::parse(b"41"), None, "not a ref's node");
    }

    #[test]
    fn commit_ids_are_paired_as_a_bijection() {
        // The same commits under other ids: the same.
        assert_eq!(
            same_refs(&server(&[1, 2], &[2]), &server(&[10, 20], &[20])),
            Ok(())
        );
        // One commit on the model's side, two on the simulator's: different.
        assert!(same_refs(&server(&[1, 2], &[2]), &server(&[10, 20], &[10])).is_err());
        // Two commits on the model's side, one on the simulator's.
        assert!(same_refs(&server(&[1, 2], &[3]), &server(&[10, 20], &[20])).is_err());
    }
}
