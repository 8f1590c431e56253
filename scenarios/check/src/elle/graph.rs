//! The transaction dependency graph: strongly connected components (Tarjan) and the shortest
//! cycle of wanted edge kinds inside one.
//!
//! A search names the kind of the cycle's first edge (one that must appear: the cycle is
//! rotated to start there), the kinds its other edges may take, and a rule on its read-write
//! edges ([`RwRule`]). For each first edge u→v it runs a breadth-first search from v back to u
//! over pairs (transaction, rule state); the state is a few bits (was the last edge rw, has a
//! second rw been seen, were two rw edges adjacent), so the search stays linear in the
//! component. Only simple cycles are kept, as Elle keeps them: a search never passes through
//! u, and a walk that visits a transaction twice (possible when it does so in two rule states)
//! is dropped.

/// Edge kinds, as bits so a search can allow a set of them. The order is the preference when
/// one pair of transactions has several: dependencies before orders.
pub(crate) const WW: u8 = 1;
pub(crate) const WR: u8 = 2;
pub(crate) const RW: u8 = 4;
pub(crate) const PROCESS: u8 = 8;
pub(crate) const REALTIME: u8 = 16;

/// A directed multigraph over transactions `0..n`, one edge per (from, to, kind). Edges are
/// gathered in one list, then laid out by node once ([`Graph::seal`]): a history of millions
/// of transactions makes no vector per node.
pub(crate) struct Graph {
    n: usize,
    added: Vec<(u32, u32, u8)>,
    /// Once sealed: node `v`'s out-edges are `out[start[v]..start[v + 1]]`, sorted, each once.
    start: Vec<usize>,
    out: Vec<(u32, u8)>,
}

impl Graph {
    pub(crate) fn new(n: usize) -> Graph {
        Graph {
            n,
            added: Vec::new(),
            start: vec![0; n + 1],
            out: Vec::new(),
        }
    }

    pub(crate) fn add(&mut self, from: u32, to: u32, kind: u8) {
        debug_assert!(from != to, "no self-loops");
        self.added.push((from, to, kind));
    }

    /// Lays the edges out by node, sorted and each once; call once, after the last `add`.
    pub(crate) fn seal(&mut self) {
        let mut start = vec![0usize; self.n + 1];
        for &(from, _, _) in &self.added {
            start[from as usize + 1] += 1;
        }
        for v in 0..self.n {
            start[v + 1] += start[v];
        }
        let mut next = start.clone();
        let mut out = vec![(0u32, 0u8); self.added.len()];
        for (from, to, kind) in std::mem::take(&mut self.added) {
            out[next[from as usize]] = (to, kind);
            next[from as usize] += 1;
        }
        // Sorted and deduplicated per node, compacted in place.
        let mut kept = 0;
        for v in 0..self.n {
            let (a, b) = (start[v], start[v + 1]);
            start[v] = kept;
            out[a..b].sort_unstable();
            for i in a..b {
                if i == a || out[i] != out[i - 1] {
                    out[kept] = out[i];
                    kept += 1;
                }
            }
        }
        start[self.n] = kept;
        out.truncate(kept);
        out.shrink_to_fit();
        (self.start, self.out) = (start, out);
    }

    pub(crate) fn edges(&self) -> usize {
        self.out.len()
    }

    /// The out-edges of `v`, once sealed: (to, kind), sorted.
    pub(crate) fn out(&self, v: u32) -> &[(u32, u8)] {
        &self.out[self.start[v as usize]..self.start[v as usize + 1]]
    }

    /// The strongly connected components with more than one node, each sorted, in order of their
    /// smallest node. Iterative Tarjan: realtime chains are as long as the history.
    pub(crate) fn cycles_components(&self) -> Vec<Vec<u32>> {
        const UNSEEN: u32 = u32::MAX;
        let n = self.n;
        let mut index = vec![UNSEEN; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut next_index = 0u32;
        let mut components = Vec::new();
        // (node, next adjacency position to look at)
        let mut call: Vec<(u32, usize)> = Vec::new();
        for root in 0..n as u32 {
            if index[root as usize] != UNSEEN {
                continue;
            }
            call.push((root, 0));
            index[root as usize] = next_index;
            low[root as usize] = next_index;
            next_index += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            while let Some(&mut (v, ref mut pos)) = call.last_mut() {
                let out = self.out(v);
                if let Some(&(w, _)) = out.get(*pos) {
                    *pos += 1;
                    if index[w as usize] == UNSEEN {
                        index[w as usize] = next_index;
                        low[w as usize] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        call.push((w, 0));
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent as usize] = low[parent as usize].min(low[v as usize]);
                }
                if low[v as usize] == index[v as usize] {
                    let mut component = Vec::new();
                    loop {
                        let w = stack.pop().expect("v is on the stack");
                        on_stack[w as usize] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort_unstable();
                        components.push(component);
                    }
                }
            }
        }
        components.sort_unstable_by_key(|c| c[0]);
        components
    }
}

/// What a cycle's read-write edges must look like, besides the kinds its edges may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RwRule {
    /// Nothing more (the allowed kinds say it all).
    Free,
    /// The first edge is rw, there is at least one more, and no two rw edges are adjacent,
    /// counting the last edge as adjacent to the first (Elle's G-nonadjacent).
    NonAdjacent,
    /// The first edge is rw, there is at least one more, and two of them are adjacent
    /// (Elle's G2-item, as opposed to G-nonadjacent).
    Adjacent,
}

/// Rule state bits: the last edge was rw; an rw edge after the first was seen; two rw edges
/// were adjacent.
const LAST_RW: u8 = 1;
const MORE_RW: u8 = 2;
const ADJACENT: u8 = 4;
const STATES: usize = 8;

impl RwRule {
    /// The state after the first edge (of kind `kind`).
    fn start(self, kind: u8) -> u8 {
        match self {
            RwRule::Free => 0,
            RwRule::NonAdjacent | RwRule::Adjacent => {
                debug_assert_eq!(kind, RW, "these rules start on an rw edge");
                LAST_RW
            }
        }
    }

    /// The state after one more edge, or `None` if the rule forbids it.
    fn step(self, state: u8, kind: u8) -> Option<u8> {
        let rw = kind == RW;
        match self {
            RwRule::Free => Some(0),
            RwRule::NonAdjacent if rw && state & LAST_RW != 0 => None,
            RwRule::NonAdjacent if rw => Some(LAST_RW | MORE_RW),
            RwRule::NonAdjacent => Some(state & MORE_RW),
            RwRule::Adjacent if rw => {
                let adjacent = if state & LAST_RW != 0 { ADJACENT } else { 0 };
                Some(LAST_RW | MORE_RW | adjacent | (state & ADJACENT))
            }
            RwRule::Adjacent => Some(state & (MORE_RW | ADJACENT)),
        }
    }

    /// Whether a path back to the start in this state closes a cycle the rule accepts (its
    /// last edge then meets the first, which is rw).
    fn accepts(self, state: u8) -> bool {
        match self {
            RwRule::Free => true,
            RwRule::NonAdjacent => state & MORE_RW != 0 && state & LAST_RW == 0,
            RwRule::Adjacent => state & MORE_RW != 0 && state & (ADJACENT | LAST_RW) != 0,
        }
    }
}

/// A cycle to look for: the kinds its first edge may take, the kinds the rest may take, and
/// the rule on its rw edges.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CycleSpec {
    pub(crate) first: u8,
    pub(crate) path: u8,
    pub(crate) rw: RwRule,
}

/// One edge of a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hop {
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) kind: u8,
}

/// Breadth-first searches restricted to one component, reusing their buffers. A search's
/// state is kept per (node of the component, rule state): a small component of a huge
/// history costs what the component does.
pub(crate) struct CycleFinder<'g> {
    graph: &'g Graph,
    /// Stamp of the component a node belongs to (the current one is `component`), and its
    /// place there.
    member: Vec<u32>,
    local: Vec<u32>,
    component: u32,
    nodes: Vec<u32>,
    /// Per (local node, rule state): stamp of the search that reached it, how, and how far.
    seen: Vec<u32>,
    search: u32,
    parent: Vec<(usize, u8)>,
    dist: Vec<usize>,
    queue: std::collections::VecDeque<usize>,
}

impl<'g> CycleFinder<'g> {
    pub(crate) fn new(graph: &'g Graph) -> CycleFinder<'g> {
        let n = graph.n;
        CycleFinder {
            graph,
            member: vec![0; n],
            local: vec![0; n],
            component: 0,
            nodes: Vec::new(),
            seen: Vec::new(),
            search: 0,
            parent: Vec::new(),
            dist: Vec::new(),
            queue: std::collections::VecDeque::new(),
        }
    }

    pub(crate) fn enter(&mut self, component: &[u32]) {
        self.component += 1;
        for (i, &v) in component.iter().enumerate() {
            self.member[v as usize] = self.component;
            self.local[v as usize] = i as u32;
        }
        self.nodes = component.to_vec();
        let states = component.len() * STATES;
        if self.seen.len() < states {
            // Stamps start afresh with the buffer: nothing in it is from a live search.
            self.seen = vec![0; states];
            self.search = 0;
            self.parent.resize(states, (0, 0));
            self.dist.resize(states, 0);
        }
    }

    /// The shortest simple cycle in the current component that `spec` describes: for each
    /// edge u→v of a kind in `spec.first` (in order), the shortest path v→u. Stops at a cycle
    /// of two, or once `budget` node visits are spent (returning the best so far).
    pub(crate) fn shortest(
        &mut self,
        component: &[u32],
        spec: CycleSpec,
        mut budget: u64,
    ) -> Option<Vec<Hop>> {
        let mut best: Option<Vec<Hop>> = None;
        for &u in component {
            for &(v, kind) in self.graph.out(u) {
                if kind & spec.first == 0 || self.member[v as usize] != self.component {
                    continue;
                }
                if budget == 0 {
                    return best;
                }
                let limit = best.as_ref().map_or(usize::MAX, |b| b.len() - 1);
                let start = spec.rw.start(kind);
                if let Some(rest) = self.path(v, start, u, spec, limit, &mut budget) {
                    let mut cycle = vec![Hop {
                        from: u,
                        to: v,
                        kind,
                    }];
                    cycle.extend(rest);
                    if !simple(&cycle) {
                        continue;
                    }
                    let done = cycle.len() == 2;
                    best = Some(cycle);
                    if done {
                        return best;
                    }
                }
            }
        }
        best
    }

    /// The shortest path from `from` (entered in rule state `state`) to `to` along
    /// `spec.path`, inside the component, of fewer than `limit` edges, arriving in a state the
    /// rule accepts.
    fn path(
        &mut self,
        from: u32,
        state: u8,
        to: u32,
        spec: CycleSpec,
        limit: usize,
        budget: &mut u64,
    ) -> Option<Vec<Hop>> {
        let local = &self.local;
        let at = |node: u32, state: u8| local[node as usize] as usize * STATES + state as usize;
        self.search += 1;
        let stamp = self.search;
        self.queue.clear();
        let origin = at(from, state);
        self.queue.push_back(origin);
        self.seen[origin] = stamp;
        self.dist[origin] = 0;
        while let Some(x) = self.queue.pop_front() {
            let (node, state) = (self.nodes[x / STATES], (x % STATES) as u8);
            if node == to {
                if !spec.rw.accepts(state) {
                    // Going on through the start would not close a simple cycle.
                    continue;
                }
                let mut hops = Vec::new();
                let mut here = x;
                while here != origin {
                    let (prev, kind) = self.parent[here];
                    hops.push(Hop {
                        from: self.nodes[prev / STATES],
                        to: self.nodes[here / STATES],
                        kind,
                    });
                    here = prev;
                }
                hops.reverse();
                return Some(hops);
            }
            // A longer path cannot beat the best cycle found.
            if self.dist[x] + 1 >= limit {
                continue;
            }
            *budget = budget.saturating_sub(1);
            if *budget == 0 {
                return None;
            }
            for &(y, kind) in self.graph.out(node) {
                if kind & spec.path == 0 || self.member[y as usize] != self.component {
                    continue;
                }
                let Some(next) = spec.rw.step(state, kind) else {
                    continue;
                };
                let yi = at(y, next);
                if self.seen[yi] == stamp {
                    continue;
                }
                self.seen[yi] = stamp;
                self.parent[yi] = (x, kind);
                self.dist[yi] = self.dist[x] + 1;
                self.queue.push_back(yi);
            }
        }
        None
    }
}

/// Whether a cycle visits each transaction once.
fn simple(cycle: &[Hop]) -> bool {
    let mut nodes: Vec<u32> = cycle.iter().map(|h| h.from).collect();
    nodes.sort_unstable();
    nodes.windows(2).all(|w| w[0] != w[1])
}
