//! Group membership on a real standalone server: join, list, leave, names owned by sessions,
//! and the change stream seeing joins, leaves, drops and session expiry.

use std::time::Duration;

use avout::Client;
use avout::recipes::group::{Group, GroupError, Member, MembershipChange, MembershipWatch};
use avout::zk::ZkConfig;

use crate::support;

async fn next(watch: &mut MembershipWatch) -> MembershipChange {
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("a membership change within 10 s")
        .expect("watch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_leave_and_vanish_with_their_sessions() {
    let server = support::standalone();
    let config = ZkConfig::new(server.connect_string());
    let zk = support::sessions(&config, 4).await;
    // Member c's client has exactly its session and never opens another, so that its
    // membership ends with it (a managed client would join again on its next session).
    let clients: Vec<Client> = zk[..3]
        .iter()
        .map(|zk| support::adopt(&config, zk))
        .chain([Client::single(zk[3].clone())])
        .collect();
    let group = |i: usize| Group::new(&clients[i], "/it/workers").expect("group");

    let mut watch = group(0).watch();
    assert_eq!(
        next(&mut watch).await,
        MembershipChange::default(),
        "empty at first"
    );

    let a = group(1).join("a", b"10.0.0.1").await.expect("join a");
    let b = group(2).join("b", b"10.0.0.2").await.expect("join b");
    let c = group(3).join("c", b"10.0.0.3").await.expect("join c");
    assert!(a.is_member().await.expect("is_member"));
    assert_eq!(
        group(0).members().await.expect("members"),
        vec![
            Member {
                name: "a".into(),
                data: b"10.0.0.1".to_vec()
            },
            Member {
                name: "b".into(),
                data: b"10.0.0.2".to_vec()
            },
            Member {
                name: "c".into(),
                data: b"10.0.0.3".to_vec()
            },
        ]
    );
    // The joins may be reported in one change or several.
    let mut members = Vec::new();
    while members.len() < 3 {
        members = next(&mut watch).await.members;
    }
    assert_eq!(members, ["a", "b", "c"]);

    assert!(matches!(
        group(1).join("b", b"").await,
        Err(GroupError::NameTaken { .. })
    ));

    a.leave().await.expect("leave");
    let change = next(&mut watch).await;
    assert_eq!(
        (change.members, change.left),
        (vec!["b".into(), "c".into()], vec!["a".into()])
    );

    drop(b);
    let change = next(&mut watch).await;
    assert_eq!(change.left, ["b"], "dropping a membership leaves");

    zk[3].expire_session().await.expect("expire");
    let change = next(&mut watch).await;
    assert_eq!(change.left, ["c"], "an expired session's member is gone");
    assert!(change.members.is_empty());
    assert!(!c.is_member().await.expect("is_member"));
    c.leave().await.expect("leaving after expiry is a no-op");
}
