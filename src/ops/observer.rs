//! Listens to the core's event broadcast and turns it into counters, histograms and the
//! status page's recent history (failures, worker exits, throughput per minute). It
//! never sends anything back: a slow observer only lags, and says so in a counter.
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::metrics::{kind_label, FailedLabels, FormatLabel, Metrics};
use crate::actors::CoreEvent;
use crate::time::now_us;

/// How many recent failures the status page keeps.
const RECENT_FAILURES: usize = 50;
/// How many minutes of throughput the status page shows.
const MINUTES: usize = 15;

/// A failed attempt, as the status page lists it (details are read from the store).
#[derive(Debug, Clone)]
pub struct FailureNote {
    pub job: u64,
    pub attempt: u64,
    pub format: String,
    pub kind: String,
    pub dead: bool,
    pub at_us: i64,
}

/// A worker process's last exit.
#[derive(Debug, Clone)]
pub struct ExitNote {
    pub worker: String,
    pub kind: Option<&'static str>,
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub at_us: i64,
}

/// One minute of outcomes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Minute {
    /// Minutes since the Unix epoch.
    pub minute: i64,
    pub succeeded: u64,
    pub failed: u64,
}

/// What the status page shows beyond the store and the supervisor's snapshot. Since
/// this process started: it is not stored.
#[derive(Debug, Default)]
pub struct Recent {
    pub failures: VecDeque<FailureNote>,
    /// Last exit per (pool, slot).
    pub exits: HashMap<(String, usize), ExitNote>,
    pub minutes: VecDeque<Minute>,
}

impl Recent {
    fn minute(&mut self, now_us: i64) -> &mut Minute {
        let m = now_us.div_euclid(60_000_000);
        if self.minutes.back().is_none_or(|b| b.minute != m) {
            self.minutes.push_back(Minute { minute: m, ..Default::default() });
            while self.minutes.len() > MINUTES {
                self.minutes.pop_front();
            }
        }
        // Just pushed when empty.
        self.minutes.back_mut().expect("a minute bucket")
    }

    /// The last `MINUTES` minutes up to `now_us`, oldest first, empty minutes included.
    pub fn throughput(&self, now_us: i64) -> Vec<Minute> {
        let now = now_us.div_euclid(60_000_000);
        (0..MINUTES as i64)
            .rev()
            .map(|back| {
                let minute = now - back;
                self.minutes.iter().find(|m| m.minute == minute).copied().unwrap_or(Minute { minute, ..Default::default() })
            })
            .collect()
    }
}

/// A lease the observer saw granted: what its end needs.
struct Open {
    format: String,
    since: Instant,
}

pub struct Observer {
    metrics: Arc<Metrics>,
    recent: Arc<Mutex<Recent>>,
    open: HashMap<u64, Open>,
}

impl Observer {
    pub fn new(metrics: Arc<Metrics>, recent: Arc<Mutex<Recent>>) -> Self {
        Self { metrics, recent, open: HashMap::new() }
    }

    /// Runs until the broadcast closes (the core stopped).
    pub async fn run(mut self, mut events: broadcast::Receiver<CoreEvent>) {
        loop {
            match events.recv().await {
                Ok(ev) => self.on(ev),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "metrics observer lagged behind the core's events");
                    self.metrics.events_lagged.inc_by(n);
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        match self.recent.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The format of an open lease ("unknown" if its grant was missed in a lag).
    fn format_of(&self, job: u64) -> String {
        self.open.get(&job).map_or_else(|| "unknown".to_string(), |o| o.format.clone())
    }

    /// A lease ended with an outcome: its run time.
    fn close(&mut self, job: u64) -> String {
        match self.open.remove(&job) {
            Some(o) => {
                self.metrics.run_time.get_or_create(&FormatLabel { format: o.format.clone() }).observe(o.since.elapsed().as_secs_f64());
                o.format
            }
            None => "unknown".into(),
        }
    }

    pub fn on(&mut self, ev: CoreEvent) {
        let m = self.metrics.clone();
        match ev {
            CoreEvent::Enqueued { format, .. } => {
                m.enqueued.get_or_create(&FormatLabel { format }).inc();
            }
            CoreEvent::Leased { job, format, waited_us, .. } => {
                if let Some(w) = waited_us {
                    m.queue_wait.get_or_create(&FormatLabel { format: format.clone() }).observe(Duration::from_micros(w.max(0) as u64).as_secs_f64());
                }
                self.open.insert(job, Open { format, since: Instant::now() });
            }
            CoreEvent::Submitted { job, partial, bytes, nodes } => {
                let format = FormatLabel { format: if partial { self.format_of(job) } else { self.close(job) } };
                m.submissions.get_or_create(&format).inc();
                m.submission_bytes.get_or_create(&format).inc_by(bytes as u64);
                m.nodes_applied.get_or_create(&format).inc_by(nodes as u64);
                if partial {
                    m.partials.get_or_create(&format).inc();
                } else {
                    m.succeeded.get_or_create(&format).inc();
                    self.recent().minute(now_us()).succeeded += 1;
                }
            }
            CoreEvent::Failed { job, attempt, kind, dead } => {
                let format = self.close(job);
                let kind = kind_label(&kind);
                m.failed.get_or_create(&FailedLabels { format: format.clone(), kind: kind.clone() }).inc();
                if dead {
                    m.dead.get_or_create(&FormatLabel { format: format.clone() }).inc();
                }
                let at_us = now_us();
                let mut r = self.recent();
                r.minute(at_us).failed += 1;
                r.failures.push_front(FailureNote { job, attempt, format, kind, dead, at_us });
                r.failures.truncate(RECENT_FAILURES);
            }
            CoreEvent::Ended { job, .. } => {
                // Released or cancelled: no outcome to count.
                self.open.remove(&job);
            }
            CoreEvent::Exited { pool, slot, worker, kind, code, signal } => {
                self.recent().exits.insert((pool, slot), ExitNote { worker, kind, code, signal, at_us: now_us() });
            }
            CoreEvent::Polling { .. } | CoreEvent::Granted { .. } => {}
        }
    }
}
