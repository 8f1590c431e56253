//! How the workloads' clocks run, one spelling for the recipe and the STM workloads so that
//! their figures are taken alike (and alike to the peers').
//!
//! - One client ([`warm_then_time`]): the warm-up operations run untimed, then the clock runs
//!   over the timed loop alone.
//! - Contended ([`contended`]): every client task prepares itself (its session, its handles,
//!   its warm-up) and then waits at a barrier; the clock starts when every client has reached
//!   it and stops when the last client's timed work has finished. A client whose preparation
//!   failed still reaches the barrier, so neither the clock nor the others wait for it; its
//!   error comes back with the outcomes.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::BenchError;

/// Runs `op` `warmup` times untimed, then `n` times timed, and returns the timed loop's
/// length; the first error stops it.
pub(crate) async fn warm_then_time<F, E>(
    warmup: u64,
    n: u64,
    mut op: impl FnMut() -> F,
) -> Result<Duration, E>
where
    F: Future<Output = Result<(), E>>,
{
    for _ in 0..warmup {
        op().await?;
    }
    let start = Instant::now();
    for _ in 0..n {
        op().await?;
    }
    Ok(start.elapsed())
}

/// Runs `clients` tasks, the `i`th preparing itself with `prepare(i)` and then, once every
/// client is prepared, doing its timed `work` on what it prepared; returns the time from the
/// barrier to the last finish and each client's outcome, in client order. A panic in a
/// client is raised again here.
pub(crate) async fn contended<P, W, F, T>(
    clients: usize,
    mut prepare: impl FnMut(usize) -> P,
    work: impl FnOnce(W) -> F + Clone + Send + 'static,
) -> (Duration, Vec<Result<T, BenchError>>)
where
    P: Future<Output = Result<W, BenchError>> + Send + 'static,
    F: Future<Output = Result<T, BenchError>> + Send,
    W: Send + 'static,
    T: Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for index in 0..clients {
        let (prepared, work, barrier) = (prepare(index), work.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            // Whatever happens, this client reaches the barrier once, so the others and the
            // clock are not left waiting for it; its error is reported after the join.
            let prepared = prepared.await;
            barrier.wait().await;
            work(prepared?).await
        }));
    }
    barrier.wait().await;
    let start = Instant::now();
    let mut outcomes = Vec::with_capacity(clients);
    for task in tasks {
        match task.await {
            Ok(outcome) => outcomes.push(outcome),
            Err(e) => crate::cli::cmd::rethrow(e),
        }
    }
    (start.elapsed(), outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn warm_up_runs_before_the_clock_and_errors_stop_the_loop() {
        let mut count = 0;
        let elapsed = warm_then_time(2, 3, || {
            count += 1;
            async { Ok::<_, BenchError>(()) }
        })
        .await;
        assert!(elapsed.is_ok());
        assert_eq!(count, 5);
        let mut left = 4;
        let stopped = warm_then_time(2, 3, || {
            left -= 1;
            let result = if left == 0 {
                Err(BenchError::Violation("stop".into()))
            } else {
                Ok(())
            };
            async { result }
        })
        .await;
        assert!(matches!(stopped, Err(BenchError::Violation(_))));
        assert_eq!(left, 0);
    }

    #[tokio::test]
    async fn every_client_reaches_the_start_even_when_its_preparation_fails() {
        let (_, outcomes) = contended(
            3,
            |i| async move {
                if i == 1 {
                    Err(BenchError::Violation(format!("client {i}")))
                } else {
                    Ok(i * 10)
                }
            },
            |prepared| async move { Ok(prepared + 1) },
        )
        .await;
        let shown: Vec<String> = outcomes
            .iter()
            .map(|o| match o {
                Ok(n) => n.to_string(),
                Err(e) => e.to_string(),
            })
            .collect();
        assert_eq!(shown, ["1", "client 1", "21"]);
    }
}
