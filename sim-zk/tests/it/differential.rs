//! The differential test: random single-client operation sequences on a real ZooKeeper
//! server and on the simulator must give the same results and errors.
//!
//! Each case is a seeded sequence of operations on nested, sequential and ephemeral nodes,
//! versions, multis and watches, under a fresh root. Results are normalised before they are
//! compared: zxids become their rank of first appearance in the case (so equalities such as
//! `czxid == mzxid` and one zxid per multi are still checked), times are dropped, the
//! ephemeral owner becomes a flag, errors become their variant (and a multi's failing index).
//! Container nodes are left out: ZooKeeper reaps them on a timer (a minute by default), the
//! simulator at once, by design.
//!
//! Cases 0–39 and 100–10,099 (10,040 in all) have run against ZooKeeper 3.8.0 with no
//! difference.
//!
//! `AVOUT_DIFF_CASES` sets the number of cases (default 40, for every test run);
//! `AVOUT_DIFF_FIRST` the first case number, to replay one; `AVOUT_DIFF_SHOW` prints each case.

use std::collections::BTreeMap;
use std::time::Duration;

use avout::testkit::server::ZkServer;
use avout::zk::{ZkClient, ZkConfig};
use avout::{Coordination, CoordinationExt, CreateMode, Error, Op, OpResult, Stat, Watch};
use avout_sim_zk::Sim;
use avout_sim_zk::rng::{Rng, Stream};

const NAMES: &[&str] = &["", "a", "b", "a/c", "a/d", "b/e", "a/c/f"];
const SEQ_PREFIXES: &[&str] = &["a/s-", "q-", "b/"];

#[derive(Clone, Debug)]
enum DOp {
    Create {
        name: String,
        mode: CreateMode,
        data: Vec<u8>,
    },
    Delete {
        name: String,
        version: Option<i32>,
    },
    Set {
        name: String,
        data: Vec<u8>,
        version: Option<i32>,
    },
    Get(String),
    Exists(String),
    Children(String),
    WatchData(String),
    WatchExists(String),
    WatchChildren(String),
    Multi(Vec<DOp>),
    Sync,
}

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len() as u64) as usize]
}

fn version(rng: &mut Rng) -> Option<i32> {
    match rng.below(4) {
        0 => None,
        1 => Some(-1),
        n => Some(n as i32 - 2),
    }
}

fn gen_op(rng: &mut Rng, in_multi: bool) -> DOp {
    let kinds = if in_multi { 4 } else { 12 };
    match rng.below(kinds) {
        0 => {
            let mode = match rng.below(4) {
                0 | 1 => CreateMode::Persistent,
                2 => CreateMode::Ephemeral,
                _ => CreateMode::PersistentSequential,
            };
            let name = if mode == CreateMode::PersistentSequential {
                pick(rng, SEQ_PREFIXES)
            } else {
                pick(rng, &NAMES[1..])
            };
            let mode = if mode == CreateMode::PersistentSequential && rng.below(3) == 0 {
                CreateMode::EphemeralSequential
            } else {
                mode
            };
            DOp::Create {
                name: name.to_owned(),
                mode,
                data: vec![b'x'; rng.below(4) as usize],
            }
        }
        1 => DOp::Delete {
            name: pick(rng, &NAMES[1..]).to_owned(),
            version: version(rng),
        },
        2 => DOp::Set {
            name: pick(rng, NAMES).to_owned(),
            data: vec![b'y'; rng.below(5) as usize],
            version: version(rng),
        },
        3 if in_multi => DOp::Exists(pick(rng, NAMES).to_owned()),
        3 => DOp::Get(pick(rng, NAMES).to_owned()),
        4 => DOp::Exists(pick(rng, NAMES).to_owned()),
        5 => DOp::Children(pick(rng, NAMES).to_owned()),
        6 => DOp::WatchData(pick(rng, NAMES).to_owned()),
        7 => DOp::WatchExists(pick(rng, NAMES).to_owned()),
        8 => DOp::WatchChildren(pick(rng, NAMES).to_owned()),
        9 | 10 => {
            let n = 1 + rng.below(3) as usize;
            DOp::Multi((0..n).map(|_| gen_op(rng, true)).collect())
        }
        _ => DOp::Sync,
    }
}

fn gen_case(case: u64, len: usize) -> Vec<DOp> {
    let mut rng = Rng::new(case, Stream::Workload);
    // Start with a few creates so that there is something to work on.
    let mut ops: Vec<DOp> = ["a", "b", "a/c"]
        .iter()
        .take(rng.below(4) as usize)
        .map(|n| DOp::Create {
            name: (*n).to_owned(),
            mode: CreateMode::Persistent,
            data: b"init".to_vec(),
        })
        .collect();
    ops.extend((0..len).map(|_| gen_op(&mut rng, false)));
    ops
}

/// Zxids as ranks of first appearance.
#[derive(Default)]
struct Norm {
    zxids: BTreeMap<i64, usize>,
}

impl Norm {
    fn zxid(&mut self, z: i64) -> usize {
        let next = self.zxids.len();
        *self.zxids.entry(z).or_insert(next)
    }

    fn stat(&mut self, s: &Stat) -> String {
        format!(
            "z({},{},{}) v{} cv{} av{} eph{} len{} n{}",
            self.zxid(s.czxid),
            self.zxid(s.mzxid),
            self.zxid(s.pzxid),
            s.version,
            s.cversion,
            s.aversion,
            s.ephemeral_owner != 0,
            s.data_length,
            s.num_children
        )
    }
}

fn err(e: &Error) -> String {
    match e {
        Error::Multi { index, source } => format!("Multi[{index}]:{}", err(source)),
        other => format!("{other:?}")
            .split([' ', '(', '{'])
            .next()
            .unwrap_or("?")
            .to_owned(),
    }
}

fn full(root: &str, name: &str) -> String {
    if name.is_empty() {
        root.to_owned()
    } else {
        format!("{root}/{name}")
    }
}

fn to_op(root: &str, op: &DOp) -> Op {
    match op {
        DOp::Create { name, mode, data } => Op::create(full(root, name), data.clone(), *mode),
        DOp::Delete { name, version } => Op::delete(full(root, name), *version),
        DOp::Set {
            name,
            data,
            version,
        } => Op::set_data(full(root, name), data.clone(), *version),
        DOp::Exists(name) => Op::check(full(root, name), None),
        other => unreachable!("{other:?} is not generated inside a multi"),
    }
}

/// Runs one case and returns one normalised line per step, then the watches' fates.
async fn run_case<C: Coordination>(c: &C, root: &str, ops: &[DOp]) -> Vec<String> {
    let mut norm = Norm::default();
    let mut out = Vec::new();
    let mut watches: Vec<(usize, Watch)> = Vec::new();
    let strip = |p: &str| p.strip_prefix(root).unwrap_or(p).to_owned();
    for (i, op) in ops.iter().enumerate() {
        let line = match op {
            DOp::Create { name, mode, data } => {
                match c.create(&full(root, name), data, &(*mode).into()).await {
                    Ok((p, s)) => format!("created {} {}", strip(&p), norm.stat(&s)),
                    Err(e) => err(&e),
                }
            }
            DOp::Delete { name, version } => match c.delete(&full(root, name), *version).await {
                Ok(()) => "deleted".into(),
                Err(e) => err(&e),
            },
            DOp::Set {
                name,
                data,
                version,
            } => match c.set_data(&full(root, name), data, *version).await {
                Ok(s) => format!("set {}", norm.stat(&s)),
                Err(e) => err(&e),
            },
            DOp::Get(name) => match c.get_data(&full(root, name)).await {
                Ok((d, s)) => format!("data {d:?} {}", norm.stat(&s)),
                Err(e) => err(&e),
            },
            DOp::Exists(name) => match c.exists(&full(root, name)).await {
                Ok(Some(s)) => format!("exists {}", norm.stat(&s)),
                Ok(None) => "missing".into(),
                Err(e) => err(&e),
            },
            DOp::Children(name) => match c.get_children(&full(root, name)).await {
                Ok((mut ch, s)) => {
                    ch.sort();
                    format!("children {ch:?} {}", norm.stat(&s))
                }
                Err(e) => err(&e),
            },
            DOp::WatchData(name) => match c.get_and_watch_data(&full(root, name)).await {
                Ok((_, s, w)) => {
                    watches.push((i, w));
                    format!("watching data {}", norm.stat(&s))
                }
                Err(e) => err(&e),
            },
            DOp::WatchExists(name) => match c.exists_and_watch(&full(root, name)).await {
                Ok((s, w)) => {
                    watches.push((i, w));
                    format!("watching exists {:?}", s.map(|s| norm.stat(&s)))
                }
                Err(e) => err(&e),
            },
            DOp::WatchChildren(name) => match c.get_and_watch_children(&full(root, name)).await {
                Ok((_, s, w)) => {
                    watches.push((i, w));
                    format!("watching children {}", norm.stat(&s))
                }
                Err(e) => err(&e),
            },
            DOp::Multi(ops) => {
                let ops: Vec<Op> = ops.iter().map(|o| to_op(root, o)).collect();
                match c.multi(&ops).await {
                    Ok(results) => {
                        let shown: Vec<String> = results
                            .iter()
                            .map(|r| match r {
                                OpResult::Create { path } => format!("created {}", strip(path)),
                                OpResult::SetData { stat } => format!("set {}", norm.stat(stat)),
                                OpResult::Check => "checked".into(),
                                OpResult::Delete => "deleted".into(),
                            })
                            .collect();
                        format!("multi {shown:?}")
                    }
                    Err(e) => err(&e),
                }
            }
            DOp::Sync => match c.sync(root).await {
                Ok(()) => "synced".into(),
                Err(e) => err(&e),
            },
        };
        out.push(format!("{i}: {line}"));
    }
    // Which watches fired, and how. A change always reaches its watch before the reply of
    // the request that made it, so after a round trip every fired watch has its event.
    c.sync(root).await.expect("sync at the end of a case");
    for (i, w) in watches {
        let fired = tokio::time::timeout(Duration::from_millis(50), w).await;
        out.push(match fired {
            Ok(e) => format!("watch {i}: {:?} {}", e.kind, strip(&e.path)),
            Err(_) => format!("watch {i}: silent"),
        });
    }
    out
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn random_sequences_agree_with_real_zookeeper() {
    let server = ZkServer::start().expect("a real ZooKeeper server (Debian's zookeeper package)");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let first = env("AVOUT_DIFF_FIRST", 0);
    let cases = env("AVOUT_DIFF_CASES", 40);
    let zk = rt.block_on(async {
        ZkClient::connect(&ZkConfig::new(server.connect_string()))
            .await
            .expect("connect to the test server")
    });
    let mut failures = Vec::new();
    for case in first..first + cases {
        let ops = gen_case(case, 25);
        let root = format!("/diff/case-{case}");
        let real = rt.block_on(async {
            // Each case in its own session, so its ephemerals go with it.
            let c = ZkClient::connect(zk.config()).await.expect("session");
            c.ensure_path(&root).await.expect("case root");
            let out = run_case(&c, &root, &ops).await;
            c.close().await.expect("close");
            out
        });
        let (sim, _) = Sim::builder().seed(case).clients(1).build().run(|ctx| {
            let ops = ops.clone();
            let root = root.clone();
            async move {
                let c = &ctx.clients[0];
                c.ensure_path(&root).await.expect("case root");
                run_case(c, &root, &ops).await
            }
        });
        if std::env::var_os("AVOUT_DIFF_SHOW").is_some() {
            eprintln!("case {case}:\n{}", real.join("\n"));
        }
        if real != sim {
            let first_diff = real
                .iter()
                .zip(&sim)
                .position(|(a, b)| a != b)
                .unwrap_or(real.len().min(sim.len()));
            failures.push(format!(
                "case {case} (AVOUT_DIFF_FIRST={case} AVOUT_DIFF_CASES=1) differs at line {first_diff}:\n  op:   {:?}\n  real: {:?}\n  sim:  {:?}",
                ops.get(first_diff),
                real.get(first_diff),
                sim.get(first_diff)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
