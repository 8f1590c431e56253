//! `avout bench cache-lag` and its Curator peer (`scenarios/peers/CacheLag.java`) as processes
//! against one real ZooKeeper, at a small size: both run, every acknowledged write is seen by
//! the cache, the view equals the tree, and the two print the same keys in the same order.
//! The peer needs `javac` and Debian's Curator jars (libcurator-recipes-java); without them
//! this test fails, it does not skip. No timing is asserted.

use std::path::PathBuf;
use std::process::Command;

use avout_testkit::server::ZkServer;
use serde_json::{Map, Value};

/// Runs `command`, checks it succeeded, and returns its last stdout line, raw and parsed.
fn line(mut command: Command) -> (String, Map<String, Value>) {
    let out = command.output().expect("start the program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{command:?} exited with {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().expect("one JSON line");
    match serde_json::from_str(last) {
        Ok(Value::Object(line)) => (last.to_owned(), line),
        other => panic!("not a JSON object: {last} ({other:?})"),
    }
}

fn check(peer: &str, line: &Map<String, Value>) {
    let int = |k: &str| {
        line[k]
            .as_u64()
            .unwrap_or_else(|| panic!("{k} in {line:?}"))
    };
    assert_eq!(line["peer"], peer);
    assert_eq!(line["workload"], "cache-lag");
    assert_eq!((int("loaded"), int("sent"), int("acked")), (301, 400, 400));
    assert_eq!(int("unseen"), 0, "{line:?}");
    assert_eq!(int("regressions"), 0, "{line:?}");
    assert_eq!(int("duplicates"), 0, "{line:?}");
    assert_eq!(line["converged"], true, "{line:?}");
}

#[test]
fn avout_and_the_curator_peer_follow_the_same_writer() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../peers/cache-lag.sh");
    let build = tempfile::tempdir().expect("a temp dir");
    let status = Command::new(&script)
        .arg("build")
        .arg(build.path())
        .status()
        .expect("run cache-lag.sh build");
    assert!(
        status.success(),
        "the Curator peer did not build (needs javac and libcurator-recipes-java): {status}"
    );
    let server = ZkServer::start().expect("a real ZooKeeper server (Debian's zookeeper package)");
    let connect = server.connect_string();

    let mut avout = Command::new(env!("CARGO_BIN_EXE_avout"));
    avout.args(["bench", "cache-lag", "--zk", &connect, "--json"]);
    avout.args(["--nodes", "300", "--rate", "200", "--duration", "2s"]);
    let (ours, parsed) = line(avout);
    check("avout", &parsed);

    let mut curator = Command::new(&script);
    curator.arg("run").arg(build.path()).arg(&connect);
    curator.args(["300", "200", "2"]);
    let (theirs, parsed) = line(curator);
    check("curator", &parsed);

    // In order, as printed (values hold no `,` or `:`).
    let keys = |l: &str| {
        l.trim_matches(['{', '}'])
            .split(',')
            .map(|kv| kv.split(':').next().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(&ours),
        keys(&theirs),
        "the same fields in the same order"
    );
}
