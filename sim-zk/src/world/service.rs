//! Routing at the service: a request arriving (held by a cut, refused on a moved connection,
//! or lost on the way), the [`FaultPlan`]'s draws for it, the kernel applying it, and its
//! reply sent (or lost).
//!
//! [`FaultPlan`]: super::FaultPlan

use super::calls::Message;
use super::ensemble::Held;
use super::network::OldConn;
use super::{ClientMsg, World, outcome};
use crate::FaultKind;
use crate::hash::{Canonical, canon_closed};
use crate::latency::RequestClass;
use crate::log::LogEvent;

impl World {
    pub(super) fn at_server(&mut self, client: usize, epoch: u64, xid: u64, message: Message) {
        let t = self.time.clock();
        if let Some(until) = self.ensemble.stalled_until(t) {
            // The leader's disk is stalled: nothing gets through until it is back, in order.
            self.time.schedule(
                until,
                super::Pending::ToServer {
                    client,
                    epoch,
                    xid,
                    message,
                },
            );
            return;
        }
        let old = self.net.old_conn(client, epoch);
        if old == Some(OldConn::Moved) && !matches!(message, Message::Close) {
            // A request on a connection the session moved away from: refused, not applied.
            self.send_to_client(
                client,
                ClientMsg::Reply {
                    xid,
                    result: Err(avout::Error::SessionMoved),
                },
            );
            return;
        }
        let needs_leader = match &message {
            Message::Request(r) => r.is_write() || matches!(r, avout::Request::Sync { .. }),
            Message::Close => true,
        };
        let deaf = old == Some(OldConn::Deaf);
        if self.held_by_cut(client, needs_leader) || (self.net.epoch(client) != epoch && !deaf) {
            self.log.dropped(t, client, xid);
            return;
        }
        for fault in self.plan.next_request() {
            self.fire_fault(fault);
        }
        let draw = self.plan.draw(client);
        let close = matches!(message, Message::Close);
        if draw.lose_request && !close && !deaf {
            self.count(FaultKind::RequestLost, Some(client));
            self.break_connection(client);
        } else {
            self.apply(client, xid, &message, deaf, draw.lose_reply);
        }
        for kind in draw.session_faults() {
            let timeout = super::nanos(self.sessions.timeout(client));
            let servers = self.ensemble.servers();
            let fault = self.plan.draw_fault(kind, client, timeout, servers);
            self.fire_fault(fault);
        }
    }

    /// Whether a request from `client` waits for a leader it cannot reach (see
    /// [`Ensemble::holds`](super::Ensemble)); if its server already noticed the cut, the
    /// connection drops now.
    fn held_by_cut(&mut self, client: usize, needs_leader: bool) -> bool {
        match self.ensemble.holds(client, needs_leader) {
            Held::No => false,
            Held::Yes => true,
            Held::Break => {
                self.break_connection(client);
                true
            }
        }
    }

    /// The kernel applies `message` of `client`; its reply goes back unless the connection
    /// is deaf (applied, its reply down the cut direction) or the reply is lost.
    fn apply(&mut self, client: usize, xid: u64, message: &Message, deaf: bool, lose_reply: bool) {
        let t = self.time.clock();
        self.requests += 1;
        let session = self.sessions.id(client);
        let now_ms = self.time.now_ms();
        let kernel = self.ensemble.kernel_mut();
        let (result, events) = match message {
            Message::Request(request) => {
                // Validated by the client before it left (`SimClient::send`, `add_watch`).
                let applied = kernel.apply_valid(now_ms, session, request);
                (applied.result.map(Some), applied.events)
            }
            Message::Close => {
                let applied = kernel.close_session(now_ms, session);
                (applied.result.map(|()| None), applied.events)
            }
        };
        let zxid = kernel.last_zxid();
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
        let close = matches!(message, Message::Close);
        let lose_reply = self.plan.take_reply_loss(client) | lose_reply;
        if deaf {
            // Applied; its reply goes down the cut direction.
        } else if lose_reply && !close {
            self.count(FaultKind::ReplyLost, Some(client));
            self.break_connection(client);
        } else {
            let reply = ClientMsg::Reply { xid, result };
            match message {
                Message::Request(r) => self.send_reply(client, reply, RequestClass::of(r)),
                Message::Close => self.send_to_client(client, reply),
            }
        }
        if message.is_write() {
            let now_ms = self.time.now_ms();
            let reaped = self.ensemble.kernel_mut().reap_containers(now_ms);
            self.route(reaped);
            self.reap_ttls();
        }
        self.arm_follower();
    }
}
