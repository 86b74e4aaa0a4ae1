//! Bearer-token auth for every service but health. The token lives in a 0600 file
//! under the data dir, created on first start; comparison is constant-time.
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use subtle::ConstantTimeEq;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// Reads the token at `path`, creating it (0600, 256 random bits) when missing.
pub fn load_or_create_token(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_string()),
        Ok(_) => return Err(std::io::Error::other(format!("token file {} is empty", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let token = hex::encode(bytes);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    f.write_all(token.as_bytes())?;
    f.sync_all()?;
    Ok(token)
}

/// Checks `authorization: Bearer <token>` on every call.
#[derive(Clone)]
pub struct Auth {
    expected: Arc<Vec<u8>>,
}

impl Auth {
    pub fn new(token: &str) -> Self {
        Self { expected: Arc::new(format!("Bearer {token}").into_bytes()) }
    }
}

impl Interceptor for Auth {
    fn call(&mut self, req: Request<()>) -> Result<Request<()>, Status> {
        let given = req.metadata().get("authorization").map(|v| v.as_bytes()).unwrap_or_default();
        if given.len() == self.expected.len() && bool::from(given.ct_eq(self.expected.as_slice())) {
            Ok(req)
        } else {
            Err(Status::unauthenticated("missing or wrong `authorization: Bearer <token>` (the token is in the server's token_file)"))
        }
    }
}
