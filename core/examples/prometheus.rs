//! The client's metrics ([`avout::metrics`]) exported to Prometheus with
//! `metrics-exporter-prometheus`: a managed client works an atom, a lock and a watch in a
//! loop while the exporter serves `/metrics`.
//!
//! ```sh
//! avout zk start                                                  # prints the connect string
//! cargo run -p avout --example prometheus -- 127.0.0.1:PORT 127.0.0.1:9464
//! curl -s http://127.0.0.1:9464/metrics | grep ^avout_
//! ```
//!
//! A scrape then shows, among others:
//!
//! ```text
//! avout_sessions_open 1
//! avout_clients{state="connected"} 1
//! avout_request_duration_seconds_bucket{op="getData",le="0.001"} 17
//! avout_watches{kind="one_shot"} 1
//! ```
//!
//! Request latencies are histograms with the buckets below (seconds); every other metric is
//! a counter or a gauge, as `avout::metrics` tables them.

use std::net::SocketAddr;
use std::time::Duration;

use avout::atom::Atom;
use avout::lock::Mutex;
use avout::zk::ZkConfig;
use avout::{Client, Coordination, CoordinationExt};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// Histogram buckets of `avout_request_duration_seconds`: half a millisecond to ten seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Installs the exporter, listening on `listen`, as the process's recorder. MUST be called
/// within a tokio runtime (the exporter's HTTP listener runs on it).
fn install(listen: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    PrometheusBuilder::new()
        .with_http_listener(listen)
        .set_buckets_for_metric(
            Matcher::Full(avout::metrics::REQUEST_DURATION.to_owned()),
            LATENCY_BUCKETS,
        )?
        .install()?;
    avout::metrics::describe();
    Ok(())
}

/// Works `client` for `rounds` rounds (forever with `None`): an atom's swap, a lock taken and
/// released, a watch armed on a node that one round later changes.
async fn work(client: &Client, rounds: Option<u64>) -> Result<(), Box<dyn std::error::Error>> {
    let hits: Atom<u64> = Atom::open(client, "/example/metrics/hits", 0).await?;
    let lock = Mutex::new(client, "/example/metrics/lock")?;
    client.ensure_path("/example/metrics/watched").await?;
    let mut round = 0u64;
    // Armed each round, fired by the next round's write: one watch held between rounds.
    let mut _held = None;
    while rounds.is_none_or(|n| round < n) {
        round += 1;
        let n = hits.swap(|n| n + 1).await?;
        let guard = lock.lock().await?;
        guard.unlock().await?;
        client
            .set_data("/example/metrics/watched", &n.to_be_bytes(), None)
            .await?;
        _held = Some(
            client
                .get_and_watch_data("/example/metrics/watched")
                .await?
                .2,
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let connect = args.next().unwrap_or_else(|| "127.0.0.1:2181".into());
    let listen: SocketAddr = args
        .next()
        .map_or(Ok(([127, 0, 0, 1], 9464).into()), |s| s.parse())?;
    install(listen)?;
    println!("metrics at http://{listen}/metrics");
    let client = Client::connect(ZkConfig::new(connect)).await?;
    work(&client, None).await
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpListener, TcpStream};

    use avout_testkit::server::ZkServer;

    use super::*;

    /// `GET /metrics` from the exporter at `listen`: the body of the answer.
    fn scrape(listen: SocketAddr) -> String {
        let mut stream = TcpStream::connect(listen).expect("the exporter listens");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: {listen}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        answer
    }

    /// The example against a real server, then a scrape of its exporter: every metric the
    /// work moved is there, with its help text, its labels and, for latencies, its buckets.
    #[test]
    fn a_scrape_shows_the_clients_metrics() {
        let server = ZkServer::start().expect("a ZooKeeper server (tests never skip)");
        let listen: SocketAddr = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .unwrap();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let body = runtime.block_on(async {
            install(listen).unwrap();
            let client = Client::connect(ZkConfig::new(server.connect_string()))
                .await
                .unwrap();
            work(&client, Some(3)).await.unwrap();
            tokio::task::spawn_blocking(move || scrape(listen))
                .await
                .unwrap()
        });
        for line in [
            "# TYPE avout_sessions_opened_total counter",
            "avout_sessions_opened_total 1",
            "# HELP avout_sessions_open Sessions of managed clients open now.",
            "avout_sessions_open 1",
            "avout_clients{state=\"connected\"} 1",
            "avout_connection_state_changes_total{state=\"connected\"} 1",
            // The last round's watch went with the work; the gauge is back where it started.
            "avout_watches{kind=\"one_shot\"} 0",
            "# TYPE avout_request_duration_seconds histogram",
        ] {
            assert!(
                body.lines().any(|l| l == line),
                "no line {line:?} in:\n{body}"
            );
        }
        // Three rounds wrote the watched node three times (the atom writes with setData too).
        let set_data = body
            .lines()
            .find_map(|l| l.strip_prefix("avout_request_duration_seconds_count{op=\"setData\"} "))
            .and_then(|n| n.parse::<u64>().ok());
        assert!(
            set_data.is_some_and(|n| n >= 3),
            "setData latencies:\n{body}"
        );
        assert!(
            body.lines().any(|l| l.starts_with(
                "avout_request_duration_seconds_bucket{op=\"getData\",le=\"0.0005\"}"
            )),
            "latency buckets:\n{body}"
        );
    }
}
