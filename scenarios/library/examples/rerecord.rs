//! Records kept case files again from their seed, workload, fault plan and planted bug, after
//! a change to the simulator or to the requests a protocol sends made their taped choices
//! replay to another event log. A case that no longer fails as it did is refused and left as
//! it was: it then needs to be found again, not re-taped.
//!
//! With `--numbers-may-change`, an anomaly that differs from the recorded one only in its
//! numbers (a zxid, a fencing token: one more transaction per quorum `sync` moves them) counts
//! as the same failure.
//!
//! ```sh
//! cargo run -p avout-scenarios --features planted-bugs --example rerecord -- [--numbers-may-change] CASE.json...
//! ```

use avout_scenarios::scenario::Registry;
use avout_scenarios::scenario::case::Case;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builtins();
    let mut refused = 0;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let numbers_may_change = args.iter().any(|a| a == "--numbers-may-change");
    for file in args.iter().filter(|a| !a.starts_with("--")) {
        let old = Case::load(file)?;
        let new = Case::record(&registry, &old.workload, &old.plan, old.planted)?;
        let trimmed = |c: &Case| {
            c.anomalies
                .iter()
                .map(|a| {
                    let a = a.trim_end();
                    if numbers_may_change {
                        a.replace(|c: char| c.is_ascii_digit(), "#")
                    } else {
                        a.to_owned()
                    }
                })
                .collect::<Vec<_>>()
        };
        if trimmed(&new) != trimmed(&old) {
            refused += 1;
            eprintln!(
                "{file}: now {:?}, was {:?}; left as it was",
                new.anomalies, old.anomalies
            );
            continue;
        }
        new.save(file)?;
        println!("{file}: recorded again ({} anomalies)", new.anomalies.len());
    }
    if refused > 0 {
        return Err(format!("{refused} case(s) no longer fail as they did").into());
    }
    Ok(())
}
