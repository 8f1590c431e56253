//! The seeded chooser: one `u64` seed, split into independent named streams.
//!
//! Every nondeterministic decision of a run draws from one of these streams. Each stream is
//! ChaCha8 (a named algorithm whose output never changes between releases, unlike `StdRng`)
//! keyed by the seed, on its own ChaCha *stream number*, so streams never overlap and drawing
//! more from one (say, a new fault kind) leaves the others' sequences untouched: the
//! workload makes the same choices whatever faults are switched on.
//!
//! Only `next_u64` is used, with our own reduction to ranges, so that a change in `rand`'s
//! sampling algorithms cannot change a recorded run either.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// What a stream decides; its number is its ChaCha stream.
///
/// ```
/// assert_ne!(avout_sim_zk::rng::Stream::Network as u64, avout_sim_zk::rng::Stream::Faults as u64);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stream {
    /// Message latencies.
    Network = 1,
    /// Which faults fire, where and for how long.
    Faults = 2,
    /// The workload's own choices (handed to the workload closure).
    Workload = 3,
}

/// One named stream of random numbers.
///
/// ```
/// use avout_sim_zk::rng::{Rng, Stream};
/// let mut a = Rng::new(42, Stream::Workload);
/// let mut b = Rng::new(42, Stream::Workload);
/// assert_eq!(a.below(1000), b.below(1000));
/// ```
#[derive(Clone, Debug)]
pub struct Rng(ChaCha8Rng);

impl Rng {
    /// The stream `stream` of run `seed`.
    ///
    /// ```
    /// let _ = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Faults);
    /// ```
    pub fn new(seed: u64, stream: Stream) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream as u64);
        Rng(rng)
    }

    /// The next raw 64 bits.
    ///
    /// ```
    /// let mut r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Network);
    /// let _ = r.next_u64();
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (`n > 0`), by Lemire's multiply-shift (bias below 2^-32 for the
    /// ranges used here).
    ///
    /// ```
    /// let mut r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Network);
    /// assert!(r.below(10) < 10);
    /// ```
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    ///
    /// ```
    /// let mut r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Network);
    /// let x = r.between(5, 7);
    /// assert!((5..=7).contains(&x));
    /// ```
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "between({lo}, {hi})");
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `p` (compared in millionths, so tiny rates still fire).
    ///
    /// ```
    /// let mut r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Faults);
    /// assert!(!r.chance(0.0));
    /// assert!(r.chance(1.0));
    /// ```
    pub fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        let threshold = (p.min(1.0) * 1_000_000.0).round() as u64;
        self.below(1_000_000) < threshold
    }
}

impl RngCore for Rng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.0.fill_bytes(dst);
    }
}
