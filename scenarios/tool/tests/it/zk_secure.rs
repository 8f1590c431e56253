//! TLS and SASL from the command line, on real servers (Debian's `zookeeper` package): `avout
//! zk start --tls` starts servers whose printed `--zk-tls-*` flags reach them from `tree`,
//! `lock hold`, `run` and `bench ops`; a CA the servers do not use, a missing client
//! certificate, and a wrong SASL password each end the command with the typed refusal
//! (exit status 2), not a generic connection loss.

use std::path::Path;
use std::process::Output;

use avout_testkit::server::ZkServer;
use avout_testkit::tls::TestCa;

use super::avout;

/// Stops the servers of `avout zk start --dir DIR` when dropped, so a failing test leaves
/// no JVM behind.
struct Started<'a>(&'a Path);

impl Drop for Started<'_> {
    fn drop(&mut self) {
        let dir = self.0.to_str().expect("a UTF-8 temporary path");
        let stop = avout(&["zk", "stop", "--dir", dir]);
        if !std::thread::panicking() {
            assert!(stop.status.success(), "zk stop: {}", text(&stop.stderr));
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `avout ARGS… FLAGS…`, which must succeed; its stdout.
fn ok(args: &[&str], flags: &[&str]) -> String {
    let out = avout(&[args, flags].concat());
    assert!(
        out.status.success(),
        "avout {args:?} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `avout ARGS…`, which must be refused with exit status 2; its stderr.
fn refused(args: &[&str]) -> String {
    let out: Output = avout(args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "avout {args:?}: {stderr}");
    stderr
}

#[test]
fn zk_start_tls_prints_flags_that_reach_its_servers_and_wrong_ones_are_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let dir_arg = dir.path().to_str().expect("a UTF-8 temporary path");
    let start = avout(&["zk", "start", "--tls", "--dir", dir_arg]);
    assert!(
        start.status.success(),
        "zk start --tls: {}",
        text(&start.stderr)
    );
    let _stop = Started(dir.path());
    let secure = text(&start.stdout).trim().to_owned();
    let advice = text(&start.stderr);
    let flags: Vec<&str> = advice
        .split("connect with ")
        .nth(1)
        .unwrap_or_else(|| panic!("no `connect with` advice in {advice:?}"))
        .split_whitespace()
        .collect();
    assert_eq!(flags[..2], ["--zk", secure.as_str()], "{advice}");

    // `status` names the secure ports too; the printed flags work for every command.
    let status = ok(&["zk", "status", "--dir", dir_arg], &[]);
    assert_eq!(status.trim(), secure);
    assert!(ok(&["tree", "/"], &flags).contains("/zookeeper"));
    let held = ok(
        &["lock", "hold", "--path", "/tls/lock", "--seconds", "0.1"],
        &flags,
    );
    assert!(held.contains("HELD"), "{held}");
    let run = ok(&["run", "counter", "--ops", "5", "--out", dir_arg], &flags);
    assert!(run.contains("valid"), "{run}");
    ok(
        &["bench", "ops", "--n", "20", "--warmup", "0", "--depth", "4"],
        &flags,
    );

    let flag = |name: &str| {
        let i = flags.iter().position(|f| *f == name).expect(name);
        flags[i + 1].to_owned()
    };
    let (ca, cert, key) = (
        flag("--zk-tls-ca"),
        flag("--zk-tls-cert"),
        flag("--zk-tls-key"),
    );
    let stranger = dir.path().join("stranger-ca.pem");
    std::fs::write(&stranger, TestCa::new("stranger").cert_pem()).expect("write a CA");
    let stranger = stranger.to_str().expect("UTF-8");
    let unknown_ca = refused(&[
        "tree",
        "/",
        "--zk",
        &secure,
        "--zk-tls-ca",
        stranger,
        "--zk-tls-cert",
        &cert,
        "--zk-tls-key",
        &key,
    ]);
    assert!(
        unknown_ca.contains("refused: the server's certificate is not signed by a CA"),
        "{unknown_ca}"
    );
    let no_client_cert = refused(&["tree", "/", "--zk", &secure, "--zk-tls-ca", &ca]);
    assert!(no_client_cert.contains("TLS with"), "{no_client_cert}");
    assert!(
        no_client_cert.contains("client certificate"),
        "{no_client_cert}"
    );
    let missing = refused(&[
        "tree",
        "/",
        "--zk",
        &secure,
        "--zk-tls-ca",
        "/nonexistent/ca.pem",
    ]);
    assert!(missing.contains("/nonexistent/ca.pem"), "{missing}");
}

#[test]
fn the_zk_flags_authenticate_with_sasl_and_a_wrong_password_is_refused() {
    let server = ZkServer::builder()
        .sasl_digest_user("app", "s3cret")
        .start()
        .expect("a real ZooKeeper server with SASL (Debian's zookeeper package)");
    let connect = server.connect_string();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let password = |name: &str, secret: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, format!("{secret}\n")).expect("write a password file");
        file.to_str().expect("UTF-8").to_owned()
    };
    let (right, wrong) = (password("right", "s3cret"), password("wrong", "guess"));
    let tree = [
        "tree",
        "/",
        "--zk",
        &connect,
        "--zk-sasl-user",
        "app",
        "--zk-sasl-password-file",
    ];
    assert!(ok(&tree, &[&right]).contains("/zookeeper"));
    let stderr = refused(&[&tree[..], &[&wrong]].concat());
    assert!(
        stderr.contains("SASL DIGEST-MD5 authentication (app)") && stderr.contains("refused"),
        "{stderr}"
    );
    let no_password = refused(&["tree", "/", "--zk", &connect, "--zk-sasl-user", "app"]);
    assert!(
        no_password.contains("AVOUT_ZK_SASL_PASSWORD"),
        "{no_password}"
    );
}
