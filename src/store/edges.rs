//! The reverse edge index in two parts: the rows a job's commit stages next to its
//! other rows ([`EDGES_IN_STAGED`], keyed by job), and the merged index
//! ([`EDGES_IN`], keyed by target) that the store writer moves them into in batches.
//!
//! Why: an edge's target is usually another file's symbol, so a job's reverse keys
//! land all over EDGES_IN, and redb's copy-on-write commit rewrites a whole leaf and
//! its branch for each of them. Staged by job they share a few leaves; a merge then
//! inserts many jobs' keys in one commit, in key order, where they share leaves too.
//!
//! Invariant (at every commit): for each key of EDGES_OUT, its reverse key is in
//! EDGES_IN or staged under some job. A staged row whose edge is gone (reclaimed, or
//! another job's row for a key rewritten since) is dropped by the merge and skipped
//! by readers, which check EDGES_OUT anyway for the edge's properties.
use std::collections::BTreeSet;

use redb::{Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableHandle, WriteTransaction};

use super::tables::{EDGES_IN, EDGES_IN_STAGED, EDGES_IN_V1, EDGES_OUT, META};
use super::StoreError;

/// The store's layout version, kept in META under [`LAYOUT_KEY`]: 2 stages reverse
/// edges. A store written by a later layout is refused rather than misread.
pub const LAYOUT: u64 = 2;
pub const LAYOUT_KEY: &str = "layout";

/// The writer merges the staged rows once there are this many (a read of a node's
/// incoming edges seeks once per job that has staged rows, so the stage stays small).
pub const DEFAULT_MERGE_ROWS: u64 = 16_384;

/// Brings an older store's tables to this layout, inside `txn` (run at open, before
/// anything else writes): the whole reverse index of `edges-in-1` becomes the merged
/// index. Refuses a store whose layout is newer than this binary's.
pub fn migrate(txn: &WriteTransaction) -> Result<(), StoreError> {
    let found = txn.open_table(META)?.get(LAYOUT_KEY)?.map(|g| g.value());
    if let Some(v) = found.filter(|v| *v > LAYOUT) {
        return Err(StoreError::Layout { found: v, known: LAYOUT });
    }
    let names: Vec<String> = txn.list_tables()?.map(|t| t.name().to_string()).collect();
    if names.iter().any(|n| n == EDGES_IN_V1) {
        let old: redb::TableDefinition<(&str, &str, &str, &str), ()> = redb::TableDefinition::new(EDGES_IN_V1);
        if names.iter().any(|n| n == EDGES_IN.name()) {
            // Both: a binary of the old layout ran on this store and wrote its own
            // reverse index. Move its rows into the merged one.
            {
                let from = txn.open_table(old)?;
                let mut into = txn.open_table(EDGES_IN)?;
                for e in from.iter()? {
                    let (k, _) = e?;
                    into.insert(k.value(), ())?;
                }
            }
            txn.delete_table(old)?;
        } else {
            txn.rename_table(old, EDGES_IN)?;
        }
        tracing::info!("store migrated: reverse edge index edges-in-1 is now edges-in-2 (merged part)");
    }
    if found != Some(LAYOUT) {
        txn.open_table(META)?.insert(LAYOUT_KEY, LAYOUT)?;
    }
    Ok(())
}

/// Moves every staged reverse key into EDGES_IN (those whose edge still exists), in
/// key order, and empties the stage. Returns how many staged rows it read.
pub fn merge(txn: &WriteTransaction) -> Result<u64, StoreError> {
    let mut keys: Vec<(String, String, String, String)>;
    {
        let staged = txn.open_table(EDGES_IN_STAGED)?;
        keys = Vec::with_capacity(usize::try_from(staged.len()?).unwrap_or(0));
        for e in staged.iter()? {
            let (k, _) = e?;
            let (_, tenant, to, kind, from) = k.value();
            keys.push((tenant.to_string(), to.to_string(), kind.to_string(), from.to_string()));
        }
    }
    let read = keys.len() as u64;
    if read == 0 {
        return Ok(0);
    }
    keys.sort_unstable();
    keys.dedup();
    {
        let out = txn.open_table(EDGES_OUT)?;
        let mut into = txn.open_table(EDGES_IN)?;
        for (tenant, to, kind, from) in &keys {
            if out.get((tenant.as_str(), from.as_str(), kind.as_str(), to.as_str()))?.is_some() {
                into.insert((tenant.as_str(), to.as_str(), kind.as_str(), from.as_str()), ())?;
            }
        }
    }
    // Dropping the table frees its pages without rewriting them row by row.
    txn.delete_table(EDGES_IN_STAGED)?;
    txn.open_table(EDGES_IN_STAGED)?;
    Ok(read)
}

/// Merges in its own durable commit when at least `threshold` rows are staged (or
/// any, with `threshold` 0). Called by the writer between batches.
pub(super) fn merge_if_due(db: &Database, threshold: u64) -> Result<Option<u64>, StoreError> {
    let staged = db.begin_read()?.open_table(EDGES_IN_STAGED)?.len()?;
    if staged == 0 || staged < threshold {
        return Ok(None);
    }
    let mut txn = db.begin_write()?;
    txn.set_durability(Durability::Immediate)?;
    let n = merge(&txn)?;
    txn.commit()?;
    Ok(Some(n))
}

/// The (type, from id) of the staged reverse keys of `tenant`'s node `id`, over every
/// job that has staged rows (one seek per such job).
pub fn staged_into(txn: &ReadTransaction, tenant: &str, id: &str) -> Result<BTreeSet<(String, String)>, StoreError> {
    let staged = txn.open_table(EDGES_IN_STAGED)?;
    let mut found = BTreeSet::new();
    let mut next_job = staged.first()?.map(|(k, _)| k.value().0);
    while let Some(job) = next_job {
        for e in staged.range((job, tenant, id, "", "")..)? {
            let (k, _) = e?;
            let (j, t, to, kind, from) = k.value();
            if j != job || t != tenant || to != id {
                break;
            }
            found.insert((kind.to_string(), from.to_string()));
        }
        next_job = match job.checked_add(1) {
            Some(after) => staged.range((after, "", "", "", "")..)?.next().transpose()?.map(|(k, _)| k.value().0),
            None => None,
        };
    }
    Ok(found)
}
