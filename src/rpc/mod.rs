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

/// Everything a handler's domain call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Gone(#[from] ActorGone),
    /// The caller does not hold the lease it names.
    #[error(transparent)]
    Fenced(#[from] crate::store::jobs::Fenced),
    /// The job has no content blob to read.
    #[error("job {0} has no content blob")]
    NoBlob(u64),
    /// Content i/o of ours failed (a blob being written or read).
    #[error("{0}")]
    Io(String),
}

/// The one mapping from domain errors to gRPC status codes. A job or node the caller's
/// tenant does not have is NOT_FOUND (the same answer as for one that does not exist,
/// so tenants learn nothing of others).
pub fn to_status(e: impl Into<ApiError>) -> Status {
    match e.into() {
        ApiError::Core(CoreError::Job(JobError::NotFound(id))) | ApiError::Graph(GraphError::NoJob(id)) => Status::not_found(format!("no job {id}")),
        ApiError::Core(CoreError::Job(JobError::Transition(t))) => Status::failed_precondition(t.to_string()),
        ApiError::Core(CoreError::Gone(g)) | ApiError::Gone(g) => Status::unavailable(g.to_string()),
        ApiError::Core(CoreError::Store(s)) | ApiError::Graph(GraphError::Store(s)) | ApiError::Store(s) => {
            tracing::error!(error = %s, "storage error");
            match s {
                StoreError::WriterGone | StoreError::Closed => Status::unavailable("the store is shutting down"),
                other => Status::internal(format!("storage error: {other}")),
            }
        }
        ApiError::Graph(GraphError::NoNode(id)) => Status::not_found(format!("no node {id:?}")),
        ApiError::Graph(e @ GraphError::NotVisible { .. }) => Status::failed_precondition(e.to_string()),
        ApiError::Fenced(f) => Status::permission_denied(f.to_string()),
        e @ ApiError::NoBlob(_) => Status::failed_precondition(e.to_string()),
        ApiError::Io(msg) | ApiError::Core(CoreError::Io(msg)) => Status::internal(msg),
    }
}

impl From<ActorGone> for Status {
    fn from(g: ActorGone) -> Self {
        to_status(g)
    }
}

/// Runs `f` on tokio's blocking pool (parsing, validation, store reads), off the
/// async workers.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, Status> {
    tokio::task::spawn_blocking(f).await.map_err(|e| to_status(ApiError::Io(e.to_string())))
}

/// `INVALID_ARGUMENT` naming the field (request validation, in [`convert`] and the handlers).
pub fn invalid(field: &str, message: impl std::fmt::Display) -> Status {
    Status::invalid_argument(format!("{field}: {message}"))
}
