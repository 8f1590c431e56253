//! A quorum of servers: [`ZkEnsemble`], its members and its builder.

use std::fs;
use std::io;
use std::path::Path;
use std::thread;
use std::time::Instant;

use tempfile::TempDir;

use super::config::{
    ProcessOptions, base_config, check_port_free, free_ports, log_tail, process_options,
};
use super::detached::DetachedZk;
use super::error::{Result, TestkitError, io_err};
use super::process::{Proc, process_accessors};
use super::relay::Relay;
use super::{POLL, PORT_ATTEMPTS, START_TIMEOUT, ServerMode, four_letter_word};
/// One member of a [`ZkEnsemble`].
#[derive(Debug)]
pub struct ZkMember {
    id: u32,
    peer_port: u16,
    election_port: u16,
    proc: Proc,
}

impl ZkMember {
    /// The server id (`myid`): the member's index plus one.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The port followers use to talk to the leader.
    pub fn peer_port(&self) -> u16 {
        self.peer_port
    }

    /// The leader election port.
    pub fn election_port(&self) -> u16 {
        self.election_port
    }

    process_accessors!();
}

/// Builds a [`ZkEnsemble`]; see [`ZkEnsemble::builder`].
#[derive(Debug, Clone)]
pub struct ZkEnsembleBuilder {
    size: usize,
    base_port: Option<u16>,
    partitionable: bool,
    options: ProcessOptions,
}

/// The link from one member to another: relays to the other's peer and election ports.
#[derive(Debug)]
struct Link {
    from: usize,
    to: usize,
    peer: Relay,
    election: Relay,
}

impl ZkEnsembleBuilder {
    /// The number of members (default 3).
    pub fn size(mut self, n: usize) -> Self {
        self.size = n;
        self
    }

    /// Gives the members the client ports `port`, `port + 1`, … instead of free ones (peer and
    /// election ports stay free ones).
    pub fn base_port(mut self, port: u16) -> Self {
        self.base_port = Some(port);
        self
    }

    /// Puts a TCP relay on every link between two members and in front of every member's
    /// client port, so that [`ZkEnsemble::partition`] and [`ZkEnsemble::cut_clients`] can cut
    /// them (no root or firewall needed).
    pub fn partitionable(mut self, on: bool) -> Self {
        self.partitionable = on;
        self
    }

    process_options!("every member");

    /// Starts every member and waits until each serves (the ensemble has a quorum).
    pub fn start(self) -> Result<ZkEnsemble> {
        if self.size == 0 {
            return Err(TestkitError::EmptyEnsemble);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.start_once() {
                Err(TestkitError::PortInUse { .. }) if attempt < PORT_ATTEMPTS => {
                    // Peer and election ports are always free ones, so a clash there is worth
                    // a retry even with fixed client ports (which `start_once` checked).
                }
                other => return other,
            }
        }
    }

    fn start_once(&self) -> Result<ZkEnsemble> {
        let n = self.size;
        let client_ports: Vec<u16> = match self.base_port {
            Some(base) => {
                let ports: Vec<u16> = (0..n)
                    .map(|i| {
                        u16::try_from(usize::from(base) + i)
                            .ok()
                            .filter(|&p| p != 0)
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(|| TestkitError::Io {
                        context: format!("{n} client ports from {base}"),
                        source: io::Error::new(io::ErrorKind::InvalidInput, "ports run past 65535"),
                    })?;
                ports.iter().try_for_each(|&p| check_port_free(p))?;
                ports
            }
            None => Vec::new(),
        };
        let tls = self.options.security.tls.is_some();
        let free = free_ports(
            if self.base_port.is_some() {
                2 * n
            } else {
                3 * n
            } + if tls { n } else { 0 },
        )?;
        let (secure_ports, free) = free.split_at(if tls { n } else { 0 });
        let (peer_ports, rest) = free.split_at(n);
        let (election_ports, rest) = rest.split_at(n);
        let client_ports = if client_ports.is_empty() {
            rest.to_vec()
        } else {
            client_ports
        };

        let tmp = self.options.temp_dir("avout-zk-ensemble-")?;
        let mut links = Vec::new();
        let mut client_relays = Vec::new();
        if self.partitionable {
            for &port in &client_ports {
                client_relays.push(Relay::start(port)?);
            }
            for from in 0..n {
                for to in (0..n).filter(|&to| to != from) {
                    links.push(Link {
                        from,
                        to,
                        peer: Relay::start(peer_ports[to])?,
                        election: Relay::start(election_ports[to])?,
                    });
                }
            }
        }
        // How member `me` reaches member `i`: directly, or by the relays of their link.
        let servers = |me: usize| -> String {
            (0..n)
                .map(|i| {
                    let (peer, election) = links
                        .iter()
                        .find(|l| l.from == me && l.to == i)
                        .map_or((peer_ports[i], election_ports[i]), |l| {
                            (l.peer.port(), l.election.port())
                        });
                    format!("server.{}=127.0.0.1:{peer}:{election}\n", i + 1)
                })
                .collect()
        };
        let mut members = Vec::with_capacity(n);
        for i in 0..n {
            let id = u32::try_from(i + 1).expect("ensemble sizes fit in u32");
            let dir = tmp.path().join(format!("member-{id}"));
            let data = dir.join("data");
            fs::create_dir_all(&data).map_err(io_err(format!("creating {}", data.display())))?;
            fs::write(data.join("myid"), format!("{id}\n"))
                .map_err(io_err(format!("writing {}/myid", data.display())))?;
            let config = format!(
                "{}initLimit=10\nsyncLimit=5\n{}",
                base_config(&data, client_ports[i], self.options.force_sync),
                servers(i)
            );
            let proc = Proc::configure(
                format!("member {id} on 127.0.0.1:{}", client_ports[i]),
                dir,
                (client_ports[i], secure_ports.get(i).copied()),
                &self.options,
                config,
            )?;
            members.push(ZkMember {
                id,
                peer_port: peer_ports[i],
                election_port: election_ports[i],
                proc,
            });
        }
        // From here on, dropping the ensemble kills what was started and removes the directory.
        let ensemble = ZkEnsemble {
            members,
            links,
            client_relays,
            tmp: Some(tmp),
        };
        for member in &ensemble.members {
            member.proc.spawn()?;
        }
        let deadline = Instant::now() + START_TIMEOUT;
        for member in &ensemble.members {
            member.proc.wait_serving(deadline)?;
        }
        Ok(ensemble)
    }
}

/// A ZooKeeper ensemble on `127.0.0.1`: members with free client, peer and election ports and
/// temporary directories; everything killed and removed on drop.
///
/// Members are addressed by index (`0..n`); member `i` has server id `i + 1`.
///
/// ```no_run
/// use avout_testkit::server::ZkEnsemble;
///
/// let zk = ZkEnsemble::start(3)?;
/// let connect = zk.connect_string(); // "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3"
/// // ... connect a client; find out which member it talks to ...
/// # let session_id = 0;
/// if let Some(i) = zk.member_of_session(session_id) {
///     zk.kill(i); // the client fails over to another member
///     zk.wait_for_quorum()?;
///     zk.restart(i)?;
/// }
/// # Ok::<(), avout_testkit::server::TestkitError>(())
/// ```
///
/// The methods block (see the [module docs](super) for async tests) and take `&self`, so an
/// ensemble can be shared (in an `Arc`) with a task that injects faults.
#[derive(Debug)]
pub struct ZkEnsemble {
    members: Vec<ZkMember>,
    /// Relays between members, when started partitionable.
    links: Vec<Link>,
    /// Relays in front of the members' client ports, when started partitionable.
    client_relays: Vec<Relay>,
    /// `None` once detached.
    tmp: Option<TempDir>,
}

impl ZkEnsemble {
    /// Starts an `n`-member ensemble (fsync on) and waits until every member serves. A
    /// three-member ensemble takes a second or two.
    pub fn start(n: usize) -> Result<ZkEnsemble> {
        ZkEnsemble::builder().size(n).start()
    }

    /// A builder for other sizes, fixed client ports, fsync off, or another base directory.
    ///
    /// ```no_run
    /// use avout_testkit::server::ZkEnsemble;
    ///
    /// let zk = ZkEnsemble::builder().size(5).force_sync(false).start()?;
    /// assert_eq!(zk.members().len(), 5);
    /// # Ok::<(), avout_testkit::server::TestkitError>(())
    /// ```
    pub fn builder() -> ZkEnsembleBuilder {
        ZkEnsembleBuilder {
            size: 3,
            base_port: None,
            partitionable: false,
            options: ProcessOptions::default(),
        }
    }

    /// Every member's TLS client port as a connect string, if the ensemble serves TLS
    /// ([`tls`](ZkEnsembleBuilder::tls)). Never through relays: a partition does not cut it.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.members
            .iter()
            .map(ZkMember::secure_connect_string)
            .collect::<Option<Vec<_>>>()
            .map(|servers| servers.join(","))
    }

    /// The connect string naming every member, `127.0.0.1:P1,127.0.0.1:P2,…` (in a
    /// [partitionable](ZkEnsembleBuilder::partitionable) ensemble, the relays in front of the
    /// members, which [`cut_clients`](Self::cut_clients) can cut).
    pub fn connect_string(&self) -> String {
        if !self.client_relays.is_empty() {
            return self
                .client_relays
                .iter()
                .map(|r| format!("127.0.0.1:{}", r.port()))
                .collect::<Vec<_>>()
                .join(",");
        }
        self.members
            .iter()
            .map(ZkMember::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The members, in index order.
    pub fn members(&self) -> &[ZkMember] {
        &self.members
    }

    /// Member `i`.
    ///
    /// # Panics
    ///
    /// If `i` is not below the ensemble's size.
    pub fn member(&self, i: usize) -> &ZkMember {
        &self.members[i]
    }

    /// The ensemble's directory (one `member-ID/` per member).
    pub fn dir(&self) -> &Path {
        self.members[0]
            .proc
            .dir
            .parent()
            .expect("member directories are inside the ensemble's")
    }

    /// Cuts every link between the members in `side` and the others, both ways, until
    /// [`heal`](Self::heal). A side without a majority can no longer commit: its leader, if
    /// it has it, steps down, and the other side elects one if it is a majority. Clients stay
    /// connected to the members they were on; their sessions follow ZooKeeper's rules.
    ///
    /// ```no_run
    /// use avout_testkit::server::ZkEnsemble;
    ///
    /// let zk = ZkEnsemble::builder().partitionable(true).start()?;
    /// let leader = zk.leader().expect("a leader");
    /// zk.partition(&[leader])?; // the other two elect a new leader
    /// zk.heal();
    /// zk.wait_for_quorum()?;
    /// # Ok::<(), avout_testkit::server::TestkitError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotPartitionable`] unless the ensemble was started
    /// [`partitionable`](ZkEnsembleBuilder::partitionable).
    pub fn partition(&self, side: &[usize]) -> Result<()> {
        if self.client_relays.is_empty() {
            return Err(TestkitError::NotPartitionable);
        }
        for l in &self.links {
            if side.contains(&l.from) != side.contains(&l.to) {
                l.peer.cut();
                l.election.cut();
            }
        }
        Ok(())
    }

    /// Cuts the clients that came in by [`connect_string`](Self::connect_string) off from
    /// member `i`, until [`heal`](Self::heal): their connections to it drop and they
    /// reconnect to other members (their sessions move); the member itself stays in the
    /// quorum.
    ///
    /// # Errors
    ///
    /// [`TestkitError::NotPartitionable`] unless the ensemble was started
    /// [`partitionable`](ZkEnsembleBuilder::partitionable).
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn cut_clients(&self, i: usize) -> Result<()> {
        assert!(i < self.members.len(), "no member {i}");
        let relay = self
            .client_relays
            .get(i)
            .ok_or(TestkitError::NotPartitionable)?;
        relay.cut();
        Ok(())
    }

    /// Ends every partition, between members and between clients and members: the links
    /// carry connections again (members and clients reconnect by themselves).
    pub fn heal(&self) {
        for l in &self.links {
            l.peer.heal();
            l.election.heal();
        }
        for r in &self.client_relays {
            r.heal();
        }
    }

    /// Whether the link from member `from` to member `to` is cut.
    pub fn is_cut(&self, from: usize, to: usize) -> bool {
        self.links
            .iter()
            .any(|l| l.from == from && l.to == to && l.peer.is_cut())
    }

    /// Crashes member `i` (`SIGKILL`) and waits until its process is gone.
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn kill(&self, i: usize) {
        self.members[i].proc.kill();
    }

    /// Freezes member `i` (`SIGSTOP`). A frozen leader is replaced once the others notice.
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn pause(&self, i: usize) -> Result<()> {
        self.members[i].proc.pause()
    }

    /// Continues member `i` (`SIGCONT`).
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn resume(&self, i: usize) -> Result<()> {
        self.members[i].proc.resume()
    }

    /// Starts member `i` again with its configuration and data (killing it first if it runs)
    /// and waits until it serves, which needs a quorum: with too few members running this
    /// fails with [`TestkitError::NotServing`] after 30 s.
    ///
    /// # Panics
    ///
    /// If there is no member `i`.
    pub fn restart(&self, i: usize) -> Result<()> {
        self.members[i].proc.restart().map(drop)
    }

    /// Waits until the ensemble serves: every running, unpaused member reports `leader` or
    /// `follower`, one of them `leader`, and they are a majority of the ensemble. Fails with
    /// [`TestkitError::NotServing`] after 30 s (for instance when a majority is down).
    pub fn wait_for_quorum(&self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        let majority = self.members.len() / 2 + 1;
        loop {
            let live: Vec<&ZkMember> = self
                .members
                .iter()
                .filter(|m| m.is_running() && !m.is_paused())
                .collect();
            let modes: Vec<Option<ServerMode>> = live.iter().map(|m| m.mode()).collect();
            let serving = modes.iter().flatten().count();
            if serving == live.len()
                && serving >= majority
                && modes
                    .iter()
                    .any(|m| matches!(m, Some(ServerMode::Leader | ServerMode::Standalone)))
            {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let (server, log) = match live.iter().zip(&modes).find(|(_, m)| m.is_none()) {
                    Some((m, _)) => (m.proc.name.clone(), log_tail(&m.proc.log_path())),
                    None => (
                        "ensemble".to_owned(),
                        format!(
                            "{serving} of {} members serve; {majority} are needed",
                            self.members.len()
                        ),
                    ),
                };
                return Err(TestkitError::NotServing {
                    server,
                    timeout: START_TIMEOUT,
                    log_tail: log,
                });
            }
            thread::sleep(POLL);
        }
    }

    /// The index of the member that serves ZooKeeper session `session_id` (the member a client
    /// is connected to), found in each running, unpaused member's `cons` listing; `None` if no
    /// member lists it (for instance while the client reconnects).
    pub fn member_of_session(&self, session_id: i64) -> Option<usize> {
        // ZooKeeper prints session ids as unsigned hex (`Long.toHexString`), unpadded.
        let needle = format!("sid=0x{:x}", session_id as u64);
        self.members.iter().position(|m| {
            m.is_running()
                && !m.is_paused()
                && four_letter_word(m.port(), "cons")
                    .is_ok_and(|cons| lists_session(&cons, &needle))
        })
    }

    /// The index of the current leader, if a running member says it leads.
    pub fn leader(&self) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.is_running() && !m.is_paused() && m.mode() == Some(ServerMode::Leader))
    }

    /// Lets the ensemble outlive this value: no member is killed or removed on drop. Whoever
    /// takes it over stops it with [`DetachedZk::stop`]. Paused members are resumed first;
    /// killed members are left out.
    ///
    /// Start such an ensemble with [`own_process_group`](ZkEnsembleBuilder::own_process_group).
    ///
    /// A [partitionable](ZkEnsembleBuilder::partitionable) ensemble's members reach each other
    /// through relays in this process: once it exits they no longer can.
    pub fn detach(mut self) -> DetachedZk {
        let connect_string = self.connect_string();
        let secure_connect_string = self.secure_connect_string();
        let dir = match self.tmp.take() {
            Some(tmp) => tmp.keep(),
            None => self.dir().to_owned(),
        };
        DetachedZk {
            dir,
            connect_string,
            secure_connect_string,
            processes: self
                .members
                .iter()
                .filter_map(|m| m.proc.detach())
                .collect(),
        }
    }
}

/// Whether a `cons` listing has the session `needle` (`sid=0x…`), as a whole field: `sid=0x1`
/// must not match `sid=0x10`.
pub(super) fn lists_session(cons: &str, needle: &str) -> bool {
    cons.match_indices(needle).any(|(at, _)| {
        matches!(
            cons[at + needle.len()..].chars().next(),
            Some(',' | ')') | None
        )
    })
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        for member in &self.members {
            member.proc.kill();
        }
    }
}
