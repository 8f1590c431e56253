//! The commands of the `avout` binary, one module each; `main.rs` parses the command line and
//! dispatches here.

pub(crate) mod bench;
pub(crate) mod chaos;
pub(crate) mod check;
pub(crate) mod demo;
pub(crate) mod explore;
pub(crate) mod lock;
pub(crate) mod model;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod soak;
pub(crate) mod view;
pub(crate) mod watch;
pub(crate) mod zk;
pub(crate) mod zk_auth;

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

/// A positive duration written as a number and a unit: `500ms`, `5s`, `2m`.
pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("bad duration {s:?}: expected e.g. 5s or 500ms");
    let (num, unit) = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|i| s.split_at(i))
        .ok_or_else(bad)?;
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(bad()),
    };
    if secs <= 0.0 {
        return Err(bad());
    }
    // Too large to be a `Duration` is bad input too, not a panic.
    std::time::Duration::try_from_secs_f64(secs).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::parse_duration;

    #[test]
    fn durations_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in [
            "",
            "5",
            "s",
            "0s",
            "-1s",
            "5h",
            "1..2s",
            "99999999999999999999999s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }
}
