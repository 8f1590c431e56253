//! Checks every model in a few configurations and prints the figures (for models/README.md):
//! `cargo run --release -p avout-models --example sizes [--all-features]`.

use avout_models::{Config, Named, check_named};

fn main() {
    let configs: &[(u8, u8)] = &[(2, 0), (2, 1), (3, 0), (2, 2), (3, 1)];
    for named in Named::ALL {
        for &(clients, faults) in configs {
            let config = Config {
                clients,
                faults,
                ..Config::default()
            };
            let report = check_named(named.name(), &config).expect("model");
            print!(
                "{} clients={clients} faults={faults}: {}",
                named.name(),
                report
            );
        }
    }
}
