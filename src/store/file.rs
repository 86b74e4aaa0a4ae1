//! The redb file, opened so that a commit's small writes cost the disk what they say.
//!
//! Measured here (Linux 6.18, ext4): the page cache keeps file data in large folios
//! (made by readahead, or by a large write), and a 4 KiB write into one dirties, and
//! gets written back as, the whole folio. redb writes a commit as many 4 KiB pages
//! scattered over the file, so each durable commit wrote up to hundreds of times its
//! bytes: a 300-file code archive through `telha run` passed 68 MB to pwrite and
//! wrote 1.2 GB (/proc/<pid>/io write_bytes). Two hints stop it: no readahead on the
//! file (POSIX_FADV_RANDOM: redb reads a page at a time into its own cache anyway),
//! and, after each sync, the ranges just written are dropped from the page cache
//! (POSIX_FADV_DONTNEED: they are clean by then), so that no large folio made by a
//! large write lingers for later small writes to dirty.
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::os::fd::AsRawFd;
use std::sync::Mutex;

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// A [`FileBackend`] with the page-cache hints above.
#[derive(Debug)]
pub struct HintedFile {
    inner: FileBackend,
    fd: i32,
    /// Byte ranges written since the last sync, as (start, end), merged when adjacent.
    written: Mutex<Vec<(u64, u64)>>,
}

impl HintedFile {
    pub fn new(file: File) -> Result<Self, redb::DatabaseError> {
        let fd = file.as_raw_fd();
        advise(fd, 0, 0, libc::POSIX_FADV_RANDOM);
        Ok(Self { inner: FileBackend::new(file)?, fd, written: Mutex::new(Vec::new()) })
    }
}

/// A hint only: its failure changes nothing but the cost, so it is logged and ignored.
fn advise(fd: i32, offset: u64, len: u64, advice: i32) {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else { return };
    // SAFETY: posix_fadvise reads no memory of ours; `fd` is the open file the backend owns.
    let rc = unsafe { libc::posix_fadvise(fd, offset, len, advice) };
    if rc != 0 {
        tracing::debug!(rc, advice, "posix_fadvise on the store file failed");
    }
}

impl StorageBackend for HintedFile {
    fn len(&self) -> Result<u64, io::Error> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        self.inner.sync_data()?;
        let ranges = match self.written.lock() {
            Ok(mut w) => std::mem::take(&mut *w),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for (start, end) in ranges {
            advise(self.fd, start, end - start, libc::POSIX_FADV_DONTNEED);
        }
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        self.inner.write(offset, data)?;
        let end = offset.saturating_add(data.len() as u64);
        let mut w = match self.written.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        match w.last_mut() {
            Some(last) if last.1 == offset => last.1 = end,
            _ => w.push((offset, end)),
        }
        Ok(())
    }

    fn close(&self) -> Result<(), io::Error> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}
