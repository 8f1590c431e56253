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
//!
//! A workload's clients have streams of their own ([`ClientStream`]): one per client and name,
//! a function of the seed, the client's index and the name only, so that what a client
//! decides depends on nothing else — not the faults, not the latencies, not the other clients,
//! and not whether the run is simulated at all (a workload on a real ensemble draws the same
//! choices from the same seed).

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
    /// Unique ids recipes put in node names ([`avout::Coordination::new_guid`]).
    Guids = 4,
    /// Which buggify points are live and when they fire ([`avout::buggify`]).
    Buggify = 5,
    /// How long a connection broken by a lost message takes to come back: its own stream, so
    /// that a lost message scheduled explicitly breaks the connection for as long as the
    /// same loss drawn at a rate did (the fault stream is not drawn by scheduled faults).
    Reconnects = 6,
    /// Which server of an ensemble a new session connects to (a client picks one from its
    /// connect string): its own stream, so placing sessions shifts no other choice.
    Placement = 7,
    /// A run's fault mix under swarm testing ([`crate::FaultRates::swarm`]): its own stream,
    /// so drawing the mix moves none of the run's other choices.
    Swarm = 8,
}

/// One named stream of random numbers.
///
/// A stream can also *record* the raw numbers it hands out, or *replay* a recorded list (a
/// tape) instead of computing them: a replay file is a seed, a configuration and the tapes.
///
/// ```
/// use avout_sim_zk::rng::{Rng, Stream};
/// let mut a = Rng::new(42, Stream::Workload);
/// let mut b = Rng::new(42, Stream::Workload);
/// assert_eq!(a.below(1000), b.below(1000));
/// ```
#[derive(Clone, Debug)]
pub struct Rng {
    source: Source,
    recording: Option<Vec<u64>>,
    seed: u64,
    stream: Stream,
    /// How many numbers it handed out, so a failed run can rebuild its tape without having
    /// recorded it (see [`Rng::drawn_so_far`]).
    drawn: u64,
}

#[derive(Clone, Debug)]
enum Source {
    ChaCha(ChaCha8Rng),
    /// A tape, then (if the run asks for more) the seeded stream.
    Tape {
        tape: Vec<u64>,
        next: usize,
        fallback: ChaCha8Rng,
        exhausted: bool,
    },
}

impl Rng {
    /// The stream `stream` of run `seed`.
    ///
    /// ```
    /// let _ = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Faults);
    /// ```
    pub fn new(seed: u64, stream: Stream) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream as u64);
        Rng {
            source: Source::ChaCha(rng),
            recording: None,
            seed,
            stream,
            drawn: 0,
        }
    }

    /// The same stream, recording every number it hands out.
    ///
    /// ```
    /// use avout_sim_zk::rng::{Rng, Stream};
    /// let mut r = Rng::recording(1, Stream::Network);
    /// let x = r.next_u64();
    /// assert_eq!(r.take_recording(), vec![x]);
    /// ```
    pub fn recording(seed: u64, stream: Stream) -> Self {
        Rng {
            recording: Some(Vec::new()),
            ..Self::new(seed, stream)
        }
    }

    /// A stream that hands out `tape`, in order, then continues with stream `stream` of
    /// `seed`. A faithful replay never reaches the end of its tape; an edited one may (fewer
    /// faults, say, means a different number of requests), and then carries on with fresh
    /// choices, which [`Rng::tape_exhausted`] reports.
    ///
    /// ```
    /// use avout_sim_zk::rng::{Rng, Stream};
    /// let mut r = Rng::from_tape(vec![7, 8], 1, Stream::Network);
    /// assert_eq!((r.next_u64(), r.next_u64()), (7, 8));
    /// assert!(!r.tape_exhausted());
    /// r.next_u64();
    /// assert!(r.tape_exhausted());
    /// ```
    pub fn from_tape(tape: Vec<u64>, seed: u64, stream: Stream) -> Self {
        let Source::ChaCha(fallback) = Self::new(seed, stream).source else {
            unreachable!("Rng::new makes a ChaCha stream")
        };
        Rng {
            source: Source::Tape {
                tape,
                next: 0,
                fallback,
                exhausted: false,
            },
            recording: None,
            seed,
            stream,
            drawn: 0,
        }
    }

    /// Whether a replayed stream ran past the end of its tape.
    ///
    /// ```
    /// let r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Network);
    /// assert!(!r.tape_exhausted());
    /// ```
    pub fn tape_exhausted(&self) -> bool {
        matches!(
            self.source,
            Source::Tape {
                exhausted: true,
                ..
            }
        )
    }

    /// The numbers recorded so far (empty unless made by [`Rng::recording`]).
    ///
    /// ```
    /// let mut r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Network);
    /// r.next_u64();
    /// assert!(r.take_recording().is_empty());
    /// ```
    pub fn take_recording(&mut self) -> Vec<u64> {
        self.recording
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Every number handed out so far, in order, whether or not the stream was recording:
    /// rebuilt from the seed (and the tape, for a replayed stream). This is how a failed run
    /// writes a replay file without the cost of recording every run.
    ///
    /// ```
    /// use avout_sim_zk::rng::{Rng, Stream};
    /// let mut r = Rng::new(8, Stream::Faults);
    /// let drawn = vec![r.next_u64(), r.next_u64()];
    /// assert_eq!(r.drawn_so_far(), drawn);
    /// let mut t = Rng::from_tape(vec![1], 8, Stream::Faults);
    /// let drawn = vec![t.next_u64(), t.next_u64()];
    /// assert_eq!(t.drawn_so_far(), drawn);
    /// ```
    pub fn drawn_so_far(&self) -> Vec<u64> {
        let drawn = usize::try_from(self.drawn).expect("draw count fits in memory");
        let (mut out, fresh) = match &self.source {
            Source::ChaCha(_) => (Vec::with_capacity(drawn), drawn),
            Source::Tape { tape, next, .. } => (tape[..*next].to_vec(), drawn - *next),
        };
        let mut again = Rng::new(self.seed, self.stream);
        out.extend((0..fresh).map(|_| again.next_u64()));
        out
    }

    /// The next raw 64 bits.
    ///
    /// ```
    /// let mut r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Network);
    /// let _ = r.next_u64();
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        let x = match &mut self.source {
            Source::ChaCha(rng) => rng.next_u64(),
            Source::Tape {
                tape,
                next,
                fallback,
                exhausted,
            } => match tape.get(*next) {
                Some(&x) => {
                    *next += 1;
                    x
                }
                None => {
                    *exhausted = true;
                    fallback.next_u64()
                }
            },
        };
        self.drawn += 1;
        if let Some(rec) = &mut self.recording {
            rec.push(x);
        }
        x
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

    /// True with probability `p` (compared in millionths). A zero rate draws nothing, so
    /// switching a fault kind off leaves the other draws where they were.
    ///
    /// ```
    /// let mut r = avout_sim_zk::rng::Rng::new(1, avout_sim_zk::rng::Stream::Faults);
    /// assert!(!r.chance(0.0));
    /// assert!(r.chance(1.0));
    /// ```
    pub fn chance(&mut self, p: f64) -> bool {
        self.hits(Odds::new(p))
    }

    /// [`chance`](Self::chance) with its odds worked out beforehand: the same draw.
    pub(crate) fn hits(&mut self, odds: Odds) -> bool {
        match odds.0 {
            None => false,
            Some(threshold) => self.below(1_000_000) < threshold,
        }
    }
}

/// A probability as [`Rng::chance`] draws it: none at all for zero (or less), else a draw
/// below a million against this threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Odds(Option<u64>);

impl Odds {
    pub(crate) fn new(p: f64) -> Self {
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN draws, as it always did
        let draws = !(p <= 0.0);
        Odds(draws.then(|| (p.min(1.0) * 1_000_000.0).round() as u64))
    }
}

impl RngCore for Rng {
    fn next_u32(&mut self) -> u32 {
        (Rng::next_u64(self) >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        Rng::next_u64(self)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let bytes = Rng::next_u64(self).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// A workload client's own stream of random choices, by name: ChaCha8 keyed by the run's
/// seed, the client's index and the stream's eight-byte name (each a key of its own, so no two
/// streams overlap). It draws the same on the simulator and on a real ensemble: the simulator's
/// [`Stream`]s are not involved.
///
/// ```
/// use avout_sim_zk::rng::ClientStream;
/// use rand::Rng;
/// let mut a = ClientStream::CHOICES.rng(7, 1);
/// let mut b = ClientStream::CHOICES.rng(7, 1);
/// assert_eq!(a.random::<u64>(), b.random::<u64>());
/// let mut c = ClientStream::LEADER.rng(7, 1);
/// assert_ne!(ClientStream::CHOICES.rng(7, 1).random::<u64>(), c.random::<u64>());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientStream([u8; 8]);

impl ClientStream {
    /// A client's main choices: what its next operation is, and with what.
    pub const CHOICES: ClientStream = ClientStream(*b"workload");

    /// The choices of a part of a client that runs beside its main loop (its leadership).
    pub const LEADER: ClientStream = ClientStream(*b"leader..");

    /// The stream named `name`, for a part of a client of its own.
    ///
    /// ```
    /// use avout_sim_zk::rng::ClientStream;
    /// assert_eq!(ClientStream::named(*b"workload"), ClientStream::CHOICES);
    /// ```
    pub const fn named(name: [u8; 8]) -> Self {
        ClientStream(name)
    }

    /// Client `client`'s stream of this name in the run of `seed`.
    pub fn rng(self, seed: u64, client: usize) -> ChaCha8Rng {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&(client as u64).to_le_bytes());
        key[16..24].copy_from_slice(&self.0);
        ChaCha8Rng::from_seed(key)
    }
}
