//! The process's memory, as Linux reports it in `/proc`: what a check's memory budget is
//! measured against. Elsewhere every figure is unknown (`None`) and no memory budget applies.

use std::fs;

/// Resident memory of this process now, in bytes.
///
/// ```
/// # #[cfg(target_os = "linux")]
/// assert!(avout_models::check::memory::resident().unwrap() > 0);
/// ```
pub fn resident() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// The most this process has been resident so far, in bytes.
///
/// ```
/// # #[cfg(target_os = "linux")]
/// assert!(avout_models::check::memory::peak().unwrap() >= avout_models::check::memory::resident().unwrap() / 2);
/// ```
pub fn peak() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

/// Memory the machine can give without swapping, in bytes (`MemAvailable`).
///
/// ```
/// # #[cfg(target_os = "linux")]
/// assert!(avout_models::check::memory::available().unwrap() > 0);
/// ```
pub fn available() -> Option<u64> {
    field_kib(&fs::read_to_string("/proc/meminfo").ok()?, "MemAvailable:").map(|k| k * 1024)
}

fn status_kib(field: &str) -> Option<u64> {
    field_kib(&fs::read_to_string("/proc/self/status").ok()?, field)
}

/// The number on the line starting with `field` (`VmRSS:   1234 kB`).
fn field_kib(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(field))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `bytes` for people: `1.5 GiB`, `640 MiB`, `12 KiB`.
///
/// ```
/// assert_eq!(avout_models::check::memory::show(3 << 29), "1.5 GiB");
/// assert_eq!(avout_models::check::memory::show(640 << 20), "640 MiB");
/// ```
pub fn show(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value >= 100.0 || value.fract() < 0.05 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::field_kib;

    #[test]
    fn a_field_is_read_from_its_line() {
        let text = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(field_kib(text, "VmRSS:"), Some(1024));
        assert_eq!(field_kib(text, "VmHWM:"), Some(2048));
        assert_eq!(field_kib(text, "VmSwap:"), None);
    }
}
