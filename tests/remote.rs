//! A worker on another host, for real: two network namespaces joined by a veth pair
//! (iproute2), the core in one, a Python worker in the other speaking TLS with the token.
//! Jobs ingested in the core's namespace run on the remote worker; a remote worker killed
//! mid-job loses its lease by expiry (nothing supervises it here) and the job runs again
//! on the next remote worker.
//!
//! Needs root with CAP_NET_ADMIN and `ip`; without them the test says so and skips.
//! Needs the repository's .venv (`workers/setup-venv.sh`).
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(40);
const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The namespaces and the veth pair; removed on drop (the veth goes with its namespace).
struct Net {
    core: String,
    worker: String,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Net {
    /// Two namespaces, `10.<a>.<b>.1` (core) and `.2` (worker), distinct per process.
    fn make() -> Result<(Self, String, String), String> {
        let id = std::process::id();
        let net = Self { core: format!("telha-c{id}"), worker: format!("telha-w{id}") };
        ip(&["netns", "add", &net.core])?;
        ip(&["netns", "add", &net.worker])?;
        let (vc, vw) = (format!("tc{id}"), format!("tw{id}"));
        let (a, b) = (200 + (id >> 8) % 50, id % 250 + 1);
        let (core_ip, worker_ip) = (format!("10.{a}.{b}.1"), format!("10.{a}.{b}.2"));
        ip(&["link", "add", &vc, "type", "veth", "peer", "name", &vw])?;
        ip(&["link", "set", &vc, "netns", &net.core])?;
        ip(&["link", "set", &vw, "netns", &net.worker])?;
        for (ns, dev, addr) in [(&net.core, &vc, &core_ip), (&net.worker, &vw, &worker_ip)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok((net, core_ip, worker_ip))
    }

    fn exec(ns: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, program]);
        c
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.core]);
        let _ = ip(&["netns", "del", &self.worker]);
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_file(path: &Path, log: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Ok(t) = std::fs::read_to_string(path) {
            if !t.trim().is_empty() {
                return t.trim().to_string();
            }
        }
        assert!(start.elapsed() < T, "no {}:\n{}", path.display(), std::fs::read_to_string(log).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The CLI, run inside the core's namespace, as JSON.
fn cli(ns: &str, config: &Path, args: &[&str]) -> serde_json::Value {
    let out = Net::exec(ns, env!("CARGO_BIN_EXE_telha")).arg("--config").arg(config).args(args).arg("--json").env_remove("TELHA_CA").env_remove("TELHA_ADDR").output().expect("telha");
    assert!(out.status.success(), "telha {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

/// A remote worker: the misbehave handler with a short heartbeat (the lease is short
/// here, so that the test sees an expiry quickly).
fn remote_worker(net: &Net, dir: &Path, core: &str, token: &str, id: &str) -> Killed {
    let script = dir.join("remote_worker.py");
    std::fs::write(
        &script,
        format!("import sys\nsys.path.insert(0, {:?})\nfrom misbehave import handle\nfrom workers_common import WorkerConsumer\nraise SystemExit(WorkerConsumer({{'txt': handle}}, heartbeat_interval=0.3).run())\n", format!("{REPO}/tests/workers")),
    )
    .expect("script");
    let log = std::fs::File::create(dir.join(format!("{id}.log"))).expect("log");
    let child = Net::exec(&net.worker, &format!("{REPO}/.venv/bin/python"))
        .arg(&script)
        .env("TELHA_CORE_ADDR", core)
        .env("TELHA_WORKER_ID", id)
        .env("TELHA_TOKEN", token)
        .env("TELHA_FORMATS", "txt")
        .env("TELHA_CA", dir.join("ca.pem"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn the remote worker");
    Killed(child)
}

fn wait_job(ns: &str, config: &Path, id: &str, what: &str, pred: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let j = cli(ns, config, &["job", id]);
        if pred(&j) {
            return j;
        }
        assert!(start.elapsed() < T, "job {id} never {what}: {j}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_worker_in_another_namespace_over_tls_and_its_lease_expiry() {
    assert!(Path::new(&format!("{REPO}/.venv/bin/python")).exists(), "run workers/setup-venv.sh");
    let (net, core_ip, _worker_ip) = match Net::make() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("SKIP: cannot make network namespaces here (needs CAP_NET_ADMIN and iproute2): {e}");
            return;
        }
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let d: PathBuf = dir.path().to_path_buf();
    // The certificate also names the core's address in its namespace.
    common::make_tls(&d, &[&core_ip]);
    let config = d.join("supervisor.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"{core_ip}:0\"\ndata_dir = \"data\"\nhttp_listen = \"\"\ntls_cert = \"cert.pem\"\ntls_key = \"key.pem\"\ntls_ca = \"ca.pem\"\nshutdown_grace_secs = 1\n\n[jobs]\nmax_attempts = 3\nlease_secs = 2\nbackoff_base_ms = 50\nbackoff_max_ms = 100\n"
        ),
    )
    .expect("config");
    let log = d.join("serve.log");
    let serve = Net::exec(&net.core, env!("CARGO_BIN_EXE_telha"))
        .arg("--config")
        .arg(&config)
        .arg("serve")
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("telha serve");
    let _serve = Killed(serve);
    let addr = wait_file(&d.join("data/serve.addr"), &log);
    assert!(addr.starts_with(&core_ip), "{addr}");
    let token = std::fs::read_to_string(d.join("data/token")).expect("token").trim().to_string();

    let first = remote_worker(&net, &d, &addr, &token, "remote-1");
    let doc = d.join("a.txt");
    std::fs::write(&doc, "from afar").expect("doc");
    let ok = cli(&net.core, &config, &["ingest", "--format", "txt", "--option", "mode=ok", "--wait", doc.to_str().expect("utf-8")]);
    assert_eq!(ok["state"], "succeeded", "{ok}\nlog:\n{}", std::fs::read_to_string(&log).unwrap_or_default());

    // A job the remote worker holds for 2 s; killed while it holds it.
    let slow = cli(&net.core, &config, &["ingest", "--format", "txt", "--option", "mode=sleep", "--option", "secs=2", doc.to_str().expect("utf-8")]);
    let id = slow["id"].as_str().expect("id").to_string();
    wait_job(&net.core, &config, &id, "leased", |j| j["state"] == "leased");
    drop(first);
    let expired = wait_job(&net.core, &config, &id, "expired", |j| j["failures"].as_array().is_some_and(|f| !f.is_empty()));
    assert_eq!(expired["failures"][0]["kind"], "lease_expired", "{expired}");
    let _second = remote_worker(&net, &d, &addr, &token, "remote-2");
    let done = wait_job(&net.core, &config, &id, "finished", |j| j["state"] == "succeeded" || j["state"] == "dead");
    assert_eq!(done["state"], "succeeded", "recovered on the next worker: {done}");
    assert_eq!(done["attempts"], 1, "one failed attempt (the expiry): {done}");
}
