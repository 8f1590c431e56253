//! `avout lock hold`: takes an exclusive lock from the shell, for interoperability checks.
//!
//! The lock is [`avout::lock::Mutex`], whose nodes are named as Apache Curator's
//! `InterProcessMutex` names them, so this command and the Curator peer's `hold-lock` on the
//! same path exclude each other. The output matches the peers' `hold-lock`: `HELD <node path>`
//! once the lock is ours, `RELEASED` once its node is deleted.

use std::io::Write;
use std::time::Duration;

use avout::Client;
use avout::lock::{LockError, Mutex};
use clap::{Args, Subcommand};

use super::zk_auth::ZkAuth;

/// The `avout lock` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum LockCommand {
    /// Take the exclusive lock on a path, hold it, release it.
    Hold(HoldArgs),
}

/// Options of `avout lock hold`.
#[derive(Debug, Args)]
pub(crate) struct HoldArgs {
    /// ZooKeeper connect string, e.g. 127.0.0.1:2181.
    #[arg(long, value_name = "CONNECT")]
    pub(crate) zk: String,
    #[command(flatten)]
    pub(crate) zk_auth: Box<ZkAuth>,
    /// The lock's path (its nodes are created under it).
    #[arg(long, value_name = "P")]
    pub(crate) path: String,
    /// How long to hold the lock, in seconds (fractions allowed).
    #[arg(long, value_name = "S", value_parser = parse_seconds)]
    pub(crate) seconds: Duration,
}

/// Why `avout lock` failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockCmdError {
    /// No session could be established.
    #[error("connecting to {connect}: {source}")]
    Connect {
        /// The connect string.
        connect: String,
        /// Why.
        #[source]
        source: avout::Error,
    },
    /// The lock could not be taken, or was lost, or its release failed.
    #[error("lock {path}: {source}")]
    Lock {
        /// The lock's path.
        path: String,
        /// Why.
        #[source]
        source: LockError,
    },
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s:?} is not a duration of seconds"))
}

/// Runs `avout lock hold`, writing its two lines to `out`.
pub(crate) async fn hold(args: &HoldArgs, out: &mut impl Write) -> Result<(), LockCmdError> {
    let refused = |source| LockCmdError::Connect {
        connect: args.zk.clone(),
        source,
    };
    let config = args.zk_auth.config(&args.zk).map_err(refused)?;
    let zk = Client::connect(config.with_session_timeout(Duration::from_secs(10)))
        .await
        .map_err(refused)?;
    let lock_error = |source| LockCmdError::Lock {
        path: args.path.clone(),
        source,
    };
    let mutex = Mutex::new(&zk, args.path.clone()).map_err(lock_error)?;
    let guard = mutex.lock().await.map_err(lock_error)?;
    // A reader of the output (a script, the interop test) acts on this line at once.
    let _ = writeln!(out, "HELD {}", guard.node());
    let _ = out.flush();
    // A hold that ends early because the session or the node went away is an error: the
    // caller was told HELD and must learn the lock did not last (the client would open a new
    // session, but the hold was the old one's).
    tokio::select! {
        biased;
        () = tokio::time::sleep(args.seconds) => {}
        lost = guard.lost() => return Err(lock_error(lost)),
    }
    guard.unlock().await.map_err(lock_error)?;
    let _ = writeln!(out, "RELEASED");
    let _ = out.flush();
    let _ = zk.close().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use avout_testkit::server::ZkServer;

    use super::*;

    #[test]
    fn seconds_accept_fractions_and_refuse_junk() {
        assert_eq!(parse_seconds("0.25"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_seconds("2"), Ok(Duration::from_secs(2)));
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").is_err());
    }

    /// Two holders on one real server, each on its own session: the second is told HELD
    /// only after the first released.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_holds_on_one_path_do_not_overlap() {
        let server = tokio::task::block_in_place(ZkServer::start)
            .expect("a real ZooKeeper server (Debian's zookeeper package)");
        let args = |secs| HoldArgs {
            zk: server.connect_string(),
            zk_auth: Box::default(),
            path: "/interop/hold".to_owned(),
            seconds: Duration::from_secs_f64(secs),
        };
        let run = |a: HoldArgs| {
            tokio::spawn(async move {
                let mut out = Vec::new();
                hold(&a, &mut out).await.expect("hold");
                (Instant::now(), String::from_utf8(out).expect("utf-8"))
            })
        };
        let first = run(args(1.0));
        // The first is queued before the second starts, so the order is known.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let second_started = Instant::now();
        let second = run(args(0.1));
        let (first_done, first_out) = first.await.expect("first");
        let (second_done, second_out) = second.await.expect("second");
        assert!(
            first_out.starts_with("HELD /interop/hold/_c_") && first_out.ends_with("RELEASED\n")
        );
        assert!(
            second_out.starts_with("HELD /interop/hold/_c_") && second_out.ends_with("RELEASED\n")
        );
        assert_ne!(first_out, second_out, "two holds, two nodes");
        // The second held for 0.1 s after the first released, so it finished after it, and
        // it waited for the first's remaining ~0.7 s.
        assert!(second_done > first_done);
        assert!(second_done - second_started >= Duration::from_millis(700));
    }
}
