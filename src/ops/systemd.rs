//! systemd's readiness protocol (`sd_notify`): a datagram to the Unix socket named by
//! `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace). A few lines over
//! std rather than a crate; without `NOTIFY_SOCKET` every call does nothing.
use std::os::unix::net::UnixDatagram;

/// Sends `state` (e.g. `READY=1`) to the service manager, if one is listening.
/// Returns whether a message was sent.
pub fn notify(state: &str) -> std::io::Result<bool> {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else { return Ok(false) };
    let sock = UnixDatagram::unbound()?;
    let bytes = path.as_encoded_bytes();
    match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            sock.send_to_addr(state.as_bytes(), &addr)?;
        }
        None => {
            sock.send_to(state.as_bytes(), &path)?;
        }
    }
    Ok(true)
}

/// [`notify`], logging a failure instead of returning it (a service manager that went
/// away must not stop the server).
pub fn tell(state: &str) {
    match notify(state) {
        Ok(true) => tracing::debug!(state, "sd_notify"),
        Ok(false) => {}
        Err(e) => tracing::warn!(state, error = %e, "sd_notify failed"),
    }
}
