//! The seeds a harness runs: fixed in the test, or taken from `AVOUT_SEEDS`.

use std::ops::Range;

/// The environment variable that overrides a harness's seeds: `A..B` (B excluded), `A..=B`,
/// or one seed `A`.
pub const SEEDS_VAR: &str = "AVOUT_SEEDS";

/// A seed range that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{SEEDS_VAR}={0:?}: expected A..B, A..=B or one seed A")]
pub struct BadSeeds(pub String);

/// Parses `A..B`, `A..=B` or `A`.
///
/// ```
/// use avout_scenarios::harness::parse_seeds;
/// assert_eq!(parse_seeds("3..7").unwrap(), 3..7);
/// assert_eq!(parse_seeds("3..=7").unwrap(), 3..8);
/// assert_eq!(parse_seeds("9").unwrap(), 9..10);
/// assert!(parse_seeds("7..3").is_err() && parse_seeds("x").is_err());
/// ```
pub fn parse_seeds(text: &str) -> Result<Range<u64>, BadSeeds> {
    let bad = || BadSeeds(text.to_owned());
    let number = |s: &str| s.trim().replace('_', "").parse::<u64>().map_err(|_| bad());
    let range = if let Some((a, b)) = text.split_once("..=") {
        number(a)?..number(b)?.checked_add(1).ok_or_else(bad)?
    } else if let Some((a, b)) = text.split_once("..") {
        number(a)?..number(b)?
    } else {
        let a = number(text)?;
        a..a.checked_add(1).ok_or_else(bad)?
    };
    if range.start >= range.end {
        return Err(bad());
    }
    Ok(range)
}

/// `fixed`, unless [`SEEDS_VAR`] is set.
pub(crate) fn seeds_or(fixed: Range<u64>) -> Result<Range<u64>, BadSeeds> {
    match std::env::var(SEEDS_VAR) {
        Ok(text) => parse_seeds(&text),
        Err(_) => Ok(fixed),
    }
}
