//! `telha::server::serve` in-process: it returns only once everything it started has
//! stopped and the data dir is free again.
use std::time::Duration;

use telha::proto::submit_job_request::Part;
use telha::proto::*;

/// `serve` returns after its actors stopped, the writer thread joined and the redb file
/// closed: the same data dir opens again in the same process at once, with what the
/// first run committed (a second `serve` on it works too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_returns_with_the_data_dir_closed() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"data\"\nshutdown_grace_secs = 0.5\n";
    let config = telha::config::Config::parse(text, &dir.path().join("supervisor.toml")).unwrap();
    for round in 0..2 {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
        let serving = tokio::spawn(telha::server::serve(config.clone(), async move { let _ = stop_rx.await; }, move |b| {
            let _ = addr_tx.send(b.addr);
        }));
        let addr = tokio::time::timeout(Duration::from_secs(20), addr_rx).await.expect("bound").unwrap();
        let token = std::fs::read_to_string(dir.path().join("data/token")).unwrap();
        let mut client = telha::cli::Client::at(&addr.to_string(), token.trim()).await.unwrap();
        let header = SubmitHeader { tenant_id: "t".into(), format: "txt".into(), name: format!("round{round}.txt"), ..Default::default() };
        let msgs = vec![SubmitJobRequest { part: Some(Part::Header(header)) }, SubmitJobRequest { part: Some(Part::Chunk(b"x".to_vec())) }];
        let job = client.ingest.submit_job(tokio_stream::iter(msgs)).await.unwrap().into_inner();
        drop(client);
        let _ = stop_tx.send(());
        tokio::time::timeout(Duration::from_secs(20), serving).await.expect("serve returned").unwrap().expect("serve ok");
        let store = telha::store::Store::open(&dir.path().join("data"), 16).expect("the data dir opens again");
        let found = telha::store::jobs::get(&store.read().unwrap(), job.id.parse().unwrap()).unwrap();
        assert!(found.is_some(), "round {round}: the job committed before the stop is there");
        store.close().await;
    }
}
