//! Leaf tools for supervising worker processes, used by the pool actors
//! ([`crate::actors::pool`]) and the supervisor actor ([`crate::actors::supervisor`]):
//! - [`exit`]: the exit classification table.
//! - [`spawn`]: the spawner thread (process groups, rlimits, parent-death signal).
//! - [`procfs`]: resident size, CPU clock, per-job CPU budget.

pub mod exit;
pub mod procfs;
pub mod spawn;
