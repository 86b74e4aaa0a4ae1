//! Every redb table, in one place. Names carry a version so a migration can find
//! the old layout. Values that are records are prost messages ([`super::records`]):
//! fields can be added later without rewriting the file.
use redb::{TableDefinition, WriteTransaction};

/// Creates every table, so read transactions never meet a missing one.
pub fn create_all(txn: &WriteTransaction) -> Result<(), redb::TableError> {
    txn.open_table(JOBS)?;
    txn.open_table(READY)?;
    txn.open_table(LEASES)?;
    txn.open_table(FAILURES)?;
    txn.open_table(DEAD)?;
    txn.open_table(RETRYING)?;
    txn.open_table(COUNTS)?;
    txn.open_table(META)?;
    txn.open_table(SUBMISSIONS)?;
    txn.open_table(IDEMPOTENCY)?;
    txn.open_table(NODE_VERSIONS)?;
    txn.open_table(EDGES_OUT)?;
    txn.open_table(EDGES_IN)?;
    txn.open_table(EDGES_IN_STAGED)?;
    txn.open_table(JOB_NODES)?;
    txn.open_table(JOB_EDGES)?;
    txn.open_table(JOB_SPANS)?;
    txn.open_table(JOB_TEXT)?;
    txn.open_table(AMBIGUITIES)?;
    txn.open_table(CHILD_NAMES)?;
    txn.open_table(CONTENT_HASHES)?;
    txn.open_table(CORE_IDS)?;
    txn.open_table(CONTENTS)?;
    Ok(())
}

/// Key: job id. Value: `JobRecord`.
pub const JOBS: TableDefinition<u64, &[u8]> = TableDefinition::new("jobs-1");

/// The ready index: jobs in state `queued`, by format and tenant (tenant fairness
/// picks a tenant first, then its oldest job).
/// Key: (format, tenant, job id). Value: ().
pub const READY: TableDefinition<(&str, &str, u64), ()> = TableDefinition::new("ready-1");

/// Current leases. Key: job id. Value: `LeaseRecord` (holder, lease number, deadline).
pub const LEASES: TableDefinition<u64, &[u8]> = TableDefinition::new("leases-1");

/// Failure history. Key: (job id, lease number of the failed attempt). Value: `FailureRecord`.
pub const FAILURES: TableDefinition<(u64, u64), &[u8]> = TableDefinition::new("failures-1");

/// Dead letters. Key: job id. Value: when it died (µs).
pub const DEAD: TableDefinition<u64, i64> = TableDefinition::new("dead-1");

/// Jobs waiting out a retry backoff. Key: job id. Value: when they are due (µs).
pub const RETRYING: TableDefinition<u64, i64> = TableDefinition::new("retrying-1");

/// Queue depth. Key: (format, state code). Value: number of jobs.
pub const COUNTS: TableDefinition<(&str, u8), u64> = TableDefinition::new("counts-1");

/// Counters. Key: name (`next_job_id`, `next_node_id`). Value: the next value to hand out.
pub const META: TableDefinition<&str, u64> = TableDefinition::new("meta-1");

/// Small contents, kept in the database instead of a blob file (`[store].inline_kb`):
/// a job whose record says `inline` has its content here, under its blake3. Written in
/// the commit that creates the job (a child's in its submission's commit), so it is
/// durable exactly when the job is; content-addressed, so equal contents are stored once.
/// Key: blake3 hex. Value: the bytes.
pub const CONTENTS: TableDefinition<&str, &[u8]> = TableDefinition::new("contents-1");

/// Client idempotency keys. Key: (tenant, key). Value: the job the first SubmitJob
/// with that key created. Kept for good (the promise is at least 24 h).
pub const IDEMPOTENCY: TableDefinition<(&str, &str), u64> = TableDefinition::new("idempotency-1");

/// Accepted submissions of the current (or final) lease of a job.
/// Key: (job id, lease number, seq). Value: `SubmissionRecord`.
pub const SUBMISSIONS: TableDefinition<(u64, u64, u32), &[u8]> = TableDefinition::new("submissions-1");

// ---------------------------------------------------------------------------
// The graph. Every key of tenant data starts with the tenant: the same node id in
// two tenants is two nodes, and a range scan never crosses into another tenant.
// A streamed job's partials are written here as they are accepted; reads show a
// row only once the job that wrote it has succeeded (graph::read), and an attempt
// that ends without its final has its rows deleted (graph::apply::reclaim).
// ---------------------------------------------------------------------------

/// Node versions. Key: (tenant, node id, version, 1-based). Value: `NodeVersionRecord`.
/// A node exists when it has a version; its current one is the last of its range.
pub const NODE_VERSIONS: TableDefinition<(&str, &str, u32), &[u8]> = TableDefinition::new("node-versions-1");

/// Edges by source. An endpoint id need not exist (a dangling edge): reads resolve
/// endpoints against NODE_VERSIONS, so an edge heals by itself when its node arrives.
/// Key: (tenant, from id, type, to id). Value: `EdgeRecord`.
pub const EDGES_OUT: TableDefinition<(&str, &str, &str, &str), &[u8]> = TableDefinition::new("edges-out-1");

/// Edges by target, the merged part of the reverse index of EDGES_OUT: a job's
/// reverse keys go first to [`EDGES_IN_STAGED`], next to its other rows, and the store
/// writer moves them here in batches ([`super::edges`]). A reader of a node's incoming
/// edges reads both. Key: (tenant, to id, type, from id). Value: ().
///
/// `edges-in-1` was the whole reverse index, written by each job's commit; a store
/// that has it is migrated on open by renaming it (it is a consistent merged index
/// with nothing staged).
pub const EDGES_IN: TableDefinition<(&str, &str, &str, &str), ()> = TableDefinition::new("edges-in-2");

/// The name of the reverse index before staging ([`EDGES_IN`] took it over).
pub const EDGES_IN_V1: &str = "edges-in-1";

/// Reverse keys not merged into [`EDGES_IN`] yet, clustered by the job that wrote the
/// edge, so that a job's commit writes them together instead of one scattered leaf
/// each. Key: (job id, tenant, to id, type, from id). Value: ().
pub const EDGES_IN_STAGED: TableDefinition<(u64, &str, &str, &str, &str), ()> = TableDefinition::new("edges-in-staged-1");

/// A job's projected nodes, one record per submission (they are written and read a
/// submission at a time). Key: (job id, seq). Value: `ProjectedNodes`.
pub const JOB_NODES: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("job-nodes-2");

/// A job's relationships, one record per submission. Key: (job id, seq). Value: `ProjectedEdges`.
pub const JOB_EDGES: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("job-edges-2");

/// A job's spans (global offsets), one record per submission. Key: (job id, seq). Value: `SpanRecords`.
pub const JOB_SPANS: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("job-spans-2");

/// A job's canonical text, one chunk per submission (they concatenate byte-exactly).
/// Key: (job id, seq). Value: UTF-8 bytes.
pub const JOB_TEXT: TableDefinition<(u64, u32), &[u8]> = TableDefinition::new("job-text-1");

/// Temporal ambiguities, all candidates kept. Key: (tenant, job id, index). Value: `AmbiguityRecord`.
pub const AMBIGUITIES: TableDefinition<(&str, u64, u32), &[u8]> = TableDefinition::new("ambiguities-1");

/// The core-assigned ids each partial of a lease got, so that later submissions'
/// references to them hash as positions. Key: (job id, lease number, first id number).
/// Value: `CoreIdRun`. Deleted when the lease ends.
pub const CORE_IDS: TableDefinition<(u64, u64, u64), &[u8]> = TableDefinition::new("core-ids-1");

/// Child jobs by name, per tenant (name dedup). Key: (tenant, name). Value: job id.
pub const CHILD_NAMES: TableDefinition<(&str, &str), u64> = TableDefinition::new("child-names-1");

/// The last projected content hash per source (URL, else name), per tenant (recrawl dedup).
/// Key: (tenant, source key). Value: hex hash.
pub const CONTENT_HASHES: TableDefinition<(&str, &str), &str> = TableDefinition::new("content-hashes-1");
