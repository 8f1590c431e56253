//! `zk-counter --zk HOST:PORT[,…] [--leader] [--ops N]`: one process of the service against a
//! real ensemble, printing each step.

use avout_example_zk_counter::{Config, Events, Role, Step, run};

/// Prints each step.
struct Print;

impl Events for Print {
    fn step(&self, step: Step<'_>) {
        println!("{step:?}");
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        let i = args.iter().position(|a| a == flag)?;
        args.get(i + 1).cloned()
    };
    let Some(cluster) = value("--zk") else {
        eprintln!("usage: zk-counter --zk HOST:PORT[,…] [--leader] [--ops N]");
        return std::process::ExitCode::from(2);
    };
    let role = if args.iter().any(|a| a == "--leader") {
        Role::Leader
    } else {
        Role::Counter
    };
    let ops = value("--ops").and_then(|n| n.parse().ok()).unwrap_or(10);
    match run(&Config::new(&cluster), role, ops, &Print).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
