//! The id queue (Curator's `DistributedIdQueue`): a FIFO queue whose elements carry an id, and
//! a removal of every element with a given id.

use super::*;

/// A FIFO queue whose elements carry an id; [`remove`](Self::remove) takes out every element
/// with an id, so that none of them is ever delivered.
///
/// # Layout and algorithm
///
/// An element is named `queue-000-<GUID>-|<id>|<seq>`: the id sits between two `|`
/// separators before the sequence number, as in Curator's `DistributedIdQueue`
/// (`queue-|<id>|<seq>`; the rest of the name is this crate's [queue layout](super)). Puts and
/// takes are the [`Queue`]'s, exactly once; elements are taken in sequence order.
///
/// `remove(id)` is a series of takes that only consider elements with that id, each claiming
/// one element exactly like a take (delete at the version read plus a receipt, in one
/// `multi`), until none is left. So an element is either removed or taken, never both, and
/// the count returned is exact even when replies are lost. Curator instead rewrites `/` and
/// `|` in an id to `_`, which makes two ids equal; here such an id is refused
/// ([`QueueError::Zk`] with [`Error::BadArguments`]), as is an empty one.
///
/// # Connection loss, session expiry, cancellation
///
/// As for [`Queue`] (see the [module docs](super)): a connection loss is recovered; a session
/// expiry with a removal's claim in doubt ends it with [`QueueError::TakeInDoubt`] (the element
/// may be gone, uncounted); the handle carries on on the client's next session. Cancelling a
/// `remove` leaves each element either removed or in the queue; an element whose claim was in
/// flight is not delivered later.
///
/// ```no_run
/// use avout::recipes::queue::IdQueue;
/// # async fn demo(client: &avout::Client) -> Result<(), avout::recipes::queue::QueueError> {
/// let orders = IdQueue::new(client, "/orders")?;
/// orders.put("order-7", b"ship").await?;
/// orders.put("order-7", b"bill").await?;
/// assert_eq!(orders.remove("order-7").await?, 2);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct IdQueue {
    queue: Queue,
}

/// Refuses an id that would not read back as itself from a node name.
fn check_id(id: &str) -> Result<(), QueueError> {
    if id.is_empty() || id.contains(SEPARATOR) || id.contains('/') {
        return Err(QueueError::Zk(Error::BadArguments(format!(
            "a queue element's id must be non-empty, without '{SEPARATOR}' or '/': {id:?}"
        ))));
    }
    Ok(())
}

impl IdQueue {
    /// A handle on the id queue at `path` (created with its parents on first use).
    ///
    /// ```no_run
    /// # fn demo(client: &avout::Client) {
    /// assert!(avout::recipes::queue::IdQueue::new(client, "relative").is_err());
    /// # }
    /// ```
    pub fn new(client: &Client, path: impl Into<String>) -> Result<Self, QueueError> {
        Ok(IdQueue {
            queue: Queue::new(client, path)?,
        })
    }

    /// The queue's path.
    ///
    /// ```no_run
    /// # fn demo(q: avout::recipes::queue::IdQueue) {
    /// println!("{}", q.path());
    /// # }
    /// ```
    pub fn path(&self) -> &str {
        self.queue.path()
    }

    /// Appends an element with `id`, exactly once. Fails with [`Error::BadArguments`], having
    /// done nothing, for an empty id or one containing `|` or `/`.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::IdQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// q.put("job-1", b"payload").await?;
    /// assert!(q.put("a|b", b"payload").await.is_err());
    /// # Ok(()) }
    /// ```
    pub async fn put(&self, id: &str, data: &[u8]) -> Result<(), QueueError> {
        check_id(id)?;
        self.queue.put_tagged(0, Some(id), data).await
    }

    /// Removes every element with `id` (including one a cancelled take of this handle kept);
    /// returns how many. None of them is ever delivered by a take.
    ///
    /// An error after some elements were removed is [`QueueError::Interrupted`], which says
    /// how many; a [`QueueError::TakeInDoubt`] (inside it or alone) means one more element
    /// may have been removed uncounted.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::IdQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let removed = q.remove("job-1").await?;
    /// # Ok(()) }
    /// ```
    pub async fn remove(&self, id: &str) -> Result<usize, QueueError> {
        check_id(id)?;
        let mut removed = {
            let mut stash = lock(&self.queue.inner.stash);
            let before = stash.len();
            stash.retain(|e| select::tag(&e.name) != Some(id));
            before - stash.len()
        };
        let select = || Select::Id(id.to_owned());
        loop {
            match self
                .queue
                .take_selecting(Patience::None, select, false)
                .await
            {
                Ok(Some(_)) => removed += 1,
                Ok(None) => return Ok(removed),
                Err(e) if removed == 0 => return Err(e),
                Err(e) => {
                    return Err(QueueError::Interrupted {
                        removed,
                        source: Box::new(e),
                    });
                }
            }
        }
    }

    /// Removes and returns the first element (of any id), waiting while the queue is empty.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::IdQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let e = q.take().await?;
    /// println!("{:?}", e.id());
    /// # Ok(()) }
    /// ```
    pub async fn take(&self) -> Result<Element, QueueError> {
        self.queue.take().await
    }

    /// Removes and returns the first element, or `None` if the queue is empty.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::IdQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let maybe = q.try_take().await?;
    /// # Ok(()) }
    /// ```
    pub async fn try_take(&self) -> Result<Option<Element>, QueueError> {
        self.queue.try_take().await
    }

    /// Like [`take`](Self::take), waiting at most `timeout`.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::IdQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// let maybe = q.take_for(std::time::Duration::from_millis(200)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn take_for(&self, timeout: Duration) -> Result<Option<Element>, QueueError> {
        self.queue.take_for(timeout).await
    }

    /// The number of elements now in the queue.
    ///
    /// ```no_run
    /// # async fn demo(q: avout::recipes::queue::IdQueue) -> Result<(), avout::recipes::queue::QueueError> {
    /// println!("{}", q.count().await?);
    /// # Ok(()) }
    /// ```
    pub async fn count(&self) -> Result<usize, QueueError> {
        self.queue.count().await
    }
}

impl Element {
    /// The id an [`IdQueue`] element was put with: the tag in its name (`None` for a FIFO or
    /// priority queue's element; a [`DelayQueue`]'s element reads as its due time in hex).
    ///
    /// ```
    /// # use avout::recipes::queue::Element;
    /// let e = Element { name: "queue-000-00000000000000000000000000000001-|job-1|0000000009".into(), data: vec![] };
    /// assert_eq!(e.id(), Some("job-1"));
    /// ```
    pub fn id(&self) -> Option<&str> {
        select::tag(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::check_id;

    #[test]
    fn ids_that_would_not_read_back_are_refused() {
        assert!(check_id("order-7").is_ok());
        for bad in ["", "a|b", "a/b", "|"] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }
}
