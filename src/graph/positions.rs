//! The submission hash's view of a submission: its bytes with every id the core
//! assigned earlier in the same lease replaced by that node's position.
//!
//! A streamed job's later partials may carry ids the core handed out for its earlier
//! ones (the tabular worker's rows point at their TABLE's `n<number>`). Those numbers
//! depend on what the store already held, so hashing the bytes as sent would give the
//! same input two hashes. The definition (README, "submission_hash"):
//!
//! > Each submission is hashed as its bytes with every JSON string token whose text is
//! > exactly `n<number>`, a core-assigned id given to node `i` of submission `s` of the
//! > same lease, replaced by `@<s>.<i>`. The job's hash is blake3 over the hex blake3 of
//! > each submission so rewritten, in `seq` order.
//!
//! A submission without such references hashes as its bytes, so a single-shot job's
//! hash is blake3 over the hex blake3 of its one submission, as before.
use std::collections::HashMap;

use prost::Message;
use redb::{ReadableTable, WriteTransaction};

use crate::store::records::CoreIdRun;
use crate::store::tables::CORE_IDS;
use crate::store::StoreError;

/// A string token of the submission whose text has the form of a core id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreRef {
    /// Byte range of the token's text (inside the quotes).
    pub start: usize,
    pub end: usize,
    pub number: u64,
}

/// Every JSON string token of `bytes` (keys and values) whose text is `n<number>`
/// written canonically (no leading zero). One linear pass; run off the writer thread.
pub fn core_refs(bytes: &[u8]) -> Vec<CoreRef> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < bytes.len() && bytes[j] != b'"' {
            j += if bytes[j] == b'\\' { 2 } else { 1 };
        }
        let end = j.min(bytes.len());
        if let Some(number) = core_number(&bytes[start..end]) {
            out.push(CoreRef { start, end, number });
        }
        i = end + 1;
    }
    out
}

/// The number of a canonical `n<number>` text.
fn core_number(text: &[u8]) -> Option<u64> {
    let digits = text.strip_prefix(b"n")?;
    if digits.is_empty() || digits.len() > 20 || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The hex blake3 of `bytes` as the submission hash sees them (see the module docs).
pub fn position_hash(txn: &WriteTransaction, job: u64, attempt: u64, bytes: &[u8], refs: &[CoreRef]) -> Result<String, StoreError> {
    let mut positions: HashMap<u64, Option<String>> = HashMap::new();
    let table = txn.open_table(CORE_IDS)?;
    let mut rewritten: Option<Vec<u8>> = None;
    let mut copied = 0;
    for r in refs {
        if let std::collections::hash_map::Entry::Vacant(slot) = positions.entry(r.number) {
            let found = match table.range((job, attempt, 0)..=(job, attempt, r.number))?.next_back() {
                Some(entry) => {
                    let (k, v) = entry?;
                    let run = CoreIdRun::decode(v.value())?;
                    let offset = usize::try_from(r.number - k.value().2).unwrap_or(usize::MAX);
                    run.indexes.get(offset).map(|i| format!("@{}.{i}", run.seq))
                }
                None => None,
            };
            slot.insert(found);
        }
        if let Some(Some(position)) = positions.get(&r.number) {
            let out = rewritten.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
            out.extend_from_slice(&bytes[copied..r.start]);
            out.extend_from_slice(position.as_bytes());
            copied = r.end;
        }
    }
    Ok(match rewritten {
        None => blake3::hash(bytes).to_hex().to_string(),
        Some(mut out) => {
            out.extend_from_slice(&bytes[copied..]);
            blake3::hash(&out).to_hex().to_string()
        }
    })
}

/// Records the core ids submission `seq` of lease `attempt` got: numbers from `first`,
/// one per entry of `indexes` (the node each went to).
pub fn record_run(txn: &WriteTransaction, job: u64, attempt: u64, first: u64, seq: u32, indexes: Vec<u32>) -> Result<(), StoreError> {
    if indexes.is_empty() {
        return Ok(());
    }
    txn.open_table(CORE_IDS)?.insert((job, attempt, first), CoreIdRun { seq, indexes }.encode_to_vec().as_slice())?;
    Ok(())
}

/// Forgets the runs of lease `attempt` (it ended).
pub fn drop_runs(txn: &WriteTransaction, job: u64, attempt: u64) -> Result<(), StoreError> {
    txn.open_table(CORE_IDS)?.retain_in((job, attempt, 0)..=(job, attempt, u64::MAX), |_, _| false)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_refs_are_whole_string_tokens_only() {
        let text = br#"{"a":"n12","b":"n012","c":"xn3","d":"say \"n4\"","n5":1,"e":"n6\\","f":"n"}"#;
        let found: Vec<u64> = core_refs(text).iter().map(|r| r.number).collect();
        assert_eq!(found, vec![12, 5]);
        let r = core_refs(text)[0];
        assert_eq!(&text[r.start..r.end], b"n12");
    }
}
