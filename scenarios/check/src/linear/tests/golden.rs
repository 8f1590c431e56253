//! Golden files under `testdata`.

use super::*;

fn testdata(name: &str) -> std::path::PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "testdata", name]
        .iter()
        .collect()
}

/// Jepsen's fields, a nemesis, and two cas from 0 that both succeed.
#[test]
fn golden_lost_update() {
    let verdict =
        crate::linear::check_file(testdata("lost-update.jsonl"), Model::CasRegister).unwrap();
    let v = &verdict.violations[0];
    assert_eq!(
        (v.cause, v.op.process, v.op.f.clone()),
        (Cause::NoOrder, 2, F::Cas)
    );
    assert_eq!(
        (v.op.invoke.line, v.op.complete.map(|c| c.line)),
        (6, Some(10))
    );
    assert_eq!(v.states, vec![json!(1)]);
}

/// lin-kv style keys, an info cas that took effect, a failed cas, a write never completed.
#[test]
fn golden_lin_kv() {
    let verdict = crate::linear::check_file(testdata("lin-kv.jsonl"), Model::CasRegister).unwrap();
    assert!(verdict.is_linearizable(), "{verdict}");
    assert_eq!((verdict.keys, verdict.operations), (2, 7));
}
