//! Does ZooKeeper's `sync` order a read after a write another client has seen acknowledged?
//!
//! Found by `avout run barrier --zk-ensemble 3 --kill-every 1s` (reports/findings/
//! barrier-after-restart): a waiter's `sync` + `exists`, sent microseconds after the setter's
//! `create` was acknowledged, found no node. This program asks the same question of Debian's
//! ZooKeeper 3.8 with nothing but zookeeper-client: client A, connected to a follower, creates
//! a node; as soon as A has the reply, client B sends `sync` then `exists` for it. B runs once
//! connected to the leader and once to the other follower, `N` times each (default 2,000).
//!
//! ```sh
//! cargo run -p avout-testkit --example leader_sync -- 2000
//! ```
//!
//! A follower forwards a `sync` to the leader and answers the reads queued behind it only
//! once it has applied everything the leader had committed. The leader's own clients get no
//! such wait: its commit processor treats their `sync` as already done, while a `create` it
//! committed may still be queued there, after the follower that served the writer applied
//! it and replied.
//!
//! Each reader then asks the same question the way avout's `sync` does: through avout's real
//! backend, whose `sync` is a `multi` of one `check` (a quorum round; see
//! `avout::Request::quorum_sync`). That one must never miss.

use avout::Coordination;
use avout::zk::{ZkClient, ZkConfig};
use avout_testkit::server::{ServerMode, ZkEnsemble};
use zookeeper_client as zk;

static OPEN: &zk::CreateOptions<'static> =
    &zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(2000), |a| a.parse())?;
    let ensemble = ZkEnsemble::start(3)?;
    let leader = ensemble.leader().ok_or("no leader")?;
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let addr = |i: usize| format!("127.0.0.1:{}", ensemble.member(i).port());
    let modes: Vec<Option<ServerMode>> = ensemble.members().iter().map(|m| m.mode()).collect();
    println!("members: {modes:?}; writer on member {}", followers[0] + 1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let writer = zk::Client::connect(&addr(followers[0])).await?;
        for (label, reader_at) in [("leader", leader), ("other follower", followers[1])] {
            let member = reader_at + 1;
            let prefix = label.replace(' ', "-");
            let reader = zk::Client::connect(&addr(reader_at)).await?;
            let (missed, read) = misses(&writer, n, &prefix, async |path: &str| {
                // Both sent at once, in order, on the reader's one connection.
                let sync = reader.sync(path);
                let exists = reader.check_stat(path);
                sync.await?;
                Ok(exists.await?.is_some())
            })
            .await?;
            println!(
                "reader on the {label} (member {member}): {missed} of {n} sync+exists missed a \
                 node whose create the writer had already seen acknowledged ({read:?} a read)"
            );
            let reader = ZkClient::connect(&ZkConfig::new(addr(reader_at))).await?;
            let prefix = format!("{prefix}-avout");
            let (missed, read) = misses(&writer, n, &prefix, async |path: &str| {
                let sync = reader.sync(path);
                let exists = reader.exists(path);
                sync.await?;
                Ok(exists.await?.is_some())
            })
            .await?;
            println!(
                "reader on the {label} (member {member}), avout's sync: {missed} of {n} missed \
                 ({read:?} a read)"
            );
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}

/// Of `n` nodes the writer creates, how many `found` (asked as soon as the create was
/// acknowledged) did not see, and the mean time `found` took.
async fn misses(
    writer: &zk::Client,
    n: usize,
    prefix: &str,
    found: impl AsyncFn(&str) -> Result<bool, Box<dyn std::error::Error>>,
) -> Result<(usize, std::time::Duration), Box<dyn std::error::Error>> {
    let mut missed = 0;
    let mut reading = std::time::Duration::ZERO;
    for i in 0..n {
        let path = format!("/{prefix}-{i}");
        writer.create(&path, b"", OPEN).await?;
        let started = std::time::Instant::now();
        missed += usize::from(!found(&path).await?);
        reading += started.elapsed();
    }
    Ok((missed, reading / u32::try_from(n.max(1))?))
}
