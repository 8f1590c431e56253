//! `avout lock hold` as a process, against a real ZooKeeper (Debian's `zookeeper` package):
//! two holders on one path never overlap, and neither do avout and Apache Curator's
//! `InterProcessMutex` (the Curator peer's `hold-lock` in `../shared/peers`), in both orders.
//! The Curator half needs `javac`, Debian's Curator jars and `../shared/peers` beside the
//! repository; `.ci/test` installs the jars, and with `CI=true` a missing piece fails the test.
//! Elsewhere it says so on stderr and checks only avout against avout.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use avout_testkit::server::ZkServer;

/// The lines a holder printed, each with when it was read.
struct Holder {
    child: Child,
    lines: mpsc::Receiver<(String, Instant)>,
    seen: Vec<(String, Instant)>,
}

impl Holder {
    fn spawn(mut command: Command) -> Holder {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a holder");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((line, Instant::now())).is_err() {
                    break;
                }
            }
        });
        Holder {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line starting with `prefix` and returns it with its time.
    fn wait_for(&mut self, prefix: &str) -> (String, Instant) {
        loop {
            if let Some(found) = self.seen.iter().find(|(l, _)| l.starts_with(prefix)) {
                return found.clone();
            }
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no {prefix:?} line within 60 s; saw {:?}", self.seen));
            self.seen.push(line);
        }
    }

    fn finish(mut self) {
        let status = self.child.wait().expect("wait for a holder");
        assert!(status.success(), "holder exited with {status}");
    }
}

fn avout_hold(connect: &str, path: &str, seconds: f64) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_avout"));
    c.args(["lock", "hold", "--zk", connect, "--path", path, "--seconds"])
        .arg(seconds.to_string());
    c
}

/// Starts `first` (holding `seconds`), waits until it holds, starts `second`; checks that
/// `second` was told HELD no sooner than `seconds` after `first` was, and returns both lock
/// nodes. (Not "after `first` printed RELEASED": `first` prints that once its node is gone,
/// and `second`, woken by the deletion, may print HELD first.)
fn exclusive(first: Command, seconds: f64, second: Command) -> (String, String) {
    let mut a = Holder::spawn(first);
    let (held_a, held_a_at) = a.wait_for("HELD ");
    let mut b = Holder::spawn(second);
    a.wait_for("RELEASED");
    let (held_b, held_b_at) = b.wait_for("HELD ");
    b.wait_for("RELEASED");
    let gap = held_b_at.duration_since(held_a_at);
    assert!(
        gap >= Duration::from_secs_f64(seconds),
        "the second holder was told HELD {gap:?} after the first, which held for {seconds} s"
    );
    a.finish();
    b.finish();
    (held_a, held_b)
}

#[test]
fn two_avout_holders_do_not_overlap() {
    let server = ZkServer::start().expect("a real ZooKeeper server (Debian's zookeeper package)");
    let c = server.connect_string();
    let (a, b) = exclusive(
        avout_hold(&c, "/interop/avout", 1.5),
        1.5,
        avout_hold(&c, "/interop/avout", 0.1),
    );
    assert!(
        a.starts_with("HELD /interop/avout/_c_") && a.contains("-lock-"),
        "{a}"
    );
    assert_ne!(a, b);
}

/// The Curator peer compiled into a temp dir, or why it cannot be.
fn curator_peer() -> Result<(TempDir, Vec<String>), String> {
    let jars = Path::new("/usr/share/java");
    let needed = [
        "curator-client.jar",
        "curator-framework.jar",
        "curator-recipes.jar",
    ];
    if let Some(missing) = needed.iter().find(|j| !jars.join(j).exists()) {
        return Err(format!(
            "{missing} is not installed (libcurator-recipes-java)"
        ));
    }
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/peers/Peers.java");
    if !source.exists() {
        return Err(format!("{} is missing", source.display()));
    }
    let build = TempDir::new();
    let cp = needed
        .iter()
        .map(|j| jars.join(j).display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let status = Command::new("javac")
        .args(["-Xlint:-path", "-d"])
        .arg(&build.0)
        .args(["-cp", &cp])
        .arg(&source)
        .status()
        .map_err(|e| format!("cannot run javac: {e}"))?;
    if !status.success() {
        return Err(format!("javac failed: {status}"));
    }
    let run_cp = format!(
        "{}:{}:{}",
        jars.join("curator-recipes.jar").display(),
        jars.join("slf4j-nop.jar").display(),
        build.0.display()
    );
    Ok((build, vec!["-cp".into(), run_cp, "Peers".into()]))
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        // The name goes into a Java class path, so it holds no `:`.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("avout-lock-hold-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn avout_and_curator_exclude_each_other() {
    let (_build, java_args) = match curator_peer() {
        Ok(peer) => peer,
        // In CI (`.ci/test` installs Curator) a missing peer is a failure, never a skip.
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("the Curator peer is needed in CI: {why}")
        }
        Err(why) => {
            eprintln!("avout_and_curator_exclude_each_other: checked nothing: {why}");
            return;
        }
    };
    let server = ZkServer::start().expect("a real ZooKeeper server (Debian's zookeeper package)");
    let c = server.connect_string();
    let curator = |seconds: f64| {
        let mut cmd = Command::new("java");
        cmd.args(&java_args)
            .args(["hold-lock", &c, "/interop/mixed"])
            .arg(seconds.to_string());
        cmd
    };
    // Curator first: the JVM's start-up happens before its HELD, so the 2 s are all held.
    let (cur, ours) = exclusive(curator(2.0), 2.0, avout_hold(&c, "/interop/mixed", 0.1));
    assert!(cur.starts_with("HELD /interop/mixed/_c_"), "{cur}");
    assert!(ours.starts_with("HELD /interop/mixed/_c_"), "{ours}");
    // avout first, held long enough for the JVM to start and queue behind it.
    exclusive(avout_hold(&c, "/interop/mixed", 4.0), 4.0, curator(0.1));
}
