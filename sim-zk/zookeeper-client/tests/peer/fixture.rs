//! The peer suite's server fixture, simulated: what zookeeper-client's `tests/zookeeper.rs`
//! gets from Docker containers (a ZooKeeper 3.9 server or ensemble, its TLS material, a TCP
//! proxy in front of it) is here avout's simulated ZooKeeper, started in the test's madsim
//! simulation, with the same interface. `build.rs` cuts the container fixture out of the
//! suite and appends this module; nothing else of the suite changes.
//!
//! What the containers were configured with, the simulated server is configured with where
//! it has the setting (an ensemble's size and client addresses, the super digest,
//! `extendedTypesEnabled`); the rest (images of other versions, SASL, read-only mode, 4lw
//! commands) it has not, and the tests that need them fail, each for its reason
//! (`PEER_SUITE.md`).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::Duration;

use avout_zookeeper_client as zk;
use avout_zookeeper_client::{SimForwarder, SimServer, SimServerHandle};

use super::{ClusterOptions, Encryption, ForwardCommand};

/// The deterministic `select!`: async-select's unbiased one starts from a branch picked by a
/// stack address, which differs between processes, so the suite's selects poll in order.
macro_rules! select {
    (biased; $($body:tt)*) => { ::async_select::select!(biased; $($body)*) };
    ($($body:tt)*) => { ::async_select::select!(biased; $($body)*) };
}
pub(crate) use select;

/// `async_io::Timer` on madsim's clock.
pub(crate) struct Timer;

impl Timer {
    pub(crate) fn after(duration: Duration) -> tokio::time::Sleep {
        tokio::time::sleep(duration)
    }
}

/// The super digest the suite's containers are started with (`super:test`).
const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

/// The client port of the first member; member `i` (from 1) listens on `BASE_PORT + i - 1`.
const BASE_PORT: u16 = 2181;

thread_local! {
    /// The server of the test running on this thread, for the port forwarder.
    static SERVER: RefCell<Option<SimServerHandle>> = const { RefCell::new(None) };
}

/// One member, as the suite's container handle is used.
pub(crate) struct Member {
    port: u16,
    index: u8,
    server: SimServerHandle,
}

impl Member {
    pub(crate) fn get_host_port(&self, _internal: u16) -> u16 {
        self.port
    }

    /// Stops this member: cut off from the others and its clients for good.
    pub(crate) fn stop(&self) {
        self.server.zk().inject(avout_sim_zk::Fault::Partition {
            cut: avout_sim_zk::Cut::Server { server: self.index },
            duration: Duration::from_secs(100 * 365 * 24 * 3600),
        });
    }

    pub(crate) fn start(&self) {
        panic!("container-only: a stopped member does not start again in the simulation");
    }
}

/// A member's log, as the suite reads containers' logs.
pub(crate) struct LogStream;

impl LogStream {
    pub(crate) fn wait_for_message(&self, message: &str) -> Result<(), String> {
        Err(format!(
            "container-only: the simulated servers write no log to wait for {message:?} in"
        ))
    }
}

/// A simulated ZooKeeper with the suite's `Cluster` interface.
pub(crate) struct Cluster {
    server: SimServerHandle,
    members: Vec<Member>,
}

impl Cluster {
    pub(crate) async fn new() -> Self {
        Self::with_options(Default::default(), None).await
    }

    pub(crate) async fn with_properties(properties: Vec<&'_ str>) -> Self {
        Self::with_options(ClusterOptions { properties, ..Default::default() }, None).await
    }

    pub(crate) async fn with_options(options: ClusterOptions<'_>, encryption: Option<Encryption>) -> Self {
        assert!(
            matches!(encryption.unwrap_or(Encryption::Raw), Encryption::Raw),
            "container-only: a TLS server"
        );
        println!("starting simulated zookeeper server (image {}) ...", options.tag);
        let features = avout_sim_zk::kernel::Features {
            ttl_nodes: options.properties.contains(&"-Dzookeeper.extendedTypesEnabled=true"),
            multi_create_stats: true,
            ..Default::default()
        };
        // The ensemble's client addresses, from its `server.N=host:peer:election:role;client`
        // lines; one server on the first port otherwise.
        let mut clients: Vec<String> = options
            .servers
            .iter()
            .flat_map(|(_, lines)| lines.iter())
            .filter_map(|line| line.split_once(';').map(|(_, client)| client.to_owned()))
            .collect();
        clients.sort();
        clients.dedup();
        let size = options.servers.len().max(1);
        let mut addresses: Vec<String> =
            (0..size).map(|i| format!("127.0.0.1:{}", BASE_PORT + i as u16)).collect();
        addresses.extend(clients);
        let servers = u8::try_from(size).expect("a small ensemble");
        let server = SimServer::builder()
            .sim(|sim| sim.servers(servers).features(features))
            .super_digest(SUPER_DIGEST)
            .start(&addresses);
        SERVER.with(|s| *s.borrow_mut() = Some(server.clone()));
        let members = (0..size)
            .map(|i| Member {
                port: BASE_PORT + i as u16,
                index: i as u8,
                server: server.clone(),
            })
            .collect();
        Cluster { server, members }
    }

    pub(crate) fn stop(&self) {
        self.server.stop();
    }

    pub(crate) fn by_id(&self, id: u32) -> &Member {
        &self.members[id as usize - 1]
    }

    pub(crate) fn logs(&self, id: u32) -> LogStream {
        let _ = self.by_id(id);
        LogStream
    }

    fn url(&self, chroot: Option<&str>) -> String {
        let endpoints: Vec<_> = self
            .members
            .iter()
            .map(|m| {
                // As upstream's fixture draws it; madsim answers getrandom from its seed.
                let explicit: bool = rand::random(); // determinism: madsim-only
                let protocol = if explicit { "tcp://" } else { "" };
                format!("{protocol}127.0.0.1:{}", m.port)
            })
            .collect();
        endpoints.join(",") + chroot.unwrap_or("")
    }

    pub(crate) fn connector(&self) -> zk::Connector {
        zk::Client::connector()
    }

    pub(crate) async fn client(&self, chroot: Option<&str>) -> zk::Client {
        self.custom_client(chroot, |connector| connector).await.unwrap()
    }

    pub(crate) async fn custom_client(
        &self,
        chroot: Option<&str>,
        custom: impl FnOnce(zk::Connector) -> zk::Connector,
    ) -> Result<zk::Client, zk::Error> {
        custom(self.connector()).connect(&self.url(chroot)).await
    }
}

/// The suite's TCP proxy, simulated: a second address of the server whose connections can be
/// cut right after a notification.
pub(crate) struct PortForwarder {
    local_addr: SocketAddr,
    forwarder: SimForwarder,
}

impl PortForwarder {
    pub(crate) async fn new(_server: SocketAddr) -> Self {
        let local_addr: SocketAddr = "127.0.0.1:12181".parse().expect("an address");
        let forwarder = SERVER.with(|s| {
            s.borrow()
                .as_ref()
                .expect("a cluster was started")
                .forwarder(&local_addr.to_string())
        });
        PortForwarder { local_addr, forwarder }
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub(crate) fn interceptor(&self) -> Option<ConnectionInterceptor> {
        Some(ConnectionInterceptor {
            forwarder: self.forwarder.clone(),
        })
    }
}

/// What the proxy does to the connection it forwards.
pub(crate) struct ConnectionInterceptor {
    forwarder: SimForwarder,
}

impl ConnectionInterceptor {
    pub(crate) fn intercept(&self, command: ForwardCommand) {
        match command {
            // A notification's xid.
            ForwardCommand::DisconnectAfterXidResponse { xid: -1 } => {
                assert!(self.forwarder.cut_after_next_event(), "no connection through the proxy yet");
            }
            ForwardCommand::DisconnectAfterXidResponse { xid } => {
                panic!("the simulated proxy cuts after notifications (xid -1), not after xid {xid}")
            }
        }
    }
}
