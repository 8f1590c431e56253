//! Requests, results and lock GUIDs as short text, for traces.

use avout::machine::{Reply, Request};

/// Writes the models' lock GUIDs (client `c`, acquisition `g`) as `c<c>.<g>` in a trace line,
/// so paths stay readable: `/lock/_c_c0.1-lock-0000000003`.
pub(crate) fn shorten(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("_c_") {
        out.push_str(&rest[..at + 3]);
        rest = &rest[at + 3..];
        let guid = rest
            .get(..36)
            .and_then(|g| u128::from_str_radix(&g.replace('-', ""), 16).ok());
        if let Some(guid) = guid
            && guid >> 80 > 0
        {
            let client = (guid >> 80) - 1;
            let generation = guid & 0xffff_ffff;
            out.push_str(&format!("c{client}.{generation}"));
            rest = &rest[36..];
        }
    }
    out.push_str(rest);
    out
}

/// A request, shortly.
pub(crate) fn show_request(request: &Request) -> String {
    match request {
        Request::Create { path, options, .. } => format!("create {path} ({:?})", options.mode),
        Request::Delete { path, .. } => format!("delete {path}"),
        Request::GetData { path, watch } => format!("getData {path}{}", watched(*watch)),
        Request::SetData { path, version, .. } => format!("setData {path} version {version:?}"),
        Request::Exists { path, watch } => format!("exists {path}{}", watched(*watch)),
        Request::GetChildren { path, watch } => format!("getChildren {path}{}", watched(*watch)),
        Request::Multi(ops) => format!("multi of {} ops", ops.len()),
        Request::Sync { path } => format!("sync {path}"),
        Request::GetAcl { path } => format!("getACL {path}"),
        Request::AddAuth { scheme, .. } => format!("addAuth {scheme}"),
        Request::SetAcl { path, version, .. } => format!("setACL {path} version {version:?}"),
        Request::GetEphemerals { prefix } => format!("getEphemerals {prefix}"),
        Request::GetAllChildrenNumber { path } => format!("getAllChildrenNumber {path}"),
        Request::AddWatch { path, mode } => format!("addWatch {path} ({mode:?})"),
        Request::RemoveWatches { path } => format!("removeWatches {path}"),
        Request::MultiRead(reads) => format!("multiRead of {} reads", reads.len()),
        Request::WhoAmI => "whoAmI".into(),
    }
}

fn watched(watch: bool) -> &'static str {
    if watch { " +watch" } else { "" }
}

/// A result, shortly.
pub(crate) fn show_result(result: &avout::Result<Reply>) -> String {
    match result {
        Ok(Reply::Created { path, stat }) => format!("created {path} (czxid {})", stat.czxid),
        Ok(Reply::Deleted) => "deleted".into(),
        Ok(Reply::Data { stat, .. }) => format!("data at version {}", stat.version),
        Ok(Reply::Set(stat)) => format!("set, now version {}", stat.version),
        Ok(Reply::Exists(stat)) => match stat {
            Some(s) => format!("exists (czxid {})", s.czxid),
            None => "does not exist".into(),
        },
        Ok(Reply::Children { children, .. }) => format!("children {children:?}"),
        Ok(Reply::Multi(r)) => format!("multi ok ({} results)", r.len()),
        Ok(Reply::Synced) => "synced".into(),
        Ok(Reply::Acl { acl, .. }) => format!("ACL of {} entries", acl.len()),
        Ok(Reply::AuthAdded) => "identity added".into(),
        Ok(Reply::AclSet(stat)) => format!("ACL set, now aversion {}", stat.aversion),
        Ok(Reply::Ephemerals(paths)) => format!("ephemerals {paths:?}"),
        Ok(Reply::AllChildrenNumber(n)) => format!("{n} descendants"),
        Ok(Reply::WatchAdded) => "watch added".into(),
        Ok(Reply::WatchesRemoved) => "watches removed".into(),
        Ok(Reply::MultiRead(r)) => format!("multiRead ok ({} results)", r.len()),
        Ok(Reply::WhoAmI(ids)) => format!("identities {ids:?}"),
        Err(e) => format!("error {e:?}"),
    }
}
