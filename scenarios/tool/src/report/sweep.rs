//! The sweep runner: every (point, seed) pair of a sweep run once, on every core.
//!
//! Each run is independent (a simulation owns its runtime, its service and its clients), so
//! the pairs are handed out to OS threads from one counter and their results put back in
//! (point, seed) order: the numbers do not depend on how many threads ran them, or in which
//! order they finished. A progress bar is drawn on stderr when it is a terminal.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `f(point, seed)` for every point and every seed in `1..=seeds` on `threads` threads,
/// and returns the results grouped by point, seeds in order.
///
/// ```
/// use avout_cli::report::sweep::run_sweep;
/// let points = [1u64, 10, 100];
/// let out = run_sweep("demo", &points, 3, 2, |p, seed| p * seed);
/// assert_eq!(out, vec![vec![1, 2, 3], vec![10, 20, 30], vec![100, 200, 300]]);
/// ```
pub fn run_sweep<P, T, F>(
    label: &str,
    points: &[P],
    seeds: u64,
    threads: usize,
    f: F,
) -> Vec<Vec<T>>
where
    P: Sync,
    T: Send,
    F: Fn(&P, u64) -> T + Sync,
{
    let per = seeds as usize;
    let total = points.len() * per;
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..total).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let bar = progress(label, total as u64);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, total.max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= total {
                        break;
                    }
                    let out = f(&points[i / per], (i % per) as u64 + 1);
                    results.lock().expect("not poisoned")[i] = Some(out);
                    bar.inc(1);
                }
            });
        }
    });
    bar.finish_and_clear();
    let mut flat = results.into_inner().expect("not poisoned").into_iter();
    (0..points.len())
        .map(|_| {
            (0..per)
                .map(|_| flat.next().flatten().expect("every pair ran"))
                .collect()
        })
        .collect()
}

/// The number of threads to use by default: one per core.
///
/// ```
/// assert!(avout_cli::report::sweep::default_threads() >= 1);
/// ```
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

fn progress(label: &str, len: u64) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{prefix} {pos}/{len} runs [{bar:30}] {elapsed} elapsed, {eta} left",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_prefix(label.to_owned());
    bar
}
