//! Under `--cfg madsim`: the peer suite, zookeeper-client's own `tests/zookeeper.rs`, taken
//! from the crate as cargo's registry holds it (found with `cargo metadata`, never a guessed
//! path) and rewritten by the listed substitutions below into `$OUT_DIR/zookeeper.rs`, which
//! `tests/peer.rs` includes. Nothing of it is copied into this repository.
//!
//! Every substitution is mechanical and must match exactly as often as it says: if a new
//! release of the file no longer matches, the build fails and names the substitution. The
//! list, and why each is there, is in the crate's README (`PEER_SUITE.md`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The peer suite's crate and version.
const PEER: (&str, &str) = ("zookeeper-client", "0.11.2");

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=tests/peer/fixture.rs");
    if std::env::var_os("CARGO_CFG_MADSIM").is_none() {
        return;
    }
    let suite = peer_dir().join("tests/zookeeper.rs");
    println!("cargo:rerun-if-changed={}", suite.display());
    let text = std::fs::read_to_string(&suite)
        .unwrap_or_else(|e| panic!("cannot read the peer suite {}: {e}", suite.display()));
    let rewritten = rewrite(&text);
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("zookeeper.rs"), rewritten).expect("writing the rewritten suite");
}

/// The directory of the peer crate's package, as `cargo metadata` finds it.
///
/// Not `--offline`: the build has downloaded zookeeper-client itself (it is a dependency), but
/// metadata resolves the whole workspace, and on a fresh machine some of the workspace's
/// packages for this platform and cfg may not be in cargo's cache yet; cargo downloads those,
/// and makes no request when it has them all. `--filter-platform` keeps that to this
/// platform's packages; `--locked` keeps it from touching `Cargo.lock`.
fn peer_dir() -> PathBuf {
    let cargo = std::env::var_os("CARGO").expect("cargo sets CARGO for build scripts");
    let manifest = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("Cargo.toml");
    let target = std::env::var("TARGET").expect("cargo sets TARGET for build scripts");
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .args(["--filter-platform", &target, "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("running cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let package = metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .find(|p| p["name"] == PEER.0 && p["version"] == PEER.1)
        .unwrap_or_else(|| panic!("{} {} is not in the dependency graph", PEER.0, PEER.1));
    let manifest = Path::new(package["manifest_path"].as_str().expect("a manifest path"));
    manifest.parent().expect("a package directory").to_owned()
}

/// Replaces `from` by `to`, which must occur exactly `times` times.
fn replace(text: String, from: &str, to: &str, times: usize) -> String {
    let found = text.matches(from).count();
    assert_eq!(
        found, times,
        "the peer suite has {found} of {from:?}, the substitution expects {times}"
    );
    text.replace(from, to)
}

/// Removes the item that starts at the line `header` (with the attribute and doc lines right
/// above it) and ends at the brace that closes its first `{`.
fn cut_item(text: String, header: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with(header))
        .collect();
    assert_eq!(
        at.len(),
        1,
        "the peer suite has {} items starting {header:?}, expected 1",
        at.len()
    );
    let mut first = at[0];
    while first > 0 && (lines[first - 1].starts_with("#[") || lines[first - 1].starts_with("///")) {
        first -= 1;
    }
    let mut depth = 0;
    let mut last = at[0];
    'lines: for (i, line) in lines.iter().enumerate().skip(at[0]) {
        for c in line.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        last = i;
                        break 'lines;
                    }
                }
                _ => {}
            }
        }
    }
    let mut kept: Vec<&str> = lines[..first].to_vec();
    kept.extend(&lines[last + 1..]);
    kept.join("\n") + "\n"
}

/// The substitutions, in order (see `PEER_SUITE.md` for why each is there): each text, what
/// replaces it, and how many times the suite has it.
const SUBSTITUTIONS: &[(&str, &str, usize)] = &[
    // 1. The crate under test: the drop-in, which under madsim is the simulation.
    (
        "use zookeeper_client as zk;",
        "use avout_zookeeper_client as zk;",
        1,
    ),
    // 2. The runtime glue, mapped onto madsim.
    ("#[asyncs::test]\n", "#[madsim::test]\n", 44),
    ("#[asyncs::test(parallelism = 1)]\n", "#[madsim::test]\n", 1),
    ("#[asyncs::test(send = false)]\n", "#[madsim::test]\n", 3),
    ("#[test_log::test]\n", "", 48),
    ("#[serial_test::serial(network_host)]\n", "", 3),
    ("asyncs::spawn(", "tokio::spawn(", 5),
    ("use asyncs::select;\n", "use fixture::select;\n", 1),
    ("use async_io::Timer;\n", "use fixture::Timer;\n", 1),
    ("use asyncs::task::TaskHandle;\n", "", 1),
    // 3. The server fixture's imports: containers, their TLS material, the TCP proxy.
    ("use async_net::{TcpListener, TcpStream};\n", "", 1),
    (
        "use rcgen::{Certificate, CertificateParams, Issuer, KeyPair};\n",
        "",
        1,
    ),
    ("use testcontainers::clients::Cli as DockerCli;\n", "", 1),
    (
        "use testcontainers::core::{Container, Healthcheck, LogStream, RunnableImage, WaitFor};\n",
        "",
        1,
    ),
    (
        "use testcontainers::images::generic::GenericImage;\n",
        "",
        1,
    ),
];

/// The server fixture's items, cut out; `tests/peer/fixture.rs` stands in for them.
const FIXTURE_ITEMS: &[&str] = &[
    "fn zookeeper_image<'a>(",
    "struct Tls {",
    "impl Tls {",
    "struct Cluster {",
    "unsafe impl Send for Cluster {}",
    "unsafe impl Sync for Cluster {}",
    "struct ContainerOptions<'a> {",
    "impl Default for ContainerOptions<'_> {",
    "impl<'a> From<ClusterOptions<'a>> for ContainerOptions<'a> {",
    "struct LazyTempDir {",
    "impl LazyTempDir {",
    "impl Cluster {",
    "struct ConnectionInterceptor {",
    "impl ConnectionInterceptor {",
    "pub struct ReplyHeader {",
    "struct PortForwarder {",
    "impl PortForwarder {",
    "fn generate_ca_cert()",
    "fn generate_server_cert(",
    "fn generate_client_cert(",
];

/// The suite with the substitutions made and the fixture's items replaced.
fn rewrite(text: &str) -> String {
    let mut t = text.to_owned();
    for (from, to, times) in SUBSTITUTIONS {
        t = replace(t, from, to, *times);
    }
    for item in FIXTURE_ITEMS {
        t = cut_item(t, item);
    }
    let fixture = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"))
        .join("tests/peer/fixture.rs");
    t.push_str(&format!(
        "\n#[path = {:?}]\nmod fixture;\nuse fixture::{{Cluster, ConnectionInterceptor, PortForwarder}};\n",
        fixture.display().to_string()
    ));
    t
}
