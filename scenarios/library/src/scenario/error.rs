//! Why a workload gave up: the error type of every scenario's workload, the built-ins' and
//! users' alike.

/// Any error a workload passes on (an application's own included).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a workload could not carry on. On the simulator a workload that gives up fails its run
/// (an anomaly starting with [`ERROR_PREFIX`](super::ERROR_PREFIX)): its seed is named and the
/// run is recorded, replayed and shrunk like any other failure.
///
/// ```
/// use avout_scenarios::scenario::WorkloadError;
/// let e: WorkloadError = avout::Error::SessionExpired.into();
/// assert!(e.to_string().contains("session expired"));
/// let e = WorkloadError::gave_up("the final read", Some(avout::Error::ConnectionLoss));
/// assert!(e.to_string().starts_with("the final read never succeeded"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// A call the workload cannot do without failed (opening a client or a handle): rejected,
    /// in doubt or a lost session, as the error's class says.
    #[error(transparent)]
    Avout(#[from] avout::Error),
    /// An atom failed where the workload cannot do without it (opening it, a final read).
    #[error(transparent)]
    Atom(#[from] avout::atom::AtomError),
    /// A transaction failed where the workload cannot do without it.
    #[error(transparent)]
    Stm(#[from] avout::stm::StmError),
    /// A lock, a read-write lock or an election could not be made.
    #[error(transparent)]
    Lock(#[from] avout::lock::LockError),
    /// A queue could not be made.
    #[error(transparent)]
    Queue(#[from] avout::recipes::queue::QueueError),
    /// A barrier could not be made.
    #[error(transparent)]
    Barrier(#[from] avout::recipes::barrier::BarrierError),
    /// A lock table could not be made.
    #[error(transparent)]
    LockTable(#[from] avout::locktable::LockTableError),
    /// Something the workload needs could not be set up (a directory, a store).
    #[error("cannot set up {what}: {source}")]
    Setup {
        /// What the workload was setting up.
        what: String,
        /// Why it failed.
        #[source]
        source: BoxError,
    },
    /// A step retried to its limit (or stuck past its deadline) without succeeding.
    #[error("{what} never succeeded{}", last.as_ref().map(|e| format!(" (last: {e})")).unwrap_or_default())]
    GaveUp {
        /// The step.
        what: String,
        /// Its last error, if it had one.
        #[source]
        last: Option<BoxError>,
    },
    /// An error of the application under test, passed on as it is.
    #[error(transparent)]
    Other(BoxError),
}

impl WorkloadError {
    /// `what` failed to be set up, because of `source`.
    pub fn setup(what: impl Into<String>, source: impl Into<BoxError>) -> Self {
        WorkloadError::Setup {
            what: what.into(),
            source: source.into(),
        }
    }

    /// `what` was retried to its limit; `last` is its last error.
    pub fn gave_up<E: Into<BoxError>>(what: impl Into<String>, last: Option<E>) -> Self {
        WorkloadError::GaveUp {
            what: what.into(),
            last: last.map(Into::into),
        }
    }

    /// An application's own error.
    ///
    /// ```
    /// use avout_scenarios::scenario::WorkloadError;
    /// let e = WorkloadError::other(std::io::Error::other("disk full"));
    /// assert_eq!(e.to_string(), "disk full");
    /// ```
    pub fn other(e: impl Into<BoxError>) -> Self {
        WorkloadError::Other(e.into())
    }
}
