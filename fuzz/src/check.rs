//! The property both fuzz binaries check: parse + validate of any bytes returns (a
//! submission or a typed `WireError`) without panicking, and the same bytes give the
//! same answer twice (no hidden state, no randomness).
use std::collections::BTreeSet;

use telha::graph::validate::{validate, Caps};
use telha::graph::wire::parse;

/// Runs one input; panics (the finding) only if the core's own code panics or answers
/// the same bytes differently twice.
pub fn check(data: &[u8]) {
    let formats: BTreeSet<String> = ["txt", "csv", "pdf"].into_iter().map(String::from).collect();
    let caps = Caps::default();
    // The first byte, when present, picks the partial's base offset: validation of later
    // partials (base > 0) is exercised too.
    let base = data.first().map_or(0, |b| u64::from(*b % 8));
    let first = answer(data, base, &caps, &formats);
    let second = answer(data, base, &caps, &formats);
    assert_eq!(first, second, "the same bytes were answered differently");
}

fn answer(data: &[u8], base: u64, caps: &Caps, formats: &BTreeSet<String>) -> Result<usize, String> {
    let sub = parse(data).map_err(|e| e.to_string())?;
    let checked = validate(&sub, base, caps, formats).map_err(|e| e.to_string())?;
    Ok(checked.child_contents.len())
}
