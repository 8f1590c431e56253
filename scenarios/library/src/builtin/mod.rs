//! avout's own scenarios, one folder each: its workload and the checkers it binds
//! ([`Scenario::checkers`](crate::scenario::Scenario::checkers), by name from
//! [`avout_check::Checkers`]). [`Registry::builtins`](crate::scenario::Registry::builtins) lists
//! them, and nothing else does.
//!
//! | scenario | workload | checker |
//! |---|---|---|
//! | `counter` | atom increments (`swap`) and linearizable reads | every acknowledged increment returned a distinct value; every read lies between the increments surely done and those possibly done |
//! | `lin-kv` | Maelstrom's lin-kv: read, write, cas on a few keys | linearizability, per key (cas-register) |
//! | `mutex` | lock, fenced read-increment-write of a shared counter, unlock | fenced writes never lose an increment; two holders never overlap (fencing rule) |
//! | `rwlock` | readers read a value twice under the read lock; writers increment it under the write lock | no writer inside a confirmed read hold; no lost increment |
//! | `election` | campaign, fenced write as leader, resign | one leader per term; terms grow; no two live leaders |
//! | `queue` | put unique items, take, drain at the end | nothing delivered twice; nothing put is lost; nothing taken that was not put |
//! | `barrier` | one client sets, others wait, the setter removes | no waiter passes a set barrier |
//! | `bank` | STM transfers between five accounts, reads of all of them (`--protocol mvcc\|optimistic`) | every read sums to the total, no negative balance ([`avout_check::bank`]) |
//! | `list-append` | Maelstrom's txn-list-append on STM refs | Elle: G0, G1a–c, G-single, G-nonadjacent, G2-item (allowed under Mvcc: snapshot isolation, adjacent rw edges only), lost update, internal and future reads ([`avout_check::list_append`]) |
//! | `rw-register` | Maelstrom's txn-rw-register on STM refs: `deref`, `ref_set`, `alter` | Elle's rw-register: G0, G1a–c, G-single, G-nonadjacent, G2-item (allowed under Mvcc), lost update, internal, future and garbage reads, cyclic versions ([`avout_check::rw_register`]) |
//! | `lock-table` | the medical-records example: entry, review, month-end lock transactions, fenced work inside | one clerk inside at a time; no lost increment |
//! | `two-phase-commit` | rounds of transactions: a rotating coordinator, every client a site voting commit, abort, or leaving before voting | atomic commitment: everyone learns the coordinator's outcome, commit only on all-commit votes, nobody told two outcomes ([`avout_check::two_phase_commit`]) |
//! | `sessions` | one managed client per worker, its handles built once, across 2–4 expiries of its own session (and every drawn fault): atom increments and reads, STM transfers and reads, fenced increments under a mutex (expiries inside holds too), leadership through a `LeaderLatch` | each part by its recipe's checker (counter, bank, holds and mutex, holds), and every client makes progress after each of its expiries ([`sessions`]) |
//! | `cache` | writers change a subtree under `/cache`; every client follows it with a cache (subtree, children or node scope) and records each event; once writes stop, each view is recorded beside the tree | every event for a real change (a write of that path and data, invoked before it); no change reported twice by a cache; each client's last cache converged to the tree ([`cache`]) |
//! | `agents` | plain sends and sends from transactions (`--protocol`) to one agent whose value logs what was applied, failing actions, restarts, an executor per client; drained at the end | every acknowledged send applied exactly once, none from an aborted try; order per sender; a failed agent applies nothing until restarted ([`agents`]) |
//!
//! Every scenario also fails a run in which an operation did not finish within
//! [`OP_DEADLINE`](crate::scenario::OP_DEADLINE) (a deadlock): liveness, under faults that all
//! end.
//!
//! A new scenario goes in a folder of its own here (a workload, a `Scenario` impl naming its
//! checkers), and one line in `Registry::builtins`.

pub mod agents;
pub mod bank;
pub mod barrier;
pub mod cache;
pub mod counter;
pub mod double_barrier;
pub mod election;
pub mod latch;
pub mod lin_kv;
pub mod list_append;
pub mod lock_table;
pub mod mutex;
pub mod queue;
pub mod rw_register;
pub mod rwlock;
pub mod semaphore;
pub mod sessions;
pub mod two_phase_commit;
pub(crate) mod txns;
pub mod work_queue;
