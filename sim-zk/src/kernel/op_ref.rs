//! One operation of a write, borrowed from its request: what the kernel's prepare step
//! checks, so that a single create, delete or set is prepared without copying its path and
//! data into an [`Op`] first.

use std::sync::{Arc, LazyLock};

use avout::{Acl, CreateOptions, Op, Request};

/// ZooKeeper's default ACL, for creates that name none.
pub(super) static OPEN_UNSAFE: LazyLock<Arc<[Acl]>> = LazyLock::new(|| Acl::open_unsafe().into());

/// One operation of a write, borrowed from its request (a `multi`'s [`Op`], or a single
/// create, delete or set).
#[derive(Clone, Copy)]
pub(super) enum OpRef<'r> {
    Check {
        path: &'r str,
        version: Option<i32>,
    },
    Create {
        path: &'r str,
        data: &'r [u8],
        options: &'r CreateOptions,
    },
    SetData {
        path: &'r str,
        data: &'r [u8],
        version: Option<i32>,
    },
    Delete {
        path: &'r str,
        version: Option<i32>,
    },
}

/// A `match` on an [`Op`] or a [`Request`], whose `Create`, `SetData` and `Delete` have the
/// same fields, with the arms both conversions share and then `$rest`.
macro_rules! borrowed {
    ($enum:ident, $value:expr, $($rest:tt)*) => {
        match $value {
            $enum::Create {
                path,
                data,
                options,
            } => OpRef::Create {
                path,
                data,
                options,
            },
            $enum::SetData {
                path,
                data,
                version,
            } => OpRef::SetData {
                path,
                data,
                version: *version,
            },
            $enum::Delete { path, version } => OpRef::Delete {
                path,
                version: *version,
            },
            $($rest)*
        }
    };
}

impl<'r> OpRef<'r> {
    /// The operation of a `multi`.
    pub(super) fn of(op: &'r Op) -> Self {
        borrowed!(Op, op, Op::Check { path, version } => OpRef::Check {
            path,
            version: *version,
        })
    }

    /// The one operation of a create, delete or set request (`None` for any other).
    pub(super) fn of_single(request: &'r Request) -> Option<Self> {
        Some(borrowed!(Request, request, _ => return None))
    }
}
