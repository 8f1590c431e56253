//! The bank checker: money moves between accounts but is never created or destroyed.
//!
//! A bank history has two operations:
//!
//! ```text
//! {"type":"invoke","process":0,"f":"transfer","value":{"from":"a","to":"b","amount":5}}
//! {"type":"ok","process":0,"f":"transfer","value":{"from":"a","to":"b","amount":5}}
//! {"type":"invoke","process":1,"f":"read","value":null}
//! {"type":"ok","process":1,"f":"read","value":{"a":5,"b":15}}
//! ```
//!
//! - `transfer`, value `{"from": account, "to": account, "amount": n}`: moves `n` in one
//!   transaction. It may complete `ok`, `fail` (refused, for instance because the validator
//!   forbids a negative balance) or `info`; a transfer changes no total, so its outcome does not
//!   matter to the checker, but its value must be well formed.
//! - `read`, value `null` on the invocation and on an `ok` completion a JSON object mapping every
//!   account to its integer balance, read in one transaction.
//! - `audit` (optional), value `null` on the invocation and on an `ok` completion an object
//!   mapping accounts to their balances at past commit points, `[[point, balance], …]`: no
//!   committed balance may be negative (unless [`Bank::allow_negative`]). Its failure
//!   says nothing.
//!
//! Every `ok` read must be a snapshot of a state the transfers could produce, which this checker
//! approximates as Jepsen's bank checker does: the balances sum to the expected total, no balance
//! is negative (unless [`Bank::allow_negative`]), and, when the accounts are given, the
//! read shows exactly those accounts. A read that sees half a transfer (the debit without the
//! credit) breaks the total; a lost update usually does too, or drives an account negative.
//!
//! The expected total is given ([`Bank::total`]) or, when not, taken from the first `ok`
//! read, and the report says which.
//!
//! ```
//! use avout_check::Checker;
//! use avout_check::bank::Bank;
//! use avout_check::history::{Event, History, F};
//! use serde_json::{json, Value};
//!
//! let h: History = [
//!     Event::invoke(0, F::Read, Value::Null),
//!     Event::ok(0, F::Read, json!({"a": 10, "b": 10})),
//!     Event::invoke(1, F::Read, Value::Null),
//!     Event::ok(1, F::Read, json!({"a": 5, "b": 10})), // half a transfer
//! ]
//! .into_iter()
//! .collect();
//! let verdict = Bank::new().check(&h).unwrap();
//! assert!(!verdict.is_valid());
//! assert_eq!(verdict.kinds(), vec!["wrong-total"]);
//! assert_eq!(verdict.anomalies[0].ops[0].op, 2, "the second read");
//! assert!(verdict.summary.contains("total 20 (from the first read)"));
//! ```

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

use crate::checker::{CheckError, Checker};
use crate::history::{F, History, Keys, Operation, Outcome};
use crate::verdict::{Anomaly, Role, Verdict};

/// What is wrong with a read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The balances do not sum to the expected total.
    WrongTotal {
        /// What they sum to.
        sum: i128,
    },
    /// An account is negative.
    Negative {
        /// The account.
        account: String,
        /// Its balance.
        balance: i64,
    },
    /// Accounts that should be there and are not.
    MissingAccounts(Vec<String>),
    /// Accounts that should not be there and are.
    UnexpectedAccounts(Vec<String>),
}

impl Fault {
    /// A short name: `wrong-total`, `negative-balance`, `missing-accounts` or
    /// `unexpected-accounts`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Fault::WrongTotal { .. } => "wrong-total",
            Fault::Negative { .. } => "negative-balance",
            Fault::MissingAccounts(_) => "missing-accounts",
            Fault::UnexpectedAccounts(_) => "unexpected-accounts",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::WrongTotal { sum } => write!(f, "balances sum to {sum}"),
            Fault::Negative { account, balance } => {
                write!(f, "account {account} is negative ({balance})")
            }
            Fault::MissingAccounts(a) => write!(f, "accounts missing: {}", a.join(", ")),
            Fault::UnexpectedAccounts(a) => write!(f, "unexpected accounts: {}", a.join(", ")),
        }
    }
}

/// An `ok` read that no sequence of transfers could produce.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Violation {
    /// The offending read.
    pub(crate) read: Operation,
    /// Everything wrong with it, in a fixed order: total, negative accounts (by name), missing,
    /// unexpected.
    pub(crate) faults: Vec<Fault>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let faults: Vec<String> = self.faults.iter().map(Fault::to_string).collect();
        write!(f, "{}: {}", self.read, faults.join("; "))
    }
}

/// The result of a bank check.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Findings {
    /// `ok` reads checked.
    pub(crate) reads: usize,
    /// Transfers by outcome: ok, fail, info.
    pub(crate) transfers: [usize; 3],
    /// The expected total; `None` when not given and there was no `ok` read to take it from.
    pub(crate) total: Option<i128>,
    /// Whether the total was taken from the first `ok` read rather than given.
    pub(crate) total_inferred: bool,
    /// The offending reads, in history order.
    pub(crate) violations: Vec<Violation>,
}

impl Findings {
    /// Whether every read was a possible state.
    pub(crate) fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }
}

impl Findings {
    /// The report's first line.
    fn summary(&self) -> String {
        let [ok, fail, info] = self.transfers;
        let total = match (self.total, self.total_inferred) {
            (None, _) => "no total".to_owned(),
            (Some(t), false) => format!("total {t}"),
            (Some(t), true) => format!("total {t} (from the first read)"),
        };
        format!(
            "{}: {} reads, transfers {ok} ok / {fail} fail / {info} info, {total}, {} bad reads",
            if self.is_valid() { "valid" } else { "invalid" },
            self.reads,
            self.violations.len()
        )
    }

    /// As one verdict of `checker`: each bad read, named by what is wrong with it.
    fn verdict(&self, checker: String) -> Verdict {
        let anomalies = self
            .violations
            .iter()
            .map(|v| {
                let names: Vec<&str> = v.faults.iter().map(Fault::name).collect();
                let faults: Vec<String> = v.faults.iter().map(ToString::to_string).collect();
                Anomaly::new(names.join(", "), v.to_string()).op(
                    v.read.invoke.index,
                    Role::Culprit,
                    faults.join("; "),
                )
            })
            .collect();
        Verdict::new(checker, self.summary(), anomalies)
    }
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verdict(String::new()).report())
    }
}

/// The bank checker (`bank`), configured.
///
/// ```
/// use avout_check::Checker;
/// use avout_check::bank::Bank;
/// use avout_check::history::{Event, History, F};
/// use serde_json::{json, Value};
/// let h: History = [
///     Event::invoke(0, F::Read, Value::Null),
///     Event::ok(0, F::Read, json!({"a": 10})),
/// ]
/// .into_iter()
/// .collect();
/// let verdict = Bank::new().total(10).accounts(["a", "b"]).check(&h).unwrap();
/// assert_eq!(verdict.kinds(), vec!["missing-accounts"]);
/// assert!(verdict.report().contains("accounts missing: b"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Bank {
    total: Option<i128>,
    accounts: Option<BTreeSet<String>>,
    allow_negative: bool,
}

impl Bank {
    /// A checker that takes the total from the first `ok` read, does not check account names
    /// and forbids negative balances.
    pub fn new() -> Self {
        Bank::default()
    }

    /// The total every read must sum to.
    pub fn total(mut self, total: i64) -> Self {
        self.total = Some(i128::from(total));
        self
    }

    /// The accounts every read must show, no more and no fewer.
    pub fn accounts<S: Into<String>>(mut self, accounts: impl IntoIterator<Item = S>) -> Self {
        self.accounts = Some(accounts.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts negative balances (for a bank whose transfers may overdraw).
    pub fn allow_negative(mut self) -> Self {
        self.allow_negative = true;
        self
    }

    /// Checks a history.
    pub(crate) fn analyse(&self, history: &History) -> Result<Findings, CheckError> {
        let ops = history.operations(Keys::Field)?;
        let mut verdict = Findings {
            reads: 0,
            transfers: [0; 3],
            total: self.total,
            total_inferred: false,
            violations: Vec::new(),
        };
        for op in ops {
            match &op.f {
                F::Read => {
                    if op.outcome != Outcome::Ok {
                        continue;
                    }
                    verdict.reads += 1;
                    let line = op.complete.map_or(op.invoke.line, |c| c.line);
                    let balances = balances(&op.value).ok_or_else(|| {
                        CheckError::malformed(line, &op.value, "an object of integer balances")
                    })?;
                    let sum: i128 = balances.iter().map(|(_, b)| i128::from(*b)).sum();
                    let total = *verdict.total.get_or_insert_with(|| {
                        verdict.total_inferred = true;
                        sum
                    });
                    let faults = self.faults(&balances, sum, total);
                    if !faults.is_empty() {
                        verdict.violations.push(Violation { read: op, faults });
                    }
                }
                F::Other(name) if name == "audit" => {
                    if op.outcome != Outcome::Ok {
                        continue;
                    }
                    let line = op.complete.map_or(op.invoke.line, |c| c.line);
                    let past = audited(&op.value).ok_or_else(|| {
                        CheckError::malformed(
                            line,
                            &op.value,
                            "an object of accounts' [[point, balance], …]",
                        )
                    })?;
                    let faults: Vec<Fault> = past
                        .into_iter()
                        .filter(|(_, balance)| *balance < 0 && !self.allow_negative)
                        .map(|(account, balance)| Fault::Negative { account, balance })
                        .collect();
                    if !faults.is_empty() {
                        verdict.violations.push(Violation { read: op, faults });
                    }
                }
                F::Other(name) if name == "transfer" => {
                    if !is_transfer(&op.value) {
                        return Err(CheckError::malformed(
                            op.invoke.line,
                            &op.value,
                            "a transfer {\"from\", \"to\", \"amount\"}",
                        ));
                    }
                    let slot = match op.outcome {
                        Outcome::Ok => 0,
                        Outcome::Fail => 1,
                        Outcome::Info => 2,
                    };
                    verdict.transfers[slot] += 1;
                }
                other => {
                    return Err(CheckError::Unsupported {
                        line: op.invoke.line,
                        f: other.clone(),
                        model: "bank",
                        known: "transfer, read, audit",
                    });
                }
            }
        }
        Ok(verdict)
    }

    fn faults(&self, balances: &[(String, i64)], sum: i128, total: i128) -> Vec<Fault> {
        let mut faults = Vec::new();
        if sum != total {
            faults.push(Fault::WrongTotal { sum });
        }
        if !self.allow_negative {
            faults.extend(
                balances
                    .iter()
                    .filter(|(_, b)| *b < 0)
                    .map(|(account, balance)| Fault::Negative {
                        account: account.clone(),
                        balance: *balance,
                    }),
            );
        }
        if let Some(expected) = &self.accounts {
            let seen: BTreeSet<&String> = balances.iter().map(|(a, _)| a).collect();
            let missing: Vec<String> = expected
                .iter()
                .filter(|a| !seen.contains(a))
                .cloned()
                .collect();
            let unexpected: Vec<String> = seen
                .iter()
                .filter(|a| !expected.contains(**a))
                .map(|a| (*a).clone())
                .collect();
            if !missing.is_empty() {
                faults.push(Fault::MissingAccounts(missing));
            }
            if !unexpected.is_empty() {
                faults.push(Fault::UnexpectedAccounts(unexpected));
            }
        }
        faults
    }
}

impl Checker for Bank {
    fn name(&self) -> String {
        let total = match self.total {
            Some(t) => format!("total {t}"),
            None => "total of the first read".to_owned(),
        };
        let negative = if self.allow_negative {
            "negative balances allowed"
        } else {
            "no negative balance"
        };
        format!("bank ({total}, {negative})")
    }

    fn check(&self, history: &History) -> Result<Verdict, CheckError> {
        Ok(self.analyse(history)?.verdict(self.name()))
    }
}

/// The balances of a read, sorted by account (serde_json's objects are sorted maps).
fn balances(value: &Value) -> Option<Vec<(String, i64)>> {
    value
        .as_object()?
        .iter()
        .map(|(account, balance)| Some((account.clone(), balance.as_i64()?)))
        .collect()
}

/// An audit's `{account: [[point, balance], …]}` as (account, balance) pairs.
fn audited(value: &Value) -> Option<Vec<(String, i64)>> {
    let mut out = Vec::new();
    for (account, past) in value.as_object()? {
        for entry in past.as_array()? {
            let balance = entry.as_array().filter(|e| e.len() == 2)?[1].as_i64()?;
            out.push((account.clone(), balance));
        }
    }
    Some(out)
}

fn is_transfer(value: &Value) -> bool {
    let Some(t) = value.as_object() else {
        return false;
    };
    t.contains_key("from") && t.contains_key("to") && t.get("amount").is_some_and(Value::is_i64)
}

/// Checks a bank history, taking the total from the first `ok` read.
#[cfg(test)]
pub(crate) fn check_bank(history: &History) -> Result<Findings, CheckError> {
    Bank::new().analyse(history)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use serde_json::{Value, json};

    use super::{Bank, CheckError, Fault, check_bank};
    use crate::history::{Event, F, History};

    fn transfer() -> F {
        F::Other("transfer".into())
    }

    fn read(p: u64, balances: Value) -> [Event; 2] {
        [
            Event::invoke(p, F::Read, Value::Null),
            Event::ok(p, F::Read, balances),
        ]
    }

    fn history(events: Vec<Event>) -> History {
        events.into_iter().collect()
    }

    #[test]
    fn reads_that_sum_to_the_total_are_valid() {
        let t = json!({"from": "a", "to": "b", "amount": 4});
        let h = history(
            [
                vec![
                    Event::invoke(0, transfer(), t.clone()),
                    Event::invoke(1, F::Read, Value::Null),
                    Event::ok(1, F::Read, json!({"a": 10, "b": 10})),
                    Event::ok(0, transfer(), t.clone()),
                    Event::invoke(0, transfer(), t.clone()),
                    Event::fail(0, transfer(), t.clone()),
                    Event::invoke(0, transfer(), t.clone()),
                    Event::info(0, transfer(), t),
                    // A read that did not complete ok shows nothing.
                    Event::invoke(2, F::Read, Value::Null),
                    Event::info(2, F::Read, Value::Null),
                ],
                read(1, json!({"a": 6, "b": 14})).to_vec(),
            ]
            .concat(),
        );
        let verdict = Bank::new()
            .total(20)
            .accounts(["a", "b"])
            .analyse(&h)
            .unwrap();
        assert!(verdict.is_valid(), "{verdict}");
        assert_eq!(verdict.reads, 2);
        assert_eq!(verdict.transfers, [1, 1, 1]);
        assert!(!verdict.total_inferred);
    }

    #[test]
    fn a_read_of_half_a_transfer_is_named() {
        let h = history(
            [
                read(0, json!({"a": 10, "b": 10})).to_vec(),
                read(1, json!({"a": 6, "b": 10})).to_vec(),
                read(0, json!({"a": 6, "b": 14})).to_vec(),
            ]
            .concat(),
        );
        let verdict = check_bank(&h).unwrap();
        assert_eq!(verdict.violations.len(), 1, "{verdict}");
        let v = &verdict.violations[0];
        assert_eq!(v.read.process, 1);
        assert_eq!((v.read.invoke.line, v.read.complete.unwrap().line), (3, 4));
        assert_eq!(v.faults, vec![Fault::WrongTotal { sum: 16 }]);
        assert!(verdict.total_inferred);
        let text = verdict.to_string();
        assert!(text.starts_with("invalid"), "{text}");
        assert!(text.contains("(lines 3-4): balances sum to 16"), "{text}");
        assert!(text.contains("total 20 (from the first read)"), "{text}");
    }

    #[test]
    fn negative_balances_and_wrong_accounts_are_named() {
        let h = history(read(0, json!({"a": -5, "b": 20, "z": 5})).to_vec());
        let verdict = Bank::new()
            .total(20)
            .accounts(["a", "b", "c"])
            .analyse(&h)
            .unwrap();
        assert_eq!(
            verdict.violations[0].faults,
            vec![
                Fault::Negative {
                    account: "a".into(),
                    balance: -5
                },
                Fault::MissingAccounts(vec!["c".into()]),
                Fault::UnexpectedAccounts(vec!["z".into()]),
            ]
        );
        let lenient = Bank::new().total(20).allow_negative().analyse(&h).unwrap();
        assert!(lenient.is_valid(), "{lenient}");
        let wrong_total = Bank::new().total(21).analyse(&h).unwrap();
        assert_eq!(
            wrong_total.violations[0].faults[0],
            Fault::WrongTotal { sum: 20 }
        );
    }

    #[test]
    fn malformed_operations_are_errors() {
        let bad_read = history(read(0, json!([1, 2])).to_vec());
        assert!(matches!(
            check_bank(&bad_read),
            Err(CheckError::Malformed { line: 2, .. })
        ));
        let bad_transfer = history(vec![Event::invoke(0, transfer(), json!({"from": "a"}))]);
        assert!(matches!(
            check_bank(&bad_transfer),
            Err(CheckError::Malformed { line: 1, .. })
        ));
        let cas = history(vec![Event::invoke(0, F::Cas, json!([1, 2]))]);
        let err = check_bank(&cas).unwrap_err();
        assert!(
            err.to_string()
                .contains("not an operation of the bank model")
        );
    }

    /// A bank of 5 accounts, 100 each; transfers and reads by 4 processes, interleaved at
    /// random. With `atomic`, a transfer applies in one step; without, its debit and credit
    /// are two steps with the other processes running between.
    fn simulate(seed: u64, atomic: bool) -> History {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut balances = [100i64; 5];
        let mut h = History::new();
        // Per process: the pending transfer's credit still to apply.
        let mut pending: [Option<(usize, i64, Value)>; 4] = [None, None, None, None];
        for _ in 0..2_000 {
            let p = rng.random_range(0..4usize);
            if let Some((to, amount, value)) = pending[p].take() {
                balances[to] += amount;
                h.push(Event::ok(p as u64, transfer(), value));
                continue;
            }
            if rng.random_bool(0.5) {
                let snapshot: serde_json::Map<String, Value> = balances
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (format!("acct{i}"), json!(b)))
                    .collect();
                h.extend(read(p as u64, Value::Object(snapshot)));
                continue;
            }
            let (from, to) = (rng.random_range(0..5), rng.random_range(0..5));
            let amount = rng.random_range(1..=10).min(balances[from]);
            let value =
                json!({"from": format!("acct{from}"), "to": format!("acct{to}"), "amount": amount});
            h.push(Event::invoke(p as u64, transfer(), value.clone()));
            balances[from] -= amount;
            if atomic {
                balances[to] += amount;
                h.push(Event::ok(p as u64, transfer(), value));
            } else {
                pending[p] = Some((to, amount, value));
            }
        }
        h
    }

    #[test]
    fn a_simulated_bank_is_valid_and_a_non_atomic_one_is_caught() {
        let checker = Bank::new()
            .total(500)
            .accounts((0..5).map(|i| format!("acct{i}")));
        let good = checker.analyse(&simulate(1, true)).unwrap();
        assert!(good.is_valid(), "{good}");
        assert!(good.reads > 500 && good.transfers[0] > 500, "{good}");
        let bad = checker.analyse(&simulate(1, false)).unwrap();
        assert!(!bad.is_valid());
        assert!(
            bad.violations
                .iter()
                .all(|v| matches!(v.faults[0], Fault::WrongTotal { sum } if sum < 500)),
            "{bad}"
        );
    }
}
