//! `avout model NAME [--clients N] [--depth D] [--faults F] [--dfs | --walks W [--seed S]]
//! [--max-states N] [--max-memory SIZE] [--json] [--explorer 127.0.0.1:PORT]`: checks one of
//! the stateright models of `avout-models` and prints the state counts, the time, the peak
//! memory, what was covered and each property's verdict, with a step-by-step trace for every
//! counterexample. While it runs it shows its progress on a terminal (states per second,
//! depth, memory), or as JSON lines on stderr with `--json`; the report is then one JSON
//! object on stdout (see [`report_json`]). With `--explorer`, serves stateright's explorer (a
//! web UI to walk the model's states) instead.
//!
//! Exit status: 0 when every property came out as wanted, 1 for a counterexample (or an
//! example not found in a check that covered every reachable state), 2 for bad arguments, 3
//! when nothing was violated but an example is missing from a check that did not cover
//! everything (a budget stopped it, a depth bound cut it, or it walked at random).

use std::io::IsTerminal;
use std::time::Duration;

use avout::planted::Bug;
use avout_models::check::{Budget, Coverage, Outcome, Progress, Strategy, Trace, memory};
use avout_models::world::FaultKind;
use avout_models::{Config, ModelError, Named, Report, Search, check_named_with, serve_named};
use serde_json::{Value, json};

/// Options of `avout model`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct ModelArgs {
    /// The model: mutex, rwlock, election, atom, stm, mvcc, mvcc-bank (these two checked to a
    /// depth bound unless --depth says otherwise) or agent (the executor hand-off).
    #[arg(value_parser = parse_named)]
    name: Named,
    /// Clients (1 to 4; the state space grows exponentially).
    #[arg(long, default_value_t = 2)]
    clients: u8,
    /// Check every schedule of at most this many steps, no longer ones (walks: cut there).
    #[arg(long)]
    depth: Option<usize>,
    /// Faults per run, at most.
    #[arg(long, default_value_t = 1)]
    faults: u8,
    /// The kinds of fault drawn on, comma-separated: request-lost, reply-lost, expiry,
    /// disconnect, stale-read, outage.
    #[arg(long, value_delimiter = ',', default_values_t = FaultKind::CLASSIC.to_vec())]
    kinds: Vec<FaultKind>,
    /// Acquire-hold-release cycles per lock client (1 to 3; by default 2 for `mutex` and
    /// `rwlock`, whose second acquisition may carry the first release, else 1); for `agent`,
    /// the actions queued are one more.
    #[arg(long)]
    cycles: Option<u8>,
    /// Depth-first search (breadth-first, the default, finds the shortest traces).
    #[arg(long, conflicts_with = "walks")]
    dfs: bool,
    /// Take this many seeded random walks instead of checking every state (for spaces too
    /// big to check; each walk leans its own way, swarm-style).
    #[arg(long)]
    walks: Option<u64>,
    /// The first walk's seed (walk i: seed + i); a fresh one from the clock if not given.
    #[arg(long, requires = "walks")]
    seed: Option<u64>,
    /// Checker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Explore every moment a client may read what it must read next (mvcc, mvcc-bank:
    /// by default a client reads ahead where no other move can tell the difference).
    #[arg(long)]
    no_reduction: bool,
    /// Stop after this many unique states (walks: steps) and report what was covered.
    #[arg(long, value_name = "N")]
    max_states: Option<usize>,
    /// Stop when the process has this much resident (e.g. 12G, 800M) and report what was
    /// covered. Default: two thirds of the memory available when the check starts.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_memory: Option<u64>,
    /// Switch on a planted bug (needs the `planted-bugs` feature), to watch it be found.
    #[arg(long)]
    planted: Option<Bug>,
    /// Serve stateright's explorer on this address instead of checking.
    #[arg(long, value_name = "ADDR")]
    explorer: Option<String>,
    /// Print the report as one JSON object, and progress as JSON lines on stderr.
    #[arg(long)]
    json: bool,
}

fn parse_named(s: &str) -> Result<Named, ModelError> {
    s.parse()
}

/// A size in bytes: a number with an optional binary unit (`K`, `M`, `G`, `T`; `KiB`, `GB`
/// and the like are read the same).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 12G, 800M, 1048576)"))?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches(['B', 'I'])
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{s:?}: unknown unit (K, M, G or T)")),
    };
    let bytes = number * (1u64 << shift) as f64;
    if bytes < 1.0 {
        return Err(format!("{s:?} is not a positive size"));
    }
    Ok(bytes as u64)
}

/// Checks (or serves) the model. A failed property exits with status 1 once the report is
/// printed, an incomplete check with 3; a bad configuration is an error (status 2).
pub(crate) fn run(args: &ModelArgs) -> Result<(), ModelError> {
    match check(args)? {
        Outcome::Passed => Ok(()),
        Outcome::Failed => std::process::exit(1),
        Outcome::Incomplete => std::process::exit(3),
    }
}

fn check(args: &ModelArgs) -> Result<Outcome, ModelError> {
    let mut args = args.clone();
    let strategy = match (args.walks, args.dfs) {
        (Some(walks), _) => Strategy::Walks {
            walks,
            seed: *args.seed.get_or_insert_with(fresh_seed),
        },
        (None, true) => Strategy::DepthFirst,
        (None, false) => Strategy::BreadthFirst,
    };
    // The Mvcc model is checked to a bound unless told otherwise (its whole space is far
    // too large): say which, in the header and in the JSON.
    if matches!(args.name, Named::Mvcc | Named::MvccBank) && args.depth.is_none() {
        args.depth = avout_models::mvcc::default_depth(strategy);
    }
    let budget = Budget {
        max_states: args.max_states,
        max_memory: args.max_memory.or_else(Budget::fitting_memory),
    };
    let cycles = *args.cycles.get_or_insert(args.name.default_cycles());
    let config = Config {
        clients: args.clients,
        cycles,
        faults: args.faults,
        kinds: args.kinds.clone(),
        bug: args.planted,
        search: Search {
            strategy,
            max_depth: args.depth,
            threads: args.threads,
            budget,
        },
        read_ahead: !args.no_reduction,
    };
    config.validate()?;
    let name = args.name.name();
    if let Some(address) = &args.explorer {
        if args.json {
            println!(
                "{}",
                json!({ "model": name, "explorer": format!("http://{address}/") })
            );
        } else {
            println!("serving the {name} model's explorer on http://{address}/ (Ctrl-C stops)");
        }
        serve_named(name, &config, address)?;
        return Ok(Outcome::Passed);
    }
    if !args.json {
        println!("{}", header(&args, &budget));
    }
    let mut shown = Shown::new(&args);
    let report = check_named_with(name, &config, &mut |p| shown.tick(p))?;
    shown.finish();
    if args.json {
        println!("{}", report_json(name, &args, &budget, &report));
    } else {
        print!("{report}");
    }
    Ok(report.outcome())
}

fn fresh_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The header line: the model, its configuration and the budgets.
fn header(args: &ModelArgs, budget: &Budget) -> String {
    let mut line = format!(
        "model {}: {} clients, {} faults at most",
        args.name.name(),
        args.clients,
        args.faults
    );
    if args.faults > 0 && args.kinds != FaultKind::CLASSIC {
        let kinds: Vec<_> = args.kinds.iter().map(|k| k.name()).collect();
        line.push_str(&format!(" ({})", kinds.join(", ")));
    }
    if let Some(d) = args.depth {
        line.push_str(&format!(", depth {d}"));
    }
    if let Some(b) = args.planted {
        line.push_str(&format!(", planted bug {b}"));
    }
    if args.no_reduction {
        line.push_str(", no reduction");
    }
    match (args.walks, args.seed) {
        (Some(w), Some(s)) => line.push_str(&format!(", {w} random walks from seed {s}")),
        _ if args.dfs => line.push_str(", depth-first"),
        _ => {}
    }
    if let Some(n) = budget.max_states {
        line.push_str(&format!(", at most {n} states"));
    }
    if let Some(m) = budget.max_memory {
        line.push_str(&format!(", at most {} resident", memory::show(m)));
    }
    line
}

/// Progress as the check runs: a spinner on a terminal, JSON lines with `--json`.
struct Shown {
    bar: Option<indicatif::ProgressBar>,
    json: bool,
    walks: Option<u64>,
    last: Progress,
    last_json: Duration,
    rate: f64,
}

impl Shown {
    fn new(args: &ModelArgs) -> Self {
        let bar = (!args.json && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            bar.set_style(
                indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                    .expect("a valid template"),
            );
            bar
        });
        Shown {
            bar,
            json: args.json,
            walks: args.walks,
            last: Progress::default(),
            last_json: Duration::ZERO,
            rate: 0.0,
        }
    }

    fn tick(&mut self, p: &Progress) {
        let dt = p.elapsed.saturating_sub(self.last.elapsed).as_secs_f64();
        if dt > 0.0 {
            let now = p.states.saturating_sub(self.last.states) as f64 / dt;
            // Smoothed over about a second of 100 ms ticks.
            self.rate = if self.last.elapsed.is_zero() {
                now
            } else {
                0.9 * self.rate + 0.1 * now
            };
        }
        self.last = *p;
        if let Some(bar) = &self.bar {
            bar.set_message(self.line(p));
            bar.tick();
        }
        if self.json && p.elapsed.saturating_sub(self.last_json) >= Duration::from_secs(1) {
            self.last_json = p.elapsed;
            eprintln!("{}", json!({ "progress": self.progress_json(p) }));
        }
    }

    fn line(&self, p: &Progress) -> String {
        let memory = p.memory.map_or_else(|| "?".into(), memory::show);
        let stopping = if p.stopping {
            " — budget reached, judging the states generated"
        } else {
            ""
        };
        match self.walks {
            Some(total) => format!(
                "walks {}/{total}, {} steps ({:.0}/s), depth {}, memory {memory}{stopping}",
                p.unique_states, p.states, self.rate, p.depth
            ),
            None => format!(
                "{} states ({:.0}/s), {} unique, depth {}, memory {memory}{stopping}",
                p.states, self.rate, p.unique_states, p.depth
            ),
        }
    }

    fn progress_json(&self, p: &Progress) -> Value {
        json!({
            "states": p.states,
            "unique_states": p.unique_states,
            "states_per_s": self.rate.round(),
            "depth": p.depth,
            "memory_bytes": p.memory,
            "elapsed_ms": p.elapsed.as_millis() as u64,
            "stopping": p.stopping,
        })
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The report as one JSON object: the model, its configuration and budgets, the state
/// counts, the time, the peak memory, the coverage (`complete`, `bounded`, `incomplete` with
/// what stopped it and the steps covered, or `walks`), the outcome (`passed`, `failed`,
/// `incomplete`) and each property with its kind (`always`, `sometimes`, `eventually`), its
/// verdict (`holds`, `violated`, `found`, `not-found`), for random walks the seed of the walk
/// that found it, and, for a counterexample or an example, its trace as a list of steps.
fn report_json(name: &str, args: &ModelArgs, budget: &Budget, report: &Report) -> Value {
    let properties: Vec<Value> = report
        .properties
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "kind": p.kind(),
                "verdict": p.verdict.name(),
                "ok": p.ok(),
                "walk_seed": p.seed,
                "trace": p.trace.as_ref().map(trace_json),
            })
        })
        .collect();
    let coverage = match report.coverage {
        Coverage::Complete => json!({ "kind": "complete" }),
        Coverage::Bounded { depth } => json!({ "kind": "bounded", "steps": depth }),
        Coverage::Incomplete { stopped, steps } => json!({
            "kind": "incomplete",
            "stopped_by": stopped.to_string(),
            "steps": steps,
        }),
        Coverage::Walks { walks, seed, depth } => json!({
            "kind": "walks",
            "walks": walks,
            "seed": seed,
            "max_steps": depth,
        }),
    };
    let outcome = match report.outcome() {
        Outcome::Passed => "passed",
        Outcome::Failed => "failed",
        Outcome::Incomplete => "incomplete",
    };
    json!({
        "model": name,
        "config": {
            "clients": args.clients,
            "faults": args.faults,
            "kinds": args.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "cycles": args.cycles,
            "depth": args.depth,
            "dfs": args.dfs,
            "walks": args.walks,
            "seed": args.seed,
            "threads": args.threads,
            "reduction": !args.no_reduction,
            "planted": args.planted.map(|b| b.to_string()),
            "max_states": budget.max_states,
            "max_memory_bytes": budget.max_memory,
        },
        "states": report.states,
        "unique_states": report.unique_states,
        "max_depth": report.max_depth,
        "time_ms": report.elapsed.as_secs_f64() * 1000.0,
        "peak_memory_bytes": report.peak_memory,
        "coverage": coverage,
        "outcome": outcome,
        "ok": report.ok(),
        "properties": properties,
    })
}

fn trace_json(trace: &Trace) -> Value {
    let steps: Vec<Value> = trace
        .steps
        .iter()
        .map(|s| {
            json!({
                "step": s.number,
                "action": s.action,
                "what": s.what,
                "then": s.then,
            })
        })
        .collect();
    json!({
        "initially": trace.initially,
        "steps": steps,
        "at_end": trace.at_end,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_are_read_with_binary_units() {
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert_eq!(parse_size("800M"), Ok(800 << 20));
        assert_eq!(parse_size("12G"), Ok(12 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("2 kb"), Ok(2048));
        assert!(parse_size("12X").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("0").is_err());
    }
}
