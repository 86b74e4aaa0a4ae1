//! Content-addressed blobs: files under `<data_dir>/blobs/<2 hex>/<62 hex>`, named by
//! the blake3 of their bytes. Written streaming to a temporary file while hashing,
//! fsync'd, then renamed into place: a blob is never held whole in memory, and a
//! name that exists always has its full, durable content.
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct BlobStore {
    dir: PathBuf,
}

impl BlobStore {
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir.join("tmp"))?;
        // Temporary files of a previous run that crashed mid-write are garbage.
        for entry in std::fs::read_dir(dir.join("tmp"))? {
            let _ = std::fs::remove_file(entry?.path());
        }
        let store = Self { dir: dir.to_path_buf() };
        // The empty blob exists once, so empty content costs no file write per job.
        let (hash, _) = store.empty();
        if store.path_of(&hash).is_some_and(|p| !p.exists()) {
            store.writer()?.finish()?;
        }
        Ok(store)
    }

    /// The hash and size of empty content (its file exists once the store is open).
    pub fn empty(&self) -> (String, u64) {
        (blake3::hash(b"").to_hex().to_string(), 0)
    }

    /// Where the blob with this hex hash lives, if `hash` is a well-formed hash.
    pub fn path_of(&self, hash: &str) -> Option<PathBuf> {
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()) {
            return None;
        }
        Some(self.dir.join(&hash[..2]).join(&hash[2..]))
    }

    /// Stores many small contents at once (a submission's child jobs: an archive's files),
    /// durable when this returns, in two filesystem syncs instead of two fsyncs each:
    /// contents already stored (by hash) are not written again; the others go to
    /// temporary files, one `syncfs` makes their bytes durable, they are renamed into
    /// place, and a second `syncfs` makes the names durable. Returns (hex hash, size) per
    /// content, in order. Blocking I/O: call from a blocking context.
    pub fn put_all(&self, contents: &[&[u8]]) -> std::io::Result<Vec<(String, u64)>> {
        let mut out = Vec::with_capacity(contents.len());
        let mut pending: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for data in contents {
            let hash = blake3::hash(data).to_hex().to_string();
            let dest = self.path_of(&hash).ok_or_else(|| std::io::Error::other("bad hash"))?;
            out.push((hash.clone(), data.len() as u64));
            if dest.exists() || !seen.insert(hash) {
                continue;
            }
            let (tmp, mut file) = self.tmp_file()?;
            let written = file.write_all(data);
            pending.push((tmp, dest));
            if let Err(e) = written {
                self.discard(&pending);
                return Err(e);
            }
        }
        if pending.is_empty() {
            return Ok(out);
        }
        let synced = (|| {
            let dir = std::fs::File::open(&self.dir)?;
            nix::unistd::syncfs(&dir).map_err(std::io::Error::from)?;
            for (tmp, dest) in &pending {
                let parent = dest.parent().ok_or_else(|| std::io::Error::other("blob path has no parent"))?;
                std::fs::create_dir_all(parent)?;
                std::fs::rename(tmp, dest)?;
            }
            nix::unistd::syncfs(&dir).map_err(std::io::Error::from)
        })();
        if let Err(e) = synced {
            self.discard(&pending);
            return Err(e);
        }
        Ok(out)
    }

    /// A new, empty file under tmp, with a name no other writer takes.
    fn tmp_file(&self) -> std::io::Result<(PathBuf, std::fs::File)> {
        let tmp = self.dir.join("tmp").join(format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..)));
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        Ok((tmp, file))
    }

    /// Removes what a failed `put_all` left in tmp (renamed blobs stay: each is whole).
    fn discard(&self, pending: &[(PathBuf, PathBuf)]) {
        for (tmp, _) in pending {
            let _ = std::fs::remove_file(tmp);
        }
    }

    /// Starts a new blob. Blocking I/O: call from a blocking context.
    pub fn writer(&self) -> std::io::Result<BlobWriter> {
        let (tmp, file) = self.tmp_file()?;
        Ok(BlobWriter { store: self.clone(), tmp, file: std::io::BufWriter::with_capacity(1 << 16, file), hasher: blake3::Hasher::new(), size: 0 })
    }
}

/// A blob being written. Dropped without [`BlobWriter::finish`], it leaves nothing behind.
pub struct BlobWriter {
    store: BlobStore,
    tmp: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    hasher: blake3::Hasher,
    size: u64,
}

impl BlobWriter {
    pub fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.file.write_all(chunk)
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Makes the blob durable under its hash; returns (hex hash, size).
    pub fn finish(mut self) -> std::io::Result<(String, u64)> {
        self.file.flush()?;
        self.file.get_ref().sync_all()?;
        let hash = self.hasher.finalize().to_hex().to_string();
        let dest = self.store.path_of(&hash).ok_or_else(|| std::io::Error::other("bad hash"))?;
        let parent = dest.parent().ok_or_else(|| std::io::Error::other("blob path has no parent"))?;
        std::fs::create_dir_all(parent)?;
        if dest.exists() {
            // Same bytes already stored: keep the old file.
            std::fs::remove_file(&self.tmp)?;
        } else {
            std::fs::rename(&self.tmp, &dest)?;
            std::fs::File::open(parent)?.sync_all()?;
        }
        let size = self.size;
        self.tmp = PathBuf::new();
        Ok((hash, size))
    }
}

impl Drop for BlobWriter {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_contents_at_once_are_stored_by_hash_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let (old_hash, _) = {
            let mut w = store.writer().unwrap();
            w.write(b"already here").unwrap();
            w.finish().unwrap()
        };
        let contents: [&[u8]; 4] = [b"one", b"already here", b"one", b""];
        let stored = store.put_all(&contents).unwrap();
        assert_eq!(stored.len(), 4);
        assert_eq!(stored[0], stored[2]);
        assert_eq!(stored[1].0, old_hash);
        assert_eq!(stored[3], store.empty());
        for ((hash, size), data) in stored.iter().zip(contents) {
            assert_eq!(*size, data.len() as u64);
            assert_eq!(std::fs::read(store.path_of(hash).unwrap()).unwrap(), data);
        }
        // Nothing is left in tmp, and the batch equals one-at-a-time writing.
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
        let mut w = store.writer().unwrap();
        w.write(b"one").unwrap();
        assert_eq!(w.finish().unwrap(), stored[0]);
    }

    #[test]
    fn blobs_are_named_by_their_content_and_deduplicated() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let mut w = store.writer().unwrap();
        w.write(b"hello ").unwrap();
        w.write(b"world").unwrap();
        let (hash, size) = w.finish().unwrap();
        assert_eq!(hash, blake3::hash(b"hello world").to_hex().to_string());
        assert_eq!(size, 11);
        assert_eq!(std::fs::read(store.path_of(&hash).unwrap()).unwrap(), b"hello world");
        let mut again = store.writer().unwrap();
        again.write(b"hello world").unwrap();
        assert_eq!(again.finish().unwrap().0, hash);
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn an_abandoned_blob_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::open(dir.path()).unwrap();
        let mut w = store.writer().unwrap();
        w.write(b"partial").unwrap();
        drop(w);
        assert_eq!(std::fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
        assert!(store.path_of("../etc/passwd").is_none());
    }
}
