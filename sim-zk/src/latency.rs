//! A latency model fitted from a real ZooKeeper: the time a server takes to answer each
//! class of request (read, write, `sync`, `multi`), as the empirical distribution of round
//! trips measured against it, less the network's share.
//!
//! Without a model the simulator draws every one-way message latency uniformly from
//! [`SimConfig::min_latency`](crate::SimConfig)–[`max_latency`](crate::SimConfig) and applies
//! a request the moment it arrives: a write costs what a read costs. A real server does not
//! work that way: on loopback a read takes about 0.15 ms and a write waits for its
//! transaction log's fsync (and, in an ensemble, for a quorum's). [`LatencyModel::fit`] takes
//! round trips measured one at a time by one client (`avout report latency` measures them)
//! and makes the simulated round trip of each class follow the measured distribution: the
//! network's one-way latency becomes a constant (half the fastest read), and the rest of each
//! measured round trip becomes the class's service time, drawn per request by inverse
//! transform from its quantiles.
//!
//! The kernel still applies a request when it arrives; the service time delays its reply
//! (and, links being FIFO, whatever follows it to that client). What the model leaves out:
//! queueing (a real leader serialises writes and batches their fsyncs, so service times grow
//! with load, where drawn ones do not), and the cost of watch events.
//!
//! ```
//! use std::time::Duration;
//! use avout_sim_zk::latency::{LatencyModel, RequestClass, Samples};
//! let us = |v: &[u64]| v.iter().map(|&u| Duration::from_micros(u)).collect::<Vec<_>>();
//! let samples = Samples {
//!     read: us(&[150, 160, 170, 200]),
//!     write: us(&[350, 400, 420, 900]),
//!     sync: us(&[300, 320, 330, 600]),
//!     multi: us(&[400, 450, 470, 1000]),
//! };
//! let model = LatencyModel::fit(&samples, Duration::from_millis(1)).unwrap();
//! assert_eq!(model.one_way, Duration::from_micros(75));
//! // A write's round trip: 2 × 75 µs of network and a service time of 200–750 µs.
//! assert_eq!(model.service.write.quantile(0.0), Duration::from_micros(200));
//! assert_eq!(model.service.write.quantile(1.0), Duration::from_micros(750));
//! assert_eq!(model.mean_round_trip(RequestClass::Write), Duration::from_micros(5175) / 10);
//! ```

use std::time::Duration;

use avout::Request;
use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// How many values a fitted distribution keeps: its quantiles at probabilities
/// `(i + 0.5) / QUANTILES`, each drawn with equal probability. A thousand keep the mean of
/// a heavy-tailed sample (a write's rare 100 ms fsync) where a few dozen interpolated up to
/// the maximum would inflate it several times over.
pub const QUANTILES: usize = 1000;

/// Why a latency model cannot be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LatencyError {
    /// A class of request has no sample.
    #[error("no {0} round trips measured")]
    NoSamples(&'static str),
    /// A distribution has no value, or its values are not in increasing order.
    #[error("quantiles must be at least two, in increasing order")]
    BadQuantiles,
}

/// Which of the model's distributions a request's service time comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestClass {
    /// Reads (`get`, `exists`, children, ACLs, watches): served by the session's server.
    Read,
    /// A single write: the leader's proposal, a quorum's fsync and the commit.
    Write,
    /// `sync`: a round through the leader, with no write.
    Sync,
    /// A `multi`: one transaction, however many operations.
    Multi,
}

impl RequestClass {
    /// The class of `request`.
    ///
    /// ```
    /// use avout::Request;
    /// use avout_sim_zk::latency::RequestClass;
    /// let sync = Request::Sync { path: "/a".into() };
    /// assert_eq!(RequestClass::of(&sync), RequestClass::Sync);
    /// ```
    pub fn of(request: &Request) -> RequestClass {
        match request {
            Request::Sync { .. } => RequestClass::Sync,
            Request::Multi(_) => RequestClass::Multi,
            r if r.is_write() => RequestClass::Write,
            _ => RequestClass::Read,
        }
    }
}

/// A distribution given by values of equal probability (its quantiles at equally spaced
/// probabilities), in nanoseconds, in increasing order; a draw picks one of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<u64>", into = "Vec<u64>")]
pub struct Quantiles {
    nanos: Vec<u64>,
}

impl TryFrom<Vec<u64>> for Quantiles {
    type Error = LatencyError;

    fn try_from(nanos: Vec<u64>) -> Result<Self, LatencyError> {
        if nanos.is_empty() || nanos.windows(2).any(|w| w[0] > w[1]) {
            return Err(LatencyError::BadQuantiles);
        }
        Ok(Quantiles { nanos })
    }
}

impl From<Quantiles> for Vec<u64> {
    fn from(q: Quantiles) -> Vec<u64> {
        q.nanos
    }
}

impl Quantiles {
    /// The [`QUANTILES`] quantiles of `samples` less `offset` (saturating at zero), at
    /// probabilities `(i + 0.5) / QUANTILES`, each a measured value; `None` without samples.
    ///
    /// ```
    /// use std::time::Duration;
    /// use avout_sim_zk::latency::Quantiles;
    /// let ms = Duration::from_millis;
    /// let q = Quantiles::of(&[ms(3), ms(1), ms(2)], ms(1)).unwrap();
    /// assert_eq!(q.quantile(0.5), ms(1));
    /// assert_eq!(q.mean(), ms(1));
    /// ```
    pub fn of(samples: &[Duration], offset: Duration) -> Option<Quantiles> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted: Vec<u64> = samples
            .iter()
            .map(|d| d.saturating_sub(offset).as_nanos() as u64)
            .collect();
        sorted.sort_unstable();
        let n = sorted.len();
        let nanos = (0..QUANTILES)
            .map(|i| sorted[(2 * i + 1) * n / (2 * QUANTILES)])
            .collect();
        Some(Quantiles { nanos })
    }

    /// The quantile at probability `p` (clamped to 0–1).
    pub fn quantile(&self, p: f64) -> Duration {
        let n = self.nanos.len();
        let i = ((p.clamp(0.0, 1.0) * n as f64) as usize).min(n - 1);
        Duration::from_nanos(self.nanos[i])
    }

    /// A value drawn from the distribution.
    pub(crate) fn draw(&self, rng: &mut Rng) -> u64 {
        self.nanos[rng.below(self.nanos.len() as u64) as usize]
    }

    /// The mean.
    pub fn mean(&self) -> Duration {
        let sum: u128 = self.nanos.iter().map(|&v| u128::from(v)).sum();
        Duration::from_nanos((sum / self.nanos.len() as u128) as u64)
    }
}

/// The service time of each class of request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceTimes {
    /// Reads.
    pub read: Quantiles,
    /// Single writes.
    pub write: Quantiles,
    /// `sync`.
    pub sync: Quantiles,
    /// `multi`.
    pub multi: Quantiles,
}

impl ServiceTimes {
    /// The distribution of `class`.
    pub fn of(&self, class: RequestClass) -> &Quantiles {
        match class {
            RequestClass::Read => &self.read,
            RequestClass::Write => &self.write,
            RequestClass::Sync => &self.sync,
            RequestClass::Multi => &self.multi,
        }
    }
}

/// Round trips measured against a real ZooKeeper, one request at a time, by class.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// `get` round trips.
    pub read: Vec<Duration>,
    /// `set` round trips.
    pub write: Vec<Duration>,
    /// `sync` round trips.
    pub sync: Vec<Duration>,
    /// Round trips of a `multi` of two `set`s.
    pub multi: Vec<Duration>,
}

/// A simulator latency model: a constant one-way network latency, followers trailing the
/// leader by `follower_lag`, and a service time per class of request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyModel {
    /// One-way message latency.
    pub one_way: Duration,
    /// How far the first follower trails the leader (the simulator's followers trail in
    /// whole milliseconds: follower `i` by `(i + 1)` times this).
    pub follower_lag: Duration,
    /// Each class's service time.
    pub service: ServiceTimes,
}

impl LatencyModel {
    /// The model whose round trips follow `samples`: the one-way latency is half the fastest
    /// read, and each class's service time the rest of its round trips.
    ///
    /// # Errors
    ///
    /// [`LatencyError::NoSamples`] if a class has none.
    pub fn fit(samples: &Samples, follower_lag: Duration) -> Result<LatencyModel, LatencyError> {
        let fastest = samples
            .read
            .iter()
            .min()
            .ok_or(LatencyError::NoSamples("read"))?;
        let one_way = *fastest / 2;
        let network = one_way * 2;
        let fit =
            |v: &[Duration], name| Quantiles::of(v, network).ok_or(LatencyError::NoSamples(name));
        Ok(LatencyModel {
            one_way,
            follower_lag,
            service: ServiceTimes {
                read: fit(&samples.read, "read")?,
                write: fit(&samples.write, "write")?,
                sync: fit(&samples.sync, "sync")?,
                multi: fit(&samples.multi, "multi")?,
            },
        })
    }

    /// The mean simulated round trip of `class`.
    pub fn mean_round_trip(&self, class: RequestClass) -> Duration {
        self.one_way * 2 + self.service.of(class).mean()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Stream;

    #[test]
    fn draws_take_each_value_equally_often() {
        let q = Quantiles::try_from(vec![100, 200, 1000, 1000]).unwrap();
        let mut rng = Rng::new(7, Stream::Network);
        let draws: Vec<u64> = (0..10_000).map(|_| q.draw(&mut rng)).collect();
        assert!(draws.iter().all(|&d| [100, 200, 1000].contains(&d)));
        let slow = draws.iter().filter(|&&d| d == 1000).count();
        assert!((4_500..5_500).contains(&slow), "{slow}");
    }

    #[test]
    fn a_heavy_tail_keeps_its_mean() {
        // 999 fast round trips and one 1000 times slower: the mean is about twice the fast.
        let mut samples = vec![Duration::from_micros(100); 999];
        samples.push(Duration::from_millis(100));
        let q = Quantiles::of(&samples, Duration::ZERO).unwrap();
        let mean = q.mean().as_micros();
        assert!((150..=250).contains(&mean), "{mean}");
    }

    #[test]
    fn unordered_or_no_quantiles_are_refused() {
        assert_eq!(Quantiles::try_from(vec![]), Err(LatencyError::BadQuantiles));
        assert_eq!(
            Quantiles::try_from(vec![5, 3]),
            Err(LatencyError::BadQuantiles)
        );
        let json = serde_json::to_string(&vec![2u64, 1]).unwrap();
        assert!(serde_json::from_str::<Quantiles>(&json).is_err());
    }

    #[test]
    fn a_class_without_samples_is_refused() {
        let samples = Samples {
            read: vec![Duration::from_micros(100)],
            ..Samples::default()
        };
        assert_eq!(
            LatencyModel::fit(&samples, Duration::ZERO),
            Err(LatencyError::NoSamples("write"))
        );
    }

    #[test]
    fn requests_fall_in_their_classes() {
        let get = Request::GetData {
            path: "/a".into(),
            watch: false,
        };
        let set = Request::SetData {
            path: "/a".into(),
            data: vec![],
            version: None,
        };
        assert_eq!(RequestClass::of(&get), RequestClass::Read);
        assert_eq!(RequestClass::of(&set), RequestClass::Write);
        assert_eq!(
            RequestClass::of(&Request::Multi(vec![])),
            RequestClass::Multi
        );
    }

    #[test]
    fn the_mean_is_the_values_average() {
        let q = Quantiles::try_from(vec![0, 1000]).unwrap();
        assert_eq!(q.mean(), Duration::from_nanos(500));
    }
}
