//! `bank-handoff`: the bank of [`super`], its accounts made by one client and used by the
//! others, as an application deploys its refs once and its other processes only name them.
//!
//! Each other client opens its STM first; client 0 makes the five accounts, then tells the
//! others in-process (no ZooKeeper request of theirs has seen the accounts), and they take
//! handles on them by name ([`Stm::get_ref_with`], no request sent) and run the bank's
//! operations. A client's session may sit on a follower that has not yet applied the
//! accounts' creation: a transaction that then reported an account missing (`NoRef`) would
//! be wrong, since every account was made before it began. The run stops on one
//! (`super::operate`). Found on the simulated ensemble: Mvcc's first read for writing sent
//! no `sync` and failed with `NoRef` there, which the bank (each client making the accounts
//! itself, so its session has seen them) could never show.
//!
//! The checker is the bank's.

use avout::Client;
use avout::stm::{Stm, StmError};

use super::{Account, ROOT, account_names, checker_options, open_accounts, operate};
use crate::scenario::env::retry_open;
use crate::scenario::store::Padded;
use crate::scenario::worker::{Worker, all_workers};
use crate::scenario::{Checks, Described, WorkloadError};

/// The STM of a client that does not make the accounts, opened before they are made (as a
/// process starts before it is told the refs exist): nothing it asks ZooKeeper afterwards
/// need show it their creation.
async fn open_stm(me: &Worker<'_>, client: &Client) -> Result<Stm, WorkloadError> {
    retry_open(200, || super::open_stm(me.env, client, me.w, ROOT)).await
}

/// Handles on the accounts by name (no request sent), under the bank's validator.
fn name_accounts(me: &Worker<'_>, stm: &Stm) -> Result<Vec<Account>, WorkloadError> {
    let codec = Padded {
        size: me.w.value_size,
    };
    let refs = account_names(super::ACCOUNTS)
        .iter()
        .map(|n| stm.get_ref_with(n, codec))
        .collect::<Result<Vec<Account>, StmError>>()
        .map_err(WorkloadError::other)?;
    for r in &refs {
        r.set_validator(|b| *b >= 0);
    }
    Ok(refs)
}

/// The `bank-handoff` scenario: the bank, its accounts made by client 0 only.
pub const SCENARIO: Described = Described {
    name: "bank-handoff",
    about: "the bank with its accounts made by one client and named by the others; checker: the bank's, and no account reported missing",
    defaults: (4, 25),
    checkers: |_w| Checks::named("bank", &checker_options()),
    workload: |env, w, rec| {
        Box::pin(async move {
            let (made, wait) = avout::task::watch::channel(false);
            let made = std::cell::RefCell::new(Some(made));
            all_workers(env, w, rec, |me| {
                let made = if me.index == 0 {
                    made.borrow_mut().take()
                } else {
                    None
                };
                let mut wait = wait.clone();
                async move {
                    let client = me.client().await?;
                    let (stm, refs) = match made {
                        Some(made) => {
                            let accounts = open_accounts(me.env, &client, me.w, ROOT).await?;
                            // Nobody listening is fine: the others may have ended already.
                            let _ = made.send(true);
                            accounts
                        }
                        None => {
                            let stm = open_stm(&me, &client).await?;
                            // The maker failed if the sender is gone unsent: nothing to use.
                            if wait.wait_for(|m| *m).await.is_err() {
                                return Ok(());
                            }
                            let refs = name_accounts(&me, &stm)?;
                            (stm, refs)
                        }
                    };
                    operate(me, &client, &stm, &refs).await
                }
            })
            .await
        })
    },
};
