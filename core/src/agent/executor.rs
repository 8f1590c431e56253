//! The executor: applies queued actions one at a time, in queue order, exactly once (see the
//! [module docs](super) for why the state's `applied` position makes that hold across
//! executors that crash or lose their lock).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::lock::{LockError, Mutex, MutexGuard};
use crate::{Coordination, Error, MAX_DATA_LEN, Op, Watch, path};

use super::{
    Action, Agent, AgentError, AgentFailure, AgentState, EntryName, ErrorMode, executor_dir,
    next_entry, queue_dir, wait_connected,
};

/// What one step of the executor did.
enum Progress {
    /// An action was consumed (applied, failed or skipped), by this executor or, after a lost
    /// reply, possibly by another.
    Consumed,
    /// Another executor (or a restart) moved the state first: look again.
    Raced,
    /// Nothing to apply (the queue is empty or the agent is failed): wait for a change.
    Wait(Watch, Watch),
}

impl<T, A> Agent<T, A>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    A: Action<T>,
{
    /// Runs the agent's executor until the client ends: takes the executor lock
    /// (`P/executor`), applies queued actions as they come, and takes the lock again on the
    /// client's next session after a session loss. Returns only the error that ended it.
    ///
    /// Run it in as many processes as should be able to take over; one applies at a time.
    /// Aborting the task is safe at any point (see the [module docs](super)).
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) {
    /// let task = tokio::spawn(async move { a.run_executor().await });
    /// // ...
    /// task.abort();
    /// # }
    /// ```
    pub async fn run_executor(&self) -> AgentError {
        let client = &self.inner.client;
        let mutex = match Mutex::new(client, executor_dir(&self.inner.path)) {
            Ok(mutex) => mutex,
            Err(e) => return e.into(),
        };
        loop {
            let guard = match mutex.lock().await {
                Ok(guard) => guard,
                Err(e) => {
                    let e = AgentError::from(e);
                    if e.is_session_lost() && !client.has_ended() {
                        continue;
                    }
                    return e;
                }
            };
            let ended = self.serve(&guard).await;
            if let Err(e) = guard.unlock().await {
                tracing::debug!(agent = %self.inner.path, error = %e, "executor lock release");
            }
            // A lost session or an outcome in doubt: take the lock again. Anything else (a
            // missing agent, bytes that do not decode) would only fail again.
            let passing = ended.is_session_lost() || !ended.is_definite();
            if client.has_ended() || !passing {
                return ended;
            }
            tracing::debug!(agent = %self.inner.path, error = %ended, "executor starts over");
        }
    }

    /// Applies, while holding the lock, until something goes wrong.
    async fn serve(&self, guard: &MutexGuard) -> AgentError {
        loop {
            let zk = match self.session().await {
                Ok(zk) => zk,
                Err(e) => return e,
            };
            match self.step(&*zk, Some(guard)).await {
                Ok(Progress::Consumed | Progress::Raced) => {}
                Ok(Progress::Wait(state, queue)) => {
                    // `biased`: tokio's default picks a branch at random, which a simulated run
                    // could not replay.
                    tokio::select! {
                        biased;
                        _ = state => {}
                        _ = queue => {}
                        lost = guard.lost() => return lost.into(),
                    }
                }
                Err(AgentError::Zk(e)) if e.is_indeterminate() => {
                    if let Err(e) = wait_connected(&*zk).await {
                        return e.into();
                    }
                }
                Err(e) => return e,
            }
        }
    }

    /// Applies every action queued now, without the executor lock (the compare-and-set keeps
    /// it exact even beside a running executor), and returns how many this call consumed.
    /// Stops early at a failed agent. For tests, tools, and draining a queue by hand.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// let n = a.apply_pending().await?;
    /// # Ok(()) }
    /// ```
    pub async fn apply_pending(&self) -> Result<usize, AgentError> {
        let zk = self.session().await?;
        let mut consumed = 0;
        loop {
            match self.step(&*zk, None).await {
                Ok(Progress::Consumed) => consumed += 1,
                Ok(Progress::Raced) => {}
                Ok(Progress::Wait(..)) => return Ok(consumed),
                Err(AgentError::Zk(e)) if e.is_indeterminate() => wait_connected(&*zk).await?,
                Err(e) => return Err(e),
            }
        }
    }

    /// One step: read the state and the queue, consume the next entry.
    async fn step(
        &self,
        zk: &dyn Coordination,
        guard: Option<&MutexGuard>,
    ) -> Result<Progress, AgentError> {
        let queue = queue_dir(&self.inner.path);
        let synced = zk.sync(&self.inner.path);
        let read = zk.get_and_watch_data(&self.inner.path);
        let listed = zk.get_and_watch_children(&queue);
        synced.await?;
        let (data, stat, state_watch) = match read.await {
            Ok(read) => read,
            Err(Error::NoNode { .. }) => {
                return Err(AgentError::Missing {
                    path: self.inner.path.clone(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        let (children, _, queue_watch) = listed.await?;
        let state = self.decode_state(&data)?;
        let entries: Vec<EntryName> = children
            .iter()
            .filter_map(|c| EntryName::parse(c))
            .collect();
        let Some(entry) = next_entry(&state, &entries) else {
            return Ok(Progress::Wait(state_watch, queue_watch));
        };
        let entry_path = path::join(&queue, &entry.name());
        let bytes = match zk.get_data(&entry_path).await {
            Ok((bytes, _)) => bytes,
            Err(Error::NoNode { .. }) => return Ok(Progress::Raced),
            Err(e) => return Err(e.into()),
        };
        let (next, skipped) = self.consume(&state, entry, &bytes)?;
        let ops = vec![
            Op::set_data(&self.inner.path, next, Some(stat.version)),
            Op::delete(&entry_path, None),
        ];
        let written = match guard {
            Some(guard) => guard.fenced(ops).await.map_err(|e| match e {
                LockError::Zk(e) => AgentError::Zk(e),
                other => AgentError::Lock(other),
            }),
            None => zk.multi(&ops).await.map_err(AgentError::Zk),
        };
        match written {
            Ok(_) => {
                if let Some(failure) = skipped {
                    let handler = crate::sync::lock(&self.inner.handler).clone();
                    if let Some(handler) = handler {
                        handler(&failure);
                    }
                }
                Ok(Progress::Consumed)
            }
            Err(AgentError::Zk(e))
                if matches!(e.root(), Error::BadVersion { .. } | Error::NoNode { .. }) =>
            {
                Ok(Progress::Raced)
            }
            Err(AgentError::Zk(e)) if e.is_indeterminate() => {
                // The value and `applied` moved together or not at all: the state says.
                loop {
                    wait_connected(zk).await?;
                    match self.read(zk).await {
                        Ok(read) if read.state.applied >= entry.seq => {
                            return Ok(Progress::Consumed);
                        }
                        Ok(_) => return Ok(Progress::Raced),
                        Err(AgentError::Zk(e)) if e.is_indeterminate() => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(e) => Err(e),
        }
    }

    /// The state's bytes after consuming `entry` (holding the action `bytes`), and the
    /// failure to hand the error handler if the action is skipped.
    fn consume(
        &self,
        state: &AgentState,
        entry: &EntryName,
        bytes: &[u8],
    ) -> Result<(Vec<u8>, Option<AgentFailure>), AgentError> {
        let outcome = match serde_json::from_slice::<A>(bytes) {
            Err(e) => Err(format!("the action does not decode: {e}")),
            Ok(action) => {
                let current = self.decode_value(&state.value)?;
                match action.apply(&current) {
                    Ok(new) if self.valid(&new) => {
                        serde_json::to_value(&new).map_err(|e| format!("cannot encode: {e}"))
                    }
                    Ok(_) => Err("the validator rejected the new value".to_owned()),
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        let failed = |error: String| AgentFailure {
            seq: entry.seq,
            error,
        };
        let (next, failure) = match outcome {
            Ok(value) => (state.consumed(entry, value, None), None),
            Err(error) => (
                state.consumed(entry, state.value.clone(), None),
                Some(failed(error)),
            ),
        };
        let next = match failure {
            None => next.encode(),
            Some(f) => return Ok(self.fail_or_skip(state, next, f)),
        };
        if next.len() > MAX_DATA_LEN {
            let f = failed(format!(
                "the new state takes {} bytes, over ZooKeeper's {MAX_DATA_LEN}",
                next.len()
            ));
            let unchanged = state.consumed(entry, state.value.clone(), None);
            return Ok(self.fail_or_skip(state, unchanged, f));
        }
        Ok((next, None))
    }

    /// A failed action under the agent's error mode: the state that stops the agent, or the
    /// one that skips the action with the failure for the handler.
    fn fail_or_skip(
        &self,
        state: &AgentState,
        mut next: AgentState,
        failure: AgentFailure,
    ) -> (Vec<u8>, Option<AgentFailure>) {
        match state.mode {
            ErrorMode::Fail => {
                next.failure = Some(failure);
                (next.encode(), None)
            }
            ErrorMode::Continue => (next.encode(), Some(failure)),
        }
    }
}
