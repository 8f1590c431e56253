//! ZooKeeper paths: validation (the rules of ZooKeeper's `PathUtils.validatePath`, applied
//! client-side so a bad path never reaches a server) and small helpers.

use crate::{Error, Result};

/// The largest node data accepted: ZooKeeper 3.8's default `jute.maxbuffer` (1 MiB - 1 byte)
/// bounds the whole request, path and headers included, so the data limit keeps 1 KiB for
/// them. A request over the server's bound is not refused but makes the server drop the
/// connection (measured: 1 MiB of data gives a connection loss, 1 MiB - 200 bytes is stored),
/// which is why the limit is checked client-side.
///
/// Backends refuse larger data with [`Error::DataTooLarge`] before anything is sent.
pub const MAX_DATA_LEN: usize = 1024 * 1024 - 1024;

/// Checks a path the way ZooKeeper does.
///
/// A path is absolute, has no empty, `.` or `..` component, does not end with `/` (except the
/// root, or a sequential create, whose name may be empty so that the node is named by its
/// suffix alone), and contains no NUL, control or reserved characters.
///
/// ```
/// use avout::path::validate_path;
/// assert!(validate_path("/a/b", false).is_ok());
/// assert!(validate_path("/a/", true).is_ok());
/// assert!(validate_path("a", false).is_err());
/// assert!(validate_path("/a//b", false).is_err());
/// assert!(validate_path("/a/./b", false).is_err());
/// ```
pub fn validate_path(path: &str, sequential: bool) -> Result<()> {
    let bad = |reason| {
        Err(Error::InvalidPath {
            path: path.to_owned(),
            reason,
        })
    };
    if path.is_empty() {
        return bad("path is empty");
    }
    if !path.starts_with('/') {
        return bad("path must start with /");
    }
    if path.len() == 1 {
        return if sequential {
            bad("a sequential node needs a parent below the root")
        } else {
            Ok(())
        };
    }
    let checked = if sequential && path.ends_with('/') {
        &path[..path.len() - 1]
    } else {
        path
    };
    if checked.ends_with('/') {
        return bad("path must not end with /");
    }
    for component in checked[1..].split('/') {
        match component {
            "" => return bad("empty component (//)"),
            "." | ".." => return bad("relative components (. and ..) are not allowed"),
            _ => {}
        }
    }
    for c in path.chars() {
        let reason = match c {
            '\0' => "NUL character",
            '\u{1}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => "control character",
            '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}' => "reserved character",
            _ => continue,
        };
        return bad(reason);
    }
    Ok(())
}

/// Checks node data against [`MAX_DATA_LEN`].
///
/// ```
/// use avout::{path::validate_data, MAX_DATA_LEN};
/// assert!(validate_data("/a", &[0; 10]).is_ok());
/// assert!(validate_data("/a", &vec![0; MAX_DATA_LEN + 1]).is_err());
/// ```
pub fn validate_data(path: &str, data: &[u8]) -> Result<()> {
    if data.len() > MAX_DATA_LEN {
        return Err(Error::DataTooLarge {
            path: path.to_owned(),
            len: data.len(),
            limit: MAX_DATA_LEN,
        });
    }
    Ok(())
}

/// Checks what a write sends: its path (a prefix, if `sequential`), then its data.
pub(crate) fn validate_write(path: &str, sequential: bool, data: &[u8]) -> Result<()> {
    validate_path(path, sequential)?;
    validate_data(path, data)
}

/// The parent of a path (`None` for the root).
///
/// ```
/// use avout::path::parent;
/// assert_eq!(parent("/a/b"), Some("/a"));
/// assert_eq!(parent("/a"), Some("/"));
/// assert_eq!(parent("/"), None);
/// ```
pub fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

/// Whether `path` lies strictly under `ancestor` (a descendant, not the node itself).
///
/// ```
/// use avout::path::is_descendant;
/// assert!(is_descendant("/a/b/c", "/a"));
/// assert!(is_descendant("/a", "/"));
/// assert!(!is_descendant("/ab", "/a"));
/// assert!(!is_descendant("/a", "/a"));
/// ```
pub fn is_descendant(path: &str, ancestor: &str) -> bool {
    if ancestor == "/" {
        return path.len() > 1 && path.starts_with('/');
    }
    path.len() > ancestor.len()
        && path.starts_with(ancestor)
        && path.as_bytes()[ancestor.len()] == b'/'
}

/// The last component of a path (empty for the root).
///
/// ```
/// assert_eq!(avout::path::name("/a/b-0000000001"), "b-0000000001");
/// ```
pub fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or("")
}

/// Joins a parent path and a child name.
///
/// ```
/// use avout::path::join;
/// assert_eq!(join("/", "a"), "/a");
/// assert_eq!(join("/a", "b"), "/a/b");
/// ```
pub fn join(parent: &str, child: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{child}")
    } else {
        format!("{parent}/{child}")
    }
}

/// The sequence number of a sequential node's name: its last ten (or, past `i32::MAX`,
/// nineteen) digits.
///
/// ```
/// use avout::path::sequence;
/// assert_eq!(sequence("lock-0000000042"), Some(42));
/// assert_eq!(sequence("lock"), None);
/// ```
pub fn sequence(name: &str) -> Option<i64> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits < 10 {
        return None;
    }
    let width = if digits >= 19 { 19 } else { 10 };
    name[name.len() - width..].parse().ok()
}

/// Formats a sequence number the way ZooKeeper appends it to a sequential node's name.
///
/// ```
/// assert_eq!(avout::path::format_sequence(7), "0000000007");
/// ```
pub fn format_sequence(seq: i64) -> String {
    if seq <= i64::from(i32::MAX) {
        format!("{seq:010}")
    } else {
        format!("{seq:019}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_what_zookeeper_rejects() {
        for p in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/..",
            "/a/.",
            "/a\0",
            "/a\u{1}",
            "/\u{e000}",
        ] {
            assert!(validate_path(p, false).is_err(), "{p:?} accepted");
        }
        assert!(validate_path("/", true).is_err());
        assert!(validate_path("/a//", true).is_err());
    }

    #[test]
    fn accepts_what_zookeeper_accepts() {
        for p in ["/", "/a", "/a/b.c", "/a/..b", "/ünïcode", "/a-b_c:d"] {
            assert!(validate_path(p, false).is_ok(), "{p:?} refused");
        }
        assert!(validate_path("/a/", true).is_ok());
        assert!(validate_path("/a/n-", true).is_ok());
    }

    #[test]
    fn sequence_round_trips() {
        for n in [0, 1, 42, i64::from(i32::MAX), i64::from(i32::MAX) + 1] {
            assert_eq!(sequence(&format!("x-{}", format_sequence(n))), Some(n));
        }
    }
}
