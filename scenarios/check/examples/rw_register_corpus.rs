//! Writes the rw-register checker's hand-written histories ([`avout_check::rw_register::corpus`])
//! to a directory, one `NAME.jsonl` each, with `NAME.expected` holding the anomalies avout
//! finds (one per line), for another checker to judge the same files:
//!
//! ```text
//! cargo run -p avout-check --features synth --example rw_register_corpus -- DIR
//! ```

use std::path::PathBuf;

use avout_check::rw_register::corpus;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .ok_or("usage: rw_register_corpus DIR")?
        .into();
    std::fs::create_dir_all(&dir)?;
    for case in corpus::cases() {
        case.history()
            .write_file(dir.join(format!("{}.jsonl", case.name)))?;
        let mut expected = case.anomalies.join("\n");
        expected.push('\n');
        std::fs::write(dir.join(format!("{}.expected", case.name)), expected)?;
    }
    Ok(())
}
