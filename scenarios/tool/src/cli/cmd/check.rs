//! `avout check FILE --model register|cas-register|list-append|bank|mutex|two-phase-commit
//! [--json]`: judges a history with one of the checkers. Exit 0 when valid, 1 when the checker
//! found an anomaly (reported on stdout), 2 for bad input or a checker that could not decide.
//!
//! FILE is in Jepsen's JSON-lines format or in Jepsen's own EDN (as Jepsen, Knossos and Elle
//! write histories: one map a line, or one vector of maps): a file named `*.edn` is EDN, and so
//! is one whose text starts like EDN (`[`, `#`, `;`, or `{` then a keyword); see
//! [`History::load`]. Jepsen's `independent` histories carry `[key value]` tuples in `:value`:
//! read them with `--tuple-keys`, in either format.

use std::path::PathBuf;

use crate::view::JudgeError;
use avout_check::bank::BankChecker;
use avout_check::history::{History, HistoryError, Keys};
use avout_check::linear::{Checker, Model};
use avout_check::list_append::{Consistency, ListAppendChecker};
use avout_check::mutex::check_mutex;
use avout_check::two_phase_commit::check_two_phase_commit;
use serde_json::json;

/// The checkers `avout check` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CheckModel {
    /// Linearizable read/write register (per key).
    Register,
    /// Linearizable read/write/compare-and-set register (per key).
    CasRegister,
    /// Transactions of list appends and reads (Maelstrom's txn-list-append), Elle-style.
    ListAppend,
    /// Bank transfers and balance reads: totals conserved, no negative balance.
    Bank,
    /// Lock holds with fencing tokens and writes to a fenced resource.
    Mutex,
    /// Two-phase commit: begins, joins, votes, leaves and learned outcomes; atomic commitment.
    TwoPhaseCommit,
}

/// How strong a list-append history must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CheckConsistency {
    /// Some serial order explains every read.
    Serializable,
    /// Serializable, and each process sees its own committed transactions.
    StrongSessionSerializable,
    /// Serializable in an order that respects real time.
    StrictSerializable,
}

/// Options of `avout check`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// The history: one JSON object per line with Jepsen's fields (type, process, f, value), or
    /// Jepsen's EDN (`*.edn`, or text starting like EDN: `[`, `#`, `;`, `{:`).
    file: PathBuf,
    /// The checker (and the history format it reads).
    #[arg(long, value_enum)]
    model: CheckModel,
    /// register, cas-register: keys travel in the value as `[key, value]` tuples (Jepsen's
    /// independent checker) rather than in a `key` field.
    #[arg(long)]
    tuple_keys: bool,
    /// list-append: the consistency model.
    #[arg(long, value_enum, default_value = "strict-serializable")]
    consistency: CheckConsistency,
    /// bank: the total every read must sum to (default: the first read's sum).
    #[arg(long, allow_negative_numbers = true)]
    total: Option<i64>,
    /// bank: the accounts every read must show, comma-separated.
    #[arg(long, value_delimiter = ',')]
    accounts: Option<Vec<String>>,
    /// bank: accept negative balances.
    #[arg(long)]
    allow_negative: bool,
    /// Print the verdict as one JSON object: model, valid, anomalies, report.
    #[arg(long)]
    json: bool,
}

impl CheckArgs {
    pub(crate) fn model_name(&self) -> &'static str {
        match self.model {
            CheckModel::Register => "register",
            CheckModel::CasRegister => "cas-register",
            CheckModel::ListAppend => "list-append",
            CheckModel::Bank => "bank",
            CheckModel::Mutex => "mutex",
            CheckModel::TwoPhaseCommit => "two-phase-commit",
        }
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

/// What a checker said, in the shape every model shares.
struct Judged {
    valid: bool,
    anomalies: Vec<String>,
    report: String,
}

/// Checks the file and prints the verdict; `Ok(false)` when an anomaly was found.
pub(crate) fn run(args: &CheckArgs) -> Result<bool, CheckCmdError> {
    let history = History::load(&args.file)?;
    let judged = judge(args, &history)?;
    if args.json {
        println!(
            "{}",
            json!({
                "model": args.model_name(),
                "valid": judged.valid,
                "anomalies": judged.anomalies,
                "report": judged.report,
            })
        );
    } else {
        print!("{}", judged.report);
    }
    Ok(judged.valid)
}

fn judge(args: &CheckArgs, history: &History) -> Result<Judged, CheckCmdError> {
    Ok(match args.model {
        CheckModel::Register | CheckModel::CasRegister => {
            let model = if args.model == CheckModel::Register {
                Model::Register
            } else {
                Model::CasRegister
            };
            let keys = if args.tuple_keys {
                Keys::Tuple
            } else {
                Keys::Field
            };
            let verdict = Checker::new(model)
                .keys(keys)
                .check(history)
                .map_err(JudgeError::from)?;
            if verdict.violations.is_empty() && !verdict.unknown.is_empty() {
                print!("{verdict}");
                return Err(CheckCmdError::Undecided {
                    keys: verdict.unknown.len(),
                });
            }
            Judged {
                valid: verdict.is_linearizable(),
                anomalies: if verdict.violations.is_empty() {
                    vec![]
                } else {
                    vec!["not-linearizable".into()]
                },
                report: verdict.to_string(),
            }
        }
        CheckModel::ListAppend => {
            let consistency = match args.consistency {
                CheckConsistency::Serializable => Consistency::Serializable,
                CheckConsistency::StrongSessionSerializable => {
                    Consistency::StrongSessionSerializable
                }
                CheckConsistency::StrictSerializable => Consistency::StrictSerializable,
            };
            let verdict = ListAppendChecker::new()
                .consistency(consistency)
                .check(history)
                .map_err(JudgeError::from)?;
            Judged {
                valid: verdict.is_valid(),
                anomalies: verdict.anomaly_names(),
                report: verdict.to_string(),
            }
        }
        CheckModel::Bank => {
            let mut checker = BankChecker::new();
            if let Some(total) = args.total {
                checker = checker.total(total);
            }
            if let Some(accounts) = &args.accounts {
                checker = checker.accounts(accounts.iter().cloned());
            }
            if args.allow_negative {
                checker = checker.allow_negative();
            }
            let verdict = checker.check(history).map_err(JudgeError::from)?;
            Judged {
                valid: verdict.is_valid(),
                anomalies: sorted_names(
                    verdict
                        .violations
                        .iter()
                        .flat_map(|v| v.faults.iter().map(|f| f.name())),
                ),
                report: verdict.to_string(),
            }
        }
        CheckModel::Mutex => {
            let verdict = check_mutex(history).map_err(JudgeError::from)?;
            Judged {
                valid: verdict.is_valid(),
                anomalies: sorted_names(verdict.violations.iter().map(|v| v.name())),
                report: verdict.to_string(),
            }
        }
        CheckModel::TwoPhaseCommit => {
            let verdict = check_two_phase_commit(history).map_err(JudgeError::from)?;
            Judged {
                valid: verdict.is_valid(),
                anomalies: sorted_names(verdict.violations.iter().map(|v| v.name())),
                report: verdict.to_string(),
            }
        }
    })
}

/// Names, sorted, each once.
fn sorted_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let set: std::collections::BTreeSet<&str> = names.collect();
    set.into_iter().map(str::to_owned).collect()
}
