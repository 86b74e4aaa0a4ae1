//! The wire submission (`result_json` v1) lives in [`crate::graph::wire`]; this
//! module keeps the older path for the constants other modules use.
pub use crate::graph::wire::{parse, Submission, WireError, MAX_SUBMISSION_BYTES};
