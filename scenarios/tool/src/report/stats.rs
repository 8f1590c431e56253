//! Statistics over seeds: the mean of a quantity and its 95% confidence interval (Student's
//! t, since a sweep point has a handful of seeds), and nearest-rank percentiles of latencies.
//!
//! Each seed of a point is one independent run, so the runs' values are independent draws of
//! the same quantity; the interval is `mean ± t(0.975, n-1) · s / √n`, with `s` the sample
//! standard deviation. With one seed there is no interval (it is reported as zero width, and
//! the tables say how many seeds there were).

/// The mean of a sample and the half-width of its 95% confidence interval.
///
/// ```
/// use avout_cli::report::stats::Estimate;
/// let e = Estimate::of(&[1.0, 2.0, 3.0]);
/// assert_eq!(e.mean, 2.0);
/// assert!((e.half_width - 2.484).abs() < 0.001); // t(0.975, 2) = 4.303; s = 1
/// assert!(e.contains(3.0) && !e.contains(4.6));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The sample mean (0 for an empty sample).
    pub mean: f64,
    /// The half-width of the 95% interval (0 for fewer than two values).
    pub half_width: f64,
    /// How many values.
    pub n: usize,
}

impl Estimate {
    /// The estimate from a sample.
    ///
    /// ```
    /// let e = avout_cli::report::stats::Estimate::of(&[5.0]);
    /// assert_eq!((e.mean, e.half_width, e.n), (5.0, 0.0, 1));
    /// ```
    pub fn of(values: &[f64]) -> Estimate {
        let n = values.len();
        if n == 0 {
            return Estimate {
                mean: 0.0,
                half_width: 0.0,
                n,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Estimate {
                mean,
                half_width: 0.0,
                n,
            };
        }
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Estimate {
            mean,
            half_width: t975(n - 1) * (var / n as f64).sqrt(),
            n,
        }
    }

    /// The interval's lower end.
    ///
    /// ```
    /// let e = avout_cli::report::stats::Estimate::of(&[2.0, 2.0]);
    /// assert_eq!(e.low(), 2.0);
    /// ```
    pub fn low(&self) -> f64 {
        self.mean - self.half_width
    }

    /// The interval's upper end.
    ///
    /// ```
    /// let e = avout_cli::report::stats::Estimate::of(&[2.0, 4.0]);
    /// assert!(e.high() > 4.0);
    /// ```
    pub fn high(&self) -> f64 {
        self.mean + self.half_width
    }

    /// Whether `x` lies in the interval.
    ///
    /// ```
    /// let e = avout_cli::report::stats::Estimate::of(&[1.0, 3.0]);
    /// assert!(e.contains(2.0));
    /// ```
    pub fn contains(&self, x: f64) -> bool {
        self.low() <= x && x <= self.high()
    }

    /// Whether the two intervals overlap (the difference is not significant at this level).
    ///
    /// ```
    /// use avout_cli::report::stats::Estimate;
    /// let a = Estimate::of(&[1.0, 1.1, 0.9]);
    /// let b = Estimate::of(&[5.0, 5.1, 4.9]);
    /// assert!(!a.overlaps(&b) && a.overlaps(&a));
    /// ```
    pub fn overlaps(&self, other: &Estimate) -> bool {
        self.low() <= other.high() && other.low() <= self.high()
    }
}

/// Student's t quantile at 0.975 for `df` degrees of freedom (table to 30, then the values
/// at 40, 60 and 120, then the normal 1.960); `df` 0 gives infinity.
///
/// ```
/// use avout_cli::report::stats::t975;
/// assert_eq!(t975(1), 12.706);
/// assert_eq!(t975(9), 2.262);
/// assert_eq!(t975(1000), 1.960);
/// ```
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        31..=40 => 2.021,
        41..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// The nearest-rank `p`-th percentile (0 < p ≤ 100) of `sorted` (ascending); `None` for an
/// empty sample.
///
/// ```
/// use avout_cli::report::stats::percentile;
/// let v: Vec<u64> = (1..=100).collect();
/// assert_eq!(percentile(&v, 50.0), Some(50));
/// assert_eq!(percentile(&v, 99.0), Some(99));
/// assert_eq!(percentile(&v, 100.0), Some(100));
/// assert_eq!(percentile(&[7], 1.0), Some(7));
/// assert_eq!(percentile(&[], 50.0), None);
/// ```
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "sorted input");
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_matches_a_hand_computation() {
        // Values 10, 12, 14, 16: mean 13, s = sqrt(20/3) = 2.582, t(3) = 3.182.
        let e = Estimate::of(&[10.0, 12.0, 14.0, 16.0]);
        assert_eq!(e.mean, 13.0);
        let expected = 3.182 * (20.0f64 / 3.0).sqrt() / 2.0;
        assert!((e.half_width - expected).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn constant_samples_have_no_width() {
        let e = Estimate::of(&[4.0; 8]);
        assert_eq!((e.mean, e.half_width), (4.0, 0.0));
    }

    #[test]
    fn percentiles_round_up_to_a_rank() {
        let v = [10, 20, 30];
        assert_eq!(percentile(&v, 50.0), Some(20));
        assert_eq!(percentile(&v, 34.0), Some(20));
        assert_eq!(percentile(&v, 33.0), Some(10));
        assert_eq!(percentile(&v, 99.0), Some(30));
    }
}
