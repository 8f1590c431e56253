//! The barge report's check of its starvation findings against the Mvcc model: two clients
//! incrementing one ref (the model's tightest contention, barging included), checked over
//! their whole state space at retry limits 0 and 1.

use avout_models::check::Budget;
use avout_models::mvcc::{MvccModel, Workload};
use avout_models::{Search, Verdict, check};

use super::render;

/// The states checked at most per retry limit (about 20 seconds and a few GB): the whole
/// space is larger, so a property that holds holds in the states explored.
const MAX_STATES: usize = 3_000_000;

/// The liveness and retry properties the section reports.
const PROPERTIES: [&str; 3] = [
    "retries stay within the limit",
    "every transaction finishes",
    "the oldest transaction commits",
];

fn verdict(v: &Verdict) -> String {
    match v {
        Verdict::Holds => "holds".into(),
        Verdict::Violated(trace) => format!(
            "**violated** (a counterexample of {} steps)",
            trace
                .lines()
                .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
                .count()
        ),
        other => format!("{other:?}"),
    }
}

/// Adds the section: checks the model (about half a minute) and tabulates its verdicts.
pub(super) fn section(doc: &mut render::Doc) {
    doc.heading("Starvation and livelock in the model");
    let mut t = render::Table::new(
        ["retry limit", "states", "complete"]
            .into_iter()
            .chain(PROPERTIES),
    );
    for limit in [0u32, 1] {
        let mut model = MvccModel::new(2);
        model.workload = Workload::Increments;
        model.retry_limit = limit;
        let search = Search {
            budget: Budget {
                max_states: Some(MAX_STATES),
                max_memory: None,
            },
            ..Search::default()
        };
        let report = check(model, search);
        let mut row = vec![
            limit.to_string(),
            report.states.to_string(),
            if report.coverage.partial() {
                "no"
            } else {
                "yes"
            }
            .to_owned(),
        ];
        row.extend(
            PROPERTIES
                .iter()
                .map(|p| verdict(&report.property(p).verdict)),
        );
        t.row(row);
    }
    doc.para(
        "The Mvcc model (`avout_models::mvcc`, the production try machine against the model \
         ZooKeeper) with two clients each incrementing the same ref once, BARGE-WAIT passing \
         at any moment, no faults, checked breadth first at each retry limit (all schedules \
         up to the depth the state budget reaches; `complete` says whether that was all):",
    );
    doc.table(&t);
    doc.para(
        "With one retry allowed, every transaction finishes and the oldest always commits in \
         every schedule explored: \
         barging keeps two contending transactions from livelocking, as the simulated series \
         show (no stalled window without faults). With none allowed, the checker finds a \
         schedule in which both fail. What the model cannot show is the starvation of the \
         long-beside-short series: its clients run one transaction each, while there the \
         short writers commit again and again. A long transaction loses to a commit already \
         made past its read point, which no barge can undo (barging only kills a younger \
         transaction still `RUNNING`); the sweep measures how often that repeats past the \
         retry limit.",
    );
}
