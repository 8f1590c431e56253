//! `avout watch` and `avout tree`: a node's (or a subtree's) events as they happen, and a
//! subtree with its stats, from the shell.
//!
//! `avout watch --zk CONNECT PATH [--recursive] [--count N]` arms a persistent watch
//! (recursive with `--recursive`; ZooKeeper 3.6+) and prints one line per event:
//! `NodeCreated /a/b`, `NodeDataChanged /a`, …, and `Session Disconnected` /
//! `Session Connected` when the connection drops and comes back (changes in between are not
//! reported, as ZooKeeper does not report them to persistent watches). It ends when the
//! session does, or after `N` node events.
//!
//! `avout tree --zk CONNECT PATH` prints the subtree, one node per line, indented by depth,
//! children in name order, with its stats.

use std::io::Write;

use avout::zk::ZkClient;
use avout::{AddWatchMode, Coordination, EventKind, Stat};
use clap::Args;
use futures::StreamExt;

use super::zk_auth::ZkAuth;

/// Options of `avout watch`.
#[derive(Debug, Args)]
pub(crate) struct WatchArgs {
    /// ZooKeeper connect string, e.g. 127.0.0.1:2181.
    #[arg(long, value_name = "CONNECT")]
    pub(crate) zk: String,
    #[command(flatten)]
    pub(crate) zk_auth: Box<ZkAuth>,
    /// The node to watch (it need not exist).
    pub(crate) path: String,
    /// Watch every descendant too.
    #[arg(long)]
    pub(crate) recursive: bool,
    /// Stop after this many node events.
    #[arg(long, value_name = "N")]
    pub(crate) count: Option<usize>,
}

/// Options of `avout tree`.
#[derive(Debug, Args)]
pub(crate) struct TreeArgs {
    /// ZooKeeper connect string, e.g. 127.0.0.1:2181.
    #[arg(long, value_name = "CONNECT")]
    pub(crate) zk: String,
    #[command(flatten)]
    pub(crate) zk_auth: Box<ZkAuth>,
    /// The subtree's root.
    pub(crate) path: String,
}

/// Why `avout watch` or `avout tree` failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WatchCmdError {
    /// No session could be established.
    #[error("connecting to {connect}: {source}")]
    Connect {
        /// The connect string.
        connect: String,
        /// Why.
        #[source]
        source: avout::Error,
    },
    /// A request failed.
    #[error("{path}: {source}")]
    Request {
        /// The node.
        path: String,
        /// Why.
        #[source]
        source: avout::Error,
    },
    /// Writing the output failed.
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
}

async fn connect(connect: &str, auth: &ZkAuth) -> Result<ZkClient, WatchCmdError> {
    let refused = |source| WatchCmdError::Connect {
        connect: connect.to_owned(),
        source,
    };
    ZkClient::connect(&auth.config(connect).map_err(refused)?)
        .await
        .map_err(refused)
}

/// Prints the events of a persistent watch until the session ends (or `--count` events).
pub(crate) async fn watch(args: &WatchArgs, out: &mut impl Write) -> Result<(), WatchCmdError> {
    let zk = connect(&args.zk, &args.zk_auth).await?;
    let mode = if args.recursive {
        AddWatchMode::PersistentRecursive
    } else {
        AddWatchMode::Persistent
    };
    let failed = |source| WatchCmdError::Request {
        path: args.path.clone(),
        source,
    };
    let mut events = zk.add_watch(&args.path, mode).await.map_err(failed)?;
    let mut seen = 0;
    while let Some(event) = events.next().await {
        writeln!(out, "{event}")?;
        out.flush()?;
        if event.kind != EventKind::Session {
            seen += 1;
            if args.count.is_some_and(|n| seen >= n) {
                break;
            }
        }
    }
    let _ = events.remove().await;
    let _ = zk.close().await;
    Ok(())
}

/// Prints the subtree under `--path`, depth first, children in name order.
pub(crate) async fn tree(args: &TreeArgs, out: &mut impl Write) -> Result<(), WatchCmdError> {
    let zk = connect(&args.zk, &args.zk_auth).await?;
    let mut todo = vec![(args.path.clone(), 0usize)];
    while let Some((path, depth)) = todo.pop() {
        let failed = |source| WatchCmdError::Request {
            path: path.clone(),
            source,
        };
        let (data, stat) = match zk.get_data(&path).await {
            Ok(found) => found,
            // Deleted since its parent was listed.
            Err(avout::Error::NoNode { .. }) if depth > 0 => continue,
            Err(e) => return Err(failed(e)),
        };
        writeln!(
            out,
            "{}{path} {}",
            "  ".repeat(depth),
            describe(&data, &stat)
        )?;
        let (mut children, _) = match zk.get_children(&path).await {
            Ok(found) => found,
            Err(avout::Error::NoNode { .. }) => continue,
            Err(e) => return Err(failed(e)),
        };
        children.sort();
        for child in children.into_iter().rev() {
            todo.push((avout::path::join(&path, &child), depth + 1));
        }
    }
    let _ = zk.close().await;
    Ok(())
}

/// One node's stats (and its data if short and printable).
fn describe(data: &[u8], stat: &Stat) -> String {
    let mut line = format!(
        "[version={} cversion={} aversion={} children={} bytes={} czxid={:#x} mzxid={:#x}",
        stat.version,
        stat.cversion,
        stat.aversion,
        stat.num_children,
        stat.data_length,
        stat.czxid,
        stat.mzxid
    );
    if stat.ephemeral_owner != 0 {
        line.push_str(&format!(" ephemeral={:#x}", stat.ephemeral_owner));
    }
    line.push(']');
    match std::str::from_utf8(data) {
        Ok(text) if !text.is_empty() && text.len() <= 64 && !text.contains('\n') => {
            line.push_str(&format!(" {text:?}"));
        }
        _ => {}
    }
    line
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use avout::{CoordinationExt, CreateOptions};
    use avout_testkit::server::ZkServer;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watch_and_tree_on_a_real_server() {
        let server = tokio::task::block_in_place(ZkServer::start)
            .expect("a real ZooKeeper server (Debian's zookeeper package)");
        let connect_string = server.connect_string();
        let writer = connect(&connect_string, &ZkAuth::default())
            .await
            .expect("writer");
        writer.ensure_path("/cli/a").await.expect("setup");

        let args = WatchArgs {
            zk: connect_string.clone(),
            zk_auth: Box::default(),
            path: "/cli".into(),
            recursive: true,
            count: Some(3),
        };
        let watching = tokio::spawn(async move {
            let mut out = Vec::new();
            watch(&args, &mut out).await.expect("watch");
            String::from_utf8(out).expect("utf-8")
        });
        // The watch is armed once the command has connected; poll with writes until it
        // reports (a create before it is armed is simply not seen).
        tokio::time::sleep(Duration::from_millis(500)).await;
        writer
            .create("/cli/a/b", b"hello", &CreateOptions::default())
            .await
            .expect("create");
        writer.set_data("/cli/a", b"x", None).await.expect("set");
        writer.delete("/cli/a/b", None).await.expect("delete");
        let printed = tokio::time::timeout(Duration::from_secs(15), watching)
            .await
            .expect("three events within 15 s")
            .expect("the watch task");
        assert_eq!(
            printed,
            "NodeCreated /cli/a/b\nNodeDataChanged /cli/a\nNodeDeleted /cli/a/b\n"
        );

        writer
            .create("/cli/a/c", b"hi", &CreateOptions::default())
            .await
            .expect("create");
        let mut out = Vec::new();
        tree(
            &TreeArgs {
                zk: connect_string,
                zk_auth: Box::default(),
                path: "/cli".into(),
            },
            &mut out,
        )
        .await
        .expect("tree");
        let printed = String::from_utf8(out).expect("utf-8");
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(lines.len(), 3, "{printed}");
        assert!(
            lines[0].starts_with("/cli [version=0 cversion=1"),
            "{printed}"
        );
        assert!(lines[1].starts_with("  /cli/a [version=1 "), "{printed}");
        assert!(lines[1].ends_with(" \"x\""), "{printed}");
        assert!(
            lines[2].starts_with("    /cli/a/c [version=0 "),
            "{printed}"
        );
        assert!(lines[2].ends_with(" \"hi\""), "{printed}");
    }
}
