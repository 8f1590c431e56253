//! `avout model NAME [--clients N] [--depth D] [--faults F] [--json] [--explorer 127.0.0.1:PORT]`:
//! checks one of the stateright models of `avout-models` exhaustively and prints the state
//! counts, the time and each property's verdict, with a step-by-step trace for every
//! counterexample. With `--json`, the same as one JSON object (see [`report_json`]). With
//! `--explorer`, serves stateright's explorer (a web UI to walk the model's states) instead.

use avout::planted::Bug;
use avout_models::check::Trace;
use avout_models::{Config, ModelError, Named, Report, Search, check_named, serve_named};
use serde_json::{Value, json};

/// Options of `avout model`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct ModelArgs {
    /// The model: mutex, rwlock, election, atom, stm, mvcc or mvcc-bank (the last two checked to depth 25 unless
    /// --depth says otherwise).
    #[arg(value_parser = parse_named)]
    name: Named,
    /// Clients (1 to 4; the state space grows exponentially).
    #[arg(long, default_value_t = 2)]
    clients: u8,
    /// Stop exploring at this depth (steps from the initial state).
    #[arg(long)]
    depth: Option<usize>,
    /// Faults per run (request lost, reply lost, session expiry), at most.
    #[arg(long, default_value_t = 1)]
    faults: u8,
    /// Acquire-hold-release cycles per lock client (1 to 3).
    #[arg(long, default_value_t = 1)]
    cycles: u8,
    /// Depth-first search (breadth-first, the default, finds the shortest traces).
    #[arg(long)]
    dfs: bool,
    /// Checker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Switch on a planted bug (needs the `planted-bugs` feature), to watch it be found.
    #[arg(long)]
    planted: Option<Bug>,
    /// Serve stateright's explorer on this address instead of checking.
    #[arg(long, value_name = "ADDR")]
    explorer: Option<String>,
    /// Print the report as one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn parse_named(s: &str) -> Result<Named, ModelError> {
    s.parse()
}

/// Checks (or serves) the model. A failed property exits with status 1 once the report is
/// printed; a bad configuration is an error (status 2).
pub(crate) fn run(args: &ModelArgs) -> Result<(), ModelError> {
    if !check(args)? {
        std::process::exit(1);
    }
    Ok(())
}

fn check(args: &ModelArgs) -> Result<bool, ModelError> {
    // The Mvcc model is checked to a bound unless told otherwise (its whole space is far
    // too large): say which, in the header and in the JSON.
    let mut args_bounded;
    let args = if matches!(args.name, Named::Mvcc | Named::MvccBank) && args.depth.is_none() {
        args_bounded = args.clone();
        args_bounded.depth = Some(avout_models::mvcc::DEFAULT_DEPTH);
        &args_bounded
    } else {
        args
    };
    let config = Config {
        clients: args.clients,
        cycles: args.cycles,
        faults: args.faults,
        bug: args.planted,
        search: Search {
            dfs: args.dfs,
            max_depth: args.depth,
            threads: args.threads,
        },
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
        return Ok(true);
    }
    if args.json {
        let report = check_named(name, &config)?;
        println!("{}", report_json(name, args, &report));
        return Ok(report.ok());
    }
    println!(
        "model {name}: {} clients, {} faults at most{}{}",
        args.clients,
        args.faults,
        args.depth.map_or(String::new(), |d| format!(", depth {d}")),
        args.planted
            .map_or(String::new(), |b| format!(", planted bug {b}"))
    );
    let report = check_named(name, &config)?;
    print!("{report}");
    Ok(report.ok())
}

/// The report as one JSON object: the model, its configuration, the state counts, the time
/// and each property with its kind (`always`, `sometimes`, `eventually`), its verdict
/// (`holds`, `violated`, `found`, `not-found`) and, for a counterexample or an example, its
/// trace as a list of steps.
fn report_json(name: &str, args: &ModelArgs, report: &Report) -> Value {
    let properties: Vec<Value> = report
        .properties
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "kind": p.kind(),
                "verdict": p.verdict.name(),
                "ok": p.ok(),
                "trace": p.trace.as_ref().map(trace_json),
            })
        })
        .collect();
    json!({
        "model": name,
        "config": {
            "clients": args.clients,
            "faults": args.faults,
            "cycles": args.cycles,
            "depth": args.depth,
            "dfs": args.dfs,
            "threads": args.threads,
            "planted": args.planted.map(|b| b.to_string()),
        },
        "states": report.states,
        "unique_states": report.unique_states,
        "max_depth": report.max_depth,
        "time_ms": report.elapsed.as_secs_f64() * 1000.0,
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
