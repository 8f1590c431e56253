//! However a chaos run on its own ensemble ends, its servers end with it: SIGTERM and SIGINT
//! end it by its own path (the rounds so far reported, exit 130 or 143), and not even a
//! `kill -9` of the CLI leaves a JVM behind.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The pids of `parent`'s `java` children, from `/proc`.
fn java_children(parent: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces, so split after its last ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        let ppid = tail.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if head.ends_with("(java") && ppid == Some(parent) {
            found.push(pid);
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for our purpose: it holds no port and no memory.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, t)| !t.trim_start().starts_with('Z'))
    })
}

/// Starts a long chaos run, waits for its first judged round, sends `signal`, and returns
/// its exit code, its output and the JVMs it had started.
fn end_a_run_with(signal: libc::c_int) -> (Option<i32>, String, String, Vec<u32>) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_avout"))
        .args([
            "run",
            "counter",
            "--zk-ensemble",
            "3",
            "--kill-every",
            "1s",
            "--duration",
            "120s",
            "--ops",
            "20",
        ])
        .current_dir(dir.path())
        // What a `kill -9` leaves (the servers' directories) goes with the test's directory.
        .env("TMPDIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the avout binary runs");
    let pid = child.id();
    // Nothing is printed before the run ends; wait for its servers instead, then a little
    // more, so that rounds run under the nemesis.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut jvms = Vec::new();
    while jvms.len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        jvms = java_children(pid);
    }
    assert_eq!(jvms.len(), 3, "the run never started its ensemble");
    // On a loaded machine the members may take longer than the wait below to serve: wait
    // for the first transaction log a member writes (the workload's first write), then
    // give the rounds their time.
    while !logged_a_transaction(dir.path()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(5));
    // Members the nemesis restarted since are children too.
    for p in java_children(pid) {
        if !jvms.contains(&p) {
            jvms.push(p);
        }
    }
    // SAFETY: kill(2) on our own unreaped child's pid.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid as libc::pid_t, signal) };
    assert_eq!(rc, 0);
    let mut stdout = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        stdout.push_str(&line.unwrap());
        stdout.push('\n');
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // The last JVMs may take a moment to be reaped by init after a `kill -9`.
    let deadline = Instant::now() + Duration::from_secs(10);
    while jvms.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    (out.status.code(), stdout, stderr, jvms)
}

#[test]
fn sigterm_ends_a_chaos_run_with_its_rounds_reported_and_its_servers_stopped() {
    let (code, stdout, stderr, jvms) = end_a_run_with(libc::SIGTERM);
    assert_eq!(code, Some(143), "{stdout}{stderr}");
    assert!(stderr.contains("ended by SIGTERM"), "{stderr}");
    assert!(stdout.contains("ended by SIGTERM"), "{stdout}");
    assert!(stdout.contains("verdict     valid"), "{stdout}");
    let left: Vec<u32> = jvms.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "JVMs outlived the run: {left:?}");
}

#[test]
fn sigint_ends_a_chaos_run_as_sigterm_does() {
    let (code, stdout, stderr, jvms) = end_a_run_with(libc::SIGINT);
    assert_eq!(code, Some(130), "{stdout}{stderr}");
    assert!(stderr.contains("ended by SIGINT"), "{stderr}");
    let left: Vec<u32> = jvms.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "JVMs outlived the run: {left:?}");
}

#[test]
fn a_kill_9_of_the_cli_leaves_no_server_behind() {
    let (code, _, _, jvms) = end_a_run_with(libc::SIGKILL);
    assert_eq!(code, None, "killed by a signal");
    assert!(jvms.len() >= 3);
    let left: Vec<u32> = jvms.into_iter().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "JVMs outlived the run: {left:?}");
}

/// Whether a ZooKeeper member below `dir` has written a transaction log (`version-2/log.*`).
fn logged_a_transaction(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        if path.is_dir() {
            logged_a_transaction(&path)
        } else {
            e.file_name().to_string_lossy().starts_with("log.")
                && e.metadata().is_ok_and(|m| m.len() > 0)
        }
    })
}
