//! How `cache-lag` judges a run: each acknowledged write is matched with the cache's first
//! event for its node that carries its version or a later one, and its lag is that event's
//! arrival minus the write's acknowledgement, both read from one monotonic clock in one
//! process. No I/O here: times come in as offsets from the run's start.
//!
//! A cache re-reads a node after its watch fires, so two writes to one node close together can
//! be reported as one event carrying the later version. The earlier write is then *coalesced*:
//! the cache caught up with it (its lag is counted), but no event carried its version. A write
//! no event caught up with is *unseen*. An event repeating a version already reported for its
//! node is a *duplicate*, one with an older version than an earlier event a *regression*.

use std::collections::BTreeMap;
use std::time::Duration;

/// A write the writer's session acknowledged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ack {
    /// The node written.
    pub(crate) path: String,
    /// The version the write produced.
    pub(crate) version: i32,
    /// When the acknowledgement arrived, from the run's start.
    pub(crate) at: Duration,
}

/// A change event the cache delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The node.
    pub(crate) path: String,
    /// The version the event carries.
    pub(crate) version: i32,
    /// When the event was taken from the cache, from the run's start.
    pub(crate) at: Duration,
}

/// The verdict on one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Judged {
    /// Lag per caught-up write in microseconds, sorted; negative when the event was taken
    /// before the writer's task took the acknowledgement.
    pub(crate) lags_us: Vec<i64>,
    /// Writes caught up with by an event carrying a later version.
    pub(crate) coalesced: u64,
    /// Writes no event caught up with.
    pub(crate) unseen: u64,
    /// Events repeating a version already reported for their node.
    pub(crate) duplicates: u64,
    /// Events older than an event reported before them for their node.
    pub(crate) regressions: u64,
}

impl Judged {
    /// The `q` quantile of the lags in microseconds (nearest rank); 0 with no lags.
    pub(crate) fn lag_quantile_us(&self, q: f64) -> i64 {
        if self.lags_us.is_empty() {
            return 0;
        }
        let rank = ((q * self.lags_us.len() as f64).ceil() as usize).clamp(1, self.lags_us.len());
        self.lags_us[rank - 1]
    }

    /// Lags below zero (the event was taken before the acknowledgement was).
    pub(crate) fn early(&self) -> usize {
        self.lags_us.partition_point(|&l| l < 0)
    }
}

/// Matches `acks` with `seen` (in arrival order).
pub(crate) fn judge(acks: &[Ack], seen: &[Seen]) -> Judged {
    let mut judged = Judged::default();
    let mut by_path: BTreeMap<&str, Vec<&Seen>> = BTreeMap::new();
    for event in seen {
        let earlier = by_path.entry(&event.path).or_default();
        if let Some(top) = earlier.iter().map(|e| e.version).max() {
            if earlier.iter().any(|e| e.version == event.version) {
                judged.duplicates += 1;
            } else if event.version < top {
                judged.regressions += 1;
            }
        }
        earlier.push(event);
    }
    for ack in acks {
        let first = by_path
            .get(ack.path.as_str())
            .and_then(|events| events.iter().find(|e| e.version >= ack.version));
        match first {
            Some(event) => {
                if event.version > ack.version {
                    judged.coalesced += 1;
                }
                let lag = event.at.as_micros() as i64 - ack.at.as_micros() as i64;
                judged.lags_us.push(lag);
            }
            None => judged.unseen += 1,
        }
    }
    judged.lags_us.sort_unstable();
    judged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(path: &str, version: i32, ms: u64) -> Ack {
        Ack {
            path: path.into(),
            version,
            at: Duration::from_millis(ms),
        }
    }

    fn seen(path: &str, version: i32, ms: u64) -> Seen {
        Seen {
            path: path.into(),
            version,
            at: Duration::from_millis(ms),
        }
    }

    #[test]
    fn each_write_is_matched_with_the_first_event_that_caught_up_with_it() {
        let acks = [
            ack("/a", 1, 10),
            ack("/a", 2, 11),
            ack("/b", 1, 20),
            ack("/c", 1, 30),
        ];
        // /a's two writes are reported as one event at version 2; /b's event is taken before
        // its acknowledgement; /c's never comes.
        let events = [seen("/a", 2, 14), seen("/b", 1, 19), seen("/a", 2, 15)];
        let judged = judge(&acks, &events);
        assert_eq!(judged.lags_us, [-1000, 3000, 4000]);
        assert_eq!(judged.coalesced, 1);
        assert_eq!(judged.unseen, 1);
        assert_eq!(judged.duplicates, 1);
        assert_eq!(judged.regressions, 0);
        assert_eq!(judged.early(), 1);
        assert_eq!(judged.lag_quantile_us(0.5), 3000);
        assert_eq!(judged.lag_quantile_us(1.0), 4000);
    }

    #[test]
    fn an_older_version_after_a_newer_one_is_a_regression() {
        let events = [seen("/a", 3, 1), seen("/a", 2, 2), seen("/a", 2, 3)];
        let judged = judge(&[ack("/a", 3, 0)], &events);
        assert_eq!((judged.regressions, judged.duplicates), (1, 1));
        assert_eq!(judged.lags_us, [1000]);
        assert_eq!(Judged::default().lag_quantile_us(0.99), 0);
    }
}
