//! Restarting a failed agent and rewriting its state: the compare-and-set over the state and
//! the queue that a restart, a change of error mode and a cleared queue share.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{
    Action, Agent, AgentError, AgentFailure, AgentState, EntryName, ErrorMode, RestartMark,
    queue_dir, wait_connected,
};
use crate::{Error, Op, path};

impl<T, A> Agent<T, A>
where
    T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static,
    A: Action<T>,
{
    /// Sets the value to `value`, clears the failure and, with `clear_actions`, drops every
    /// queued action (Clojure's `restart-agent`). The value must pass this handle's
    /// validator. Fails with [`AgentError::NotFailed`] if the agent is not failed (as
    /// Clojure's does), so that of two processes restarting the same failure one wins. A lost
    /// reply is decided by the state's [`RestartMark`]: the call reports its own restart
    /// even when it only learns of it on a retry.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// if a.error().await?.is_some() { a.restart(0, false).await?; }
    /// # Ok(()) }
    /// ```
    pub async fn restart(&self, value: T, clear_actions: bool) -> Result<AgentFailure, AgentError> {
        self.restart_with(|_, _| value.clone(), clear_actions).await
    }

    /// Like [`restart`](Self::restart), with the new value computed from the failed one and
    /// the failure, inside the compare-and-set (`f` may run more than once and must be
    /// pure): nothing applied or restarted meanwhile is overwritten. Returns the failure
    /// that was cleared.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// let cleared = a.restart_with(|n, _failure| n + 1, false).await?;
    /// println!("restarted after: {}", cleared.error);
    /// # Ok(()) }
    /// ```
    pub async fn restart_with(
        &self,
        mut f: impl FnMut(&T, &AgentFailure) -> T,
        clear_actions: bool,
    ) -> Result<AgentFailure, AgentError> {
        let path = self.inner.path.clone();
        let zk = self.session().await?;
        let guid = format!("{:032x}", zk.new_guid());
        let mut cleared: Option<AgentFailure> = None;
        self.rewrite(|state, entries| {
            // A try whose reply was lost may have applied: the mark says whether it did,
            // whatever has happened to the agent since.
            if let (Some(tried), Some(mark)) = (&cleared, &state.restart)
                && mark.seq == tried.seq
                && mark.guid == guid
            {
                return Ok(None);
            }
            let Some(failure) = state.failure.clone() else {
                return Err(AgentError::NotFailed { path: path.clone() });
            };
            let old = self.decode_value(&state.value)?;
            let value = f(&old, &failure);
            if !self.valid(&value) {
                return Err(AgentError::Invalid { path: path.clone() });
            }
            let json = serde_json::to_value(&value).map_err(|source| AgentError::Encode {
                path: path.clone(),
                source,
            })?;
            let mut next = state.clone();
            next.value = json;
            next.failure = None;
            next.restart = Some(RestartMark {
                seq: failure.seq,
                guid: guid.clone(),
            });
            let mut drop = Vec::new();
            if clear_actions {
                for e in entries.iter().filter(|e| e.seq > state.applied) {
                    next = next.consumed(e, next.value.clone(), None);
                    drop.push(e.name());
                }
            }
            cleared = Some(failure);
            Ok(Some((next, drop)))
        })
        .await?;
        Ok(cleared.expect("a rewrite that succeeded cleared a failure"))
    }

    /// Sets the error mode every executor follows from its next action on.
    ///
    /// ```no_run
    /// # async fn demo(a: avout::agent::Agent<u64, ()>) -> Result<(), avout::agent::AgentError> {
    /// a.set_error_mode(avout::agent::ErrorMode::Continue).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_error_mode(&self, mode: ErrorMode) -> Result<(), AgentError> {
        self.rewrite(|state, _| {
            let mut next = state.clone();
            next.mode = mode;
            Ok(Some((next, Vec::new())))
        })
        .await
    }

    /// Replaces the state by `f(state, queue)` with a compare-and-set, deleting the queue
    /// entries `f` names in the same `multi`; retried on conflict or a lost reply (`f` sees
    /// each try's state). `Ok(None)` from `f` ends it with nothing (more) to write; an error
    /// ends it with nothing written.
    pub(super) async fn rewrite(
        &self,
        mut f: impl FnMut(
            &AgentState,
            &[EntryName],
        ) -> Result<Option<(AgentState, Vec<String>)>, AgentError>,
    ) -> Result<(), AgentError> {
        let zk = self.session().await?;
        let queue = queue_dir(&self.inner.path);
        loop {
            // Reads are retried across a lost connection: after a `multi` whose reply was
            // lost, only the state read next decides it, so giving up there would report a
            // write that may have applied as an error the caller retries.
            let listed = async {
                let read = self.read(&*zk).await?;
                let (children, _) = zk.get_children(&queue).await?;
                Ok::<_, AgentError>((read, children))
            };
            let (read, children) = match listed.await {
                Ok(listed) => listed,
                Err(AgentError::Zk(e)) if e.is_indeterminate() => {
                    wait_connected(&*zk).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let entries: Vec<EntryName> = children
                .iter()
                .filter_map(|c| EntryName::parse(c))
                .collect();
            let Some((next, drop)) = f(&read.state, &entries)? else {
                return Ok(());
            };
            let mut ops = vec![Op::set_data(
                &self.inner.path,
                next.encode(),
                Some(read.version),
            )];
            ops.extend(drop.iter().map(|n| Op::delete(path::join(&queue, n), None)));
            match zk.multi(&ops).await {
                Ok(_) => return Ok(()),
                Err(e) if matches!(e.root(), Error::BadVersion { .. } | Error::NoNode { .. }) => {}
                Err(e) if e.is_indeterminate() => {
                    // Rewriting again from what is there now is what the caller asked for,
                    // whether or not the lost `multi` applied.
                    wait_connected(&*zk).await?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}
