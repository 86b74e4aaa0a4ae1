//! Generated gRPC code for `telha.v1`, and the descriptor set served by reflection.
#![allow(clippy::all, missing_docs)]

tonic::include_proto!("telha.v1");

/// Encoded `FileDescriptorSet` of `proto/`, for gRPC reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/telha_descriptor.bin"));
