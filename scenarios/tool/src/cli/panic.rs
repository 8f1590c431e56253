//! What a panic prints beyond Rust's own message: the run it happened in, with its seed and
//! the command that runs it again.
//!
//! The hook never panics itself (a panic inside a panic hook aborts the process without a
//! word about the first one): it writes with `write!` and ignores a closed stderr.

use std::io::Write;
use std::sync::Mutex;

static CONTEXT: Mutex<Option<String>> = Mutex::new(None);

/// Says which run is under way ("election, seed 17, round 3 on own ensemble of 3; again:
/// avout run …"), until [`clear`] or the next `set`.
pub(crate) fn set(context: String) {
    *CONTEXT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(context);
}

/// No run is under way.
pub(crate) fn clear() {
    *CONTEXT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
}

/// The current context, if a run is under way.
fn current() -> Option<String> {
    // `try_lock`: the panic may have happened while this very thread held the lock.
    CONTEXT.try_lock().ok().and_then(|c| c.clone())
}

/// Installs the hook: Rust's default message first, then the run's seed and how to rerun it.
/// A reader that stops early (`avout run bank | head`) ends the process quietly instead, as
/// it does other Unix tools, with the status a SIGPIPE would give.
pub(crate) fn install() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
        if let Some(context) = current() {
            let _ = writeln!(
                std::io::stderr(),
                "avout: the panic above happened in {context}"
            );
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHILD: &str = "AVOUT_PANIC_HOOK_CHILD";

    /// Runs this test binary's test `name` alone in a child process with `CHILD` set, and
    /// returns its stderr.
    fn child_stderr(name: &str) -> String {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads", "1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert!(!out.status.success(), "the child did not panic");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    #[test]
    fn a_panic_during_a_run_prints_its_message_then_the_seed_and_how_to_run_it_again() {
        if std::env::var_os(CHILD).is_some() {
            install();
            set("bank with seed 42 (round 3); again: avout run bank --seed 42".into());
            panic!("the workload broke");
        }
        let stderr = child_stderr(
            "cli::panic::tests::a_panic_during_a_run_prints_its_message_then_the_seed_and_how_to_run_it_again",
        );
        let message = stderr.find("the workload broke").expect(&stderr);
        let context = stderr
            .find("happened in bank with seed 42 (round 3); again: avout run bank --seed 42")
            .expect(&stderr);
        assert!(message < context, "{stderr}");
        assert!(!stderr.contains("while processing panic"), "{stderr}");
    }

    #[test]
    fn a_panic_outside_a_run_prints_only_its_message() {
        if std::env::var_os(CHILD).is_some() {
            install();
            set("nothing".into());
            clear();
            panic!("outside any run");
        }
        let stderr =
            child_stderr("cli::panic::tests::a_panic_outside_a_run_prints_only_its_message");
        assert!(stderr.contains("outside any run"), "{stderr}");
        assert!(!stderr.contains("happened in"), "{stderr}");
    }

    #[test]
    fn a_panic_while_the_context_is_being_set_does_not_hang_the_hook() {
        if std::env::var_os(CHILD).is_some() {
            install();
            let _held = CONTEXT.lock().unwrap();
            panic!("inside the lock");
        }
        let stderr = child_stderr(
            "cli::panic::tests::a_panic_while_the_context_is_being_set_does_not_hang_the_hook",
        );
        assert!(stderr.contains("inside the lock"), "{stderr}");
    }
}
