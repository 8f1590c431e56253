//! The executor: applies queued actions one at a time, in queue order, exactly once (see the
//! [module docs](super) for why the state's `applied` position makes that hold across
//! executors that crash or lose their lock).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::lock::{Mutex, MutexGuard};
use crate::machine::drive;

use super::{
    Action, Agent, AgentError, AgentState, Consumed, EntryName, StepError, StepMachine, Stepped,
    consume, executor_dir,
};

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
            let generation = client.generation();
            let guard = match mutex.lock().await {
                Ok(guard) => guard,
                Err(e) => {
                    let e = AgentError::from(e);
                    if e.is_session_lost() && !client.has_ended() {
                        // Not at once: the session that refused may still look live (see
                        // `Client::past_session`).
                        if let Err(e) = client.past_session(generation).await {
                            return e.into();
                        }
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
            let mut step = StepMachine::new(
                &self.inner.path,
                Some(guard.node().to_owned()),
                true,
                |s: &AgentState, e: &EntryName, b: &[u8]| self.consume(s, e, b),
            );
            // `biased`: tokio's default picks a branch at random, which a simulated run could
            // not replay. A step cancelled by the loss of the lock wrote nothing or is decided
            // by the next executor's read of `applied`.
            let stepped = tokio::select! {
                biased;
                stepped = drive(&*zk, &mut step) => stepped,
                lost = guard.lost() => return lost.into(),
            };
            if let Err(e) = stepped.map(|stepped| self.stepped(stepped)) {
                return e.into();
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
            let mut step = StepMachine::new(
                &self.inner.path,
                None,
                false,
                |s: &AgentState, e: &EntryName, b: &[u8]| self.consume(s, e, b),
            );
            match drive(&*zk, &mut step).await? {
                Stepped::Idle => return Ok(consumed),
                stepped => consumed += usize::from(self.stepped(stepped)),
            }
        }
    }

    /// Hands a skipped action's failure to the error handler; whether the step consumed an
    /// entry.
    fn stepped(&self, stepped: Stepped) -> bool {
        let Stepped::Consumed { skipped, .. } = stepped else {
            return false;
        };
        if let Some(failure) = skipped {
            let handler = crate::sync::lock(&self.inner.handler).clone();
            if let Some(handler) = handler {
                handler(&failure);
            }
        }
        true
    }

    /// Consumes `entry` with this handle's action type and validator.
    fn consume(
        &self,
        state: &AgentState,
        entry: &EntryName,
        bytes: &[u8],
    ) -> Result<Consumed, StepError> {
        consume::<T, A>(&self.inner.path, state, entry, bytes, |v| self.valid(v))
    }
}
