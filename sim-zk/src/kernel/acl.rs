//! ACLs as ZooKeeper 3.8 enforces them.
//!
//! A session holds identities: the implicit `ip:127.0.0.1` (the simulated clients all sit on
//! loopback, like the test servers) and one `digest:user:hash` per successful `addAuth`. An
//! entry grants its permissions if it is `world:anyone` or names one of the session's
//! identities. At create time the requested ACL is *fixed up*: an empty list is invalid,
//! `world` only knows `anyone`, a `digest` id must look like `user:hash`, and each `auth`
//! entry is replaced by the session's authenticated (digest) identities — invalid if it has
//! none. Duplicates are dropped, as ZooKeeper's `fixupACL` does.

use std::collections::BTreeSet;

use avout::{Acl, Perms};

/// A session's identities: `(scheme, id)` pairs.
pub(crate) type Identities = BTreeSet<(String, String)>;

/// The identities every simulated session starts with.
pub(crate) fn initial_identities() -> Identities {
    [("ip".to_owned(), "127.0.0.1".to_owned())]
        .into_iter()
        .collect()
}

/// The superuser's identity, which a session gets by authenticating as the server's super
/// digest ([`crate::kernel::Kernel::set_super_digest`]).
pub(crate) fn superuser() -> (String, String) {
    ("super".to_owned(), String::new())
}

/// Whether `acl` grants any of the bits of `perm` to a session with `ids`.
pub(crate) fn allows(acl: &[Acl], perm: Perms, ids: &Identities) -> bool {
    // Identities are a handful: scanning them spares building owned keys to look up.
    let has = |scheme: &str, id: &str| ids.iter().any(|(s, i)| s == scheme && i == id);
    if acl.is_empty() || has("super", "") {
        return true;
    }
    acl.iter().any(|entry| {
        entry.perms.0 & perm.0 != 0
            && ((entry.scheme == "world" && entry.id == "anyone") || has(&entry.scheme, &entry.id))
    })
}

/// The ACL to store for a create, or `None` if it is invalid.
pub(crate) fn fixup(acl: &[Acl], ids: &Identities) -> Option<Vec<Acl>> {
    if acl.is_empty() {
        return None;
    }
    let mut out: Vec<Acl> = Vec::with_capacity(acl.len());
    let push = |a: Acl, out: &mut Vec<Acl>| {
        if !out.contains(&a) {
            out.push(a);
        }
    };
    for entry in acl {
        match entry.scheme.as_str() {
            "world" if entry.id == "anyone" => push(entry.clone(), &mut out),
            "digest" if entry.id.split(':').count() == 2 => push(entry.clone(), &mut out),
            "ip" if !entry.id.is_empty() => push(entry.clone(), &mut out),
            "auth" => {
                let mut any = false;
                for (scheme, id) in ids.iter().filter(|(s, _)| s == "digest") {
                    any = true;
                    push(
                        Acl {
                            perms: entry.perms,
                            scheme: scheme.clone(),
                            id: id.clone(),
                        },
                        &mut out,
                    );
                }
                if !any {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The identity `addAuth("digest", "user:password")` gives, or `None` if malformed.
pub(crate) fn digest_identity(auth: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(auth).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((
        "digest".to_owned(),
        Acl::digest(user, password, Perms::ALL).id,
    ))
}

/// What `getACL` shows a session that may read but not administer the node: digest hashes
/// are hidden, as ZooKeeper 3.8 does.
pub(crate) fn redact(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            if a.scheme == "digest" {
                Acl {
                    perms: a.perms,
                    scheme: a.scheme.clone(),
                    id: "x:x".to_owned(),
                }
            } else {
                a.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_needs_an_authenticated_identity() {
        let mut ids = initial_identities();
        assert_eq!(fixup(&Acl::creator_all(), &ids), None);
        ids.insert(digest_identity(b"app:secret").unwrap());
        let fixed = fixup(&Acl::creator_all(), &ids).unwrap();
        assert_eq!(fixed, vec![Acl::digest("app", "secret", Perms::ALL)]);
        assert!(allows(&fixed, Perms::READ, &ids));
        assert!(!allows(&fixed, Perms::READ, &initial_identities()));
    }

    #[test]
    fn unknown_schemes_and_world_ids_are_invalid() {
        let ids = initial_identities();
        let bad = |scheme: &str, id: &str| {
            fixup(
                &[Acl {
                    perms: Perms::ALL,
                    scheme: scheme.into(),
                    id: id.into(),
                }],
                &ids,
            )
        };
        assert_eq!(bad("world", "someone"), None);
        assert_eq!(bad("kerberos", "x"), None);
        assert_eq!(bad("digest", "nocolon"), None);
        assert_eq!(fixup(&[], &ids), None);
    }
}
