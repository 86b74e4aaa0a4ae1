//! The store file's page-cache hints (src/store/file.rs), on the real redb file in a
//! temp dir: small durable commits into pages a large write went through cost the
//! disk about what they write. Without the hints, on this machine's kernel, each 4 KiB
//! page written into a large folio made by the large write dirtied the whole folio
//! (hundreds of KiB per page). Alone in its test binary: it reads /proc/self/io.
use telha::store::tables::JOB_TEXT;
use telha::store::Store;

fn write_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines().find_map(|l| l.strip_prefix("write_bytes: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_commits_after_a_large_write_cost_what_they_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 16).unwrap();
    // A 16 MiB value, then its deletion: its pages are free for the small commits to reuse.
    let big = vec![7u8; 16 << 20];
    store.write(move |t| Ok(t.txn.open_table(JOB_TEXT)?.insert((1, 0), big.as_slice()).map(|_| ())?)).await.unwrap();
    store.write(|t| Ok(t.txn.open_table(JOB_TEXT)?.remove((1, 0)).map(|_| ())?)).await.unwrap();
    let commits = 300u64;
    let before = write_bytes();
    for i in 0..commits {
        // Scattered keys, small values: a few pages per commit.
        let key = (i * 7919) % 1000 + 10;
        store.write(move |t| Ok(t.txn.open_table(JOB_TEXT)?.insert((key, 0), [1u8; 200].as_slice()).map(|_| ())?)).await.unwrap();
    }
    let per_commit = (write_bytes() - before) / commits;
    store.close().await;
    // redb's floor is 32-40 KiB per durable commit here; unhinted, this measured MiBs.
    assert!(per_commit < 256 << 10, "{} KiB written per small commit", per_commit >> 10);
}
