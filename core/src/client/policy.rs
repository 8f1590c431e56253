//! How the managed client paces its attempts to open a new session.

use std::time::Duration;

use crate::Error;

/// Exponential backoff with jitter for opening a new session after the last one ended.
///
/// The first attempt after a session ends is made at once. After the `n`-th failed attempt
/// the client waits `d/2 + u·d/2`, where `d = min(max_delay, base_delay · 2^(n-1))` and `u` is
/// uniform in `[0, 1]` ("equal jitter": never less than half the backoff, so a crowd of
/// clients spreads out without any of them hammering the ensemble). The randomness comes
/// from the connector ([`Connect::jitter`](super::Connect::jitter)): the operating system on
/// a real ensemble, the run's seed on the simulator.
///
/// With `max_attempts`, the client gives up after that many failed attempts in a row and ends
/// (every call then fails with the last attempt's error); without, it tries for as long as it
/// lives, which is what a long-running service wants through an ensemble's outage.
///
/// ```
/// use std::time::Duration;
/// use avout::client::RetryPolicy;
///
/// let policy = RetryPolicy::exponential(Duration::from_millis(100), Duration::from_secs(2))
///     .unwrap()
///     .with_max_attempts(10);
/// // The 3rd failure waits between 200 and 400 ms, whatever the random number.
/// for random in [0, u64::MAX / 3, u64::MAX] {
///     let d = policy.delay(3, random);
///     assert!(d >= Duration::from_millis(200) && d <= Duration::from_millis(400));
/// }
/// // Later ones are capped at max_delay.
/// assert!(policy.delay(30, u64::MAX) <= Duration::from_secs(2));
/// assert!(policy.gives_up(10) && !policy.gives_up(9));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    base_delay: Duration,
    max_delay: Duration,
    max_attempts: Option<u32>,
}

impl Default for RetryPolicy {
    /// 100 ms doubling to at most 5 s, without a limit on attempts.
    fn default() -> Self {
        RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            max_attempts: None,
        }
    }
}

impl RetryPolicy {
    /// Backoff from `base_delay`, doubling, capped at `max_delay`, without a limit on
    /// attempts. Fails with [`Error::BadArguments`] if a delay is zero or the cap is below
    /// the base.
    ///
    /// ```
    /// use std::time::Duration;
    /// use avout::client::RetryPolicy;
    /// assert!(RetryPolicy::exponential(Duration::from_secs(2), Duration::from_secs(1)).is_err());
    /// assert!(RetryPolicy::exponential(Duration::ZERO, Duration::from_secs(1)).is_err());
    /// // A cap equal to the base is a constant delay.
    /// assert!(RetryPolicy::exponential(Duration::from_secs(1), Duration::from_secs(1)).is_ok());
    /// ```
    pub fn exponential(base_delay: Duration, max_delay: Duration) -> Result<Self, Error> {
        if base_delay.is_zero() || max_delay < base_delay {
            return Err(Error::BadArguments(format!(
                "retry policy: want 0 < base delay ({base_delay:?}) <= max delay ({max_delay:?})"
            )));
        }
        Ok(RetryPolicy {
            base_delay,
            max_delay,
            max_attempts: None,
        })
    }

    /// Gives up after `attempts` failed attempts in a row (at least one).
    ///
    /// ```
    /// let p = avout::client::RetryPolicy::default().with_max_attempts(0);
    /// assert!(p.gives_up(1) && !p.gives_up(0));
    /// ```
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = Some(attempts.max(1));
        self
    }

    /// The limit on failed attempts in a row, if any.
    ///
    /// ```
    /// assert_eq!(avout::client::RetryPolicy::default().max_attempts(), None);
    /// ```
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }

    /// Whether the client gives up after `failures` failed attempts in a row.
    ///
    /// ```
    /// assert!(!avout::client::RetryPolicy::default().gives_up(1_000_000));
    /// ```
    pub fn gives_up(&self, failures: u32) -> bool {
        self.max_attempts.is_some_and(|max| failures >= max)
    }

    /// The pause after the `failures`-th failed attempt in a row (counting from 1), given a
    /// uniformly random `random`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = avout::client::RetryPolicy::default();
    /// assert_eq!(p.delay(1, 0), Duration::from_millis(50));
    /// assert_eq!(p.delay(1, u64::MAX), Duration::from_millis(100));
    /// ```
    pub fn delay(&self, failures: u32, random: u64) -> Duration {
        let doublings = failures.saturating_sub(1).min(32);
        let full = self
            .base_delay
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max_delay);
        let half = full / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        // random / u64::MAX of the half, without floating point.
        let jitter = (u128::from(nanos) * u128::from(random) / u128::from(u64::MAX)) as u64;
        half + Duration::from_nanos(jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_then_stay_at_the_cap() {
        let p =
            RetryPolicy::exponential(Duration::from_millis(10), Duration::from_millis(80)).unwrap();
        let top: Vec<_> = (1..=6).map(|n| p.delay(n, u64::MAX).as_millis()).collect();
        assert_eq!(top, [10, 20, 40, 80, 80, 80]);
        let bottom: Vec<_> = (1..=6).map(|n| p.delay(n, 0).as_millis()).collect();
        assert_eq!(bottom, [5, 10, 20, 40, 40, 40]);
    }

    #[test]
    fn huge_attempt_counts_do_not_overflow() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(u32::MAX, u64::MAX), Duration::from_secs(5));
    }
}
