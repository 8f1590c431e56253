//! A service that keeps going through session expiries: one managed client, an atom, an STM
//! transfer, a lock with fenced writes and a leader latch, in a loop.
//!
//! Run it against a local ZooKeeper and freeze the server past the session timeout:
//!
//! ```sh
//! avout zk start                                   # prints the connect string
//! cargo run -p avout --example production -- 127.0.0.1:PORT 60
//! kill -STOP <server pid>; sleep 10; kill -CONT <server pid>
//! ```
//!
//! Every line says what a step did, with the seconds since the start; connection events
//! (suspended, lost, reconnected to a new session) are printed as they come. After the
//! resume the same handles work again on the client's new session.

use std::time::Duration;

use avout::atom::Atom;
use avout::client::RetryPolicy;
use avout::lock::Mutex;
use avout::recipes::election::{Election, LatchState};
use avout::stm::{Stm, StmConfig};
use avout::zk::ZkConfig;
use avout::{Client, CoordinationExt, Op};

/// The node the lock guards.
const RESOURCE: &str = "/example/resource";
use tokio::time::Instant;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let connect = args.next().unwrap_or_else(|| "127.0.0.1:2181".into());
    let seconds: u64 = args.next().map_or(Ok(60), |s| s.parse())?;
    let start = Instant::now();
    let at = move || start.elapsed().as_secs_f64();

    let config = ZkConfig::new(connect)
        .with_session_timeout(Duration::from_secs(4))
        .with_connect_timeout(Duration::from_secs(3));
    let client = Client::builder(config)
        .retry(RetryPolicy::exponential(
            Duration::from_millis(100),
            Duration::from_secs(1),
        )?)
        .connect()
        .await?;
    let mut events = client.connection_events();
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            println!("{:7.2}s  zookeeper: {event}", at());
        }
    });

    let hits: Atom<u64> = Atom::open(&client, "/example/hits", 0).await?;
    let stm = Stm::open(&client, "/example/stm", StmConfig::default()).await?;
    let from = stm.make_ref("alice", 1_000i64).await?;
    let to = stm.make_ref("bob", 0i64).await?;
    let mutex = Mutex::new(&client, "/example/lock")?;
    client.ensure_path(RESOURCE).await?;
    let latch = Election::new(&client, "/example/leader")?
        .with_id(format!("pid-{}", std::process::id()))
        .latch();
    let mut terms = latch.events();
    tokio::spawn(async move {
        while let Some(state) = terms.next().await {
            if let LatchState::Leading { term, .. } | LatchState::Lost { term, .. } = &state {
                println!("{:7.2}s  leadership: {state:?} (term {term:#x})", at());
            }
        }
    });

    let end = start + Duration::from_secs(seconds);
    while Instant::now() < end {
        let n = hits.swap(|n| n + 1).await;
        let moved = stm
            .dosync(async |tx| {
                tx.alter(&from, |a| a - 1).await?;
                tx.alter(&to, |b| b + 1).await?;
                Ok(())
            })
            .await;
        let fenced = async {
            let guard = mutex.lock().await?;
            let token = guard.fencing_token();
            // The guarded resource takes a write only while the lock node exists.
            let write = Op::set_data(RESOURCE, token.to_string().into_bytes(), None);
            guard.fenced(vec![write]).await?;
            guard.unlock().await?;
            Ok::<_, avout::lock::LockError>(token)
        }
        .await;
        println!(
            "{:7.2}s  atom {}  transfer {}  lock {}  leader {}",
            at(),
            show(n.as_ref().map(|n| n.to_string())),
            show(moved.as_ref().map(|()| "ok".to_string())),
            show(fenced.as_ref().map(|t| format!("token {t:#x}"))),
            latch.is_leader(),
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    latch.close().await;
    client.close().await?;
    Ok(())
}

/// A step's result in a few words: its value, or its error's message.
fn show<E: std::fmt::Display>(result: Result<String, &E>) -> String {
    match result {
        Ok(value) => value,
        Err(e) => format!("FAILED ({e})"),
    }
}
