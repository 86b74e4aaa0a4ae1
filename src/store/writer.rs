//! The group-commit writer: one dedicated thread owns every write transaction.
//! It takes the first waiting change, then every change that queued up meanwhile
//! (up to `max_batch`), applies them in one transaction and commits once, durably.
//! Under load, many changes share each fsync; when idle, a lone change commits at once.
//!
//! A change that panics (a bug of ours, met by some input) fails alone: its caller gets
//! [`StoreError::Panicked`], the batch it was in is aborted (the others hear why and
//! may try again), and the writer goes on. Should the writer itself die (a panic
//! inside redb's commit), the process exits at once rather than serve on without a
//! store: every later change would wait forever.
use std::cell::{RefCell, RefMut};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use redb::{Database, Durability, Key, Table, TableDefinition, TableHandle, Value, WriteTransaction};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::{tables, StoreError};

/// A change's view of the shared transaction: the transaction itself, and the tables of
/// the job state machine, which every change of a batch shares open.
pub struct Tx<'a, 't> {
    pub txn: &'t WriteTransaction,
    open: &'a Open<'t>,
}

/// The job state machine's tables (and the submissions and counters), each opened by the first change of a batch that uses
/// it and closed once before the commit: opening and closing a redb table for every
/// access was a quarter of the writer's time (bench/dispatch, perf). Every write-path
/// access to them goes through [`Tx`]; opening one of them directly in a batch that holds
/// it open is refused by redb (`TableAlreadyOpen`), which fails that batch, never
/// corrupts it.
#[derive(Default)]
pub(super) struct Open<'t> {
    changed: RefCell<Vec<u64>>,
    jobs: RefCell<Option<Records<'t>>>,
    leases: RefCell<Option<Records<'t>>>,
    counts: RefCell<Option<Counts<'t>>>,
    ready: RefCell<Option<Ready<'t>>>,
    submissions: RefCell<Option<Submissions<'t>>>,
    meta: RefCell<Option<Meta<'t>>>,
}

/// A table of encoded records by job id ([`tables::JOBS`], [`tables::LEASES`]).
pub type Records<'t> = Table<'t, u64, &'static [u8]>;
/// [`tables::COUNTS`]: jobs by (format, state code).
pub type Counts<'t> = Table<'t, (&'static str, u8), u64>;
/// [`tables::READY`]: (format, tenant, job id).
pub type Ready<'t> = Table<'t, (&'static str, &'static str, u64), ()>;
/// [`tables::SUBMISSIONS`]: by (job, lease number, seq).
pub type Submissions<'t> = Table<'t, (u64, u64, u32), &'static [u8]>;
/// [`tables::META`]: counters by name.
pub type Meta<'t> = Table<'t, &'static str, u64>;

/// A shared table of the batch, opened on first use. A second borrow of the same table
/// while one is held is a bug of ours: a typed error, which aborts the batch.
fn shared<'s, 't, K: Key + 'static, V: Value + 'static>(txn: &'t WriteTransaction, cell: &'s RefCell<Option<Table<'t, K, V>>>, def: TableDefinition<'static, K, V>) -> Result<RefMut<'s, Table<'t, K, V>>, StoreError> {
    let mut slot = cell.try_borrow_mut().map_err(|_| StoreError::Corrupt(format!("table {} borrowed twice at once", def.name())))?;
    if slot.is_none() {
        *slot = Some(txn.open_table(def)?);
    }
    RefMut::filter_map(slot, Option::as_mut).map_err(|_| StoreError::Corrupt(format!("table {} did not open", def.name())))
}

impl<'t> Tx<'_, 't> {
    /// Records that job `id` changed, so watchers hear of it after the commit.
    pub fn touched(&self, id: u64) {
        self.open.changed.borrow_mut().push(id);
    }

    /// [`tables::JOBS`], open for the batch.
    pub fn jobs(&self) -> Result<RefMut<'_, Records<'t>>, StoreError> {
        shared(self.txn, &self.open.jobs, tables::JOBS)
    }

    /// [`tables::LEASES`], open for the batch.
    pub fn leases(&self) -> Result<RefMut<'_, Records<'t>>, StoreError> {
        shared(self.txn, &self.open.leases, tables::LEASES)
    }

    /// [`tables::COUNTS`], open for the batch.
    pub fn counts(&self) -> Result<RefMut<'_, Counts<'t>>, StoreError> {
        shared(self.txn, &self.open.counts, tables::COUNTS)
    }

    /// [`tables::READY`], open for the batch.
    pub fn ready(&self) -> Result<RefMut<'_, Ready<'t>>, StoreError> {
        shared(self.txn, &self.open.ready, tables::READY)
    }

    /// [`tables::SUBMISSIONS`], open for the batch.
    pub fn submissions(&self) -> Result<RefMut<'_, Submissions<'t>>, StoreError> {
        shared(self.txn, &self.open.submissions, tables::SUBMISSIONS)
    }

    /// [`tables::META`], open for the batch.
    pub fn meta(&self) -> Result<RefMut<'_, Meta<'t>>, StoreError> {
        shared(self.txn, &self.open.meta, tables::META)
    }
}

/// Told (changes in the batch, time from begin to durable commit) after each commit.
pub type CommitObserver = Box<dyn Fn(usize, std::time::Duration) + Send + Sync>;

/// Called with the commit's outcome, after the commit.
type Finish = Box<dyn FnOnce(Result<(), String>) + Send>;
/// A change: applies itself, says whether storage failed, and leaves a finisher.
type Change = Box<dyn FnOnce(&mut Tx<'_, '_>) -> (Option<String>, Finish) + Send>;

/// What the writer thread receives: a change, or the request to stop after the
/// changes before it.
pub(super) enum Op {
    Change(Change),
    Stop,
}

pub(super) fn stop() -> Op {
    Op::Stop
}

pub(super) fn op<T, F>(f: F, reply: oneshot::Sender<Result<T, StoreError>>) -> Op
where
    T: Send + 'static,
    F: FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError> + Send + 'static,
{
    Op::Change(Box::new(move |tx| match catch_unwind(AssertUnwindSafe(|| f(tx))).unwrap_or_else(|panic| Err(StoreError::Panicked(panic_message(panic.as_ref())))) {
        Ok(value) => (
            None,
            Box::new(move |commit: Result<(), String>| {
                let _ = reply.send(commit.map(|()| value).map_err(StoreError::BatchAborted));
            }),
        ),
        Err(e) => {
            let msg = e.to_string();
            (Some(msg), Box::new(move |_| {
                let _ = reply.send(Err(e));
            }))
        }
    }))
}

/// What a caught panic said (`panic!` with a literal or a formatted message), or a
/// placeholder.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic.downcast_ref::<&str>().map(|s| (*s).to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_else(|| "a panic without a message".into())
}

/// Exit status of a process whose store writer died: EX_SOFTWARE (sysexits.h), an
/// internal error; a supervisor (systemd's Restart=on-failure) starts it again, and the
/// store recovers its last commit.
const WRITER_DIED: i32 = 70;

/// Starts the writer thread; returns its inbox and its handle (joined at close). The
/// thread owns a handle to the database until it stops.
pub(super) fn spawn(db: Arc<Database>, max_batch: usize, merge_rows: u64, changes: broadcast::Sender<u64>, observer: Arc<std::sync::OnceLock<CommitObserver>>) -> Result<(mpsc::Sender<Op>, std::thread::JoinHandle<()>), StoreError> {
    let (tx, rx) = mpsc::channel::<Op>(max_batch.max(64) * 2);
    let thread = std::thread::Builder::new()
        .name("telha-store-writer".into())
        .spawn(move || {
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(db, rx, max_batch, merge_rows, &changes, &observer))) {
                tracing::error!(panic = %panic_message(panic.as_ref()), "the store writer died; exiting (the store keeps its last commit)");
                std::process::exit(WRITER_DIED);
            }
        })?;
    Ok((tx, thread))
}

fn run(db: Arc<Database>, mut rx: mpsc::Receiver<Op>, max_batch: usize, merge_rows: u64, changes: &broadcast::Sender<u64>, observer: &std::sync::OnceLock<CommitObserver>) {
    let mut batch: Vec<Change> = Vec::with_capacity(max_batch);
    let mut stop = false;
    while !stop {
        match rx.blocking_recv() {
            Some(Op::Change(first)) => batch.push(first),
            Some(Op::Stop) | None => break,
        }
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(Op::Change(op)) => batch.push(op),
                Ok(Op::Stop) => {
                    stop = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let (n, started) = (batch.len(), std::time::Instant::now());
        if commit_batch(&db, &mut batch, changes) {
            if let Some(observe) = observer.get() {
                observe(n, started.elapsed());
            }
        }
        merge_staged(&db, merge_rows);
    }
    // A store closed cleanly has nothing staged.
    merge_staged(&db, 0);
    // Changes sent after the stop are dropped unanswered: their callers get WriterGone.
    rx.close();
    tracing::debug!("store writer stopped");
}

/// Moves the staged reverse edges into the merged index once `threshold` rows are
/// staged (any, with 0), in a commit of its own after the batch's callers were
/// answered. A failure is logged: the rows stay staged and readers still see them.
fn merge_staged(db: &Database, threshold: u64) {
    let started = std::time::Instant::now();
    match super::edges::merge_if_due(db, threshold) {
        Ok(Some(rows)) => tracing::debug!(rows, ms = started.elapsed().as_millis() as u64, "staged reverse edges merged"),
        Ok(None) => {}
        Err(e) => tracing::error!(error = %e, "merging the staged reverse edges failed; they stay staged"),
    }
}

/// Applies and commits one batch; true when it committed.
fn commit_batch(db: &Database, batch: &mut Vec<Change>, changes: &broadcast::Sender<u64>) -> bool {
    let n = batch.len();
    let mut txn = match db.begin_write() {
        Ok(t) => t,
        Err(e) => {
            fail_all(batch, &e.to_string());
            return false;
        }
    };
    if let Err(e) = txn.set_durability(Durability::Immediate) {
        fail_all(batch, &e.to_string());
        return false;
    }
    let started = std::time::Instant::now();
    let mut finishers: Vec<Finish> = Vec::with_capacity(n);
    let mut aborted: Option<String> = None;
    let open = Open::default();
    // After a storage failure the remaining changes still run (into a transaction that
    // will be aborted), so that each of them is answered with the abort's reason.
    for op in batch.drain(..) {
        let mut tx = Tx { txn: &txn, open: &open };
        let (err, finish) = op(&mut tx);
        if aborted.is_none() {
            aborted = err;
        }
        finishers.push(finish);
    }
    let mut changed = open.changed.take();
    // The shared tables close here, before the commit.
    drop(open);
    let applied = started.elapsed();
    let outcome = match aborted {
        Some(reason) => {
            tracing::error!(%reason, ops = n, "store batch aborted");
            let _ = txn.abort();
            Err(reason)
        }
        None => txn.commit().map_err(|e| {
            tracing::error!(error = %e, ops = n, "store commit failed");
            e.to_string()
        }),
    };
    tracing::trace!(ops = n, apply_us = applied.as_micros() as u64, commit_us = (started.elapsed() - applied).as_micros() as u64, "store batch");
    let committed = outcome.is_ok();
    if committed {
        changed.sort_unstable();
        changed.dedup();
        for id in changed {
            let _ = changes.send(id);
        }
    }
    for finish in finishers {
        finish(outcome.clone());
    }
    committed
}

fn fail_all(batch: &mut Vec<Change>, reason: &str) {
    tracing::error!(%reason, ops = batch.len(), "cannot begin a write transaction");
    // Without a transaction the changes cannot run; dropping them drops their reply
    // senders, and each caller gets `StoreError::WriterGone`.
    batch.clear();
}
