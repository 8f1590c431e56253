//! The commands of the `avout` binary, one module each; `main.rs` parses the command line and
//! dispatches here.

pub(crate) mod bench;
pub(crate) mod chaos;
pub(crate) mod check;
pub(crate) mod demo;
pub(crate) mod lock;
pub(crate) mod model;
pub(crate) mod run;
pub(crate) mod soak;
pub(crate) mod view;
pub(crate) mod watch;
pub(crate) mod zk;

use std::future::Future;

/// Runs `task` to its end on a runtime for commands that talk to a real ZooKeeper: the
/// client's connection task gets a thread of its own. The task runs on a worker thread,
/// beside the clients' connection tasks: a reply then wakes it on the same thread instead of
/// waking the main thread (a futex round trip per request, which on a loaded 2-core machine
/// costs throughput). A panic in it is raised again here.
pub(crate) fn block_on<T: Send + 'static>(
    task: impl Future<Output = T> + Send + 'static,
) -> Result<T, std::io::Error> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let task = runtime.spawn(task);
    match runtime.block_on(task) {
        Ok(result) => Ok(result),
        Err(e) => rethrow(e),
    }
}

/// Raises again the panic a task ended with.
pub(crate) fn rethrow(e: tokio::task::JoinError) -> ! {
    #[cfg(not(madsim))]
    std::panic::resume_unwind(e.into_panic());
    // madsim's join error keeps no payload; its message names the panic.
    #[cfg(madsim)]
    panic!("a task panicked: {e}");
}
