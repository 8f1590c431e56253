//! The service's side of the network: a request arriving (or lost on the way), applied by the
//! kernel, its reply sent (or lost), and the faults drawn and fired meanwhile.

use std::time::Duration;

use super::{ClientMsg, Down, Message, OldConn, Pending, World, nanos, outcome};
use crate::hash::{Canonical, canon_closed};
use crate::kernel::Server;
use crate::log::LogEvent;
use crate::{Cut, Fault, FaultKind};

impl World {
    pub(super) fn at_server(&mut self, client: usize, epoch: u64, xid: u64, message: Message) {
        let t = self.clock;
        if let Some(until) = self.stalled_until() {
            // The leader's disk is stalled: nothing gets through until it is back, in order.
            self.schedule(
                until,
                Pending::ToServer {
                    client,
                    epoch,
                    xid,
                    message,
                },
            );
            return;
        }
        let old = (self.clients[client].epoch != epoch)
            .then(|| self.clients[client].old_conns.get(&epoch).copied())
            .flatten();
        if old == Some(OldConn::Moved) && !matches!(message, Message::Close) {
            self.refuse_moved(client, xid);
            return;
        }
        let needs_leader = match &message {
            Message::Request(r) => r.is_write() || matches!(r, avout::Request::Sync { .. }),
            Message::Close => true,
        };
        if self.held_by_cut(client, needs_leader) {
            self.log.push(
                LogEvent::Dropped {
                    t,
                    client,
                    xid: Some(xid),
                },
                |_| {},
            );
            return;
        }
        let deaf = old == Some(OldConn::Deaf);
        if self.clients[client].epoch != epoch && !deaf {
            self.log.push(
                LogEvent::Dropped {
                    t,
                    client,
                    xid: Some(xid),
                },
                |_| {},
            );
            return;
        }
        self.step += 1;
        if let Some(faults) = self.step_faults.remove(&self.step) {
            for f in faults {
                self.fire_fault(f);
            }
        }
        // The fault stream is drawn in the same order for every request, so a run's faults
        // depend only on the seed and the sequence of requests.
        let rates = self.config.rates;
        let lose_request = take_armed(&mut self.armed_request_loss, client)
            | self.faults.chance(rates.request_lost);
        let lose_reply = self.faults.chance(rates.reply_lost);
        let session_faults = [
            (self.faults.chance(rates.disconnect), FaultKind::Disconnect),
            (self.faults.chance(rates.expire), FaultKind::SessionExpiry),
            (self.faults.chance(rates.pause), FaultKind::Pause),
            (self.faults.chance(rates.stale_reads), FaultKind::StaleReads),
            (self.faults.chance(rates.outage), FaultKind::Outage),
            (self.faults.chance(rates.partition), FaultKind::Partition),
            (
                self.faults.chance(rates.leader_election),
                FaultKind::LeaderElection,
            ),
            (
                self.faults.chance(rates.session_moved),
                FaultKind::SessionMoved,
            ),
            (
                self.faults.chance(rates.client_freeze),
                FaultKind::ClientFreeze,
            ),
            (self.faults.chance(rates.slow_disk), FaultKind::SlowDisk),
        ];
        let close = matches!(message, Message::Close);
        if lose_request && !close && !deaf {
            self.count(FaultKind::RequestLost, Some(client));
            self.break_connection(client);
        } else {
            self.requests += 1;
            let session = self.clients[client].session;
            let now_ms = self.now_ms();
            let (result, events) = match &message {
                Message::Request(request) => {
                    let applied = self.kernel.apply(now_ms, session, request);
                    (applied.result.map(Some), applied.events)
                }
                Message::Close => {
                    let applied = self.kernel.close_session(now_ms, session);
                    (applied.result.map(|()| None), applied.events)
                }
            };
            let zxid = self.kernel.last_zxid();
            let outcome = outcome(&result);
            self.log.push(
                LogEvent::Applied {
                    t,
                    client,
                    xid,
                    zxid,
                    outcome,
                },
                |h| match &result {
                    Ok(Some(r)) => r.canon(h),
                    Ok(None) => canon_closed(h),
                    Err(e) => e.canon(h),
                },
            );
            self.route(events);
            let lose_reply = take_armed(&mut self.armed_reply_loss, client) | lose_reply;
            if deaf {
                // Applied; its reply goes down the cut direction.
            } else if lose_reply && !close {
                self.count(FaultKind::ReplyLost, Some(client));
                self.break_connection(client);
            } else {
                self.send_to_client(client, ClientMsg::Reply { xid, result });
            }
            if message.is_write() {
                let reaped = self.kernel.reap_containers(self.now_ms());
                self.route(reaped);
                self.reap_ttls();
            }
            self.arm_follower();
        }
        for (hit, kind) in session_faults {
            if hit {
                let fault = self.draw_fault(kind, client);
                self.fire_fault(fault);
            }
        }
    }

    pub(super) fn draw_fault(&mut self, kind: FaultKind, client: usize) -> Fault {
        let timeout = nanos(self.clients[client].timeout);
        let mut frac =
            |lo: u64, hi: u64| Duration::from_nanos(timeout / 100 * self.faults.between(lo, hi));
        match kind {
            FaultKind::Disconnect => Fault::Disconnect {
                client,
                duration: frac(10, 50),
            },
            FaultKind::SessionExpiry => Fault::ExpireSession { client },
            FaultKind::Pause => Fault::Pause {
                client,
                duration: frac(150, 200),
            },
            FaultKind::StaleReads => Fault::StaleReads {
                client,
                duration: frac(100, 300),
            },
            FaultKind::Outage => Fault::Outage {
                duration: frac(20, 60),
            },
            FaultKind::Partition => {
                let cut = if self.faults.below(2) == 0 {
                    Cut::Client {
                        client,
                        one_way: self.faults.below(2) == 0,
                    }
                } else {
                    let server = self.faults.below(u64::from(self.servers.max(1)));
                    Cut::Server {
                        server: u8::try_from(server).expect("below a u8"),
                    }
                };
                let duration = match cut {
                    Cut::Client { .. } => self.faults.between(10, 60),
                    Cut::Server { .. } => self.faults.between(20, 150),
                };
                Fault::Partition {
                    cut,
                    duration: Duration::from_nanos(timeout / 100 * duration),
                }
            }
            FaultKind::LeaderElection => Fault::LeaderElection {
                duration: frac(10, 60),
            },
            FaultKind::SessionMoved => Fault::SessionMoved { client },
            FaultKind::ClientFreeze => Fault::ClientFreeze {
                client,
                duration: frac(30, 200),
            },
            FaultKind::SlowDisk => Fault::SlowDisk {
                duration: frac(5, 40),
            },
            FaultKind::RequestLost | FaultKind::ReplyLost => {
                unreachable!("message faults are not drawn as session faults")
            }
        }
    }

    pub(super) fn count(&mut self, kind: FaultKind, client: Option<usize>) {
        self.count_lasting(kind, client, None);
    }

    /// Counts and logs a fault; the log keeps its `duration`.
    pub(super) fn count_lasting(
        &mut self,
        kind: FaultKind,
        client: Option<usize>,
        duration: Option<Duration>,
    ) {
        *self.fault_counts.entry(kind).or_default() += 1;
        let t = self.clock;
        let duration = duration.map(nanos);
        self.log.push(
            LogEvent::Fault {
                t,
                kind,
                client,
                duration,
            },
            |_| {},
        );
    }

    pub(super) fn fire_fault(&mut self, fault: Fault) {
        let now = self.clock;
        if let Some(client) = fault.client() {
            assert!(
                client < self.clients.len(),
                "{fault:?} names client {client}, but the run has {} clients",
                self.clients.len()
            );
        }
        match fault {
            Fault::RequestLost { client } => self.armed_request_loss.push(client),
            Fault::ReplyLost { client } => self.armed_reply_loss.push(client),
            Fault::Disconnect { client, duration } => {
                if self.is_live_and_up(client) {
                    self.count_lasting(FaultKind::Disconnect, Some(client), Some(duration));
                    self.go_down(client, Down::Disconnect, now + nanos(duration));
                }
            }
            Fault::Pause { client, duration } => {
                if self.is_live_and_up(client) {
                    self.count_lasting(FaultKind::Pause, Some(client), Some(duration));
                    self.go_down(client, Down::Pause, now + nanos(duration));
                }
            }
            Fault::ExpireSession { client } => {
                if self.kernel.is_alive(self.clients[client].session) {
                    self.count(FaultKind::SessionExpiry, Some(client));
                    self.expire(client);
                }
            }
            Fault::StaleReads { client, duration } => {
                let session = self.clients[client].session;
                if self.is_ensemble() {
                    if self.kernel.is_alive(session) && self.clients[client].stale_until.is_none() {
                        // The most lagging follower that leads nothing and is not cut off.
                        let server = (0..self.servers)
                            .rev()
                            .find(|&s| s != self.leader && !self.is_cut_off(s));
                        let Some(server) = server else {
                            return;
                        };
                        self.count_lasting(FaultKind::StaleReads, Some(client), Some(duration));
                        let until = now + nanos(duration);
                        self.clients[client].stale_until = Some(until);
                        self.attach_to(client, server);
                        self.schedule(until, Pending::StaleEnd { client });
                    }
                    return;
                }
                if !self.kernel.has_follower() {
                    panic!(
                        "a StaleReads fault needs a lagging follower: configure the run with \
                         Builder::follower_lag or a stale_reads rate"
                    );
                }
                if self.kernel.is_alive(session) && self.clients[client].stale_until.is_none() {
                    self.count_lasting(FaultKind::StaleReads, Some(client), Some(duration));
                    let until = now + nanos(duration);
                    self.clients[client].stale_until = Some(until);
                    let events = self.kernel.attach(session, Server::Follower(0));
                    self.route(events);
                    self.schedule(until, Pending::StaleEnd { client });
                }
            }
            Fault::Outage { duration } => {
                if self.outage_until.is_none() {
                    self.count_lasting(FaultKind::Outage, None, Some(duration));
                    let until = now + nanos(duration);
                    self.outage_until = Some(until);
                    for client in 0..self.clients.len() {
                        if self.is_live_and_up(client) {
                            self.go_down(client, Down::Outage, until);
                        }
                    }
                    self.schedule(until, Pending::OutageEnd);
                }
            }
            Fault::Partition { cut, duration } => self.fire_partition(cut, duration),
            Fault::LeaderElection { duration } => {
                if self.is_ensemble() && self.outage_until.is_none() {
                    self.count_lasting(FaultKind::LeaderElection, None, Some(duration));
                    self.start_election(duration);
                }
            }
            Fault::SessionMoved { client } => self.fire_session_moved(client),
            Fault::ClientFreeze { client, duration } => self.fire_freeze(client, duration),
            Fault::SlowDisk { duration } => self.fire_slow_disk(duration),
        }
    }
}

pub(super) fn take_armed(armed: &mut Vec<Option<usize>>, client: usize) -> bool {
    match armed.iter().position(|a| a.is_none_or(|c| c == client)) {
        Some(i) => {
            armed.remove(i);
            true
        }
        None => false,
    }
}
