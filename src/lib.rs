//! Telha's ingestion core: a supervisor that hands jobs to Python format workers
//! over gRPC and keeps their state in an embedded, crash-safe store.
//!
//! Module map:
//! - [`proto`]: code generated from `proto/telha/v1/telha.proto` (the wire contract).
//! - [`config`]: `supervisor.toml`, parsed strictly (unknown keys refused with their path).
//! - [`rules`]: the rules both sides of the wire enforce, generated from `proto/telha/v1/rules.json`.
//! - [`failure`]: the failure taxonomy shared by the core, the supervisor and the workers.
//! - [`store`]: redb tables, the pure job state machine, group commit, blobs.
//! - [`lifecycle`]: a job's state change and its graph effects in one write transaction
//!   (an attempt's end = transition + reclaim; a submission = fence + apply, and a final
//!   one = finalize + `Succeed` + child jobs).
//! - [`actors`]: the queue actor (routing, tenant fairness) and the lease actor (timers).
//! - [`rpc`]: thin tonic handlers, auth, and the one mapping from domain errors to `Status`.
//! - [`supervise`]: pool actors' tools: exit classification, spawning, /proc; SIGHUP and drain.
//! - [`ops`]: the operations endpoint (`/metrics`, `/healthz`, `/readyz`, status page),
//!   an observer of the core's events.
//! - [`server`]: wiring of store, actors and gRPC services; `telha serve`.
//! - [`cli`]: the `telha` command line.
//! - [`graph`]: typed wire v1, validation, staging of partials, the tenant-scoped
//!   graph (nodes, versions, edges, spans, ambiguities, child jobs) and its reads.

pub mod actors;
pub mod cli;
pub mod config;
pub mod failure;
pub mod graph;
pub mod lifecycle;
pub mod ops;
pub mod proto;
pub mod rules;
pub mod rpc;
pub mod server;
pub mod store;
pub mod supervise;
pub mod time;
