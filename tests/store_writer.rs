//! The store writer survives a change that panics: the change fails alone with a typed
//! error, the batch it shared is not committed (its other changes hear why), and the
//! next changes commit as before. Real redb file in a temp dir.
use std::time::Duration;

use telha::store::tables::JOB_TEXT;
use telha::store::{Store, StoreError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_change_fails_alone_and_the_writer_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 64).unwrap();

    // While a slow change holds the writer, two more queue up: they share the next batch.
    let slow = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .write(|t| {
                    std::thread::sleep(Duration::from_millis(200));
                    Ok(t.txn.open_table(JOB_TEXT)?.insert((1, 0), b"before".as_slice()).map(|_| ())?)
                })
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let panicking = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .write(|t| {
                    t.txn.open_table(JOB_TEXT)?.insert((2, 0), b"half-done".as_slice())?;
                    panic!("a bug met by some input");
                    #[allow(unreachable_code)]
                    Ok(())
                })
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let neighbour = tokio::spawn({
        let store = store.clone();
        async move { store.write(|t| Ok(t.txn.open_table(JOB_TEXT)?.insert((3, 0), b"neighbour".as_slice()).map(|_| ())?)).await }
    });

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
