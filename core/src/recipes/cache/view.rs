//! The cached view and its diff: what turns reads into created, changed and deleted events,
//! each reported once.

use std::collections::BTreeMap;

use crate::Stat;
use crate::path::is_descendant;

use super::{CacheEvent, Entry};

/// The cached nodes, by path.
#[derive(Debug, Default)]
pub(super) struct View {
    pub(super) nodes: BTreeMap<String, Entry>,
}

impl View {
    /// Records what a read found at `path` (`None`: no node), returning the events for the
    /// changes it reveals: a new node is `Created`; a node with another `czxid` was deleted and
    /// created again; a later `mzxid` is `Changed`. A read no newer than the view (same or
    /// older `mzxid`) reports nothing, so a change seen twice (an event, then a re-list) is
    /// reported once. A missing node takes its cached descendants with it.
    pub(super) fn apply(&mut self, path: &str, found: Option<(Vec<u8>, Stat)>) -> Vec<CacheEvent> {
        let mut events = Vec::new();
        match found {
            None => self.remove_under(path, true, None, &mut events),
            Some((data, stat)) => match self.nodes.get(path) {
                None => {
                    self.insert(path, data, stat);
                    events.push(self.event(path, Kind::Created));
                }
                Some(old) if old.stat.czxid != stat.czxid => {
                    if stat.czxid > old.stat.czxid {
                        // Descendants created before the new node belonged to the old one;
                        // later ones (already seen, read first) are the new node's.
                        self.remove_under(path, true, Some(stat.czxid), &mut events);
                        self.insert(path, data, stat);
                        events.push(self.event(path, Kind::Created));
                    }
                }
                Some(old) if stat.mzxid > old.stat.mzxid => {
                    self.insert(path, data, stat);
                    events.push(self.event(path, Kind::Changed));
                }
                Some(old) if stat.mzxid == old.stat.mzxid && stat.pzxid > old.stat.pzxid => {
                    // Only the children changed: keep the newer metadata, report nothing.
                    self.insert(path, data, stat);
                }
                Some(_) => {}
            },
        }
        events
    }

    /// Replaces the view of everything in scope with a fresh listing, returning the events
    /// for the differences: deletions first (deepest first), then creations and changes
    /// (parents first).
    pub(super) fn replace(&mut self, fresh: BTreeMap<String, Entry>) -> Vec<CacheEvent> {
        let mut events = Vec::new();
        let gone: Vec<String> = self
            .nodes
            .keys()
            .rev()
            .filter(|p| !fresh.contains_key(*p))
            .cloned()
            .collect();
        for path in gone {
            if let Some(old) = self.nodes.remove(&path) {
                events.push(CacheEvent::Deleted {
                    path,
                    data: old.data,
                    stat: old.stat,
                });
            }
        }
        for (path, entry) in fresh {
            events.extend(self.apply(&path, Some((entry.data, entry.stat))));
        }
        events
    }

    /// Takes a newer `Stat` of a cached node read without its data (a child listing's), if
    /// its data is the same (`mzxid` unchanged): only the child fields move on, silently.
    pub(super) fn refresh_stat(&mut self, path: &str, stat: Stat) {
        if let Some(entry) = self.nodes.get_mut(path)
            && entry.stat.czxid == stat.czxid
            && entry.stat.mzxid == stat.mzxid
            && stat.pzxid > entry.stat.pzxid
        {
            entry.stat = stat;
        }
    }

    fn insert(&mut self, path: &str, data: Vec<u8>, stat: Stat) {
        self.nodes.insert(path.to_owned(), Entry { data, stat });
    }

    /// Removes `path` (if `itself`) and its cached descendants (only those created before
    /// zxid `before`, if given), deepest first.
    pub(super) fn remove_under(
        &mut self,
        path: &str,
        itself: bool,
        before: Option<i64>,
        events: &mut Vec<CacheEvent>,
    ) {
        let mut doomed: Vec<String> = self
            .nodes
            .range::<str, _>((std::ops::Bound::Included(path), std::ops::Bound::Unbounded))
            .take_while(|(p, _)| p.starts_with(path))
            .filter(|(p, e)| {
                (itself && p.as_str() == path)
                    || (is_descendant(p, path) && before.is_none_or(|z| e.stat.czxid < z))
            })
            .map(|(p, _)| p.clone())
            .collect();
        doomed.reverse();
        for p in doomed {
            let old = self.nodes.remove(&p).expect("listed above");
            events.push(CacheEvent::Deleted {
                path: p,
                data: old.data,
                stat: old.stat,
            });
        }
    }

    fn event(&self, path: &str, kind: Kind) -> CacheEvent {
        let entry = self.nodes[path].clone();
        let (path, data, stat) = (path.to_owned(), entry.data, entry.stat);
        match kind {
            Kind::Created => CacheEvent::Created { path, data, stat },
            Kind::Changed => CacheEvent::Changed { path, data, stat },
        }
    }
}

enum Kind {
    Created,
    Changed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(czxid: i64, mzxid: i64) -> Stat {
        Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ..Stat::default()
        }
    }

    fn names(events: &[CacheEvent]) -> Vec<String> {
        events.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn a_change_seen_twice_is_reported_once() {
        let mut v = View::default();
        assert_eq!(
            names(&v.apply("/a", Some((b"1".to_vec(), stat(1, 1))))),
            ["created /a"]
        );
        assert_eq!(
            names(&v.apply("/a", Some((b"2".to_vec(), stat(1, 5))))),
            ["changed /a"]
        );
        assert!(v.apply("/a", Some((b"2".to_vec(), stat(1, 5)))).is_empty());
        // An older read (a lagging server) never rolls the view back.
        assert!(v.apply("/a", Some((b"1".to_vec(), stat(1, 1)))).is_empty());
        assert_eq!(v.nodes["/a"].data, b"2");
    }

    #[test]
    fn a_recreated_node_is_deleted_then_created() {
        let mut v = View::default();
        v.apply("/a", Some((vec![], stat(1, 1))));
        v.apply("/a/b", Some((vec![], stat(2, 2))));
        assert_eq!(
            names(&v.apply("/a", Some((vec![], stat(7, 7))))),
            ["deleted /a/b", "deleted /a", "created /a"]
        );
    }

    #[test]
    fn a_recreated_node_keeps_the_children_seen_after_it() {
        let mut v = View::default();
        v.apply("/a", Some((vec![], stat(1, 1))));
        v.apply("/a/old", Some((vec![], stat(2, 2))));
        // The new node's child was read before the new node itself.
        v.apply("/a/new", Some((vec![], stat(9, 9))));
        assert_eq!(
            names(&v.apply("/a", Some((vec![], stat(7, 7))))),
            ["deleted /a/old", "deleted /a", "created /a"]
        );
        assert!(v.nodes.contains_key("/a/new"));
    }

    #[test]
    fn a_missing_node_takes_its_descendants_but_not_its_namesakes() {
        let mut v = View::default();
        for (p, z) in [
            ("/a", 1),
            ("/a/b", 2),
            ("/a/b/c", 3),
            ("/ab", 4),
            ("/a-", 5),
        ] {
            v.apply(p, Some((vec![], stat(z, z))));
        }
        assert_eq!(
            names(&v.apply("/a", None)),
            ["deleted /a/b/c", "deleted /a/b", "deleted /a"]
        );
        assert_eq!(v.nodes.keys().collect::<Vec<_>>(), ["/a-", "/ab"]);
        assert!(
            v.apply("/a", None).is_empty(),
            "a deletion is reported once"
        );
    }

    #[test]
    fn a_relisting_reports_only_the_differences() {
        let mut v = View::default();
        v.apply("/r", Some((vec![], stat(1, 1))));
        v.apply("/r/x", Some((vec![], stat(2, 2))));
        v.apply("/r/y", Some((vec![], stat(3, 3))));
        let fresh: BTreeMap<String, Entry> = [
            ("/r", stat(1, 1)),
            ("/r/y", stat(3, 9)),
            ("/r/z", stat(10, 10)),
        ]
        .into_iter()
        .map(|(p, s)| {
            (
                p.to_owned(),
                Entry {
                    data: vec![],
                    stat: s,
                },
            )
        })
        .collect();
        assert_eq!(
            names(&v.replace(fresh)),
            ["deleted /r/x", "changed /r/y", "created /r/z"]
        );
    }
}
