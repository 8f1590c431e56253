//! Paths as `zookeeper-client` checks them (its errors, word for word), and a client's chroot:
//! the prefix it puts before every path it sends and takes off every path it receives.

use std::borrow::Cow;
use std::sync::Arc;

use super::{Error, Result};

/// Checks `path` as the real client does before sending anything; `trailing_slash` for a
/// sequential node's prefix.
pub(crate) fn validate(path: &str, trailing_slash: bool) -> Result<()> {
    if path.is_empty() {
        return Err(Error::BadArguments(&"path cannot be empty"));
    }
    if !path.starts_with('/') {
        return Err(Error::BadArguments(&"path must start with '/'"));
    }
    if path.len() == 1 {
        return Ok(());
    }
    let invalid = |c: char| {
        let u = u32::from(c);
        [
            0x0000..=0x001f,
            0x007f..=0x009f,
            0xd800..=0xf8ff,
            0xfff0..=0xffff,
        ]
        .into_iter()
        .any(|r| r.contains(&u))
    };
    let segments: Vec<&str> = path[1..].split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        if segment.chars().any(invalid) {
            return Err(Error::BadArguments(&"unsupported characters in path"));
        }
        let last = i == segments.len() - 1;
        if segment.is_empty() && !last {
            return Err(Error::BadArguments(&"empty node is not allowed in path"));
        }
        if (*segment == "." || *segment == "..") && !last {
            return Err(Error::BadArguments(&"relative path is not allowed"));
        }
    }
    if path.ends_with('/') && !trailing_slash {
        return Err(Error::BadArguments(&"path must not end with '/'"));
    }
    Ok(())
}

/// `(parent, parent with a trailing slash, name)` of an absolute path.
pub(crate) fn split(path: &str) -> (&str, &str, &str) {
    let last = path.rfind('/').expect("an absolute path");
    if last == 0 {
        ("/", "/", &path[1..])
    } else {
        (&path[..last], &path[..=last], &path[last + 1..])
    }
}

/// A client's root: every path it sends is below it, every path it receives has it taken off.
#[derive(Clone, Debug, Default)]
pub(crate) struct Chroot {
    root: Option<Arc<str>>,
}

impl Chroot {
    /// The root at `path` (`/`: none), if it is a valid path.
    pub(crate) fn new(path: &str) -> Result<Self> {
        validate(path, false)?;
        Ok(Chroot {
            root: (path != "/").then(|| Arc::from(path)),
        })
    }

    /// The root's path, `/` for none.
    pub(crate) fn path(&self) -> &str {
        self.root.as_deref().unwrap_or("/")
    }

    /// What the root puts before a path: empty for none.
    pub(crate) fn root(&self) -> &str {
        self.root.as_deref().unwrap_or("")
    }

    /// Moves the root to `path`; `false` (unchanged) if it is not a valid path.
    pub(crate) fn change<'a>(&mut self, path: impl Into<Cow<'a, str>>) -> bool {
        let path = path.into();
        match Chroot::new(&path) {
            Ok(root) => {
                *self = root;
                true
            }
            Err(_) => false,
        }
    }

    /// The server's path for the client's `path` after checking it; whether it is the root.
    pub(crate) fn server_path(&self, path: &str, trailing_slash: bool) -> Result<(String, bool)> {
        validate(path, trailing_slash)?;
        let is_root = path.len() == 1;
        let server = match (self.root(), is_root) {
            ("", _) => path.to_owned(),
            (root, true) => root.to_owned(),
            (root, false) => format!("{root}{path}"),
        };
        Ok((server, is_root))
    }

    /// The client's path for a `server` path: the root taken off the front, as the real
    /// client does (a string prefix, so `/ab` under root `/a` is `b`).
    pub(crate) fn client_path(&self, server: &str) -> Result<String> {
        let root = self.root();
        match server.strip_prefix(root) {
            Some("") => Ok("/".to_owned()),
            Some(rest) => Ok(rest.to_owned()),
            None => Err(Error::UnexpectedError(format!(
                "server path {server} is not descendant of root {root}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked_as_the_real_client_checks_them() {
        let bad = |p: &str, why: &'static &'static str| {
            assert_eq!(validate(p, false), Err(Error::BadArguments(why)), "{p}");
        };
        bad("", &"path cannot be empty");
        bad("a", &"path must start with '/'");
        bad("/abc//efg", &"empty node is not allowed in path");
        bad("/abc/./efg", &"relative path is not allowed");
        bad("/abc/../efg", &"relative path is not allowed");
        bad("/abc/", &"path must not end with '/'");
        bad("/a\u{1}b", &"unsupported characters in path");
        for good in [
            "/",
            "/abc",
            "/abc/efg",
            "/abc/.a./efg",
            "/abc/..a/efg",
            "/abc/路径/efg",
        ] {
            assert_eq!(validate(good, false), Ok(()), "{good}");
        }
        assert_eq!(validate("/abc/", true), Ok(()));
        assert_eq!(split("/a"), ("/", "/", "a"));
        assert_eq!(split("/a/b"), ("/a", "/a/", "b"));
    }

    #[test]
    fn a_chroot_prefixes_what_it_sends_and_strips_what_it_gets() {
        let root = Chroot::new("/x/y").unwrap();
        assert_eq!(root.server_path("/", false).unwrap(), ("/x/y".into(), true));
        assert_eq!(
            root.server_path("/a", false).unwrap(),
            ("/x/y/a".into(), false)
        );
        assert_eq!(root.client_path("/x/y").unwrap(), "/");
        assert_eq!(root.client_path("/x/y/a").unwrap(), "/a");
        assert!(root.client_path("/z").is_err());
        let none = Chroot::default();
        assert_eq!(none.path(), "/");
        assert_eq!(none.client_path("/a").unwrap(), "/a");
        let mut moved = none.clone();
        assert!(!moved.change("abc"));
        assert!(moved.change("/abc"));
        assert_eq!(moved.path(), "/abc");
        assert!(moved.change("/"));
        assert_eq!(moved.root(), "");
    }
}
