//! `avout report latency`: the round trips of a real standalone server and of a real
//! ensemble, by class of request, and the simulator latency models fitted from them.
//!
//! One client at a time sends one request at a time (nothing queues behind it): `get`
//! (read), `set` (write), `sync`, and a `multi` of two `set`s. On the ensemble the client
//! connects to each member in turn, so a third of the samples go through the leader and two
//! thirds through followers, as the simulator places sessions. How far a follower trails is
//! measured apart: a client on the leader writes, a client on a follower reads at once and
//! then until it sees the write.
//!
//! It writes `reports/latency.md` and the fitted models `reports/latency/standalone.json`
//! and `reports/latency/ensemble-3.json`, which the STM reports' fitted deployments read.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use avout::zk::ZkConfig;
use avout::{Client, Coordination, CreateOptions, Op};
use avout_sim_zk::latency::{LatencyModel, RequestClass, Samples};
use avout_testkit::server::{ZkEnsemble, ZkServer};

use super::deploy::{ENSEMBLE_FILE, STANDALONE_FILE};
use super::{ReportError, render};

/// Options of `avout report latency`.
#[derive(Clone, Debug, clap::Args)]
pub struct LatencyArgs {
    /// Round trips measured per class of request on each deployment.
    #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(10..))]
    samples: u64,
    /// Clients measuring at once: the models are fitted under this load (the STM reports
    /// run 4 to 8 clients), as a server's round trips grow with its load.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u64).range(1..=64))]
    clients: u64,
    /// Writes measured for the followers' lag.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(10..))]
    lag_samples: u64,
    /// Directory the report is written to (the models go to its `latency/`).
    #[arg(long, default_value = "reports")]
    out: PathBuf,
}

impl LatencyArgs {
    fn command(&self) -> String {
        let mut c = format!(
            "avout report latency --samples {} --clients {} --lag-samples {}",
            self.samples, self.clients, self.lag_samples
        );
        if self.out != std::path::Path::new("reports") {
            c.push_str(&format!(" --out {}", self.out.display()));
        }
        c
    }
}

fn setup(what: &str, e: impl std::fmt::Display) -> ReportError {
    ReportError::Setup {
        what: what.to_owned(),
        detail: e.to_string(),
    }
}

async fn open(connect: &str) -> Result<Client, ReportError> {
    let config = ZkConfig::new(connect)
        .with_session_timeout(Duration::from_secs(10))
        .with_connect_timeout(Duration::from_secs(10));
    Client::connect(config)
        .await
        .map_err(|source| ReportError::Connect {
            connect: connect.to_owned(),
            source,
        })
}

/// `n` round trips of each class through the client on `connect`, under a node of `tag`.
async fn sample(connect: &str, tag: &str, n: u64, into: &mut Samples) -> Result<(), ReportError> {
    let zk = open(connect).await?;
    let fail = |e: avout::Error| setup(&format!("measuring {tag}"), e);
    let (a, b) = (format!("/latency-{tag}-a"), format!("/latency-{tag}-b"));
    for p in [&a, &b] {
        zk.create(p, b"0", &CreateOptions::default())
            .await
            .map_err(fail)?;
    }
    let timed = |start: Instant| start.elapsed();
    for i in 0..n {
        let data = i.to_string().into_bytes();
        let t = Instant::now();
        zk.get_data(&a).await.map_err(fail)?;
        into.read.push(timed(t));
        let t = Instant::now();
        zk.set_data(&a, &data, None).await.map_err(fail)?;
        into.write.push(timed(t));
        let t = Instant::now();
        zk.sync(&a).await.map_err(fail)?;
        into.sync.push(timed(t));
        let ops = [&a, &b].map(|p| Op::SetData {
            path: p.clone(),
            data: data.clone(),
            version: None,
        });
        let t = Instant::now();
        zk.multi(&ops).await.map_err(fail)?;
        into.multi.push(timed(t));
    }
    for p in [&a, &b] {
        zk.delete(p, None).await.map_err(fail)?;
    }
    // Best effort: the samples are taken.
    let _ = zk.close().await;
    Ok(())
}

/// `n` round trips of each class in all, by `clients` clients at once (client `i` on
/// `members[i % len]`), one request at a time each.
async fn sample_loaded(
    members: &[String],
    tag: &str,
    n: u64,
    clients: u64,
) -> Result<Samples, ReportError> {
    let per = n.div_ceil(clients);
    let runs = (0..clients).map(|i| {
        let connect = members[i as usize % members.len()].clone();
        let tag = format!("{tag}-c{i}");
        async move {
            let mut s = Samples::default();
            sample(&connect, &tag, per, &mut s).await.map(|()| s)
        }
    });
    let mut all = Samples::default();
    for s in futures::future::join_all(runs).await {
        let s = s?;
        all.read.extend(s.read);
        all.write.extend(s.write);
        all.sync.extend(s.sync);
        all.multi.extend(s.multi);
    }
    Ok(all)
}

/// How a follower trails: for each write acknowledged to a client on the leader, whether a
/// client on a follower read the old value right after, and how long until it saw the new.
struct Lag {
    stale: u64,
    writes: u64,
    catch_up: Vec<Duration>,
}

async fn follower_lag(leader: &str, follower: &str, n: u64) -> Result<Lag, ReportError> {
    let w = open(leader).await?;
    let r = open(follower).await?;
    let fail = |e: avout::Error| setup("measuring the followers' lag", e);
    let path = "/latency-lag";
    w.create(path, b"0", &CreateOptions::default())
        .await
        .map_err(fail)?;
    let mut lag = Lag {
        stale: 0,
        writes: n,
        catch_up: Vec::new(),
    };
    for i in 1..=n {
        let want = i.to_string().into_bytes();
        w.set_data(path, &want, None).await.map_err(fail)?;
        let acked = Instant::now();
        let mut first = true;
        loop {
            let (data, _) = r.get_data(path).await.map_err(fail)?;
            if data == want {
                break;
            }
            if first {
                lag.stale += 1;
                first = false;
            }
        }
        if !first {
            lag.catch_up.push(acked.elapsed());
        }
    }
    w.delete(path, None).await.map_err(fail)?;
    let _ = w.close().await;
    let _ = r.close().await;
    Ok(lag)
}

fn pct(v: &[Duration], p: f64) -> f64 {
    let mut us: Vec<u64> = v.iter().map(|d| d.as_micros() as u64).collect();
    us.sort_unstable();
    super::stats::percentile(&us, p).map_or(f64::NAN, |u| u as f64 / 1000.0)
}

fn mean_ms(v: &[Duration]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / v.len() as f64
}

/// Measures, fits, writes the report and the models.
pub(super) fn run(args: &LatencyArgs) -> Result<PathBuf, ReportError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| setup("runtime", e))?;
    let server = ZkServer::start().map_err(|e| setup("starting a standalone server", e))?;
    let one_member = [server.connect_string()];
    let one_alone = runtime.block_on(sample_loaded(&one_member, "one", args.samples, 1))?;
    let one = runtime.block_on(sample_loaded(
        &one_member,
        "one-loaded",
        args.samples,
        args.clients,
    ))?;
    drop(server);
    let ensemble = ZkEnsemble::start(3).map_err(|e| setup("starting a 3-member ensemble", e))?;
    let leader = ensemble
        .leader()
        .ok_or_else(|| setup("the ensemble", "no member leads"))?;
    let members: Vec<String> = ensemble
        .members()
        .iter()
        .map(|m| m.connect_string())
        .collect();
    let three_alone = runtime.block_on(sample_loaded(&members, "three", args.samples, 3))?;
    let three = runtime.block_on(sample_loaded(
        &members,
        "three-loaded",
        args.samples,
        args.clients.max(3),
    ))?;
    let follower = (leader + 1) % 3;
    let lag = runtime.block_on(follower_lag(
        &ensemble.member(leader).connect_string(),
        &ensemble.member(follower).connect_string(),
        args.lag_samples,
    ))?;
    drop(ensemble);
    // The simulator's followers trail in whole milliseconds and apply a commit at the next
    // whole millisecond past their lag: lag 0 leaves them up to 1 ms behind, about a real
    // follower's median catch-up (which includes the polling read's own round trip).
    let lag_p50 = if lag.catch_up.is_empty() {
        0.0
    } else {
        pct(&lag.catch_up, 50.0)
    };
    let lag_p99 = if lag.catch_up.is_empty() {
        0.0
    } else {
        pct(&lag.catch_up, 99.0)
    };
    let follower_ms = Duration::from_millis(lag_p50.floor() as u64);
    let fit = |s: &Samples, lag| LatencyModel::fit(s, lag).map_err(|e| setup("fitting", e));
    let one_model = fit(&one, Duration::ZERO)?;
    let three_model = fit(&three, follower_ms)?;
    let dir = args.out.join("latency");
    std::fs::create_dir_all(&dir).map_err(|source| ReportError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    for (file, model) in [(STANDALONE_FILE, &one_model), (ENSEMBLE_FILE, &three_model)] {
        let path = dir.join(file);
        let json = serde_json::to_string_pretty(model).expect("a model serialises");
        std::fs::write(&path, json + "\n").map_err(|source| ReportError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    let mut doc = render::Doc::measured(
        "latency",
        "Round trips of real servers, and the simulator's latency models fitted from them",
        &args.command(),
    );
    doc.para(&format!(
        "Clients each send one request at a time to a real ZooKeeper 3.8 on this machine \
         (127.0.0.1, fsync on): `get` (read), `set` (write), `sync`, and a `multi` of two \
         `set`s, about {} of each in all, on a standalone server and on a 3-member ensemble \
         (client `i` on member `i mod 3`, so a third through the leader): first alone (one \
         client; three on the ensemble, one per member), then {} at once, the load of the \
         STM reports' sweeps. The models are fitted from the loaded measurement: a server's \
         round trips grow with its load and the simulator does not queue, so a model fitted \
         from one client alone would make every simulated server several times faster than \
         the real one under the sweeps' clients. Figures in milliseconds.",
        args.samples, args.clients
    ));
    let mut t = render::Table::new([
        "deployment",
        "clients",
        "request",
        "samples",
        "mean",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "simulated mean",
    ]);
    let loaded = args.clients.to_string();
    let loaded3 = args.clients.max(3).to_string();
    for (name, clients, s, model) in [
        ("1 server", "1", &one_alone, None),
        ("1 server", loaded.as_str(), &one, Some(&one_model)),
        ("3 members", "3", &three_alone, None),
        ("3 members", loaded3.as_str(), &three, Some(&three_model)),
    ] {
        for (class, label, v) in [
            (RequestClass::Read, "read", &s.read),
            (RequestClass::Write, "write", &s.write),
            (RequestClass::Sync, "sync", &s.sync),
            (RequestClass::Multi, "multi", &s.multi),
        ] {
            t.row(vec![
                name.into(),
                clients.into(),
                label.into(),
                v.len().to_string(),
                format!("{:.3}", mean_ms(v)),
                format!("{:.3}", pct(v, 50.0)),
                format!("{:.3}", pct(v, 90.0)),
                format!("{:.3}", pct(v, 99.0)),
                format!("{:.3}", pct(v, 99.9)),
                format!("{:.3}", pct(v, 100.0)),
                model.map_or("—".into(), |m| {
                    format!("{:.3}", m.mean_round_trip(class).as_secs_f64() * 1000.0)
                }),
            ]);
        }
    }
    doc.table(&t);
    doc.para(&format!(
        "The followers' lag: of {} writes acknowledged to a client on the leader, a client on a \
         follower reading right after the acknowledgement saw the old value {} times ({:.1}%); \
         it saw the new one {:.3} ms (p50) and {:.3} ms (p99) after the acknowledgement \
         (polling, so a read's round trip included). The fitted ensemble's followers trail by \
         {} ms: the simulator counts lag in whole milliseconds and a follower applies a \
         commit at the next whole millisecond past its lag, so lag 0 leaves it up to 1 ms \
         behind, about the real median, but behind on every read within that millisecond \
         where a real follower is behind on few: the simulated followers are staler than real \
         ones.",
        lag.writes,
        lag.stale,
        100.0 * lag.stale as f64 / lag.writes as f64,
        lag_p50,
        lag_p99,
        follower_ms.as_millis(),
    ));
    doc.para(&format!(
        "The models (`latency/{STANDALONE_FILE}`, `latency/{ENSEMBLE_FILE}`): the one-way \
         network latency is half the fastest read ({} µs and {} µs), and each class's \
         service time is the rest of its measured round trips, kept as 1,000 equally likely quantiles, one \
         drawn per request (`avout_sim_zk::latency`). A simulated request of a class then \
         takes the measured distribution's round trip when nothing else runs (less the rarest \
         0.05%: the simulated mean of a class whose sample held a stall of a second or more \
         is below the measured one). What the model \
         leaves out: queueing (a real leader serialises writes and batches their fsyncs, so \
         its service times grow with load, where drawn ones do not), and the clients' share of \
         this machine's two cores.",
        one_model.one_way.as_micros(),
        three_model.one_way.as_micros(),
    ));
    doc.write(&args.out)
}
