//! `telha serve`: opens the core, serves gRPC (workers, clients, health,
//! reflection) until the shutdown future resolves, then stops in order.
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;

use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;

use crate::actors::pool::CoreContact;
use crate::actors::Core;
use crate::actors::supervisor::Supervisor;
use crate::config::Config;
use crate::proto::ingest_service_server::IngestServiceServer;
use crate::proto::worker_service_server::WorkerServiceServer;
use crate::rpc::auth::{load_or_create_token, Auth};
use crate::rpc::ingest::IngestApi;
use crate::rpc::worker::WorkerApi;
use crate::config::MAX_SUBMISSION_BYTES;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("token file {path}: {source}")]
    Token { path: String, source: std::io::Error },
    #[error(transparent)]
    Core(#[from] crate::actors::CoreError),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Supervisor(#[from] crate::actors::supervisor::SupervisorError),
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{key} {path}: {source}")]
    TlsFile { key: &'static str, path: String, source: std::io::Error },
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// How long open client connections may linger after the drain.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// A running server's addresses, known once it is bound.
pub struct Bound {
    pub addr: SocketAddr,
    /// The operations endpoint (`[server].http_listen`), unless it is off.
    pub http: Option<SocketAddr>,
}

/// Runs the server until `shutdown` resolves. `on_bound` is told the address once
/// listening (tests use port 0). Returns once the pools and the core's actors have
/// stopped, the store's writer thread has joined and the redb file is closed.
pub async fn serve(config: Config, shutdown: impl Future<Output = ()> + Send + 'static, on_bound: impl FnOnce(Bound) + Send) -> Result<(), ServeError> {
    // Refused before anything is created or bound, naming the key.
    config.check_runnable()?;
    let data_dir = config.server.data_dir.clone();
    std::fs::create_dir_all(&data_dir)?;
    let token_path = config.server.token_path();
    let token = load_or_create_token(&token_path).map_err(|source| ServeError::Token { path: token_path.display().to_string(), source })?;
    let listener = TcpListener::bind(&config.server.listen).await.map_err(|source| ServeError::Bind { addr: config.server.listen.clone(), source })?;
    let addr = listener.local_addr()?;
    let addr_file = config.server.addr_file();
    let http_listener = bind_http(&config).await?;
    let http_addr_file = config.server.http_addr_file();

    let tls = tls_config(&config)?;
    let tls_ca = tls.as_ref().and(config.server.tls_ca.as_ref()).map(|p| p.display().to_string());
    if tls.is_none() && !addr.ip().is_loopback() {
        tracing::warn!(%addr, "listening on a non-loopback address without TLS: the token and the documents cross the network in clear (set [server].tls_cert and tls_key)");
    }
    let grace = std::time::Duration::from_secs_f64(config.server.shutdown_grace_secs);
    let config_path = config.path.clone();
    let core = Core::start(config).await?;
    // The store is open (its lock is ours): no other core's workers use these folders.
    crate::actors::pool::sweep_worker_tmp(&data_dir);
    let auth = Auth::new(&token);
    // Observing starts before the pools, so that no worker's exit goes unseen.
    let observed = crate::ops::Observed::start(&core);
    let supervisor = Supervisor::start(core.clone(), contact(addr, token.clone(), tls_ca))?;
    let ops = crate::ops::Ops::new(core.clone(), supervisor.clone(), token.clone(), &observed);

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<WorkerServiceServer<WorkerApi>>().await;
    health.set_serving::<IngestServiceServer<IngestApi>>().await;
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    let worker = WorkerServiceServer::new(WorkerApi::new(core.clone()))
        .max_decoding_message_size(MAX_SUBMISSION_BYTES + 64 * 1024)
        .max_encoding_message_size(4 << 20);
    let ingest = IngestServiceServer::new(IngestApi::new(core.clone(), Some(supervisor.clone()))).max_decoding_message_size(8 << 20);

    // The operations endpoint stops after gRPC (it answers /readyz 503 during the drain).
    let (http_stop_tx, http_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let mut http_addr = None;
    let http_task = match http_listener {
        Some(l) => {
            let a = l.local_addr()?;
            write_atomically(&http_addr_file, a.to_string().as_bytes())?;
            tracing::info!(addr = %a, "operations endpoint: /metrics /healthz /readyz and the status page");
            http_addr = Some(a);
            Some(tokio::spawn(ops.clone().serve(l, async move {
                let _ = http_stop_rx.await;
            })))
        }
        None => None,
    };
    write_atomically(&addr_file, addr.to_string().as_bytes())?;
    tracing::info!(%addr, data_dir = %data_dir.display(), token_file = %token_path.display(), "telha serving");
    on_bound(Bound { addr, http: http_addr });
    crate::ops::systemd::tell("READY=1\nSTATUS=serving");

    if let Some(path) = config_path {
        tokio::spawn(reload_on_sighup(path, supervisor.clone()));
    }
    // Shutdown: drain first (workers still submit over gRPC meanwhile), then stop serving.
    let (stopped_tx, stopped_rx) = tokio::sync::watch::channel(false);
    let drainer = supervisor.clone();
    let draining = ops.clone();
    tokio::spawn(async move {
        shutdown.await;
        crate::ops::systemd::tell("STOPPING=1\nSTATUS=draining");
        draining.draining.store(true, std::sync::atomic::Ordering::Relaxed);
        drainer.drain(grace).await;
        let _ = stopped_tx.send(true);
    });
    let mut graceful = stopped_rx.clone();
    let mut forced = stopped_rx;
    let mut builder = Server::builder();
    if let Some(tls) = tls {
        builder = builder.tls_config(tls)?;
    }
    let server = builder
        .http2_keepalive_interval(Some(std::time::Duration::from_secs(20)))
        .add_service(health_service)
        .add_service(InterceptedService::new(reflection_v1, auth.clone()))
        .add_service(InterceptedService::new(reflection_v1alpha, auth.clone()))
        .add_service(InterceptedService::new(worker, auth.clone()))
        .add_service(InterceptedService::new(ingest, auth))
        .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), async move {
            let _ = graceful.wait_for(|s| *s).await;
        });
    // Clients that keep streams open (a watch, say) get a few seconds to go, not forever.
    tokio::select! {
        r = server => r?,
        () = async move {
            let _ = forced.wait_for(|s| *s).await;
            tokio::time::sleep(CLOSE_GRACE).await;
        } => tracing::warn!("clients still connected after the drain; closing anyway"),
    }
    let _ = std::fs::remove_file(&addr_file);
    let _ = http_stop_tx.send(());
    if let Some(t) = http_task {
        let _ = t.await;
        let _ = std::fs::remove_file(&http_addr_file);
    }
    observed.stop();
    // The pools stopped in the drain; now the supervisor, the core's actors, the writer
    // thread and the file.
    supervisor.shutdown().await;
    core.shutdown().await;
    tracing::info!("telha stopped");
    Ok(())
}

/// Binds `[server].http_listen`. An address set explicitly must bind; the default one
/// (not set) may be taken, say by another server on the same host: then a warning, and
/// the endpoint is off.
async fn bind_http(config: &Config) -> Result<Option<TcpListener>, ServeError> {
    let Some((a, explicit)) = config.server.http_listen() else { return Ok(None) };
    match TcpListener::bind(a).await {
        Ok(l) => Ok(Some(l)),
        Err(source) if explicit => Err(ServeError::Bind { addr: format!("{a} ([server].http_listen)"), source }),
        Err(e) => {
            tracing::warn!(addr = a, error = %e, "the default operations address is taken: /metrics and the status page are off (set [server].http_listen)");
            Ok(None)
        }
    }
}

/// `[server].tls_cert` and `tls_key` read into tonic's (rustls) server config.
fn tls_config(config: &Config) -> Result<Option<tonic::transport::ServerTlsConfig>, ServeError> {
    let (Some(cert), Some(key)) = (&config.server.tls_cert, &config.server.tls_key) else { return Ok(None) };
    let read = |key: &'static str, path: &Path| std::fs::read(path).map_err(|source| ServeError::TlsFile { key, path: path.display().to_string(), source });
    let identity = tonic::transport::Identity::from_pem(read("server.tls_cert", cert)?, read("server.tls_key", key)?);
    Ok(Some(tonic::transport::ServerTlsConfig::new().identity(identity)))
}

/// Where supervised workers find the core. Under TLS they dial `localhost` when the core
/// listens on a loopback or wildcard address (the certificate must name it), else the
/// address itself.
fn contact(addr: SocketAddr, token: String, ca: Option<String>) -> CoreContact {
    let host = match (&ca, addr.ip()) {
        (Some(_), ip) if ip.is_loopback() || ip.is_unspecified() => format!("localhost:{}", addr.port()),
        _ => addr.to_string(),
    };
    CoreContact { addr: host, token, ca }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Re-reads the config on every SIGHUP; an invalid file is logged and the running
/// config stays.
async fn reload_on_sighup(path: std::path::PathBuf, supervisor: Supervisor) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot install the SIGHUP handler: reloads are off");
        return;
    };
    while hup.recv().await.is_some() {
        match Config::load(&path) {
            Ok(config) => {
                tracing::info!(path = %path.display(), "SIGHUP: configuration reloaded");
                supervisor.reload(config).await;
            }
            Err(e) => tracing::error!(error = %e, "SIGHUP: the new configuration is invalid; keeping the running one"),
        }
    }
}

/// Resolves on SIGTERM or SIGINT. The handlers are installed when this is called, not
/// when the future is first polled: a SIGTERM right after start-up (after READY=1, say)
/// drains instead of killing the process.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()));
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            tracing::error!("cannot install signal handlers; stop with SIGKILL");
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = int.recv() => tracing::info!("SIGINT: shutting down"),
        }
    }
}
