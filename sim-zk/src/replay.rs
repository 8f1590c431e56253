//! Replay files: a run's seed, configuration and the choices it made, as JSON.
//!
//! A run is a function of its seed, so the seed alone replays it, as long as the code and the
//! configuration are the same. A replay file pins more: it records every number the network
//! and fault streams handed out (latencies, fault draws and durations), and a run made from
//! the file takes its choices from those tapes instead of the streams. The choices are plain
//! data, so a tool can edit them (turn one fault draw off, shorten a latency) and replay the
//! edited schedule exactly; a run that asks for more choices than the tape holds has diverged
//! from the recording, goes on with fresh choices from the seed, and says so in
//! [`RunSummary::tapes_exhausted`](crate::RunSummary::tapes_exhausted). The workload's own
//! stream is not taped: it is derived from the seed, which the file also holds.
//!
//! Every failing run writes one of these files (see [`Sim::run`](crate::Sim::run)): its
//! choices are rebuilt from the seed at the failure, so ordinary runs pay nothing to record.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::SimConfig;

/// The format version this crate writes and reads.
pub const REPLAY_FORMAT: u32 = 1;

/// The choices a run made, per stream.
///
/// ```
/// let c = avout_sim_zk::Choices::default();
/// assert!(c.network.is_empty() && c.faults.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choices {
    /// Raw draws of the network stream (latencies).
    pub network: Vec<u64>,
    /// Raw draws of the fault stream.
    pub faults: Vec<u64>,
}

/// A replay file. Make one by running with [`Builder::record_choices`](crate::Builder::record_choices)
/// and taking [`RunSummary::replay`](crate::RunSummary::replay); replay it with
/// [`Sim::from_replay`](crate::Sim::from_replay).
///
/// ```
/// use avout::Coordination;
/// use avout_sim_zk::{ReplayFile, Sim};
///
/// let work = |ctx: avout_sim_zk::SimCtx| async move {
///     ctx.clients[0].create("/r", b"", &Default::default()).await.unwrap();
/// };
/// let (_, recorded) = Sim::builder().seed(9).record_choices(true).build().run(work);
/// let file = recorded.replay.expect("recorded");
/// let json = file.to_json();
/// let (_, replayed) = Sim::from_replay(&ReplayFile::from_json(&json).unwrap()).run(work);
/// assert_eq!(replayed.hash, recorded.hash);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayFile {
    /// [`REPLAY_FORMAT`].
    pub format: u32,
    /// The configuration, seed included.
    pub config: SimConfig,
    /// The choices.
    pub choices: Choices,
    /// The event-log hash of the recorded run, to compare a replay against.
    pub hash: u64,
}

/// Why a replay file could not be read or written.
///
/// ```
/// let e = avout_sim_zk::ReplayFile::from_json("{").unwrap_err();
/// assert!(e.to_string().contains("JSON"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The file could not be read or written.
    #[error("replay file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text is not a replay file.
    #[error("replay file is not valid JSON for this format: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by an incompatible version.
    #[error("replay file has format {found}, this crate reads format {REPLAY_FORMAT}")]
    Format {
        /// The file's format.
        found: u32,
    },
}

impl ReplayFile {
    /// The file as pretty JSON.
    ///
    /// ```
    /// # let file = avout_sim_zk::ReplayFile { format: 1, config: Default::default(), choices: Default::default(), hash: 0 };
    /// assert!(file.to_json().contains("\"format\": 1"));
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a replay file serialises")
    }

    /// Parses a replay file.
    ///
    /// ```
    /// # let file = avout_sim_zk::ReplayFile { format: 1, config: Default::default(), choices: Default::default(), hash: 0 };
    /// let back = avout_sim_zk::ReplayFile::from_json(&file.to_json()).unwrap();
    /// assert_eq!(back, file);
    /// ```
    pub fn from_json(text: &str) -> Result<Self, ReplayError> {
        let file: ReplayFile = serde_json::from_str(text)?;
        if file.format != REPLAY_FORMAT {
            return Err(ReplayError::Format { found: file.format });
        }
        Ok(file)
    }

    /// Writes the file.
    ///
    /// ```no_run
    /// # let file = avout_sim_zk::ReplayFile { format: 1, config: Default::default(), choices: Default::default(), hash: 0 };
    /// file.save("target/replay-seed-0.json").unwrap();
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ReplayError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json()).map_err(|source| ReplayError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// Reads a file written by [`save`](Self::save).
    ///
    /// ```no_run
    /// let file = avout_sim_zk::ReplayFile::load("target/replay-seed-0.json").unwrap();
    /// # let _ = file;
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text)
    }
}
