//! The store writer survives a change that panics: the change fails alone with a typed
//! error, the batch it shared is not committed (its other changes hear why), and the
//! next changes commit as before. The queue depths it keeps per batch match the job
//! records. Real redb file in a temp dir.
use std::collections::BTreeMap;
use std::time::Duration;

use telha::store::jobs::{self, ListFilter, NewJob, Policy};
use telha::store::tables::JOB_TEXT;
use telha::store::{Store, StoreError, Tx};

/// Starts change `f` on a task of its own, so that a test can queue several at once.
fn spawn_write<T, F>(store: &Store, f: F) -> tokio::task::JoinHandle<Result<T, StoreError>>
where
    T: Send + 'static,
    F: FnOnce(&mut Tx<'_, '_>) -> Result<T, StoreError> + Send + 'static,
{
    let store = store.clone();
    tokio::spawn(async move { store.write(f).await })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_change_fails_alone_and_the_writer_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64).unwrap();

    // While a slow change holds the writer, two more queue up: they share the next batch.
    let slow = spawn_write(&store, |t| {
        std::thread::sleep(Duration::from_millis(200));
        Ok(t.txn.open_table(JOB_TEXT)?.insert((1, 0), b"before".as_slice()).map(|_| ())?)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let panicking = spawn_write(&store, |t| {
        t.txn.open_table(JOB_TEXT)?.insert((2, 0), b"half-done".as_slice())?;
        panic!("a bug met by some input");
        #[allow(unreachable_code)]
        Ok(())
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let neighbour = spawn_write(&store, |t| Ok(t.txn.open_table(JOB_TEXT)?.insert((3, 0), b"neighbour".as_slice()).map(|_| ())?));

    slow.await.unwrap().unwrap();
    match panicking.await.unwrap() {
        Err(StoreError::Panicked(msg)) => assert!(msg.contains("a bug met by some input"), "{msg}"),
        other => panic!("expected Panicked, got {other:?}"),
    }
    match neighbour.await.unwrap() {
        Err(StoreError::BatchAborted(reason)) => assert!(reason.contains("a bug met by some input"), "{reason}"),
        other => panic!("expected BatchAborted, got {other:?}"),
    }

    // The writer is alive: a later change commits, and nothing of the aborted batch was kept.
    store.write(|t| Ok(t.txn.open_table(JOB_TEXT)?.insert((4, 0), b"after".as_slice()).map(|_| ())?)).await.unwrap();
    let txn = store.read().unwrap();
    let table = txn.open_table(JOB_TEXT).unwrap();
    let get = |k: u64| table.get((k, 0)).unwrap().map(|v| v.value().to_vec());
    assert_eq!(get(1), Some(b"before".to_vec()));
    assert_eq!(get(2), None);
    assert_eq!(get(3), None);
    assert_eq!(get(4), Some(b"after".to_vec()));
    drop(table);
    drop(txn);
    store.close().await;
}

/// (format, state) → jobs, as the job records say.
fn scanned(store: &Store) -> BTreeMap<(String, String), u64> {
    let (views, more) = jobs::list(&store.read().unwrap(), &ListFilter::default(), 0, 100_000).unwrap();
    assert!(more.is_none());
    let mut out = BTreeMap::new();
    for v in views {
        *out.entry((v.job.format.clone(), jobs::state_of(&v.job).unwrap().as_str().to_string())).or_insert(0) += 1;
    }
    out
}

fn depths(store: &Store) -> BTreeMap<(String, String), u64> {
    jobs::depths(&store.read().unwrap()).unwrap().into_iter().map(|(f, s, n)| ((f, s.as_str().to_string()), n)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_depths_kept_per_batch_match_the_job_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64).unwrap();
    let policy = std::sync::Arc::new(Policy { max_attempts: 3, backoff_base_ms: 10, backoff_max_ms: 100, retry_after_max_ms: 1000, lease_us: 60_000_000, permanent: Vec::new() });

    // Many changes at once, so that batches hold several transitions of one job and of
    // both formats: enqueue, lease, cancel.
    let mut tasks = Vec::new();
    for i in 0..200u64 {
        let (store, policy) = (store.clone(), policy.clone());
        tasks.push(tokio::spawn(async move {
            let format = if i % 3 == 0 { "pdf" } else { "txt" };
            let new = NewJob { tenant: "t".into(), format: format.into(), name: format!("job-{i}"), ..Default::default() };
            let id = store.write(move |t| Ok(jobs::insert(t, new, 1)?.id)).await.unwrap();
            if i % 2 == 0 {
                let policy = policy.clone();
                store.write(move |t| jobs::lease(t, id, "w", &policy, 2)).await.unwrap().expect("leased");
            }
            if i % 5 == 0 {
                store.write(move |t| Ok(jobs::cancel(t, id, None, 3)?.is_ok())).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let want = scanned(&store);
    assert_eq!(want.values().sum::<u64>(), 200);
    assert_eq!(want.get(&("txt".to_string(), "cancelled".to_string())), Some(&26), "{want:?}");
    assert_eq!(depths(&store), want);

    // A batch that aborts keeps none of its count changes.
    let slow = spawn_write(&store, |_| {
        std::thread::sleep(Duration::from_millis(200));
        Ok(())
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let inserted = spawn_write(&store, |t| Ok(jobs::insert(t, NewJob { tenant: "t".into(), format: "pdf".into(), name: "lost".into(), ..Default::default() }, 4)?.id));
    tokio::time::sleep(Duration::from_millis(20)).await;
    let failing = spawn_write(&store, |_| -> Result<(), StoreError> { Err(StoreError::Corrupt("a failing change".into())) });
    slow.await.unwrap().unwrap();
    assert!(matches!(failing.await.unwrap(), Err(StoreError::Corrupt(_))));
    assert!(matches!(inserted.await.unwrap(), Err(StoreError::BatchAborted(_))));
    assert_eq!(depths(&store), want);
    store.close().await;
}
