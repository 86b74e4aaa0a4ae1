//! The graph store: what a job's accepted submissions become.
//!
//! - [`wire`]: the wire submission (`result_json` v1) as strict Rust types.
//! - [`validate`]: every rule a submission must pass before any of it is applied.
//! - [`apply`]: what each commit writes to the tenant's graph (nodes and versions,
//!   edges, spans, text, ambiguities), what a partial defers to the final commit,
//!   child jobs, the source's content hash, and the reclaim of an attempt that ends
//!   without its final.
//! - [`positions`]: the submission hash's view of a submission (core ids as positions).
//! - [`read`]: a job's projection, a node with its versions and edges, ambiguities.
//!
//! Node ids. A node without a worker-given id gets a core-assigned id `n<decimal>`
//! from one counter for the whole store, so it is unique across jobs and tenants;
//! workers may reference such ids (`fromId`/`toId`) but not give ids of that form.
//! A worker-given id is deterministic and scoped by tenant: it upserts (same labels
//! and properties → the existing version; otherwise a new version).
//!
//! Visibility. A partial writes what no reader can see yet (fresh nodes, edges whose
//! key no other job holds, the job's own rows) and defers the rest; reads show a
//! row only once the job that wrote it has succeeded, so a read never sees part of
//! a job. What an attempt that fails, expires, is released or cancelled wrote is
//! deleted with it.

pub mod apply;
pub mod positions;
pub mod read;
pub mod validate;
pub mod wire;

use crate::store::StoreError;

/// Errors of graph reads. (Malformed submissions are [`wire::WireError`]; storage
/// failures are [`StoreError`].)
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("no job {0}")]
    NoJob(u64),
    #[error("job {job} is {state}: its projection is visible once it succeeds")]
    NotVisible { job: u64, state: &'static str },
    #[error("no node {0:?} in this tenant")]
    NoNode(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

macro_rules! graph_store_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for GraphError {
            fn from(e: $t) -> Self { Self::Store(e.into()) }
        }
    )*};
}
graph_store_error_from!(redb::StorageError, redb::TableError, prost::DecodeError);
