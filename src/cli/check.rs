//! `telha check`: runs wire submissions through the core's own parser and validator,
//! offline, as a worker's test or the parity test does (no server needed).
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;

use super::client::load_config;
use super::Global;
use crate::graph::validate::validate;
use crate::graph::wire;

/// Checks one job's submissions in `seq` order (each partial's spans against the text
/// before it); the first refusal is the job's.
fn check_job(parts: &[Vec<u8>], caps: &crate::graph::validate::Caps, formats: &std::collections::BTreeSet<String>) -> Result<(), String> {
    let mut base = 0u64;
    for (seq, bytes) in parts.iter().enumerate() {
        let sub = wire::parse(bytes).map_err(|e| format!("submission {seq}: {e}"))?;
        validate(&sub, base, caps, formats).map_err(|e| format!("submission {seq}: {e}"))?;
        crate::graph::apply::Encoded::of(&sub).map_err(|e| format!("submission {seq}: {e}"))?;
        base += sub.canonical_text.len() as u64;
    }
    Ok(())
}

/// The submissions a file holds: a JSON array of one job's submissions (a golden file),
/// else the file's bytes as one submission.
fn submissions(text: &[u8]) -> Vec<Vec<u8>> {
    match serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(text) {
        Ok(parts) => parts.iter().map(|p| p.get().as_bytes().to_vec()).collect(),
        Err(_) => vec![text.to_vec()],
    }
}

/// Prints one JSON line per file: `{"file", "ok", "reason"}`; fails when any is refused.
pub fn check(g: &Global, files: &[PathBuf]) -> Result<ExitCode> {
    let config = load_config(g)?;
    let formats = config.known_formats();
    let mut all_ok = true;
    for f in files {
        let text = std::fs::read(f).with_context(|| format!("{}: cannot read", f.display()))?;
        let outcome = check_job(&submissions(&text), &config.graph, &formats);
        all_ok &= outcome.is_ok();
        println!("{}", json!({"file": f.display().to_string(), "ok": outcome.is_ok(), "reason": outcome.err().unwrap_or_default()}));
    }
    Ok(if all_ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
