//! Every redb table, in one place. Names carry a version so a migration can find
//! the old layout. Values that are records are prost messages ([`super::records`]):
//! fields can be added later without rewriting the file.
use redb::TableDefinition;

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

/// Accepted submissions of the current (or final) lease of a job.
/// Key: (job id, lease number, seq). Value: `SubmissionRecord`.
pub const SUBMISSIONS: TableDefinition<(u64, u64, u32), &[u8]> = TableDefinition::new("submissions-1");
