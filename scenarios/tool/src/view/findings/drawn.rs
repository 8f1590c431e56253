//! A verdict's anomalies as findings: each [`Anomaly`]'s operations, orders and stretches of
//! time put on the page's timeline, whatever checker found it.

use avout_check::{Anomaly, Stretch};

use super::{Arrow, Finding, Mark, Span};
use crate::view::timeline::Timeline;

/// `anomaly`, drawn on `t`. Operations the timeline does not have are left out (it has every
/// one a checker names; this keeps a mismatch from breaking the page).
pub(super) fn drawn(anomaly: &Anomaly, t: &Timeline) -> Finding {
    let marks = anomaly
        .ops
        .iter()
        .filter_map(|p| {
            Some(Mark {
                op: t.op_invoked_at(p.op)?,
                role: p.role.name(),
                label: p.label.clone(),
            })
        })
        .collect();
    let arrows = anomaly
        .links
        .iter()
        .filter_map(|l| {
            Some(Arrow {
                from: t.op_invoked_at(l.from)?,
                to: t.op_invoked_at(l.to)?,
                kind: l.kind.clone(),
                label: l.label.clone(),
                detail: l.detail.clone(),
                at: None,
            })
        })
        .collect();
    let spans = anomaly
        .spans
        .iter()
        .filter_map(|s| {
            let mut lanes: Vec<usize> = s
                .ops
                .iter()
                .filter_map(|&op| Some(t.ops[t.op_invoked_at(op)?].lane))
                .collect();
            lanes.dedup();
            (!lanes.is_empty()).then(|| Span {
                lanes,
                start: t.at_event(s.from),
                end: s.to.map_or(t.end, |e| t.at_event(e)),
                role: match s.role {
                    Stretch::Hold => "hold",
                    Stretch::Overlap => "overlap",
                },
                label: named(&s.label, t),
            })
        })
        .collect();
    Finding {
        name: anomaly.kind.clone(),
        title: named(&anomaly.title, t),
        text: anomaly.message.clone(),
        marks,
        arrows,
        spans,
        events: Vec::new(),
        focus: [0, 0],
    }
}

/// `text` with each `process N` named by its lane as well: `client 0 (process 4)`.
fn named(text: &str, t: &Timeline) -> String {
    const WORD: &str = "process ";
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(WORD) {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let digits = after[WORD.len()..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len() - WORD.len());
        let number = &after[WORD.len()..WORD.len() + digits];
        let lane = number
            .parse::<u64>()
            .ok()
            .and_then(|p| t.ops.iter().find(|o| o.process == p))
            .map(|o| &t.lanes[o.lane].name);
        match lane {
            Some(lane) if digits > 0 => out.push_str(&format!("{lane} ({WORD}{number})")),
            _ => out.push_str(&after[..WORD.len() + digits]),
        }
        rest = &after[WORD.len() + digits..];
    }
    out.push_str(rest);
    out
}
