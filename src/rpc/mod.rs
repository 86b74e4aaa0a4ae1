//! gRPC handlers. Each is thin and the same shape: validate the request into a
//! domain value ([`convert`]), call the core, map errors with [`to_status`] — the one
//! place that turns domain errors into `tonic::Status`.

pub mod auth;
pub mod convert;
pub mod graph;
pub mod ingest;
pub mod worker;

use tonic::Status;

use crate::actors::{ActorGone, CoreError};
use crate::graph::GraphError;
use crate::store::jobs::JobError;
use crate::store::StoreError;

/// The one mapping from domain errors to gRPC status codes.
pub fn to_status(e: CoreError) -> Status {
    match e {
        CoreError::Job(JobError::NotFound(id)) => Status::not_found(format!("no job {id}")),
        CoreError::Job(JobError::Transition(t)) => Status::failed_precondition(t.to_string()),
        CoreError::Gone(g) => Status::unavailable(g.to_string()),
        CoreError::Store(s) => store_status(s),
    }
}

/// Graph reads: a job or node the caller's tenant does not have is NOT_FOUND (the
/// same answer as for one that does not exist, so tenants learn nothing of others).
pub fn graph_status(e: GraphError) -> Status {
    match e {
        GraphError::NoJob(id) => Status::not_found(format!("no job {id}")),
        GraphError::NoNode(id) => Status::not_found(format!("no node {id:?}")),
        e @ GraphError::NotVisible { .. } => Status::failed_precondition(e.to_string()),
        GraphError::Store(s) => store_status(s),
    }
}

pub fn store_status(e: StoreError) -> Status {
    tracing::error!(error = %e, "storage error");
    match e {
        StoreError::WriterGone => Status::unavailable("the store is shutting down"),
        other => Status::internal(format!("storage error: {other}")),
    }
}

impl From<ActorGone> for Status {
    fn from(g: ActorGone) -> Self {
        Status::unavailable(g.to_string())
    }
}

/// `INVALID_ARGUMENT` naming the field.
/// Runs `f` on tokio's blocking pool (parsing, validation, store reads), off the
/// async workers.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Status::internal(e.to_string()))
}

pub fn invalid(field: &str, message: impl std::fmt::Display) -> Status {
    Status::invalid_argument(format!("{field}: {message}"))
}
