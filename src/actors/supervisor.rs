//! The supervisor: one pool actor per `[pools.NAME]`, SIGHUP reloads, and the SIGTERM
//! drain. It owns the pool actors; the process tools it and they use are in
//! [`crate::supervise`].
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, Mutex};

use super::pool::{CoreContact, Pool, PoolStatus};
use super::Core;
use crate::config::Config;
use crate::store::jobs;
use crate::store::state::JobState;
use crate::supervise::spawn::{self, Spawner};
use crate::time::now_us;

#[derive(Debug, thiserror::Error)]
pub enum SupervisorError {
    #[error(transparent)]
    Command(#[from] spawn::SpawnError),
    #[error("cannot start the spawner thread: {0}")]
    Io(#[from] std::io::Error),
}

pub struct Supervisor {
    core: Core,
    spawner: Spawner,
    contact: CoreContact,
    /// A tokio mutex: reload and drain hold it across awaits, and never run at once.
    pools: Mutex<BTreeMap<String, Pool>>,
}

impl Supervisor {
    /// Starts a pool actor per configured pool. A pool whose command cannot start
    /// (missing, not executable) is an error naming the pool and the command.
    pub fn start(core: Core, contact: CoreContact) -> Result<Self, SupervisorError> {
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
        Ok(Self { core, spawner, contact, pools: Mutex::new(pools) })
    }

    /// Puts `config` in force: new pools start, changed pools resize (new limits
    /// apply to new processes), removed pools drain and stop.
    pub async fn reload(&self, config: Config) {
        let mut pools = self.pools.lock().await;
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
    /// charging an attempt.
    pub async fn drain(&self, grace: Duration) {
        let _ = self.core.queue.set_leasing(false).await;
        let deadline = Instant::now() + grace;
        // Woken by lease-end events (subscribed before the first count, so none is missed).
        let mut events = self.core.events.subscribe();
        loop {
            let leased = self.leased_count().await;
            if leased == 0 || Instant::now() >= deadline {
                tracing::info!(leased, "drain: in-flight jobs settled or grace over; stopping workers");
                break;
            }
            loop {
                match tokio::time::timeout_at(deadline.into(), events.recv()).await {
                    Ok(Ok(super::CoreEvent::Ended { .. })) | Ok(Err(broadcast::error::RecvError::Lagged(_))) | Err(_) => break,
                    Ok(Ok(_)) => continue,
                    Ok(Err(broadcast::error::RecvError::Closed)) => break,
                }
            }
        }
        let pools: Vec<Pool> = self.pools.lock().await.values().cloned().collect();
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(2));
        futures_util::future::join_all(pools.iter().map(|p| p.stop(left))).await;
        match self.core.store.write(|t| crate::lifecycle::release_all(t, now_us())).await {
            Ok(ids) if !ids.is_empty() => tracing::info!(jobs = ?ids, "drain: unfinished jobs back in the queue"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "drain: cannot release leases (they are released at the next start)"),
        }
    }

    /// Jobs leased now, read on the blocking pool.
    async fn leased_count(&self) -> u64 {
        let store = self.core.store.clone();
        let count = tokio::task::spawn_blocking(move || {
            store.read().and_then(|t| jobs::depths(&t)).map(|d| d.iter().filter(|(_, s, _)| *s == JobState::Leased).map(|(_, _, n)| n).sum()).unwrap_or(0)
        });
        count.await.unwrap_or(0)
    }

    pub async fn status(&self) -> Vec<PoolStatus> {
        let pools: Vec<Pool> = self.pools.lock().await.values().cloned().collect();
        let mut out = Vec::new();
        for p in pools {
            if let Ok(s) = p.status().await {
                out.push(s);
            }
        }
        out
    }
}
