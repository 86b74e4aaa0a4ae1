//! The `telha` command line against a real server: the commands of DESIGN.md §7,
//! their `--json` documents, and errors a user can act on.
mod common;

use common::*;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// ingest → job → jobs → cancel → retry, all with --json documents.
#[tokio::test]
async fn ingest_and_inspect_jobs_as_json() {
    let s = Server::start(None);
    let file = s.dir.path().join("notes.txt");
    std::fs::write(&file, "hello").unwrap();
    let out = s.cli(&["ingest", "--tenant", "acme", "--option", "clarify=true", "--option", "label=q3", "--json", path_str(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let job: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON document");
    assert_eq!(job["tenant"], "acme");
    assert_eq!(job["format"], "txt");
    assert_eq!(job["state"], "queued");
    assert_eq!(job["attempts"], 0);
    assert_eq!(job["failures"], serde_json::json!([]));
    assert_eq!(job["options"], serde_json::json!({"clarify": true, "label": "q3"}));
    assert_eq!(job["content"]["size"], 5);
    let id = job["id"].as_str().unwrap().to_string();

    let out = s.cli(&["job", &id, "--json"]);
    let again: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(again["id"], job["id"]);

    let out = s.cli(&["jobs", "--state", "queued", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);

    let out = s.cli(&["cancel", &id, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()["state"], "cancelled");
    let out = s.cli(&["retry", &id, "--json"]);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stdout(&out)).unwrap()["state"], "queued");

    let out = s.cli(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(status["queue"]["txt"]["queued"], 1);
    assert!(status["known_formats"].as_array().unwrap().iter().any(|f| f == "csv"));
}

/// `ingest --wait` follows the job to the end and fails when it ends dead.
#[tokio::test]
async fn ingest_wait_reports_the_outcome() {
    let s = Server::start(None);
    let file = s.dir.path().join("bad.csv");
    std::fs::write(&file, "x").unwrap();
    let cfg = s.config.clone();
    let waiter = std::thread::spawn(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_telha"))
            .args(["--config", cfg.to_str().unwrap(), "ingest", "--wait", "--json", file.to_str().unwrap()])
            .output()
            .unwrap()
    });
    let mut w = Worker::connect(&s, "w", &["csv"]).await;
    let j = w.expect_job().await;
    w.fail(&j, "invalid_input: no header", true).await;
    let out = tokio::task::spawn_blocking(move || waiter.join().unwrap()).await.unwrap();
    assert!(!out.status.success(), "a dead job must make --wait fail");
    let job: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(job["state"], "dead");
    assert_eq!(job["failures"][0]["kind"], "invalid_input");
}

/// Errors say what is wrong and what to do.
#[tokio::test]
async fn errors_a_user_can_act_on() {
    let s = Server::start(None);
    let missing = s.dir.path().join("missing.txt");
    let out = s.cli(&["ingest", path_str(&missing)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("missing.txt: no such file"), "{}", stderr(&out));

    let odd = s.dir.path().join("data.weird");
    std::fs::write(&odd, "x").unwrap();
    let out = s.cli(&["ingest", path_str(&odd)]);
    assert!(stderr(&out).contains("--format") && stderr(&out).contains("csv"), "{}", stderr(&out));

    let out = s.cli(&["ingest", "--format", "nope", path_str(&odd)]);
    assert!(stderr(&out).contains("unknown format \"nope\"") && stderr(&out).contains("known:"), "{}", stderr(&out));

    // Nothing listening: say where we looked and how to start a server.
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("supervisor.toml");
    std::fs::write(&cfg, "[server]\nlisten = \"127.0.0.1:9\"\ndata_dir = \"d\"\n").unwrap();
    std::fs::create_dir_all(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join("d/token"), "t").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_telha")).args(["--config", path_str(&cfg), "jobs"]).env_remove("TELHA_ADDR").output().unwrap();
    let err = stderr(&out);
    assert!(err.contains("no telha server at 127.0.0.1:9") && err.contains("telha serve --config"), "{err}");

    // A bad config is refused at start-up, naming the key.
    std::fs::write(&cfg, "[jobs]\nmax_atempts = 3\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_telha")).args(["--config", path_str(&cfg), "serve"]).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("jobs.max_atempts"), "{}", stderr(&out));
}

/// The token file is created 0600 on first start.
#[tokio::test]
async fn token_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let s = Server::start(None);
    let mode = std::fs::metadata(s.data_dir().join("token")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(s.token.len(), 64);
}

/// Two processes on one data dir: the second is refused with a message that says so.
#[tokio::test]
async fn a_data_dir_in_use_is_refused_clearly() {
    let s = Server::start(None);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_telha")).args(["--config", path_str(&s.config), "serve"]).output().unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("is in use by another telha process"), "{err}");
}

/// `telha serve` refuses a config it cannot run, naming the key, before it creates the
/// data dir or binds the port: a format listed twice in a pool or served by two pools,
/// `data_dir` that is a file, limits the kernel would read as unlimited or refuse.
#[test]
fn serve_refuses_a_config_it_cannot_run_before_touching_anything() {
    let dir = tempfile::tempdir().unwrap();
    let pool = |name: &str, formats: &str, extra: &str| format!("[pools.{name}]\nformats = {formats}\ncommand = [\"/bin/sh\"]\n{extra}\n");
    let file = dir.path().join("occupied");
    std::fs::write(&file, "keep me").unwrap();
    let cases = [
        (pool("text", "[\"txt\", \"txt\"]", ""), "data", "pools.text.formats: \"txt\" is listed twice"),
        (pool("a", "[\"txt\"]", "") + &pool("b", "[\"md\", \"txt\"]", ""), "data", "pools.b.formats: \"txt\" is already served by pool \"a\""),
        (pool("text", "[\"txt\"]", ""), "occupied", "server.data_dir:"),
        (pool("text", "[\"txt\"]", "[pools.text.limits]\nmemory_mb = 18446744073709551615"), "data", "pools.text.limits.memory_mb: at most"),
        (pool("text", "[\"txt\"]", "[pools.text.limits]\nopen_files = 1000000000000"), "data", "pools.text.limits.open_files:"),
        (pool("text", "[\"txt\"]", "").replace("/bin/sh", "/nonexistent/worker"), "data", "pools.text.command: \"/nonexistent/worker\": no such file"),
    ];
    for (pools, data_dir, want) in cases {
        let cfg = dir.path().join("supervisor.toml");
        std::fs::write(&cfg, format!("[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{data_dir}\"\n\n{pools}")).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_telha")).args(["--config", path_str(&cfg), "serve"]).output().unwrap();
        assert!(!out.status.success(), "{want}: served");
        assert!(stderr(&out).contains(want), "want {want:?} in {}", stderr(&out));
        assert!(!dir.path().join("data").exists(), "{want}: the data dir was created");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    }
}

/// `telha status | head -1`: the reader goes away before the output is written, and the
/// CLI ends quietly (SIGPIPE, as other tools) instead of panicking on the broken pipe.
#[tokio::test]
async fn a_closed_stdout_ends_the_cli_quietly() {
    let s = Server::start(None);
    s.submit("t", "txt", "a.txt", b"x").await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_telha"))
        .args(["--config", path_str(&s.config), "status"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(!err.contains("panicked") && out.status.code() != Some(101), "{:?}: {err}", out.status);
}

/// A format no pool serves and no worker polls: `ingest` says the job waits for such a
/// worker (and that `--wait` may wait forever), `status` lists the format as unserved.
#[tokio::test]
async fn unserved_formats_are_named_by_ingest_and_status() {
    let s = Server::start(None);
    let file = s.dir.path().join("notes.md");
    std::fs::write(&file, "# hi").unwrap();
    let out = s.cli(&["ingest", path_str(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("no pool of this server serves format \"md\""), "{}", stderr(&out));
    let out = s.cli(&["status"]);
    assert!(stdout(&out).contains("unserved: md has 1 queued job(s)"), "{}", stdout(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&s.cli(&["status", "--json"]))).unwrap();
    assert_eq!(json["unserved"], serde_json::json!([{"format": "md", "queued": 1}]));
    // Once a worker polls for it, it is served.
    let _w = Worker::connect(&s, "w", &["md"]).await;
    let json: serde_json::Value = serde_json::from_str(&stdout(&s.cli(&["status", "--json"]))).unwrap();
    assert_eq!(json["unserved"], serde_json::json!([]));
}

/// `telha graph --all` pages through lists longer than one read instead of cutting them.
#[tokio::test]
async fn graph_all_pages_past_max_items() {
    let s = Server::start(None);
    let mut w = Worker::connect(&s, "w", &["txt"]).await;
    let job = s.submit("t", "txt", "a.txt", b"x").await;
    let j = w.expect_job().await;
    assert!(w.succeed(&j, &result_with_nodes(5)).await.accepted);
    let cut: serde_json::Value = serde_json::from_str(&stdout(&s.cli(&["graph", &job.id, "--json", "--page-items", "2"]))).unwrap();
    assert_eq!((cut["nodes"].as_array().unwrap().len(), &cut["truncated"]), (2, &serde_json::json!(true)));
    let all: serde_json::Value = serde_json::from_str(&stdout(&s.cli(&["graph", &job.id, "--json", "--all", "--page-items", "2"]))).unwrap();
    let ids: Vec<&str> = all["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!((ids.len(), &all["truncated"]), (5, &serde_json::json!(false)));
    let props: Vec<i64> = all["nodes"].as_array().unwrap().iter().map(|n| n["properties"]["i"].as_i64().unwrap()).collect();
    assert_eq!(props, vec![0, 1, 2, 3, 4]);
}

/// `ingest DIR` submits the files under it concurrently, in sorted order: hidden entries
/// skipped, files of a format the extension does not tell skipped and counted on stderr,
/// each with its own job; every one of 300 small files reaches the server once.
#[tokio::test]
async fn ingest_of_a_folder_submits_every_file_under_it_once() {
    let s = Server::start(None);
    let root = s.dir.path().join("corpus");
    std::fs::create_dir_all(root.join("b/deeper")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    for i in 0..300 {
        let dir = if i % 3 == 0 { root.join("b/deeper") } else { root.clone() };
        std::fs::write(dir.join(format!("note-{i:03}.txt")), format!("note {i}")).unwrap();
    }
    std::fs::write(root.join("table.csv"), "a,b\n1,2\n").unwrap();
    std::fs::write(root.join("blob.weird"), "?").unwrap();
    std::fs::write(root.join(".hidden.txt"), "no").unwrap();
    std::fs::write(root.join(".git/config.txt"), "no").unwrap();
    // Passed over and said so, never read: a link (it could lead out of the folder or
    // round in a loop) and a FIFO (reading it would block).
    std::os::unix::fs::symlink(root.join("note-001.txt"), root.join("b/link.txt")).unwrap();
    let fifo = std::ffi::CString::new(root.join("pipe.txt").display().to_string()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);

    let out = s.cli(&["ingest", "--json", path_str(&root)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("skipped 1 file(s)"), "{}", stderr(&out));
    assert!(stderr(&out).contains("passed over 1 symbolic link(s) not followed; 1 FIFO(s), socket(s) or device(s) not read"), "{}", stderr(&out));
    let jobs: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).expect("a JSON array");
    assert_eq!(jobs.len(), 301);
    let names: Vec<&str> = jobs.iter().map(|j| j["name"].as_str().unwrap()).collect();
    let prefix = format!("{}/", std::fs::canonicalize(&root).unwrap().display());
    assert!(names.iter().all(|n| n.starts_with(&prefix)), "{names:?}");
    assert!(names.iter().all(|n| !n[prefix.len()..].split('/').any(|part| part.starts_with('.'))), "hidden entries are skipped");
    assert_eq!(names.iter().filter(|n| n.ends_with(".csv")).count(), 1);
    let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), 301, "one job per file");
    let ids: std::collections::BTreeSet<&str> = jobs.iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 301);
    let walked: Vec<String> = {
        fn walk(d: &std::path::Path, out: &mut Vec<String>) {
            let mut entries: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap()).collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') || name.ends_with(".weird") {
                    continue;
                }
                let kind = e.file_type().unwrap();
                if kind.is_dir() {
                    walk(&e.path(), out)
                } else if kind.is_file() {
                    out.push(std::fs::canonicalize(e.path()).unwrap().display().to_string())
                }
            }
        }
        let mut out = Vec::new();
        walk(&root, &mut out);
        out
    };
    // Input order is the walk's: sorted by name within a folder, folders in place.
    assert_eq!(names, walked.iter().map(String::as_str).collect::<Vec<_>>());

    let out = s.cli(&["jobs", "--limit", "1000", "--json"]);
    let listed: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed.len(), 301, "the server holds each file's job once");

    let empty = s.dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = s.cli(&["ingest", path_str(&empty)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nothing to ingest"), "{}", stderr(&out));
}
