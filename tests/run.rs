//! `telha run`, the embedded one-shot mode, with the real example worker pool.
//! Needs the repository's .venv (`workers/setup-venv.sh`).
use std::process::Command;

/// A config in `dir` with a data dir beside it and `rest` (tables after `[server]`);
/// `{repo}` in `rest` becomes the repository root.
fn config_with(dir: &std::path::Path, rest: &str) -> std::path::PathBuf {
    let text = format!("[server]\nlisten = \"127.0.0.1:50051\"\ndata_dir = \"data\"\n{}", rest.replace("{repo}", env!("CARGO_MANIFEST_DIR")));
    let path = dir.join("supervisor.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The example worker pool, two attempts per job.
fn config(dir: &std::path::Path) -> std::path::PathBuf {
    config_with(
        dir,
        r#"
[jobs]
max_attempts = 2
backoff_base_ms = 10
backoff_max_ms = 20

[pools.text]
formats = ["txt", "text"]
workers = 2
command = ["{repo}/.venv/bin/python", "-m", "example_worker"]
"#,
    )
}

fn telha(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_telha")).args(args).output().unwrap()
}

/// The repository's supervisor.toml (every pool), pointed at a temp data dir.
fn repo_config(dir: &std::path::Path) -> std::path::PathBuf {
    let repo = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{repo}/supervisor.toml")).unwrap().replace("\".venv/bin/python\"", &format!("\"{repo}/.venv/bin/python\"")).replace("data_dir = \"./data\"", "data_dir = \"data\"");
    let path = dir.join("supervisor.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The bundled samples with the shipped pools (the README's first command): every
/// job, child jobs included, succeeds; the summary counts them; exit 0; the
/// configured listen port is not used (run picks a free one). A second run gives the
/// same submission hashes (determinism seen from outside).
#[test]
fn run_ingests_the_sample_corpus_and_summarises() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = repo_config(dir.path());
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples");
    let out = telha(&["--config", cfg.to_str().unwrap(), "run", "--json", samples]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = std::fs::read_dir(samples).unwrap().count();
    let jobs = doc["jobs"].as_array().unwrap();
    assert!(jobs.len() >= files, "{} jobs for {files} files", jobs.len());
    for j in jobs {
        assert_eq!(j["state"], "succeeded", "{j}");
        assert!(!j["submission_hash"].as_str().unwrap().is_empty());
    }
    let formats = doc["formats"].as_object().unwrap();
    for f in ["txt", "csv", "eml"] {
        assert!(formats[f]["succeeded"].as_u64().unwrap() >= 1, "{f}: {doc}");
        assert_eq!(formats[f]["dead"], 0);
    }
    let again: serde_json::Value = serde_json::from_slice(&telha(&["--config", cfg.to_str().unwrap(), "run", "--json", samples]).stdout).unwrap();
    let hashes = |d: &serde_json::Value| {
        let mut v: Vec<(String, String)> = d["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["name"].as_str().unwrap().starts_with('/'))
            .map(|j| (j["name"].as_str().unwrap().to_string(), j["submission_hash"].as_str().unwrap().to_string()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(hashes(&doc).len(), files);
    assert_eq!(hashes(&doc), hashes(&again));
}

/// A job that ends dead makes `run` exit non-zero and name it.
#[test]
fn run_fails_when_a_job_is_dead() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let bad = dir.path().join("bad.txt");
    // Binary bytes, not text in any encoding: the text pool fails it invalid_input.
    std::fs::write(&bad, b"\x7fELF\x02\x01\x01\x00\x00\x00 binary \x00\x03").unwrap();
    let good = dir.path().join("good.txt");
    std::fs::write(&good, "fine").unwrap();
    let out = telha(&["--config", cfg.to_str().unwrap(), "run", bad.to_str().unwrap(), good.to_str().unwrap()]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("dead: job") && text.contains("bad.txt") && text.contains("invalid_input"), "{text}");
}

/// An input whose format no pool serves is refused before anything starts.
#[test]
fn run_refuses_formats_without_a_pool() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let csv = dir.path().join("a.csv");
    std::fs::write(&csv, "a,b\n").unwrap();
    let out = telha(&["--config", cfg.to_str().unwrap(), "run", csv.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no pool") && err.contains("\"csv\""), "{err}");
}

/// Determinism seen from outside: the samples give the same submission hashes with
/// workers under different hash seeds, time zones and locales (set through each
/// pool's `env`; the supervisor gives workers a clean environment otherwise).
#[test]
fn samples_hash_the_same_across_hash_seeds_time_zones_and_locales() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/samples");
    let mut runs = Vec::new();
    for (seed, tz, locale) in [("1", "UTC", "C.UTF-8"), ("4242", "Asia/Kolkata", "C"), ("random", "America/St_Johns", "POSIX")] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = repo_config(dir.path());
        let mut doc: toml::Table = std::fs::read_to_string(&cfg).unwrap().parse().unwrap();
        for (_, pool) in doc["pools"].as_table_mut().unwrap().iter_mut() {
            let env = pool.as_table_mut().unwrap().entry("env").or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let env = env.as_table_mut().unwrap();
            env.insert("PYTHONHASHSEED".into(), seed.into());
            env.insert("TZ".into(), tz.into());
            env.insert("LC_ALL".into(), locale.into());
        }
        std::fs::write(&cfg, toml::to_string(&doc).unwrap()).unwrap();
        let out = telha(&["--config", cfg.to_str().unwrap(), "run", "--json", samples]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut hashes: Vec<(String, String)> = doc["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| (j["name"].as_str().unwrap().to_string(), j["submission_hash"].as_str().unwrap().to_string()))
            .collect();
        hashes.sort();
        runs.push(hashes);
    }
    assert!(runs[0].len() >= std::fs::read_dir(samples).unwrap().count());
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
}

/// A child job of a format nothing serves would keep `run` waiting forever: an email pool
/// alone gets a message with a .txt attachment; the run stops with an error naming the
/// format once only such jobs are left (and the message itself succeeded).
#[test]
fn run_stops_when_only_child_jobs_of_an_unserved_format_are_left() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config_with(
        dir.path(),
        r#"
[pools.email]
formats = ["eml", "msg"]
workers = 1
command = ["{repo}/.venv/bin/python", "-m", "email_worker"]
env = { EMAIL_ATTACHMENT_FORMATS = "txt,eml" }
"#,
    );
    let started = std::time::Instant::now();
    let out = telha(&["--config", cfg.to_str().unwrap(), "run", concat!(env!("CARGO_MANIFEST_DIR"), "/samples/kickoff-reply.eml")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("wait for formats no pool serves: txt"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
}
