//! The `cache` checker, for caches of a node, its children or a subtree that follow writers
//! changing the tree under [`ROOT`].
//!
//! History: `create`, `set`, `delete` (value `{path, data}`; `ok`, `fail`, or `info` when in
//! doubt); `event` (one per cache event: `{cache, kind, path, data, czxid, mzxid}`, `kind`
//! `created`, `changed` or `deleted`); `view` (each cache's final view: `{cache, client,
//! scope, nodes}`, `scope` a [`Scope`]'s name); `tree` (the last read of the tree:
//! `{nodes}`), where `nodes` maps a path to `[data, czxid, mzxid]`.
//!
//! Every event is for a real change (a write of that path with that data, not failed,
//! invoked before the event; one write, one `mzxid`); no change to a path is reported twice
//! by a cache (its events replay: no `created` of a cached path, no `changed` without a later
//! `mzxid`, no `deleted` of an uncached one); and each client's last cache converged: its
//! events replay into its view, and its view is the tree's part in its scope.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::history::{Event, History, F};
//! use serde_json::json;
//! let f = |s: &str| F::Other(s.into());
//! let event = json!({"cache": 0, "kind": "created", "path": "/cache", "data": "x",
//!                    "czxid": 1, "mzxid": 1});
//! // A cache reports a node nobody wrote.
//! let h: History = [Event::invoke(9, f("event"), event.clone()), Event::ok(9, f("event"), event)]
//!     .into_iter()
//!     .collect();
//! let v = avout_check::recipes::cache::CHECKER.check(&h).unwrap();
//! assert!(v.anomalies.iter().any(|a| a.message.contains("no write")), "{v}");
//! ```

use std::collections::BTreeMap;

use serde_json::Value;

use crate::Rule;
use crate::history::{EventType, History, Pair, pairs};
use crate::verdict::{Anomaly, Role};

/// The checker.
pub const CHECKER: Rule = Rule::new("cache (real, once, converged)", judge);

/// The root every cache follows.
pub const ROOT: &str = "/cache";

/// A cached or read node: data, `czxid`, `mzxid`.
pub type Node = (String, i64, i64);

/// Nodes by path.
pub type Tree = BTreeMap<String, Node>;

/// Which nodes under its root a cache follows, as the history names it.
///
/// ```
/// use avout_check::recipes::cache::Scope;
/// assert!(Scope::Subtree.covers("/r", "/r/a/b"));
/// assert!(!Scope::Children.covers("/r", "/r/a/b"));
/// assert!(Scope::Node.covers("/r", "/r"));
/// assert_eq!(Scope::parse(Scope::Children.name()), Some(Scope::Children));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The root alone.
    Node,
    /// The root's children.
    Children,
    /// The root and everything below it.
    Subtree,
}

impl Scope {
    /// Its name in a history: `node`, `children` or `subtree`.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Node => "node",
            Scope::Children => "children",
            Scope::Subtree => "subtree",
        }
    }

    /// The scope named `name`.
    pub fn parse(name: &str) -> Option<Scope> {
        [Scope::Node, Scope::Children, Scope::Subtree]
            .into_iter()
            .find(|s| s.name() == name)
    }

    /// Whether a cache of this scope on `root` follows `path`.
    pub fn covers(self, root: &str, path: &str) -> bool {
        let below = path
            .strip_prefix(root)
            .and_then(|rest| rest.strip_prefix('/'))
            .filter(|rest| !rest.is_empty());
        match self {
            Scope::Node => path == root,
            Scope::Children => below.is_some_and(|rest| !rest.contains('/')),
            Scope::Subtree => path == root || below.is_some(),
        }
    }
}

/// An anomaly of the cache event `e`.
fn event(e: &Seen<'_>, kind: &str, message: String) -> Anomaly {
    Anomaly::new(kind, message).op(e.op.start, Role::Culprit, format!("{} {}", e.kind, e.path))
}

/// A cache event as recorded.
struct Seen<'a> {
    op: &'a Pair,
    cache: u64,
    kind: &'a str,
    path: &'a str,
    node: Node,
}

fn seen(op: &Pair) -> Option<Seen<'_>> {
    let v = &op.output;
    Some(Seen {
        op,
        cache: v["cache"].as_u64()?,
        kind: v["kind"].as_str()?,
        path: v["path"].as_str()?,
        node: (
            v["data"].as_str()?.to_owned(),
            v["czxid"].as_i64()?,
            v["mzxid"].as_i64()?,
        ),
    })
}

fn nodes(v: &Value) -> Option<Tree> {
    v.as_object()?
        .iter()
        .map(|(p, n)| {
            let n = (n[0].as_str()?.to_owned(), n[1].as_i64()?, n[2].as_i64()?);
            Some((p.clone(), n))
        })
        .collect()
}

fn judge(history: &History) -> Vec<Anomaly> {
    let ops = pairs(history);
    let mut anomalies = Vec::new();
    let writes: Vec<&Pair> = ops
        .iter()
        .filter(|o| matches!(o.f.as_str(), "create" | "set" | "delete") && o.end != EventType::Fail)
        .collect();
    let events: Vec<Seen> = ops
        .iter()
        .filter(|o| o.f == "event" && o.end == EventType::Ok)
        .filter_map(seen)
        .collect();
    real_changes(&writes, &events, &mut anomalies);
    let models = replays(&events, &mut anomalies);
    converged(&ops, &models, &mut anomalies);
    anomalies
}

/// Every event is for a write of its path, not failed, invoked before it: a `Created` whose
/// node was never changed for a `create` with its data, a `Changed` (or a `Created` of a node
/// changed since) for a `set` with its data, a `Deleted` for a `delete`. A write applies once,
/// so all the events naming its data agree on its `mzxid`.
fn real_changes(writes: &[&Pair], events: &[Seen], anomalies: &mut Vec<Anomaly>) {
    let mut zxid_of: BTreeMap<(&str, &str), (i64, u64)> = BTreeMap::new();
    for e in events {
        let (data, czxid, mzxid) = &e.node;
        let wanted = match e.kind {
            "deleted" => "delete",
            "created" if czxid == mzxid => "create",
            _ => "set",
        };
        let found = writes.iter().any(|w| {
            w.f == wanted
                && w.input["path"].as_str() == Some(e.path)
                && (wanted == "delete" || w.input["data"].as_str() == Some(data.as_str()))
                && w.start < e.op.start
        });
        if !found {
            anomalies.push(event(
                e,
                "unreal-change",
                format!(
                    "cache {} reported {} {} (data {data:?}, mzxid {mzxid}) at event {}, but no \
                 write ({wanted} of it{}) was invoked before",
                    e.cache,
                    e.kind,
                    e.path,
                    e.op.start,
                    if wanted == "delete" {
                        String::new()
                    } else {
                        format!(" with data {data:?}")
                    }
                ),
            ));
        }
        if e.kind != "deleted"
            && let Some((first, cache)) = zxid_of.insert((e.path, data.as_str()), (*mzxid, e.cache))
            && first != *mzxid
        {
            anomalies.push(event(
                e,
                "two-changes",
                format!(
                    "{} with data {data:?} reported at mzxid {first} (cache {cache}) and {mzxid} \
                 (cache {}): one write, two changes",
                    e.path, e.cache
                ),
            ));
        }
    }
}

/// Replays each cache instance's events into its model of the tree: a `Created` of a cached
/// path, a `Changed` without a later `mzxid` (or of another node), a `Deleted` of an uncached
/// path report a change twice (or one never seen). Returns the models, by instance.
fn replays(events: &[Seen], anomalies: &mut Vec<Anomaly>) -> BTreeMap<u64, Tree> {
    let mut models: BTreeMap<u64, Tree> = BTreeMap::new();
    for e in events {
        let model = models.entry(e.cache).or_default();
        let at = format!("cache {} at event {}", e.cache, e.op.start);
        match e.kind {
            "created" => {
                if let Some(old) = model.insert(e.path.to_owned(), e.node.clone()) {
                    anomalies.push(event(e, "reported-twice", format!(
                        "{at}: created {} (czxid {}) while it held it (czxid {}): reported twice",
                        e.path, e.node.1, old.1
                    )));
                }
            }
            "changed" => match model.get_mut(e.path) {
                Some(old) if old.1 == e.node.1 && e.node.2 > old.2 => *old = e.node.clone(),
                Some(old) => anomalies.push(event(
                    e,
                    "reported-twice",
                    format!(
                        "{at}: changed {} to mzxid {} (czxid {}) after mzxid {} (czxid {}): a \
                     change reported twice or out of order",
                        e.path, e.node.2, e.node.1, old.2, old.1
                    ),
                )),
                None => anomalies.push(event(
                    e,
                    "reported-twice",
                    format!("{at}: changed {}, which it did not hold", e.path),
                )),
            },
            _ => {
                if model.remove(e.path).is_none() {
                    anomalies.push(event(
                        e,
                        "reported-twice",
                        format!(
                            "{at}: deleted {}, which it did not hold: reported twice",
                            e.path
                        ),
                    ));
                }
            }
        }
    }
    models
}

/// Each client's last cache recorded a view, its events replay into that view, and the view
/// is the last tree's part in its scope.
fn converged(ops: &[Pair], models: &BTreeMap<u64, Tree>, anomalies: &mut Vec<Anomaly>) {
    let Some(tree) = ops
        .iter()
        .rfind(|o| o.f == "tree" && o.end == EventType::Ok)
        .and_then(|o| nodes(&o.output["nodes"]))
    else {
        anomalies.push(Anomaly::new(
            "not-converged",
            "the tree was never read once the writes stopped",
        ));
        return;
    };
    let mut last: BTreeMap<u64, &Pair> = BTreeMap::new();
    for op in ops
        .iter()
        .filter(|o| o.f == "view" && o.end == EventType::Ok)
    {
        if let Some(client) = op.output["client"].as_u64() {
            last.insert(client, op);
        }
    }
    let started = ops
        .iter()
        .filter_map(|o| (o.f == "event").then(|| o.output["cache"].as_u64().map(|c| c / 1000))?);
    let missing: std::collections::BTreeSet<u64> =
        started.filter(|c| !last.contains_key(c)).collect();
    for client in missing {
        anomalies.push(Anomaly::new(
            "not-converged",
            format!("client {client}'s cache never recorded its view"),
        ));
    }
    for (client, op) in last {
        let v = &op.output;
        let (Some(cache), Some(scope), Some(view)) = (
            v["cache"].as_u64(),
            v["scope"].as_str().and_then(Scope::parse),
            nodes(&v["nodes"]),
        ) else {
            continue;
        };
        let replayed = models.get(&cache).cloned().unwrap_or_default();
        if replayed != view {
            anomalies.push(
                Anomaly::new(
                    "not-converged",
                    format!(
                        "cache {cache}: its events replay into {} but its view is {}",
                        show(&replayed),
                        show(&view)
                    ),
                )
                .op(op.start, Role::Culprit, "view"),
            );
        }
        let want: Tree = tree
            .iter()
            .filter(|(p, _)| scope.covers(ROOT, p))
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect();
        if view != want {
            anomalies.push(
                Anomaly::new(
                    "not-converged",
                    format!(
                        "client {client}'s cache {cache} ({scope:?}) did not converge: its view \
                         is {} where the tree holds {}",
                        show(&view),
                        show(&want)
                    ),
                )
                .op(op.start, Role::Culprit, "view"),
            );
        }
    }
}

fn show(tree: &Tree) -> String {
    let nodes: Vec<String> = tree
        .iter()
        .map(|(p, (d, c, m))| format!("{p}={d:?}@{c}/{m}"))
        .collect();
    format!("{{{}}}", nodes.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::CHECKER;
    use crate::Checker;
    use crate::history::{Event, F, History};

    fn f(s: &str) -> F {
        F::Other(s.into())
    }

    /// A history of completed operations: (process, f, input, output).
    fn history(ops: &[(u64, &str, Value, Value)]) -> History {
        ops.iter()
            .flat_map(|(p, name, input, output)| {
                [
                    Event::invoke(*p, f(name), input.clone()),
                    Event::ok(*p, f(name), output.clone()),
                ]
            })
            .collect()
    }

    fn write(name: &str, path: &str, data: &str) -> (u64, &'static str, Value, Value) {
        let v = json!({"path": path, "data": data});
        let f = match name {
            "create" => "create",
            "set" => "set",
            _ => "delete",
        };
        (0, f, v.clone(), v)
    }

    fn event(
        cache: u64,
        kind: &str,
        path: &str,
        data: &str,
        c: i64,
        m: i64,
    ) -> (u64, &'static str, Value, Value) {
        let v = json!({"cache": cache, "kind": kind, "path": path, "data": data,
                       "czxid": c, "mzxid": m});
        (1 << 20, "event", v.clone(), v)
    }

    fn view(cache: u64, scope: &str, nodes: Value) -> (u64, &'static str, Value, Value) {
        let v = json!({"cache": cache, "client": cache / 1000, "scope": scope, "nodes": nodes});
        (1 << 20, "view", v.clone(), v)
    }

    fn tree(nodes: Value) -> (u64, &'static str, Value, Value) {
        (2 << 20, "tree", Value::Null, json!({ "nodes": nodes }))
    }

    /// A valid run: root created, a child created, changed and deleted, all seen once.
    fn valid() -> Vec<(u64, &'static str, Value, Value)> {
        vec![
            write("create", "/cache", "setup"),
            event(0, "created", "/cache", "setup", 1, 1),
            write("create", "/cache/a", "c0-0"),
            event(0, "created", "/cache/a", "c0-0", 2, 2),
            write("set", "/cache/a", "c0-1"),
            event(0, "changed", "/cache/a", "c0-1", 2, 3),
            write("delete", "/cache/a", "c0-2"),
            event(0, "deleted", "/cache/a", "c0-1", 2, 3),
            tree(json!({"/cache": ["setup", 1, 1]})),
            view(0, "subtree", json!({"/cache": ["setup", 1, 1]})),
        ]
    }

    fn anomalies(ops: &[(u64, &str, Value, Value)]) -> Vec<String> {
        let v = CHECKER.check(&history(ops)).unwrap();
        v.anomalies.into_iter().map(|a| a.message).collect()
    }

    #[test]
    fn a_clean_history_is_valid() {
        assert_eq!(anomalies(&valid()), Vec::<String>::new());
    }

    #[test]
    fn an_event_for_data_nobody_wrote_is_unreal() {
        let mut ops = valid();
        ops[5] = event(0, "changed", "/cache/a", "c9-9", 2, 3);
        let found = anomalies(&ops);
        assert!(found.iter().any(|a| a.contains("no write")), "{found:?}");
    }

    #[test]
    fn an_event_before_its_write_is_unreal() {
        let mut ops = valid();
        ops.swap(2, 3);
        let found = anomalies(&ops);
        assert!(found.iter().any(|a| a.contains("no write")), "{found:?}");
    }

    #[test]
    fn a_deletion_nobody_made_is_unreal() {
        let mut ops = valid();
        ops.remove(6);
        let found = anomalies(&ops);
        assert!(
            found.iter().any(|a| a.contains("delete of it")),
            "{found:?}"
        );
    }

    #[test]
    fn one_write_seen_at_two_zxids_is_unreal() {
        let mut ops = valid();
        ops.push(event(1000, "created", "/cache", "setup", 1, 1));
        ops.push(event(1000, "created", "/cache/a", "c0-0", 2, 7));
        let found = anomalies(&ops);
        assert!(found.iter().any(|a| a.contains("two changes")), "{found:?}");
    }

    #[test]
    fn a_change_reported_twice_is_found() {
        let mut ops = valid();
        ops.insert(6, event(0, "changed", "/cache/a", "c0-1", 2, 3));
        let found = anomalies(&ops);
        assert!(
            found
                .iter()
                .any(|a| a.contains("reported twice or out of order")),
            "{found:?}"
        );
    }

    #[test]
    fn a_creation_reported_twice_is_found() {
        let mut ops = valid();
        ops.insert(4, event(0, "created", "/cache/a", "c0-0", 2, 2));
        let found = anomalies(&ops);
        assert!(
            found.iter().any(|a| a.contains("while it held it")),
            "{found:?}"
        );
    }

    #[test]
    fn a_deletion_reported_twice_is_found() {
        let mut ops = valid();
        ops.insert(8, event(0, "deleted", "/cache/a", "c0-1", 2, 3));
        let found = anomalies(&ops);
        assert!(
            found
                .iter()
                .any(|a| a.contains("did not hold: reported twice")),
            "{found:?}"
        );
    }

    #[test]
    fn a_view_that_misses_a_change_has_not_converged() {
        let mut ops = valid();
        ops[8] = tree(json!({"/cache": ["setup", 1, 1], "/cache/b": ["c1-0", 9, 9]}));
        ops.insert(8, write("create", "/cache/b", "c1-0"));
        let found = anomalies(&ops);
        assert!(
            found.iter().any(|a| a.contains("did not converge")),
            "{found:?}"
        );
    }

    #[test]
    fn a_view_the_events_do_not_tell_is_found() {
        let mut ops = valid();
        let last = ops.len() - 1;
        ops[last] = view(0, "subtree", json!({}));
        let found = anomalies(&ops);
        assert!(found.iter().any(|a| a.contains("replay into")), "{found:?}");
    }

    #[test]
    fn a_cache_without_a_view_has_not_converged() {
        let mut ops = valid();
        ops.pop();
        let found = anomalies(&ops);
        assert!(
            found.iter().any(|a| a.contains("never recorded its view")),
            "{found:?}"
        );
    }

    #[test]
    fn a_view_is_judged_in_its_scope() {
        let mut ops = valid();
        ops.insert(8, write("create", "/cache/b", "c1-0"));
        let len = ops.len();
        ops[len - 2] = tree(json!({"/cache": ["setup", 1, 1], "/cache/b": ["c1-0", 9, 9]}));
        ops[len - 1] = view(0, "node", json!({"/cache": ["setup", 1, 1]}));
        assert_eq!(anomalies(&ops), Vec::<String>::new());
    }
}
