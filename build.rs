//! Compiles `proto/` with protox (pure Rust, no system protoc) into tonic/prost code,
//! and keeps the encoded descriptor set for gRPC reflection.
use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fds = protox::compile(["telha/v1/telha.proto"], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("telha_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
