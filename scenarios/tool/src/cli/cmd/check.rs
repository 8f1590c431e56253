//! `avout check FILE --model NAME [--json]`: judges a history with one of the checkers
//! ([`avout_check::Checkers::builtins`]: register, cas-register, list-append, rw-register, bank, mutex,
//! two-phase-commit, and the recipes' counter, queue, barrier, rwlock, holds, agents, cache,
//! sessions). Exit 0 when valid, 1 when the checker found an anomaly (reported on stdout), 2
//! for bad input or a checker that could not decide.
//!
//! FILE is in Jepsen's JSON-lines format or in Jepsen's own EDN (as Jepsen, Knossos and Elle
//! write histories: one map a line, or one vector of maps): a file named `*.edn` is EDN, and so
//! is one whose text starts like EDN (`[`, `#`, `;`, or `{` then a keyword); see
//! [`History::load`](avout_check::history::History::load). Jepsen's `independent` histories
//! carry `[key value]` tuples in `:value`: read them with `--tuple-keys`, in either format.

use std::path::PathBuf;

use avout_check::history::{HistoryError, Keys};
use avout_check::list_append::Consistency;
use avout_check::{CheckError, Checkers, Options, Verdict};
use serde_json::json;

use crate::view::JudgeError;

/// How strong a list-append or rw-register history must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CheckConsistency {
    /// Some serial order explains every read.
    Serializable,
    /// Serializable, and each process sees its own committed transactions.
    StrongSessionSerializable,
    /// Serializable in an order that respects real time.
    StrictSerializable,
}

/// The checker's options, as `check` and `view` take them.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckerArgs {
    /// register, cas-register: keys travel in the value as `[key, value]` tuples (Jepsen's
    /// independent checker) rather than in a `key` field.
    #[arg(long)]
    tuple_keys: bool,
    /// list-append, rw-register: the consistency model.
    #[arg(long, value_enum, default_value = "strict-serializable")]
    consistency: CheckConsistency,
    /// list-append, rw-register: write skew (G2-item) is no anomaly (snapshot isolation).
    #[arg(long)]
    allow_write_skew: bool,
    /// bank: the total every read must sum to (default: the first read's sum).
    #[arg(long, allow_negative_numbers = true)]
    total: Option<i64>,
    /// bank: the accounts every read must show, comma-separated.
    #[arg(long, value_delimiter = ',')]
    accounts: Option<Vec<String>>,
    /// bank: accept negative balances.
    #[arg(long)]
    allow_negative: bool,
    /// sessions: how many clients ran.
    #[arg(long, default_value_t = 0)]
    clients: usize,
}

impl CheckerArgs {
    /// The options they say.
    pub(crate) fn options(&self) -> Options {
        Options {
            keys: if self.tuple_keys {
                Keys::Tuple
            } else {
                Keys::Field
            },
            consistency: match self.consistency {
                CheckConsistency::Serializable => Consistency::Serializable,
                CheckConsistency::StrongSessionSerializable => {
                    Consistency::StrongSessionSerializable
                }
                CheckConsistency::StrictSerializable => Consistency::StrictSerializable,
            },
            allow_write_skew: self.allow_write_skew,
            total: self.total,
            accounts: self.accounts.clone(),
            allow_negative: self.allow_negative,
            clients: self.clients,
        }
    }
}

/// The names `--model` takes: every checker's.
pub(crate) fn model_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Checkers::builtins().names())
}

/// Options of `avout check`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// The history: one JSON object per line with Jepsen's fields (type, process, f, value), or
    /// Jepsen's EDN (`*.edn`, or text starting like EDN: `[`, `#`, `;`, `{:`).
    file: PathBuf,
    /// The checker (and the history format it reads).
    #[arg(long, value_parser = model_names())]
    model: String,
    #[command(flatten)]
    checker: CheckerArgs,
    /// Print the verdict as one JSON object: model, valid, anomalies, report.
    #[arg(long)]
    json: bool,
}

impl CheckArgs {
    pub(crate) fn model_name(&self) -> &str {
        &self.model
    }
}

/// Why a history could not be judged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckCmdError {
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A checker refused the history (the same refusals `avout view` reports).
    #[error(transparent)]
    Judge(#[from] JudgeError),
    #[error(
        "gave up at the state limit on {keys} key(s) before deciding; the history is neither shown valid nor invalid"
    )]
    Undecided { keys: usize },
}

/// Checks the file and prints the verdict; `Ok(false)` when an anomaly was found.
pub(crate) fn run(args: &CheckArgs) -> Result<bool, CheckCmdError> {
    let verdict = judge(args)?;
    if args.json {
        println!(
            "{}",
            json!({
                "model": args.model,
                "valid": verdict.is_valid(),
                "anomalies": verdict.kinds(),
                "report": verdict.report(),
            })
        );
    } else {
        print!("{}", verdict.report());
    }
    Ok(verdict.is_valid())
}

fn judge(args: &CheckArgs) -> Result<Verdict, CheckCmdError> {
    let checker = Checkers::builtins()
        .get(&args.model, &args.checker.options())
        .map_err(JudgeError::from)?;
    // A checker may read the file its own way (list-append streams it): the same verdict and
    // errors as loading it first.
    let verdict = checker.check_file(&args.file).map_err(|e| match e {
        CheckError::History(e) => CheckCmdError::History(e),
        e => JudgeError::from(e).into(),
    })?;
    if !verdict.is_decided() {
        print!("{}", verdict.report());
        return Err(CheckCmdError::Undecided {
            keys: verdict.undecided.len(),
        });
    }
    Ok(verdict)
}
