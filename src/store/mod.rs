//! Durable state: the redb database (jobs, ready index, leases, failures, dead
//! letters, submissions), content-addressed blobs, and the group-commit writer that
//! every state change goes through.
//!
//! A state change is a closure run inside a write transaction on the writer thread
//! ([`Store::write`]). Many changes share one durable commit; each caller's future
//! resolves only after the commit that contains its change, so a reply always
//! reports committed state.

pub mod blobs;
pub mod edges;
mod file;
pub mod jobs;
pub mod records;
pub mod state;
pub mod tables;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use redb::{Database, ReadableDatabase};

use tokio::sync::{broadcast, mpsc, oneshot};

pub use blobs::BlobStore;
pub use writer::Tx;

/// Errors of the storage layer. Logical outcomes (a fenced submission, a job in the
/// wrong state) are not errors here: they are values of the operation's result.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("storage: {0}")]
    Redb(#[from] redb::Error),
    #[error("blob i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("stored record is corrupt: {0}")]
    Corrupt(String),
    #[error("the data dir {0} is in use by another telha process (a running `telha serve`?); stop it or use another data_dir")]
    InUse(PathBuf),
    #[error("the batch this change was part of was not committed: {0}")]
    BatchAborted(String),
    #[error("the store writer dropped the change (see the log)")]
    WriterGone,
    /// A change panicked (a bug met by some input): it was not applied, nor was its batch.
    #[error("internal error while storing (nothing of it was kept): {0}")]
    Panicked(String),
    #[error("the store is closed")]
    Closed,
    #[error("the data dir was written by a newer telha (store layout {found}; this binary knows up to {known}): run that version, or use another data_dir")]
    Layout { found: u64, known: u64 },
}

macro_rules! redb_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self { Self::Redb(e.into()) }
        }
    )*};
}
redb_error_from!(redb::StorageError, redb::TableError, redb::TransactionError, redb::CommitError, redb::DatabaseError, redb::SetDurabilityError);

impl From<prost::DecodeError> for StoreError {
    fn from(e: prost::DecodeError) -> Self {
        Self::Corrupt(e.to_string())
    }
}

pub use crate::config::DEFAULT_CACHE_BYTES;

/// The store: cheap to clone, shared by the actors and the RPC handlers.
#[derive(Clone)]
pub struct Store {
    /// Taken out by [`Store::close`], so the file closes even while handles remain; a
    /// std RwLock: held only to clone the Arc, never across an await.
    db: Arc<RwLock<Option<Arc<Database>>>>,
    /// The writer thread, joined by [`Store::close`].
    writer: Arc<Mutex<Option<std::thread::JoinHandle<()>>>>,
    blobs: BlobStore,
    /// Bounded: when the disk falls behind, callers wait here instead of queueing
    /// unbounded work in memory.
    ops: mpsc::Sender<writer::Op>,
    /// Job ids whose record changed, published after each commit (for WatchJob).
    changes: broadcast::Sender<u64>,
    /// Told each commit's size and duration (metrics); set at most once.
    commits: Arc<std::sync::OnceLock<writer::CommitObserver>>,
}

impl Store {
    /// Opens (or creates) `<data_dir>/telha.redb` and the blob folder, and starts the writer thread.
    pub fn open(data_dir: &Path, max_batch: usize) -> Result<Self, StoreError> {
        Self::open_with_cache(data_dir, max_batch, DEFAULT_CACHE_BYTES)
    }

    /// As [`Store::open`], with redb's page cache (read cache and write buffer
    /// together) bounded to `cache_bytes`: the server's resident memory stays within
    /// it however much is staged or committed (`[store] cache_mb`).
    pub fn open_with_cache(data_dir: &Path, max_batch: usize, cache_bytes: usize) -> Result<Self, StoreError> {
        Self::open_with(data_dir, max_batch, cache_bytes, edges::DEFAULT_MERGE_ROWS)
    }

    /// As [`Store::open_with_cache`], with the writer merging staged reverse edges once
    /// `merge_rows` are staged (`[store] merge_rows`; 0: after every commit).
    pub fn open_with(data_dir: &Path, max_batch: usize, cache_bytes: usize, merge_rows: u64) -> Result<Self, StoreError> {
        std::fs::create_dir_all(data_dir)?;
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(data_dir.join("telha.redb"))?;
        let opened = file::HintedFile::new(file).and_then(|backend| redb::Builder::new().set_cache_size(cache_bytes).create_with_backend(backend));
        let db = match opened {
            Ok(db) => Arc::new(db),
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => return Err(StoreError::InUse(data_dir.to_path_buf())),
            Err(e) => return Err(e.into()),
        };
        {
            // Create every table up front so read transactions never meet a missing one.
            // An older layout is migrated first, in the same commit.
            let txn = db.begin_write()?;
            edges::migrate(&txn)?;
            tables::create_all(&txn)?;
            txn.commit()?;
        }
        let blobs = BlobStore::open(&data_dir.join("blobs"))?;
        let (changes, _) = broadcast::channel(4096);
        let commits = Arc::new(std::sync::OnceLock::new());
        let (ops, thread) = writer::spawn(db.clone(), max_batch, merge_rows, changes.clone(), commits.clone())?;
        Ok(Self { db: Arc::new(RwLock::new(Some(db))), writer: Arc::new(Mutex::new(Some(thread))), blobs, ops, changes, commits })
    }

    /// Runs `f` inside a write transaction shared with other concurrent changes, and
    /// resolves after the durable commit. `f` must check before it writes: an `Err`
    /// from `f` (storage failure) aborts the whole batch.
    pub async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.ops.send(writer::op(f, reply)).await.map_err(|_| StoreError::WriterGone)?;
        rx.await.map_err(|_| StoreError::WriterGone)?
    }

    /// A consistent snapshot for reads.
    pub fn read(&self) -> Result<redb::ReadTransaction, StoreError> {
        let db = match self.db.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        Ok(db.ok_or(StoreError::Closed)?.begin_read()?)
    }

    /// Stops the writer after the changes already sent (each is committed and answered),
    /// joins its thread, and closes the database file: a later [`Store::open`] of the same
    /// data dir, in this process or another, succeeds. Writes and reads after it fail
    /// with [`StoreError::WriterGone`] or [`StoreError::Closed`].
    pub async fn close(&self) {
        let _ = self.ops.send(writer::stop()).await;
        let thread = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(t) = thread {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
        let db = match self.db.write() {
            Ok(mut g) => g.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        // A read transaction still open elsewhere holds the file until it ends; none
        // outlives the server, so this is the last handle in practice.
        drop(db);
        tracing::debug!("store closed");
    }

    pub fn blobs(&self) -> &BlobStore {
        &self.blobs
    }

    /// Has the writer call `observer(changes, duration)` after every durable commit
    /// (the metrics' hook). Only the first observer set is kept.
    pub fn observe_commits(&self, observer: writer::CommitObserver) {
        let _ = self.commits.set(observer);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<u64> {
        self.changes.subscribe()
    }

    pub fn blob_path(&self, hash: &str) -> Option<PathBuf> {
        self.blobs.path_of(hash)
    }
}
