//! The operations endpoint of a real `telha serve` (gRPC and HTTP both on 127.0.0.1:0)
//! with a real supervised Python worker: `/readyz` follows the pool, `/metrics` parses as
//! OpenMetrics text and moves as jobs run, the status pages hide document contents
//! without the token and escape what they show.
//!
//! Needs the repository's .venv (`workers/setup-venv.sh`; the README's test command makes it).
mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

const T: Duration = Duration::from_secs(30);

/// A misbehave pool whose one worker starts only once the file `go` exists in the
/// config's folder: the test decides when the pool reaches its desired size.
fn config(http_listen: &str) -> String {
    format!(
        r#"
[server]
listen = "127.0.0.1:0"
data_dir = "data"
http_listen = "{http_listen}"
shutdown_grace_secs = 1

[jobs]
max_attempts = 2
lease_secs = 30
backoff_base_ms = 50
backoff_max_ms = 100

[pools.misbehave]
formats = ["txt"]
workers = 1
command = ["/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; exec {{repo}}/.venv/bin/python {{repo}}/tests/workers/misbehave.py"]
"#
    )
}

fn venv_ready() {
    let py = concat!(env!("CARGO_MANIFEST_DIR"), "/.venv/bin/python");
    assert!(Path::new(py).exists(), "{py} is missing: run workers/setup-venv.sh (the README's test command does)");
}

fn http_addr(s: &Server) -> SocketAddr {
    let start = Instant::now();
    loop {
        if let Ok(a) = std::fs::read_to_string(s.data_dir().join("http.addr")) {
            if let Ok(a) = a.trim().parse() {
                return a;
            }
        }
        assert!(start.elapsed() < T, "no http.addr; log:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A plain HTTP/1.1 GET (`Connection: close`, body read to the end).
fn get(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect to the operations endpoint");
    s.set_read_timeout(Some(T)).expect("timeout");
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let raw = String::from_utf8(raw).expect("utf-8 reply");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).expect("status line");
    let headers: Vec<(String, String)> = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(body) } else { body.to_string() };
    Reply { status, headers, body }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, rest) = s.split_once("\r\n").expect("chunk size");
        let n = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
        if n == 0 {
            return out;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
}

/// A sample: metric name and its labels, sorted.
type Key = (String, Vec<(String, String)>);

/// A strict parser of the OpenMetrics text format (what Prometheus scrapes with
/// `application/openmetrics-text`): every line is a `# HELP`/`# TYPE`/`# UNIT` of the
/// family that follows, or a sample of the current family (its name, or the name plus a
/// suffix that the family's type allows) with well-formed labels and a float value; the
/// exposition ends with `# EOF` and nothing after it. Panics naming the bad line.
fn parse_openmetrics(text: &str) -> BTreeMap<Key, f64> {
    fn name_ok(n: &str) -> bool {
        let mut c = n.chars();
        c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':') && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
    }
    let mut out = BTreeMap::new();
    let (mut family, mut kind) = (String::new(), String::new());
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut lines = text.split('\n').enumerate().peekable();
    let mut eof = false;
    while let Some((i, line)) = lines.next() {
        let at = i + 1;
        if eof {
            assert!(line.is_empty() && lines.peek().is_none(), "line {at}: content after # EOF: {line:?}");
            break;
        }
        if line == "# EOF" {
            eof = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (what, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            assert!(name_ok(name), "line {at}: bad family name in {line:?}");
            match what {
                "TYPE" => {
                    let t = parts.next().unwrap_or("");
                    assert!(["counter", "gauge", "histogram", "summary", "info", "stateset", "gaugehistogram", "unknown"].contains(&t), "line {at}: bad type {t:?}");
                    assert!(types.insert(name.to_string(), t.to_string()).is_none(), "line {at}: family {name} declared twice");
                    family = name.to_string();
                    kind = t.to_string();
                }
                "HELP" | "UNIT" => assert!(family.is_empty() || name == family || !types.contains_key(name), "line {at}: {what} for another family"),
                _ => panic!("line {at}: unknown comment {line:?}"),
            }
            continue;
        }
        assert!(!line.is_empty(), "line {at}: empty line before # EOF");
        let (name, rest) = match line.find(['{', ' ']) {
            Some(p) => line.split_at(p),
            None => panic!("line {at}: no value in {line:?}"),
        };
        assert!(name_ok(name), "line {at}: bad metric name {name:?}");
        let suffixes: &[&str] = match kind.as_str() {
            "counter" => &["_total", "_created"],
            "histogram" => &["_bucket", "_count", "_sum", "_created"],
            "info" => &["_info"],
            _ => &[""],
        };
        assert!(suffixes.iter().any(|s| name == format!("{family}{s}")), "line {at}: sample {name} is not of family {family} ({kind})");
        let (mut labels, rest) = match rest.strip_prefix('{') {
            Some(body) => parse_labels(body, at),
            None => (Vec::new(), rest),
        };
        let value = rest.strip_prefix(' ').unwrap_or_else(|| panic!("line {at}: expected one space before the value"));
        let value = value.split(' ').next().unwrap_or("");
        let v: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("line {at}: bad value {v:?}")),
        };
        labels.sort();
        let names: std::collections::BTreeSet<&String> = labels.iter().map(|(k, _)| k).collect();
        assert_eq!(names.len(), labels.len(), "line {at}: a label twice");
        assert!(out.insert((name.to_string(), labels), v).is_none(), "line {at}: duplicate sample");
    }
    assert!(eof, "no # EOF at the end");
    out
}

/// The labels of a sample, from just after its `{`; returns them and what follows the `}`.
fn parse_labels(s: &str, at: usize) -> (Vec<(String, String)>, &str) {
    let b = s.as_bytes();
    let (mut i, mut labels) = (0, Vec::new());
    loop {
        if b.get(i) == Some(&b'}') {
            return (labels, &s[i + 1..]);
        }
        let eq = i + s[i..].find('=').unwrap_or_else(|| panic!("line {at}: label without ="));
        let name = &s[i..eq];
        assert!(!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit()), "line {at}: bad label name {name:?}");
        i = eq + 1;
        assert_eq!(b.get(i), Some(&b'"'), "line {at}: label value not quoted");
        i += 1;
        let mut value = String::new();
        loop {
            match b.get(i) {
                Some(b'\\') => {
                    match b.get(i + 1) {
                        Some(b'n') => value.push('\n'),
                        Some(b'"') => value.push('"'),
                        Some(b'\\') => value.push('\\'),
                        other => panic!("line {at}: bad escape {other:?}"),
                    }
                    i += 2;
                }
                Some(b'"') => {
                    i += 1;
                    break;
                }
                None => panic!("line {at}: unterminated label value"),
                Some(_) => {
                    let c = s[i..].chars().next().unwrap_or_default();
                    value.push(c);
                    i += c.len_utf8();
                }
            }
        }
        labels.push((name.to_string(), value));
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return (labels, &s[i + 1..]),
            other => panic!("line {at}: expected , or }} after a label, got {other:?}"),
        }
    }
}

fn sample(m: &BTreeMap<Key, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut l: Vec<(String, String)> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    l.sort();
    m.get(&(name.to_string(), l)).copied().unwrap_or(0.0)
}

fn scrape(addr: SocketAddr) -> BTreeMap<Key, f64> {
    let r = get(addr, "/metrics", &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("content-type").is_some_and(|c| c.starts_with("application/openmetrics-text")), "{:?}", r.headers);
    parse_openmetrics(&r.body)
}

async fn wait_ready(http: SocketAddr, s: &Server) -> Reply {
    let start = Instant::now();
    loop {
        let r = get(http, "/readyz", &[]);
        if r.status == 200 {
            return r;
        }
        assert!(start.elapsed() < T, "never ready: {}\nlog:\n{}", r.body, s.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `/readyz` is 503 naming the pool while its worker is not polling, 200 once it is;
/// `/healthz` answers throughout. Counters, histograms and gauges of `/metrics` move by
/// exactly what the jobs did (two successes, one permanent failure), and the exposition
/// parses strictly, with only the documented labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_the_pool_and_metrics_move_as_jobs_run() {
    venv_ready();
    let s = Server::start_config(&config("127.0.0.1:0"));
    let http = http_addr(&s);
    assert_eq!(get(http, "/healthz", &[]).status, 200);
    let r = get(http, "/readyz", &[]);
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("pool misbehave: 0 of 1 workers ready"), "{}", r.body);

    let before = scrape(http);
    assert_eq!(sample(&before, "telha_jobs_enqueued_total", &[("format", "txt")]), 0.0);
    assert_eq!(sample(&before, "telha_pool_workers_desired", &[("pool", "misbehave")]), 1.0);
    assert_eq!(sample(&before, "telha_jobs", &[("format", "txt"), ("state", "succeeded")]), 0.0, "known formats are present at zero");

    std::fs::write(s.dir.path().join("go"), b"").expect("go");
    wait_ready(http, &s).await;

    let ok1 = s.submit_with("txt", "a.txt", b"one", r#"{"mode":"ok"}"#).await;
    let ok2 = s.submit_with("txt", "b.txt", b"two", r#"{"mode":"ok"}"#).await;
    let bad = s.submit_with("txt", "c.txt", b"three", r#"{"mode":"log_memory"}"#).await;
    for j in [&ok1, &ok2] {
        s.wait_for(&j.id, T, |j| j.state == "succeeded").await;
    }
    s.wait_for(&bad.id, T, |j| j.state == "dead").await;

    let after = scrape(http);
    let txt = [("format", "txt")];
    assert_eq!(sample(&after, "telha_jobs_enqueued_total", &txt), 3.0);
    assert_eq!(sample(&after, "telha_jobs_succeeded_total", &txt), 2.0);
    assert_eq!(sample(&after, "telha_jobs_failed_total", &[("format", "txt"), ("kind", "invalid_input")]), 1.0);
    assert_eq!(sample(&after, "telha_jobs_dead_total", &txt), 1.0);
    assert_eq!(sample(&after, "telha_jobs", &[("format", "txt"), ("state", "succeeded")]), 2.0);
    assert_eq!(sample(&after, "telha_jobs", &[("format", "txt"), ("state", "dead")]), 1.0);
    assert_eq!(sample(&after, "telha_job_run_seconds_count", &txt), 3.0);
    assert_eq!(sample(&after, "telha_job_queue_wait_seconds_count", &txt), 3.0);
    assert_eq!(sample(&after, "telha_submissions_total", &txt), 2.0);
    assert_eq!(sample(&after, "telha_nodes_applied_total", &txt), 2.0);
    assert!(sample(&after, "telha_submission_bytes_total", &txt) > 0.0);
    assert!(sample(&after, "telha_store_commit_batch_changes_count", &[]) > sample(&before, "telha_store_commit_batch_changes_count", &[]));
    assert!(sample(&after, "telha_store_commit_seconds_count", &[]) > 0.0);
    assert_eq!(sample(&after, "telha_pool_workers_live", &[("pool", "misbehave")]), 1.0);
    assert_eq!(sample(&after, "telha_pool_degraded", &[("pool", "misbehave")]), 0.0);
    assert!(sample(&after, "telha_pool_worker_rss_bytes", &[("pool", "misbehave")]) > 1e6, "a Python worker is resident");
    assert!(sample(&after, "telha_blob_store_bytes", &[]) >= 11.0, "the three contents are stored");
    // Only the documented labels, and no job id, tenant or name anywhere.
    for (name, labels) in after.keys() {
        for (k, v) in labels {
            assert!(["format", "kind", "state", "pool", "le"].contains(&k.as_str()), "{name} has label {k}");
            assert!(![ok1.id.as_str(), "a.txt", "t"].contains(&v.as_str()), "{name} carries {v:?}");
        }
    }
}

/// A local address that is not loopback (the machine's own interface), if there is one:
/// a peer connecting from it is "another host" for the access rule.
fn non_loopback_ip() -> Option<std::net::IpAddr> {
    // No packet is sent: connect() on UDP only picks the route's source address.
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    sock.connect("192.0.2.1:9").ok()?;
    let ip = sock.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The status pages: a loopback peer sees the pools and the failure but not its stderr
/// or the document's text; the token (header, or `?token=` that sets a cookie) shows
/// them, escaped; a peer from another address gets 401 without the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_pages_show_contents_only_with_the_token_and_escape_them() {
    venv_ready();
    let s = Server::start_config(&config("0.0.0.0:0"));
    std::fs::write(s.dir.path().join("go"), b"").expect("go");
    let port = http_addr(&s).port();
    let local: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_ready(local, &s).await;
    let ok = s.submit_with("txt", "<b>bold</b>.txt", b"x", r#"{"mode":"ok"}"#).await;
    // A native allocation failure: the supervisor classifies it (oom) and keeps the stderr tail.
    let bad = s.submit_with("txt", "bad.txt", b"y", r#"{"mode":"abort_alloc"}"#).await;
    s.wait_for(&ok.id, T, |j| j.state == "succeeded").await;
    s.wait_for(&bad.id, T, |j| j.state == "dead").await;
    wait_ready(local, &s).await;

    let plain = get(local, "/", &[]);
    assert_eq!(plain.status, 200);
    assert!(plain.body.contains("<td>misbehave</td>") && plain.body.contains("1 of 1"), "{}", plain.body);
    assert!(plain.body.contains("<td class=\"kind\">oom</td>"), "the failure is listed: {}", plain.body);
    assert!(plain.body.contains("oom (signal 6) at "), "the worker's last exit: {}", plain.body);
    assert!(!plain.body.contains("bytes failed"), "no stderr without the token");

    let bearer = format!("Bearer {}", s.token);
    let full = get(local, "/", &[("Authorization", &bearer)]);
    assert!(full.body.contains("memory allocation of 1073741824 bytes failed"), "stderr tail with the token: {}", full.body);

    let job = get(local, &format!("/jobs/{}?token={}", ok.id, s.token), &[]);
    assert_eq!(job.status, 200);
    let cookie = job.header("set-cookie").expect("?token= sets a cookie");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(job.body.contains("<span id=\"state\">succeeded</span>") && job.body.contains("<td>DOCUMENT</td><td>1</td>"), "{}", job.body);
    assert!(job.body.contains(&format!("ok job {}", ok.id)), "canonical text with the token: {}", job.body);
    assert!(job.body.contains("&lt;b&gt;bold&lt;/b&gt;.txt") && !job.body.contains("<b>bold"), "names are escaped");
    let cookie_pair = cookie.split(';').next().unwrap_or_default();
    let again = get(local, &format!("/jobs/{}", ok.id), &[("Cookie", cookie_pair)]);
    assert!(again.body.contains(&format!("ok job {}", ok.id)), "the cookie carries the token");
    let hidden = get(local, &format!("/jobs/{}", ok.id), &[]);
    assert!(!hidden.body.contains(&format!("ok job {}", ok.id)) && hidden.body.contains("hidden without the token"));
    assert_eq!(get(local, "/jobs/999999", &[]).status, 404);
    assert_eq!(get(local, "/jobs/%3Cx%3E", &[]).status, 404);

    match non_loopback_ip() {
        Some(ip) => {
            let remote: SocketAddr = (ip, port).into();
            assert_eq!(get(remote, "/", &[]).status, 401, "another address without the token");
            assert_eq!(get(remote, &format!("/jobs/{}", ok.id), &[("Authorization", "Bearer wrong")]).status, 401);
            assert_eq!(get(remote, "/", &[("Authorization", &bearer)]).status, 200);
            assert_eq!(get(remote, "/metrics", &[]).status, 200, "metrics carry no document data");
        }
        None => eprintln!("SKIP (part): no non-loopback address on this machine; the 401 for another host is not checked"),
    }
}

/// An explicit `http_listen` that cannot bind stops `serve` with the key in the message.
#[test]
fn an_explicit_http_listen_that_cannot_bind_is_an_error_naming_the_key() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("supervisor.toml");
    std::fs::write(&cfg, format!("[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"data\"\nhttp_listen = \"{}\"\n", taken.local_addr().expect("addr"))).expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_telha")).args(["--config", path_str(&cfg), "serve"]).output().expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http_listen"), "{err}");
}

/// Under systemd (`Type=notify`): `serve` sends `READY=1` to `NOTIFY_SOCKET` once it is
/// bound and `STOPPING=1` when SIGTERM starts the drain; with `log_format = "json"`
/// every log line is one JSON object.
#[test]
fn sd_notify_ready_and_stopping_and_json_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock_path = dir.path().join("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&sock_path).expect("bind the notify socket");
    sock.set_read_timeout(Some(T)).expect("timeout");
    let cfg = dir.path().join("supervisor.toml");
    std::fs::write(&cfg, "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"data\"\nhttp_listen = \"\"\nlog_format = \"json\"\nshutdown_grace_secs = 0.5\n").expect("write");
    let log = std::fs::File::create(dir.path().join("serve.log")).expect("log");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_telha"))
        .args(["--config", path_str(&cfg), "serve"])
        .env("NOTIFY_SOCKET", &sock_path)
        .env("RUST_LOG", "info")
        .stderr(log)
        .spawn()
        .expect("spawn");
    let mut buf = [0u8; 512];
    let n = sock.recv(&mut buf).expect("READY=1 within 30 s");
    let ready = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready}");
    assert!(dir.path().join("data/serve.addr").exists(), "READY only once bound");
    assert!(!dir.path().join("data/http.addr").exists(), "http_listen = \"\" is off");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let n = sock.recv(&mut buf).expect("STOPPING=1 within 30 s");
    let stopping = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(stopping.lines().any(|l| l == "STOPPING=1"), "{stopping}");
    assert!(child.wait().expect("wait").success());
    let text = std::fs::read_to_string(dir.path().join("serve.log")).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(v.get("level").is_some() && v.get("fields").is_some(), "{l}");
    }
    assert!(text.contains("\"telha serving\""), "{text}");
}

/// gRPC over TLS: the supervised Python worker (given `TELHA_CA` by the supervisor)
/// leases and finishes a job over it; the CLI verifies the server with `--ca` or the
/// config's `tls_ca`; a plaintext client or one trusting another CA gets nowhere.
/// A plaintext server on a non-loopback address warns at start-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_for_grpc_with_a_ca_made_here() {
    venv_ready();
    let tls_dir = tempfile::tempdir().expect("tempdir");
    make_tls(tls_dir.path(), &[]);
    let other = tempfile::tempdir().expect("tempdir");
    make_tls(other.path(), &[]);
    let d = tls_dir.path().display();
    let text = config("").replace("[jobs]", &format!("tls_cert = \"{d}/cert.pem\"\ntls_key = \"{d}/key.pem\"\ntls_ca = \"{d}/ca.pem\"\n\n[jobs]"));
    let mut s = Server::start_config(&text);
    std::fs::write(s.dir.path().join("go"), b"").expect("go");
    let doc = s.dir.path().join("a.txt");
    std::fs::write(&doc, "over tls").expect("doc");
    // The config's tls_ca: the CLI speaks TLS; the worker pool serves the job over TLS too.
    let out = s.cli(&["ingest", "--format", "txt", "--option", "mode=ok", "--wait", "--json", path_str(&doc)]);
    assert!(out.status.success(), "{}\n{}\nlog:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr), s.log());
    let job: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(job["state"], "succeeded", "{job}");
    // --ca explicitly, against a config without tls_ca (a client on another host).
    let bare = s.dir.path().join("client.toml");
    std::fs::write(&bare, format!("[server]\nlisten = \"{}\"\ntoken_file = \"{}\"\n", s.addr, s.data_dir().join("token").display())).expect("client config");
    let run = |args: &[&str]| std::process::Command::new(env!("CARGO_BIN_EXE_telha")).arg("--config").arg(&bare).args(args).env_remove("TELHA_CA").env_remove("TELHA_ADDR").output().expect("run");
    let ok = run(&["--ca", &format!("{d}/ca.pem"), "status"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let plain = run(&["status"]);
    assert!(!plain.status.success(), "a plaintext client must not get through");
    let wrong = run(&["--ca", &format!("{}/ca.pem", other.path().display()), "status"]);
    assert!(!wrong.status.success(), "a client trusting another CA must not get through");
    assert!(!s.log().contains("without TLS"), "no warning with TLS on");
    s.kill9();

    let open = Server::start_config("[server]\nlisten = \"0.0.0.0:0\"\ndata_dir = \"data\"\nhttp_listen = \"\"\n");
    let start = Instant::now();
    while !open.log().contains("without TLS") {
        assert!(start.elapsed() < T, "no warning for a plaintext non-loopback listener:\n{}", open.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}
