//! Which elements a take considers and in which order: every element (FIFO and priority
//! queues), one id's elements (the id queue's removal), or the due ones (the delay queue).
//!
//! The id and delay queues put a tag between two `|` separators just before ZooKeeper's
//! sequence number, as Curator's `DistributedIdQueue` and `DistributedDelayQueue` do:
//! `queue-<PPP>-<GUID>-|<tag>|<seq>`.

use super::{ELEMENT, element_key};

/// The separator around an element's tag, as Curator spells it.
pub(crate) const SEPARATOR: char = '|';

/// What a take selects.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Select {
    /// Every element, by (priority, sequence).
    All,
    /// Only the elements tagged with this id, by (priority, sequence).
    Id(String),
    /// The elements whose due time (epoch milliseconds, the tag in hex) has come, by (due,
    /// sequence). `epoch_at_start` is the clock's reading when the take's driver started, its
    /// `Millis(0)`: the machine reads no clock itself.
    Due { epoch_at_start: u64 },
}

/// An element's tag: the text between the two separators before its sequence number.
pub(crate) fn tag(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(ELEMENT)?;
    let mut parts = rest.split(SEPARATOR);
    let (_, tag, seq) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || seq.len() < 10 || !seq.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(tag)
}

/// An element's due time, for the delay queue's names.
pub(crate) fn due(name: &str) -> Option<u64> {
    u64::from_str_radix(tag(name)?, 16).ok()
}

/// The tag a delay queue's put writes: fixed-width hex, so names also sort by due time.
pub(crate) fn due_tag(due: u64) -> String {
    format!("{due:016X}")
}

/// What a listing offers a take.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Offer {
    /// The candidates, in the order they are tried.
    pub(crate) candidates: Vec<String>,
    /// The earliest due time not yet reached (delay queue only): when to look again.
    pub(crate) next_due: Option<u64>,
}

impl Select {
    /// The epoch-milliseconds reading at the machine's time `now` (`Millis` since start).
    pub(crate) fn epoch(&self, now_ms: u64) -> Option<u64> {
        match self {
            Select::Due { epoch_at_start } => Some(epoch_at_start.saturating_add(now_ms)),
            Select::All | Select::Id(_) => None,
        }
    }

    /// The machine time (`Millis` since start) at which epoch time `due` is reached.
    pub(crate) fn millis_at(&self, due: u64) -> Option<u64> {
        match self {
            Select::Due { epoch_at_start } => Some(due.saturating_sub(*epoch_at_start)),
            Select::All | Select::Id(_) => None,
        }
    }

    /// Sorts and filters `children` as listed at machine time `now_ms`.
    pub(crate) fn offer(&self, children: Vec<String>, now_ms: u64) -> Offer {
        let mut keyed: Vec<((u64, i64), String)> = Vec::new();
        let mut next_due: Option<u64> = None;
        for child in children {
            let Some((priority, seq)) = element_key(&child) else {
                continue;
            };
            let key = match self {
                Select::All => (u64::from(priority), seq),
                Select::Id(id) if tag(&child) == Some(id.as_str()) => (u64::from(priority), seq),
                Select::Id(_) => continue,
                Select::Due { .. } => {
                    let Some(due) = due(&child) else { continue };
                    if due > self.epoch(now_ms).expect("a delay selection") {
                        next_due = Some(next_due.map_or(due, |d| d.min(due)));
                        continue;
                    }
                    (due, seq)
                }
            };
            keyed.push((key, child));
        }
        keyed.sort();
        Offer {
            candidates: keyed.into_iter().map(|(_, c)| c).collect(),
            next_due,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GUID: &str = "00000000000000000000000000000001";

    fn named(priority: u8, tag: Option<&str>, seq: i64) -> String {
        let tag = tag.map(|t| format!("|{t}|")).unwrap_or_default();
        format!("queue-{priority:03}-{GUID}-{tag}{seq:010}")
    }

    #[test]
    fn tags_are_read_between_the_separators() {
        assert_eq!(tag(&named(0, Some("order-7"), 3)), Some("order-7"));
        assert_eq!(tag(&named(0, Some(""), 3)), Some(""));
        assert_eq!(tag(&named(0, None, 3)), None);
        assert_eq!(
            tag("queue-000-x-|a|b|0000000001"),
            None,
            "a tag holds no separator"
        );
        assert_eq!(tag("queue-000-x-|a|12"), None, "a sequence has ten digits");
        assert_eq!(due(&named(0, Some(&due_tag(0xbeef)), 1)), Some(0xbeef));
        assert_eq!(element_key(&named(4, Some("x"), 9)), Some((4, 9)));
    }

    #[test]
    fn an_id_selection_keeps_only_that_id_in_queue_order() {
        let children = vec![
            named(0, Some("b"), 1),
            named(0, Some("a"), 5),
            named(0, None, 2),
            named(0, Some("a"), 3),
            "_receipts".to_owned(),
        ];
        let offer = Select::Id("a".into()).offer(children.clone(), 0);
        assert_eq!(
            offer.candidates,
            vec![named(0, Some("a"), 3), named(0, Some("a"), 5)]
        );
        assert_eq!(Select::All.offer(children, 0).candidates.len(), 4);
    }

    #[test]
    fn a_due_selection_offers_due_elements_earliest_first_and_says_when_to_look_again() {
        let select = Select::Due {
            epoch_at_start: 1_000,
        };
        let children = vec![
            named(0, Some(&due_tag(1_500)), 1),
            named(0, Some(&due_tag(900)), 4),
            named(0, Some(&due_tag(1_100)), 2),
            named(0, Some(&due_tag(1_300)), 3),
            named(0, None, 0),
        ];
        let offer = select.offer(children.clone(), 100);
        assert_eq!(
            offer.candidates,
            vec![
                named(0, Some(&due_tag(900)), 4),
                named(0, Some(&due_tag(1_100)), 2)
            ]
        );
        assert_eq!(offer.next_due, Some(1_300));
        assert_eq!(select.millis_at(1_300), Some(300));
        assert_eq!(select.offer(children, 500).next_due, None);
    }
}
