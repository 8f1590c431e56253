//! Binding a root to one protocol: the root's node holds `avout-stm:<protocol>`.
//!
//! The protocols lay out different nodes under the root and neither can read the other's,
//! so the first `open` claims the root (creating it, or filling an empty node someone made)
//! and every later `open` checks the claim.

use crate::{Coordination, CoordinationExt, CreateOptions, Error, ErrorClass, path};

use super::protocol::Failure;
use super::{Protocol, StmError};

const PREFIX: &str = "avout-stm:";

/// The bytes of the root's node for `protocol`.
pub(crate) fn marker(protocol: Protocol) -> Vec<u8> {
    format!("{PREFIX}{}", protocol.name()).into_bytes()
}

/// Creates or checks the root's claim. Every step is idempotent, so indeterminate errors are
/// retried (after a short pause, leaving the client time to reconnect).
pub(crate) async fn bind<C: Coordination + ?Sized>(
    zk: &C,
    root: &str,
    protocol: Protocol,
) -> Result<(), Failure> {
    let want = marker(protocol);
    let mut lost = 0u32;
    loop {
        match try_bind(zk, root, protocol, &want).await {
            Ok(done) => return done,
            Err(e) if e.class() == ErrorClass::Indeterminate && lost < 100 => {
                lost += 1;
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            Err(e) => return Err(StmError::from_zk(e)),
        }
    }
}

async fn try_bind<C: Coordination + ?Sized>(
    zk: &C,
    root: &str,
    protocol: Protocol,
    want: &[u8],
) -> crate::Result<Result<(), Failure>> {
    if let Some(parent) = path::parent(root).filter(|p| *p != "/") {
        zk.ensure_path(parent).await?;
    }
    match zk.create(root, want, &CreateOptions::default()).await {
        Ok(_) => return Ok(Ok(())),
        Err(Error::NodeExists { .. }) => {}
        Err(e) => return Err(e),
    }
    loop {
        let (data, stat) = match zk.get_data(root).await {
            Ok(found) => found,
            // Deleted since: claim it again.
            Err(Error::NoNode { .. }) => return Box::pin(try_bind(zk, root, protocol, want)).await,
            Err(e) => return Err(e),
        };
        if data == want {
            return Ok(Ok(()));
        }
        if !data.is_empty() {
            let found = String::from_utf8_lossy(&data);
            return Ok(Err(StmError::ProtocolMismatch {
                root: root.to_owned(),
                found: found.strip_prefix(PREFIX).unwrap_or(&found).to_owned(),
                wanted: protocol,
            }));
        }
        match zk.set_data(root, want, Some(stat.version)).await {
            Ok(_) => return Ok(Ok(())),
            // Someone claimed it first: read the claim.
            Err(Error::BadVersion { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
}
