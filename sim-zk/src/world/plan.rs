//! The fault plan: the faults scheduled for a given request, the ones armed to hit the next
//! request, the per-request draws at the run's rates from the fault stream, the faults that
//! fired by kind, and the buggify points of client code.
//!
//! The fault stream is drawn in the same order for every request, so a run's faults depend
//! only on the seed and the sequence of requests; a zero rate draws nothing, so switching a
//! kind off leaves the others' draws where they were.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::rng::{Odds, Rng, Stream};
use crate::{Cut, Fault, FaultKind, SimConfig};

/// A buggify point: file, line, column.
pub(super) type Site = (&'static str, u32, u32);

/// The kinds drawn per request after the two message faults, in the order they are drawn:
/// [`FaultKind::ALL`]'s order (so reordering `ALL` changes every faulty run's draws).
const SESSION_KINDS: [FaultKind; 11] = {
    let mut kinds = [FaultKind::Disconnect; 11];
    let mut i = 0;
    while i < kinds.len() {
        kinds[i] = FaultKind::ALL[i + 2];
        i += 1;
    }
    kinds
};

/// What the plan decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Draw {
    /// The request is lost, with its connection.
    pub(super) lose_request: bool,
    /// Its reply is lost, with its connection (an armed reply loss may add to it later).
    pub(super) lose_reply: bool,
    /// Which session faults hit its client after it: bit `i` for [`SESSION_KINDS`]`[i]`.
    session: u16,
}

impl Draw {
    /// The session faults that hit, in order.
    pub(super) fn session_faults(&self) -> impl Iterator<Item = FaultKind> + use<> {
        let hits = self.session;
        (0..SESSION_KINDS.len())
            .filter(move |i| hits & (1 << i) != 0)
            .map(|i| SESSION_KINDS[i])
    }
}

/// Buggify's stream, whether each point is live in this run, and how many times one fired.
struct Buggify {
    rng: Rng,
    sites: BTreeMap<Site, bool>,
    fired: u64,
}

/// The faults of a run, planned and drawn.
pub(super) struct FaultPlan {
    rng: Rng,
    /// The odds of losing a request and a reply, and of each of [`SESSION_KINDS`].
    request_lost: Odds,
    reply_lost: Odds,
    session: [Odds; 11],
    /// How many requests the service has received.
    step: u64,
    /// Faults scheduled for the n-th request.
    at_step: BTreeMap<u64, Vec<Fault>>,
    /// Lost requests and replies armed for the next request (of a client, or of anyone).
    armed_request_loss: Vec<Option<usize>>,
    armed_reply_loss: Vec<Option<usize>>,
    counts: BTreeMap<FaultKind, u64>,
    buggify: Option<Buggify>,
}

impl FaultPlan {
    /// The plan of a run of `config`, drawing from `rng`: the faults scheduled by step are
    /// kept here, those scheduled by time are the caller's to schedule.
    pub(super) fn new(rng: Rng, config: &SimConfig) -> Self {
        let mut at_step: BTreeMap<u64, Vec<Fault>> = BTreeMap::new();
        for (when, fault) in &config.scheduled {
            if let crate::When::Step(n) = when {
                at_step.entry(*n).or_default().push(fault.clone());
            }
        }
        FaultPlan {
            rng,
            request_lost: Odds::new(config.rates.request_lost),
            reply_lost: Odds::new(config.rates.reply_lost),
            session: SESSION_KINDS.map(|kind| Odds::new(config.rates.rate(kind))),
            step: 0,
            at_step,
            armed_request_loss: Vec::new(),
            armed_reply_loss: Vec::new(),
            counts: BTreeMap::new(),
            buggify: config.buggify.then(|| Buggify {
                rng: Rng::new(config.seed, Stream::Buggify),
                sites: BTreeMap::new(),
                fired: 0,
            }),
        }
    }

    /// The fault stream (for its tape).
    pub(super) fn rng(&self) -> &Rng {
        &self.rng
    }

    pub(super) fn rng_mut(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// The service receives a request: the faults scheduled for it, due now.
    pub(super) fn next_request(&mut self) -> Vec<Fault> {
        self.step += 1;
        self.at_step.remove(&self.step).unwrap_or_default()
    }

    /// The next request of `client` (or of anyone, for `None`) is lost.
    pub(super) fn arm_request_loss(&mut self, client: Option<usize>) {
        self.armed_request_loss.push(client);
    }

    /// The next reply to `client` (or to anyone, for `None`) is lost.
    pub(super) fn arm_reply_loss(&mut self, client: Option<usize>) {
        self.armed_reply_loss.push(client);
    }

    /// Draws what happens to a request of `client` and after it (an armed request loss is
    /// used up here).
    pub(super) fn draw(&mut self, client: usize) -> Draw {
        let armed = take_armed(&mut self.armed_request_loss, client);
        let lose_request = self.rng.hits(self.request_lost) | armed;
        let lose_reply = self.rng.hits(self.reply_lost);
        let mut session = 0;
        for (i, odds) in self.session.iter().enumerate() {
            session |= u16::from(self.rng.hits(*odds)) << i;
        }
        Draw {
            lose_request,
            lose_reply,
            session,
        }
    }

    /// Whether a reply loss is armed for `client`'s reply (used up if so).
    pub(super) fn take_reply_loss(&mut self, client: usize) -> bool {
        take_armed(&mut self.armed_reply_loss, client)
    }

    /// The fault of `kind` that hits `client` (whose session times out after `timeout` ns)
    /// in an ensemble of `servers`, its durations drawn as fractions of the timeout.
    pub(super) fn draw_fault(
        &mut self,
        kind: FaultKind,
        client: usize,
        timeout: u64,
        servers: u8,
    ) -> Fault {
        let mut frac =
            |lo: u64, hi: u64| Duration::from_nanos(timeout / 100 * self.rng.between(lo, hi));
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
                let cut = if self.rng.below(2) == 0 {
                    Cut::Client {
                        client,
                        one_way: self.rng.below(2) == 0,
                    }
                } else {
                    let server = self.rng.below(u64::from(servers.max(1)));
                    Cut::Server {
                        server: u8::try_from(server).expect("below a u8"),
                    }
                };
                let duration = match cut {
                    Cut::Client { .. } => self.rng.between(10, 60),
                    Cut::Server { .. } => self.rng.between(20, 150),
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
            FaultKind::LeaderLag => Fault::LeaderLag {
                duration: frac(20, 100),
            },
            FaultKind::RequestLost | FaultKind::ReplyLost => {
                unreachable!("message faults are not drawn as session faults")
            }
        }
    }

    /// Counts a fault that fired.
    pub(super) fn count(&mut self, kind: FaultKind) {
        *self.counts.entry(kind).or_default() += 1;
    }

    /// The faults that fired, by kind.
    pub(super) fn counts(&self) -> &BTreeMap<FaultKind, u64> {
        &self.counts
    }

    /// Whether the buggify point at `site` fires now. A point is live in a run with
    /// probability 1/2, decided when the run first reaches it; a live point fires with
    /// probability 1/4 each time it is reached (FoundationDB's scheme: some points never fire,
    /// so a run also explores the paths they would have hidden).
    pub(super) fn buggify(&mut self, site: Site) -> bool {
        let Some(b) = &mut self.buggify else {
            return false;
        };
        let rng = &mut b.rng;
        let live = *b.sites.entry(site).or_insert_with(|| rng.below(2) == 0);
        let fire = live && b.rng.below(4) == 0;
        b.fired += u64::from(fire);
        fire
    }

    /// How many times a buggify point fired.
    pub(super) fn buggified(&self) -> u64 {
        self.buggify.as_ref().map_or(0, |b| b.fired)
    }
}

/// Uses up the first armed loss that hits `client` (its own, or anyone's).
fn take_armed(armed: &mut Vec<Option<usize>>, client: usize) -> bool {
    match armed.iter().position(|a| a.is_none_or(|c| c == client)) {
        Some(i) => {
            armed.remove(i);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FaultRates, When};

    fn plan(config: &SimConfig) -> FaultPlan {
        FaultPlan::new(Rng::new(config.seed, Stream::Faults), config)
    }

    #[test]
    fn session_kinds_are_every_kind_after_the_message_faults() {
        assert_eq!(
            FaultKind::ALL[..2],
            [FaultKind::RequestLost, FaultKind::ReplyLost]
        );
        assert_eq!(SESSION_KINDS[..], FaultKind::ALL[2..]);
    }

    #[test]
    fn scheduled_faults_come_due_at_their_request() {
        let fault = Fault::ExpireSession { client: 0 };
        let config = SimConfig {
            scheduled: vec![
                (When::Step(2), fault.clone()),
                (
                    When::At(Duration::from_secs(1)),
                    Fault::SlowDisk {
                        duration: Duration::from_secs(1),
                    },
                ),
            ],
            ..SimConfig::default()
        };
        let mut p = plan(&config);
        assert!(p.next_request().is_empty());
        assert_eq!(p.next_request(), [fault]);
        assert!(
            p.next_request().is_empty(),
            "faults by time are not the plan's"
        );
    }

    #[test]
    fn an_armed_loss_hits_its_client_or_anyones_once() {
        let mut p = plan(&SimConfig::default());
        p.arm_request_loss(Some(1));
        assert!(!p.draw(0).lose_request, "another client's");
        assert!(p.draw(1).lose_request);
        assert!(!p.draw(1).lose_request, "used up");
        p.arm_reply_loss(None);
        assert!(p.take_reply_loss(3));
        assert!(!p.take_reply_loss(3));
    }

    #[test]
    fn a_calm_plan_draws_nothing() {
        let mut p = plan(&SimConfig::default());
        let d = p.draw(0);
        assert!(!d.lose_request && !d.lose_reply && d.session_faults().next().is_none());
        assert!(p.rng().drawn_so_far().is_empty(), "zero rates draw nothing");
    }

    #[test]
    fn draws_follow_the_rates_in_a_fixed_order() {
        let config = SimConfig {
            rates: FaultRates::chaos_all(),
            ..SimConfig::default()
        };
        let (mut a, mut b) = (plan(&config), plan(&config));
        let mut hits = BTreeMap::<FaultKind, u64>::new();
        for _ in 0..50_000 {
            let d = a.draw(0);
            assert_eq!(d, b.draw(0), "the same seed, the same draws");
            for kind in d.session_faults() {
                *hits.entry(kind).or_default() += 1;
            }
        }
        for kind in SESSION_KINDS {
            assert!(
                hits.get(&kind).is_some_and(|&n| n > 0),
                "{kind:?} drawn: {hits:?}"
            );
        }
    }

    #[test]
    fn drawn_faults_last_a_fraction_of_the_session_timeout() {
        let mut p = plan(&SimConfig::default());
        let timeout = 10_000_000_000;
        for _ in 0..100 {
            let Fault::Pause { client, duration } = p.draw_fault(FaultKind::Pause, 2, timeout, 1)
            else {
                panic!("a pause");
            };
            assert_eq!(client, 2);
            assert!((15..=20).contains(&duration.as_secs()), "{duration:?}");
            match p.draw_fault(FaultKind::Partition, 0, timeout, 3) {
                Fault::Partition {
                    cut: Cut::Server { server },
                    ..
                } => assert!(server < 3),
                Fault::Partition {
                    cut: Cut::Client { client, .. },
                    ..
                } => assert_eq!(client, 0),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn buggify_points_are_live_per_run_and_fire_a_quarter_of_the_time() {
        let off = &mut plan(&SimConfig::default());
        assert!(!off.buggify(("f.rs", 1, 1)));
        let config = SimConfig {
            buggify: true,
            ..SimConfig::default()
        };
        let mut p = plan(&config);
        let sites: Vec<Site> = (0..40).map(|l| ("f.rs", l, 1)).collect();
        let mut fired_at = BTreeMap::<Site, u64>::new();
        for _ in 0..200 {
            for &site in &sites {
                *fired_at.entry(site).or_default() += u64::from(p.buggify(site));
            }
        }
        let live = fired_at.values().filter(|&&n| n > 0).count();
        assert!(
            (10..=30).contains(&live),
            "about half the points are live: {live}"
        );
        assert_eq!(p.buggified(), fired_at.values().sum::<u64>());
        for n in fired_at.values().filter(|&&n| n > 0) {
            assert!(
                (20..=80).contains(n),
                "a live point fires about 50 times in 200: {n}"
            );
        }
    }
}
