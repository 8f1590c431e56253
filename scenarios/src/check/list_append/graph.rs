//! The transaction dependency graph: strongly connected components (Tarjan) and the shortest
//! cycle of wanted edge kinds inside one (breadth-first search from each edge that must appear).

/// Edge kinds, as bits so a search can allow a set of them. The order is the preference when
/// one pair of transactions has several: dependencies before orders.
pub(crate) const WW: u8 = 1;
pub(crate) const WR: u8 = 2;
pub(crate) const RW: u8 = 4;
pub(crate) const PROCESS: u8 = 8;
pub(crate) const REALTIME: u8 = 16;

/// A directed multigraph over transactions `0..n`, one edge per (from, to, kind).
pub(crate) struct Graph {
    adj: Vec<Vec<(u32, u8)>>,
    edges: usize,
}

impl Graph {
    pub(crate) fn new(n: usize) -> Graph {
        Graph {
            adj: vec![Vec::new(); n],
            edges: 0,
        }
    }

    pub(crate) fn add(&mut self, from: u32, to: u32, kind: u8) {
        debug_assert!(from != to, "no self-loops");
        self.adj[from as usize].push((to, kind));
    }

    /// Sorts and deduplicates each adjacency list; call once, after the last `add`.
    pub(crate) fn seal(&mut self) {
        self.edges = 0;
        for out in &mut self.adj {
            out.sort_unstable();
            out.dedup();
            self.edges += out.len();
        }
    }

    pub(crate) fn edges(&self) -> usize {
        self.edges
    }

    /// The strongly connected components with more than one node, each sorted, in order of their
    /// smallest node. Iterative Tarjan: realtime chains are as long as the history.
    pub(crate) fn cycles_components(&self) -> Vec<Vec<u32>> {
        const UNSEEN: u32 = u32::MAX;
        let n = self.adj.len();
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
                let out = &self.adj[v as usize];
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

/// One edge of a cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hop {
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) kind: u8,
}

/// Breadth-first searches restricted to one component, reusing their buffers.
pub(crate) struct CycleFinder<'g> {
    graph: &'g Graph,
    /// Stamp of the component a node belongs to (the current one is `component`).
    member: Vec<u32>,
    component: u32,
    /// Stamp of the search that reached a node, and how.
    seen: Vec<u32>,
    search: u32,
    parent: Vec<(u32, u8)>,
    dist: Vec<usize>,
    queue: std::collections::VecDeque<u32>,
}

impl<'g> CycleFinder<'g> {
    pub(crate) fn new(graph: &'g Graph) -> CycleFinder<'g> {
        let n = graph.adj.len();
        CycleFinder {
            graph,
            member: vec![0; n],
            component: 0,
            seen: vec![0; n],
            search: 0,
            parent: vec![(0, 0); n],
            dist: vec![0; n],
            queue: std::collections::VecDeque::new(),
        }
    }

    pub(crate) fn enter(&mut self, component: &[u32]) {
        self.component += 1;
        for &v in component {
            self.member[v as usize] = self.component;
        }
    }

    /// The shortest cycle in the current component that starts with an edge of a kind in
    /// `first` and continues along edges of kinds in `path`: for each such edge u→v (in order),
    /// the shortest path v→u. Stops at a cycle of two, or once `budget` node visits are spent
    /// (returning the best so far).
    pub(crate) fn shortest(
        &mut self,
        component: &[u32],
        first: u8,
        path: u8,
        mut budget: u64,
    ) -> Option<Vec<Hop>> {
        let mut best: Option<Vec<Hop>> = None;
        for &u in component {
            for &(v, kind) in &self.graph.adj[u as usize] {
                if kind & first == 0 || self.member[v as usize] != self.component {
                    continue;
                }
                if budget == 0 {
                    return best;
                }
                let limit = best.as_ref().map_or(usize::MAX, |b| b.len() - 1);
                if let Some(rest) = self.path(v, u, path, limit, &mut budget) {
                    let mut cycle = vec![Hop {
                        from: u,
                        to: v,
                        kind,
                    }];
                    cycle.extend(rest);
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

    /// The shortest path from `from` to `to` along `kinds`, inside the component, of fewer than
    /// `limit` edges.
    fn path(
        &mut self,
        from: u32,
        to: u32,
        kinds: u8,
        limit: usize,
        budget: &mut u64,
    ) -> Option<Vec<Hop>> {
        self.search += 1;
        let stamp = self.search;
        self.queue.clear();
        self.queue.push_back(from);
        self.seen[from as usize] = stamp;
        self.dist[from as usize] = 0;
        while let Some(x) = self.queue.pop_front() {
            if x == to {
                let mut hops = Vec::new();
                let mut at = to;
                while at != from {
                    let (p, kind) = self.parent[at as usize];
                    hops.push(Hop {
                        from: p,
                        to: at,
                        kind,
                    });
                    at = p;
                }
                hops.reverse();
                return Some(hops);
            }
            // A longer path cannot beat the best cycle found.
            if self.dist[x as usize] + 1 >= limit {
                continue;
            }
            *budget = budget.saturating_sub(1);
            if *budget == 0 {
                return None;
            }
            for &(y, kind) in &self.graph.adj[x as usize] {
                if kind & kinds == 0
                    || self.member[y as usize] != self.component
                    || self.seen[y as usize] == stamp
                {
                    continue;
                }
                self.seen[y as usize] = stamp;
                self.parent[y as usize] = (x, kind);
                self.dist[y as usize] = self.dist[x as usize] + 1;
                self.queue.push_back(y);
            }
        }
        None
    }
}
