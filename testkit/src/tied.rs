//! Child processes that die with the process that started them.
//!
//! A server the test kit starts is stopped by its handle's `Drop`. That never runs when the
//! starting process dies by a signal (a `kill` of the CLI, a test binary killed by a timeout,
//! an abort): without more, its JVMs and databases outlive it, holding ports and memory.
//! Linux's `PR_SET_PDEATHSIG` sends a child a signal when its parent *thread* ends, so every
//! tied child is forked from one thread that lives as long as the process: servers started
//! from a short-lived thread (a nemesis's blocking task, a test's thread) are not killed with
//! that thread, only with the process.
//!
//! Servers meant to outlive their starter (`own_process_group`, then `detach`) are not tied.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Mutex, OnceLock};

type Job = (Command, Sender<io::Result<Child>>);

/// Spawns `cmd` as a child that is sent `SIGKILL` when this process ends, however it ends.
pub(crate) fn spawn(mut cmd: Command) -> io::Result<Child> {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed: prctl(2) and getppid(2) are system calls taking plain integers, and
    // the closure allocates nothing and takes no lock.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would kill us.
            if u32::try_from(libc::getppid()) != Ok(parent) {
                return Err(io::Error::other("the starting process ended"));
            }
            Ok(())
        });
    }
    let (reply, answer) = channel();
    spawner()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((cmd, reply))
        .map_err(|_| io::Error::other("the spawner thread ended"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the spawner thread ended"))?
}

/// The one thread every tied child is forked from; it waits for work until the process ends.
fn spawner() -> &'static Mutex<Sender<Job>> {
    static SPAWNER: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (jobs, queue) = channel::<Job>();
        std::thread::Builder::new()
            .name("avout-testkit-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in queue {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("a thread can be started");
        // The sender is kept in the static, so the thread's loop never ends.
        Mutex::new(jobs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tied_child_runs_and_is_ours() {
        let mut child = spawn({
            let mut c = Command::new("sh");
            c.args(["-c", "exit 7"]);
            c
        })
        .unwrap();
        assert_eq!(child.wait().unwrap().code(), Some(7));
    }

    #[test]
    fn a_tied_child_outlives_the_thread_that_asked_for_it() {
        let mut child = std::thread::spawn(|| {
            let mut c = Command::new("sleep");
            c.arg("30");
            spawn(c).unwrap()
        })
        .join()
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert_eq!(child.try_wait().unwrap(), None, "killed with its thread");
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn tied_children_asked_for_by_many_short_threads_all_live() {
        let mut children: Vec<Child> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    let mut c = Command::new("sleep");
                    c.arg("30");
                    spawn(c).unwrap()
                })
                .join()
                .unwrap()
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(500));
        for (i, child) in children.iter_mut().enumerate() {
            assert_eq!(child.try_wait().unwrap(), None, "child {i} was killed");
        }
        for mut child in children {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let err = spawn(Command::new("/nonexistent/avout-no-such-program")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
