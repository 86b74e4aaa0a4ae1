//! The supervisor: one pool actor per `[pools.NAME]`, SIGHUP reloads, and the SIGTERM
//! drain. It owns the pool actors; the process tools it and they use are in
//! [`crate::supervise`].
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc, oneshot};

use super::pool::{CoreContact, Pool, PoolStatus};
use super::{Core, CoreEvent};
use crate::config::Config;
use crate::store::jobs;
use crate::supervise::spawn::{self, Spawner};
use crate::time::now_us;

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error(transparent)]
    Command(#[from] spawn::SpawnError),
    #[error("cannot start the spawner thread: {0}")]
    Io(#[from] std::io::Error),
}

enum Msg {
    Reload { config: Box<Config>, reply: oneshot::Sender<()> },
    Drain { grace: Duration, reply: oneshot::Sender<()> },
    Status { reply: oneshot::Sender<Vec<PoolStatus>> },
    Shutdown { reply: oneshot::Sender<()> },
}

/// Handle to the supervisor actor, the root that owns the pool actors. Cheap to clone.
#[derive(Clone)]
pub struct Supervisor {
    /// Bounded: callers are the SIGHUP task, the shutdown path and status RPCs.
    tx: mpsc::Sender<Msg>,
}

impl Supervisor {
    /// Starts a pool actor per configured pool under a new supervisor actor. A pool whose
    /// command cannot start (missing, not executable) is an error naming the pool and the command.
    pub fn start(core: Core, contact: CoreContact) -> Result<Self, SupervisorError> {
        let actor = SupervisorActor::new(core, contact)?;
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(actor.run(rx));
        Ok(Self { tx })
    }

    async fn call<T>(&self, msg: impl FnOnce(oneshot::Sender<T>) -> Msg) -> Result<T, super::ActorGone> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(msg(reply)).await.map_err(|_| super::ActorGone("supervisor"))?;
        rx.await.map_err(|_| super::ActorGone("supervisor"))
    }

    /// Puts `config` in force (see [`SupervisorActor::reload`]).
    pub async fn reload(&self, config: Config) {
        let _ = self.call(|reply| Msg::Reload { config: Box::new(config), reply }).await;
    }

    /// The SIGTERM drain (see [`SupervisorActor::drain`]); resolves once the pools stopped.
    pub async fn drain(&self, grace: Duration) {
        let _ = self.call(|reply| Msg::Drain { grace, reply }).await;
    }

    pub async fn status(&self) -> Vec<PoolStatus> {
        self.call(|reply| Msg::Status { reply }).await.unwrap_or_default()
    }

    /// Stops the actor (after a drain, the pools it owned have stopped).
    pub async fn shutdown(&self) {
        let _ = self.call(|reply| Msg::Shutdown { reply }).await;
    }
}

/// Owns the pool actors; handles one message at a time, so a reload and a drain never
/// interleave.
struct SupervisorActor {
    core: Core,
    spawner: Spawner,
    contact: CoreContact,
    pools: BTreeMap<String, Pool>,
}

impl SupervisorActor {
    async fn run(mut self, mut rx: mpsc::Receiver<Msg>) {
        while let Some(msg) = rx.recv().await {
            match msg {
                Msg::Reload { config, reply } => {
                    self.reload(*config).await;
                    let _ = reply.send(());
                }
                Msg::Drain { grace, reply } => {
                    self.drain(grace).await;
                    let _ = reply.send(());
                }
                Msg::Status { reply } => {
                    // Asked of the pools on a task of its own: a slow pool does not hold the loop.
                    let pools: Vec<Pool> = self.pools.values().cloned().collect();
                    tokio::spawn(async move {
                        let mut out = Vec::new();
                        for p in pools {
                            if let Ok(s) = p.status().await {
                                out.push(s);
                            }
                        }
                        let _ = reply.send(out);
                    });
                }
                Msg::Shutdown { reply } => {
                    tracing::debug!("supervisor actor stopped");
                    let _ = reply.send(());
                    return;
                }
            }
        }
    }

    fn new(core: Core, contact: CoreContact) -> Result<Self, SupervisorError> {
        for (name, pool) in core.config().pools.iter() {
            spawn::check_command(name, &pool.command[0])?;
        }
        let spawner = Spawner::start()?;
        let mut pools = BTreeMap::new();
        for (name, pool) in core.config().pools.iter() {
            pools.insert(name.clone(), Pool::spawn(name.clone(), pool.clone(), core.clone(), spawner.clone(), contact.clone()));
        }
        if !pools.is_empty() {
            tracing::info!(pools = ?pools.keys().collect::<Vec<_>>(), "supervising");
        }
        Ok(Self { core, spawner, contact, pools })
    }

    /// Puts `config` in force: new pools start, changed pools resize (new limits
    /// apply to new processes), removed pools drain and stop.
    async fn reload(&mut self, config: Config) {
        let pools = &mut self.pools;
        self.core.set_config(config.clone());
        let removed: Vec<String> = pools.keys().filter(|k| !config.pools.contains_key(*k)).cloned().collect();
        for name in removed {
            if let Some(pool) = pools.remove(&name) {
                tracing::info!(pool = %name, "pool removed: draining");
                let grace = Duration::from_secs_f64(config.server.shutdown_grace_secs);
                tokio::spawn(async move { pool.stop(grace).await });
            }
        }
        for (name, pc) in &config.pools {
            if let Err(e) = spawn::check_command(name, &pc.command[0]) {
                tracing::error!(error = %e, "SIGHUP: keeping the running configuration of this pool");
                continue;
            }
            match pools.get(name) {
                Some(pool) => {
                    let _ = pool.reload(pc.clone()).await;
                }
                None => {
                    tracing::info!(pool = %name, "pool added");
                    pools.insert(name.clone(), Pool::spawn(name.clone(), pc.clone(), self.core.clone(), self.spawner.clone(), self.contact.clone()));
                }
            }
        }
    }

    /// SIGTERM drain: stop leasing, let in-flight jobs finish within `grace`, stop
    /// the workers, and put whatever is unfinished back in the queue without
    /// charging an attempt. The store is read once; from then on the wait is woken by
    /// lease events alone (a grant already on its way when leasing stopped adds its
    /// job, a lease's end removes it) and ends when none is held or at the deadline.
    async fn drain(&self, grace: Duration) {
        // Subscribed before leasing stops and before the look, so no event is missed.
        let mut events = self.core.events.subscribe();
        let _ = self.core.queue.set_leasing(false).await;
        let deadline = Instant::now() + grace;
        let mut held = self.leased().await;
        while !held.is_empty() {
            match tokio::time::timeout_at(deadline.into(), events.recv()).await {
                Ok(Ok(CoreEvent::Ended { job, .. })) => {
                    held.remove(&job);
                }
                Ok(Ok(CoreEvent::Granted { job, .. })) => {
                    held.insert(job);
                }
                Ok(Ok(_)) => {}
                // Events were missed: look again.
                Ok(Err(broadcast::error::RecvError::Lagged(_))) => held = self.leased().await,
                Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => break,
            }
        }
        tracing::info!(leased = held.len(), "drain: in-flight jobs settled or grace over; stopping workers");
        let pools: Vec<Pool> = self.pools.values().cloned().collect();
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(2));
        futures_util::future::join_all(pools.iter().map(|p| p.stop(left))).await;
        match self.core.store.write(|t| crate::lifecycle::release_all(t, now_us())).await {
            Ok(ids) if !ids.is_empty() => tracing::info!(jobs = ?ids, "drain: unfinished jobs back in the queue"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "drain: cannot release leases (they are released at the next start)"),
        }
    }

    /// The jobs leased now, read on the blocking pool.
    async fn leased(&self) -> BTreeSet<u64> {
        let store = self.core.store.clone();
        let ids = tokio::task::spawn_blocking(move || store.read().and_then(|t| jobs::leases(&t)).map(|l| l.into_iter().map(|l| l.0).collect()).unwrap_or_default());
        ids.await.unwrap_or_default()
    }
}
