//! Swarm testing: a fault mix drawn per seed.
//!
//! A fixed mix switches every fault kind on at one set of rates, so every run looks alike:
//! kinds that mask one another (a frequent outage hides the slow drift a rare expiry needs)
//! always do, and a state that needs one kind at a high rate is never reached. Swarm testing
//! (Groce, Zhang, Eide, Chen and Regehr, *Swarm Testing*, ISSTA 2012) gives each test its own
//! configuration instead, each feature on or off at random; TigerBeetle's VOPR draws its fault
//! probabilities per seed the same way.
//!
//! [`FaultRates::swarm`] draws a run's mix from its seed, on a stream of its own
//! ([`Stream::Swarm`]), so the workload's, the network's and the faults' own draws do not
//! move: for every kind, in [`FaultKind::ALL`]'s order, a fair coin says whether it is on and a
//! second draw its rate, one of [`STEPS_PER_DOUBLING`] steps per doubling from its range's
//! low end ([`SwarmRange`]), so rates spread evenly on a log scale across one to two orders
//! of magnitude. Every kind draws whether or not the pool holds it, so a kind's rate is a
//! function of the seed and the kind alone. Kinds outside the pool are off; if the coins
//! switched every kind of the pool off, one draw more switches one on.
//!
//! The rates are products of exact constants (no `powf`), so a seed draws the same mix on
//! every platform; a case file records the rates it ran with in any case.

use crate::FaultKind;
use crate::FaultRates;
use crate::rng::{Rng, Stream};

/// The quarter-power of two: a rate is its low end times this, `k` times.
const STEP: f64 = 1.189_207_115_002_721;

/// Steps per doubling of a rate.
pub const STEPS_PER_DOUBLING: u32 = 4;

/// The rates swarm draws one kind's from: `low · 2^(k/4)` for `k` in `0..=steps`.
///
/// ```
/// use avout_sim_zk::{FaultKind, SwarmRange};
/// let r = SwarmRange::of(FaultKind::SessionExpiry);
/// assert!(r.high() > 100.0 * r.low);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwarmRange {
    /// The lowest rate.
    pub low: f64,
    /// How many steps above it the highest is.
    pub steps: u32,
}

impl SwarmRange {
    /// The range of `kind`. Kinds that break a session (expiry, pause, freeze) reach rates
    /// about a hundred times the fixed mix's, where a waiter's session can end while others
    /// queue behind it; the message losses stay below a few percent per request, where a
    /// workload still makes progress.
    pub fn of(kind: FaultKind) -> SwarmRange {
        let (low, steps) = match kind {
            FaultKind::RequestLost | FaultKind::ReplyLost => (0.001, 20),
            FaultKind::Disconnect => (0.0003, 24),
            FaultKind::SessionExpiry => (0.0001, 28),
            FaultKind::Pause => (0.0001, 24),
            FaultKind::StaleReads => (0.0005, 24),
            FaultKind::Outage | FaultKind::LeaderElection | FaultKind::LeaderLag => (0.0001, 20),
            FaultKind::Partition | FaultKind::SlowDisk => (0.0002, 20),
            FaultKind::SessionMoved => (0.0005, 20),
            FaultKind::ClientFreeze => (0.0001, 24),
        };
        SwarmRange { low, steps }
    }

    /// The rate `k` steps above the low end.
    ///
    /// ```
    /// use avout_sim_zk::SwarmRange;
    /// let r = SwarmRange { low: 0.001, steps: 8 };
    /// assert_eq!(r.rate(0), 0.001);
    /// assert!((r.rate(4) - 0.002).abs() < 1e-12);
    /// ```
    pub fn rate(self, k: u32) -> f64 {
        (0..k).fold(self.low, |r, _| r * STEP)
    }

    /// The highest rate.
    pub fn high(self) -> f64 {
        self.rate(self.steps)
    }
}

impl FaultRates {
    /// The fault mix of the run of `seed` under swarm testing, its kinds drawn from `pool`
    /// (see the module docs).
    ///
    /// ```
    /// use avout_sim_zk::{FaultKind, FaultRates};
    /// let a = FaultRates::swarm(7, &FaultKind::DEFAULT);
    /// assert_eq!(a, FaultRates::swarm(7, &FaultKind::DEFAULT));
    /// assert!(a.any() && !a.any_ensemble());
    /// // A kind's rate depends on the seed and the kind, not on the rest of the pool.
    /// let alone = FaultRates::swarm(7, &[FaultKind::ReplyLost]);
    /// assert!(alone.reply_lost > 0.0);
    /// if a.reply_lost > 0.0 {
    ///     assert_eq!(a.reply_lost, alone.reply_lost);
    /// }
    /// assert!(!FaultRates::swarm(7, &[]).any());
    /// ```
    pub fn swarm(seed: u64, pool: &[FaultKind]) -> FaultRates {
        let mut rng = Rng::new(seed, Stream::Swarm);
        let mut rates = FaultRates::default();
        for kind in FaultKind::ALL {
            let on = rng.below(2) == 1;
            let range = SwarmRange::of(kind);
            let k = rng.below(u64::from(range.steps) + 1) as u32;
            if on && pool.contains(&kind) {
                *rates.rate_mut(kind) = range.rate(k);
            }
        }
        let mut pool: Vec<FaultKind> = FaultKind::ALL
            .into_iter()
            .filter(|k| pool.contains(k))
            .collect();
        pool.dedup();
        if !pool.is_empty() && !rates.any() {
            let kind = pool[rng.below(pool.len() as u64) as usize];
            let range = SwarmRange::of(kind);
            *rates.rate_mut(kind) = range.rate(rng.below(u64::from(range.steps) + 1) as u32);
        }
        rates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_on_about_half_the_time_across_its_range() {
        let seeds = 4000u64;
        for kind in FaultKind::ALL {
            let range = SwarmRange::of(kind);
            let drawn: Vec<f64> = (0..seeds)
                .map(|s| FaultRates::swarm(s, &FaultKind::ALL).rate(kind))
                .filter(|&r| r > 0.0)
                .collect();
            let share = drawn.len() as f64 / seeds as f64;
            assert!((0.45..0.56).contains(&share), "{kind:?} on in {share}");
            let lowest = drawn.iter().copied().fold(f64::MAX, f64::min);
            let highest = drawn.iter().copied().fold(0.0, f64::max);
            assert_eq!(lowest, range.low, "{kind:?}");
            assert!((highest - range.high()).abs() < 1e-15, "{kind:?}");
        }
    }

    #[test]
    fn a_pool_of_one_is_always_on_and_others_stay_off() {
        for seed in 0..200 {
            let rates = FaultRates::swarm(seed, &[FaultKind::Pause]);
            assert!(rates.pause > 0.0, "seed {seed}");
            for kind in FaultKind::ALL {
                if kind != FaultKind::Pause {
                    assert_eq!(rates.rate(kind), 0.0);
                }
            }
        }
    }

    #[test]
    fn seeds_draw_different_mixes() {
        let mixes: std::collections::BTreeSet<String> = (0..50)
            .map(|s| format!("{:?}", FaultRates::swarm(s, &FaultKind::DEFAULT)))
            .collect();
        assert!(mixes.len() > 45, "{} distinct mixes of 50", mixes.len());
    }
}
