//! Jepsen's EDN histories read: every form of event, key and error, and the refusals.

use serde_json::json;

use super::*;
use crate::history::{Keys, Outcome};

#[test]
fn one_map_a_line_with_jepsen_fields() {
    let text = "\
{:type :invoke, :f :txn, :value [[:append 9 1] [:r 8 nil]], :process 0, :time 10, :index 0}
{:type :ok, :f :txn, :value [[:append 9 1] [:r 8 [1 2]]], :process 0, :time 20, :index 1}

{:index 2 :type :info :process :nemesis :f :start-partition :value {\"n1\" #{\"n2\" \"n3\"}}}
";
    let h = read_str(text).unwrap();
    assert_eq!(h.len(), 3);
    let e = &h.events()[1];
    assert_eq!(e.kind, EventType::Ok);
    assert_eq!(e.f, F::Other("txn".into()));
    assert_eq!(e.value, json!([["append", 9, 1], ["r", 8, [1, 2]]]));
    assert_eq!((e.time, e.index), (Some(20), Some(1)));
    assert_eq!(
        h.events()[0].value,
        json!([["append", 9, 1], ["r", 8, null]])
    );
    let nemesis = &h.events()[2];
    assert_eq!(nemesis.process, Process::Named("nemesis".into()));
    assert_eq!(nemesis.value, json!({"n1": ["n2", "n3"]}));
    assert_eq!(h.position(2).line, 4, "blank lines count");
    let ops = h.operations(Keys::Field).unwrap();
    assert_eq!(ops.len(), 1, "the nemesis is not a client");
    assert_eq!(ops[0].outcome, Outcome::Ok);
}

#[test]
fn a_vector_of_maps_keeps_each_line() {
    let text = "; a Knossos history\n[{:process 0, :type :invoke, :f :read, :value nil}\n \
                {:process 0, :type :ok, :f :read, :value 3}\n]\n";
    let h = read_str(text).unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!((h.position(0).line, h.position(1).line), (2, 3));
    assert_eq!(h.events()[1].value, json!(3));
}

#[test]
fn values_map_onto_json() {
    let h = read_str(
        "{:type :ok :process 1 :f :read :value {0 10, :a (1 2.5 3/4), \"s\" \\c, [1] true} \
         :key :x :extra #{:ignored}}",
    )
    .unwrap();
    let e = &h.events()[0];
    assert_eq!(
        e.value,
        json!({"0": 10, "a": [1, 2.5, 0.75], "s": "c", "[1]": true})
    );
    assert_eq!(e.key, Some(json!("x")));
    // A record, as Jepsen prints an Op, reads as its map.
    let h = read_str("#jepsen.history.Op{:type :invoke :process 2 :f :write :value 1}").unwrap();
    assert_eq!(h.events()[0].f, F::Write);
    // Discarded forms are skipped, also at the end.
    let h =
        read_str("#_{:type :bogus}\n{:type :fail :process 0 :f :cas :value [1 2]}\n#_ 3").unwrap();
    assert_eq!(h.len(), 1);
    assert_eq!(h.position(0).line, 2);
    assert!(read_str("  \n ; nothing\n").unwrap().is_empty());
}

#[test]
fn syntax_errors_name_line_and_column() {
    let cases = [
        (
            "{:type :ok\n :process 0 :f :read :value [1 2}",
            2,
            "unmatched",
        ),
        (
            "{:type :ok :process 0 :f :read :value \"abc",
            1,
            "ends inside",
        ),
        (
            "[{:type :ok :process 0 :f :read :value 1}",
            1,
            "never closed",
        ),
        (
            "[{:type :ok :process 0 :f :read :value 1}]\n{:type :ok}",
            2,
            "after the vector",
        ),
        ("{:type :ok :type :ok}", 1, "key twice"),
    ];
    for (text, want_line, want) in cases {
        match read_str(text) {
            Err(EdnError::Syntax { line, reason, .. }) => {
                assert_eq!(line, want_line, "{text}: {reason}");
                assert!(reason.contains(want), "{text}: {reason}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let event = "{:type :ok :process 0 :f :read :value 1}";
    let Err(EdnError::Syntax { line, column, .. }) = read_str(&format!("{event}\n  {event}}} "))
    else {
        panic!("an unmatched brace")
    };
    assert_eq!((line, column), (2, 3 + event.len()));
}

#[test]
fn events_that_are_not_events_are_named() {
    let err = |text: &str| read_str(text).unwrap_err();
    assert!(matches!(err("[1 2]"), EdnError::NotAMap { line: 1, .. }));
    assert_eq!(
        err("\n{:type :ok :f :read}"),
        EdnError::MissingField {
            line: 2,
            field: ":process"
        }
    );
    let e = err("{:type :done :process 0 :f :read}");
    assert!(
        matches!(e, EdnError::BadField { field: ":type", .. }),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "line 1: not a history event: :type is :done, not :invoke, :ok, :fail or :info"
    );
    let e = err("{:type :ok :process -1 :f :read}");
    assert!(
        matches!(
            e,
            EdnError::BadField {
                field: ":process",
                ..
            }
        ),
        "{e}"
    );
    let e = err("{:type :ok :process 0 :f 7}");
    assert!(matches!(e, EdnError::BadField { field: ":f", .. }), "{e}");
    let e = err("{:type :ok :process 0 :f :read :time \"now\"}");
    assert!(
        matches!(e, EdnError::BadField { field: ":time", .. }),
        "{e}"
    );
    let e = err("{:type :ok :process 0 :f :read :value ##NaN}");
    assert!(
        matches!(
            e,
            EdnError::Unrepresentable { .. } | EdnError::Syntax { .. }
        ),
        "{e}"
    );
}

#[test]
fn detection_by_content() {
    assert!(looks_like_edn(b"\n{ :type :invoke}"));
    assert!(looks_like_edn(b"#jepsen.history.Op{}"));
    assert!(looks_like_edn(b"; comment\n{}"));
    assert!(!looks_like_edn(b"\n{ \"type\": 1}"));
    assert!(!looks_like_edn(b"not anything"));
}

#[test]
fn a_list_of_events_reads_as_a_vector_does() {
    let text = "({:type :invoke, :process 0, :f :write, :value 1}\n {:type :ok, :process 0, :f :write, :value 1})\n";
    let h = read_str(text).unwrap();
    assert_eq!(h.len(), 2);
    assert_eq!(h.position(1).line, 2);
    assert!(
        read_str("({:type :invoke, :process 0, :f :read, :value nil}")
            .unwrap_err()
            .to_string()
            .contains("the list of events is never closed")
    );
}
