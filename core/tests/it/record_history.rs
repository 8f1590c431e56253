//! Record history on a real standalone ZooKeeper: revisions and times, `get_at`, `revert`,
//! trimming, a record written before history existed, and concurrent writers from three
//! sessions whose revisions are each kept once, in a gap-free time order.

use std::collections::BTreeSet;

use avout::atom::record::{RecordError, Records, Value};
use avout::zk::ZkConfig;
use avout::{Coordination, CreateOptions};

use crate::support;

fn ints(vs: &[i64]) -> BTreeSet<Value> {
    vs.iter().map(|v| Value::Int(*v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_history_get_at_and_revert() {
    let server = support::standalone();
    let clients = support::clients(&ZkConfig::new(server.connect_string()), 3).await;
    let records = Records::new(&clients[0], "/history");

    records.set("k", Value::Int(1), 1).await.unwrap(); // time 1
    records.add("k", Value::Int(2), 1).await.unwrap(); // time 2
    records.set("other", Value::from("x"), 1).await.unwrap(); // time 3
    records.set("k", Value::Int(1), 1).await.unwrap(); // time 4: {1, 2} -> {1}
    records.set("k", Value::Int(1), 1).await.unwrap(); // already so: nothing written
    assert!(records.clear("k", 1).await.unwrap()); // time 5
    let h = records.history("k", 1).await.unwrap();
    assert_eq!(h.now, 5);
    assert!(!h.trimmed);
    let times: Vec<u64> = h.revisions.iter().map(|r| r.time).collect();
    assert_eq!(times, [1, 2, 4, 5]);
    assert_eq!(records.get_at("k", 0, 1).await.unwrap(), ints(&[]));
    assert_eq!(records.get_at("k", 3, 1).await.unwrap(), ints(&[1, 2]));
    assert_eq!(records.get_at("k", 5, 1).await.unwrap(), ints(&[]));
    assert!(matches!(
        records.get_at("k", 6, 1).await,
        Err(RecordError::NotYet {
            now: 5,
            time: 6,
            ..
        })
    ));

    // Revert adds a revision with the old values; reverting to them again writes nothing.
    let other = Records::new(&clients[1], "/history");
    assert_eq!(other.revert("k", 2, 1).await.unwrap(), Some(6));
    assert_eq!(records.fetch("k", 1).await.unwrap(), ints(&[1, 2]));
    assert_eq!(other.revert("k", 3, 1).await.unwrap(), None);
    assert_eq!(records.history("k", 1).await.unwrap().now, 6);
    assert_eq!(records.fetch("other", 1).await.unwrap().len(), 1);

    // A handle keeping three revisions trims what it writes; older times are refused.
    let short = Records::new(&clients[2], "/history").history_limit(3);
    for v in 10..15 {
        short.set("k", Value::Int(v), 1).await.unwrap(); // times 7..=11
    }
    let h = records.history("k", 1).await.unwrap();
    assert!(h.trimmed);
    assert_eq!(h.revisions.len(), 3);
    assert_eq!(h.revisions[0].time, 9);
    assert_eq!(records.get_at("k", 9, 1).await.unwrap(), ints(&[12]));
    assert!(matches!(
        records.get_at("k", 8, 1).await,
        Err(RecordError::HistoryTrimmed {
            oldest: 9,
            time: 8,
            ..
        })
    ));
    assert!(matches!(
        records.revert("k", 2, 1).await,
        Err(RecordError::HistoryTrimmed { oldest: 9, .. })
    ));
    assert_eq!(records.fetch("k", 1).await.unwrap(), ints(&[14]));

    // A record node written before history existed (a bare map) reads as time 0 and gains
    // history on its next write.
    clients[0]
        .create("/history", b"", &CreateOptions::default())
        .await
        .ok();
    clients[0]
        .create(
            "/history/r2",
            br#"{"tags":[{"Str":"a"}]}"#,
            &CreateOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(records.history("tags", 2).await.unwrap().now, 0);
    records.add("tags", Value::from("b"), 2).await.unwrap();
    assert_eq!(records.get_at("tags", 0, 2).await.unwrap().len(), 1);
    assert_eq!(records.get_at("tags", 1, 2).await.unwrap().len(), 2);
    let (data, _) = clients[0].get_data("/history/r2").await.unwrap();
    assert!(
        String::from_utf8_lossy(&data).contains(r#""v":2"#),
        "rewritten in the versioned form"
    );

    // Concurrent writers: every write is one revision, times gap-free in commit order.
    let handles: Vec<Records> = clients
        .iter()
        .map(|c| Records::new(c, "/history").history_limit(1000))
        .collect();
    futures::future::join_all(handles.iter().enumerate().map(|(p, r)| async move {
        for j in 0..20 {
            r.add("many", Value::Int(p as i64 * 100 + j), 3)
                .await
                .unwrap();
        }
    }))
    .await;
    let h = records.history("many", 3).await.unwrap();
    let times: Vec<u64> = h.revisions.iter().map(|r| r.time).collect();
    assert_eq!(times, (1..=60).collect::<Vec<_>>());
    for pair in h.revisions.windows(2) {
        assert_eq!(pair[1].values.len(), pair[0].values.len() + 1);
        assert!(pair[0].values.is_subset(&pair[1].values));
    }
    assert_eq!(h.revisions[59].values.len(), 60);
}
