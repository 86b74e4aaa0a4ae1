"""The real core for the web worker's end-to-end tests: `telha serve` with a `[pools.web]`
shaped like the shipped one (rss_mb watchdog, WEB_ALLOW_NETS in the pool's env), so the
supervisor itself spawns the workers, and the CLI as an operator runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
TELHA_BIN = Path(os.environ.get("TELHA_BIN") or REPO_ROOT / "target" / "debug" / "telha")
MISSING = not (TELHA_BIN.is_file() and os.access(TELHA_BIN, os.X_OK))
FINISHED = frozenset({"succeeded", "dead", "cancelled"})
TENANT = "t1"


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("TELHA_", "WEB_"))}


class WebCore:
    """One `telha serve` whose web pool may reach 127.0.0.1 only."""

    def __init__(self, root: Path, workers: int = 1, content_formats: str = "pdf,txt") -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.data_dir = root / "data"
        self.config = root / "supervisor.toml"
        env = {
            "WEB_ALLOW_NETS": "127.0.0.1/32",
            "WEB_STATE_DIR": str(root / "web-state"),
            "WEB_CONTENT_FORMATS": content_formats,
        }
        env_toml = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        self.config.write_text(
            f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{self.data_dir}"\n'
            "[jobs]\nmax_attempts = 2\nlease_secs = 60\nbackoff_base_ms = 50\n"
            "backoff_max_ms = 200\n"
            f'[pools.web]\nformats = ["web"]\nworkers = {workers}\n'
            f'command = [{json.dumps(sys.executable)}, "-m", "web_worker"]\n'
            "job_timeout_secs = 120\n"
            f"env = {{ {env_toml} }}\n"
            "[pools.web.limits]\nrss_mb = 2048\nopen_files = 1024\n"
        )
        self.log_path = root / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.addr = ""

    def start(self, timeout: float = 30) -> None:
        addr_file = self.data_dir / "serve.addr"
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [str(TELHA_BIN), "serve", "--config", str(self.config)],
                stdout=log,
                stderr=log,
                env=_clean_env(),
            )
        deadline = time.monotonic() + timeout
        while not (addr_file.exists() and addr_file.read_text().strip().rpartition(":")[2]):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"telha serve did not start:\n{self.log()}")
            time.sleep(0.02)
        self.addr = addr_file.read_text().strip()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def run_cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(TELHA_BIN), *args, "--config", str(self.config), "--addr", self.addr],
            env=_clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def cli(self, *args: str) -> Any:
        done = self.run_cli(*args, "--json")
        if done.returncode != 0:
            raise AssertionError(f"telha {' '.join(args)}: {done.stderr}\n{self.log()}")
        return json.loads(done.stdout)

    def ingest(self, url: str, *, wait: bool = False, **options: Any) -> Any:
        args = ["ingest", "--tenant", TENANT]
        for key, value in options.items():
            args += ["--option", f"{key}={json.dumps(value)}"]
        if wait:
            args.append("--wait")
        return self.cli(*args, url)

    def wait(self, condition: Callable[[], Any], what: str, timeout: float = 90) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.log()}")
            time.sleep(0.2)

    def jobs(self, **filters: str) -> list[dict[str, Any]]:
        args = ["jobs"]
        for key, value in filters.items():
            args += [f"--{key}", value]
        listed = self.cli(*args)
        jobs: list[dict[str, Any]] = listed["jobs"] if isinstance(listed, dict) else listed
        return jobs

    def job(self, job_id: Any) -> dict[str, Any]:
        job: dict[str, Any] = self.cli("job", str(job_id))
        return job

    def settled(self, fmt: str = "web", timeout: float = 120) -> list[dict[str, Any]]:
        """The jobs of `fmt` once none is queued, leased or retrying."""

        def done() -> list[dict[str, Any]] | None:
            jobs = self.jobs(format=fmt)
            return jobs if jobs and all(j["state"] in FINISHED for j in jobs) else None

        settled: list[dict[str, Any]] = self.wait(done, f"{fmt} jobs to finish", timeout)
        return settled

    def graph(self, job_id: Any) -> dict[str, Any]:
        graph: dict[str, Any] = self.cli("graph", str(job_id), "--tenant", TENANT)
        return graph

    def worker_pids(self) -> list[int]:
        status = self.cli("status")
        [pool] = [p for p in status["pools"] if p["name"] == "web"]
        return [int(w["pid"]) for w in pool["workers"] if w.get("pid")]
