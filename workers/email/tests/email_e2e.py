"""The real core for the email worker's end-to-end tests: `telha serve` with its own
config and data dir, the CLI as an operator runs it, and worker processes joined the way
a worker on another host joins (TELHA_* environment pointing at the core)."""

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
    return {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}


def has_graph_reads() -> bool:
    """Whether this core has the graph store's reads (`telha graph`, `telha node`)."""
    if MISSING:
        return False
    done = subprocess.run(
        [str(TELHA_BIN), "--help"], capture_output=True, text=True, check=False, timeout=30
    )
    return "graph" in done.stdout and "node" in done.stdout


class Core:
    """One `telha serve` with its own supervisor.toml (no pools: tests start workers)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.data_dir = root / "data"
        self.config = root / "supervisor.toml"
        self.config.write_text(
            f'[server]\nlisten = "127.0.0.1:0"\ndata_dir = "{self.data_dir}"\n'
            "[jobs]\nmax_attempts = 2\nlease_secs = 30\nbackoff_base_ms = 50\n"
            "backoff_max_ms = 200\n"
        )
        self.log_path = root / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.addr = ""
        self.token = ""
        self.workers: list[subprocess.Popen[bytes]] = []

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
        self.token = (self.data_dir / "token").read_text().strip()

    def worker(self, argv: list[str], formats: str, worker_id: str) -> None:
        """Starts a worker process (stderr to a log beside the core's)."""
        env = {
            **_clean_env(),
            "TELHA_CORE_ADDR": self.addr,
            "TELHA_WORKER_ID": worker_id,
            "TELHA_TOKEN": self.token,
            "TELHA_FORMATS": formats,
        }
        with (self.root / f"{worker_id}.log").open("ab") as log:
            self.workers.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log))

    def email_worker(self, worker_id: str = "email-1") -> None:
        self.worker([sys.executable, "-m", "email_worker"], "eml,msg", worker_id)

    def stop(self) -> None:
        for process in [*self.workers, self.process]:
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in [*self.workers, self.process]:
            if process is None:
                continue
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def log(self) -> str:
        logs = [self.log_path, *sorted(self.root.glob("*.log"))]
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in logs)

    def cli(self, *args: str, check: bool = True) -> Any:
        done = subprocess.run(
            [str(TELHA_BIN), *args, "--config", str(self.config), "--json"],
            env=_clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            if not check:
                return None
            raise AssertionError(f"telha {' '.join(args)}: {done.stderr}\n{self.log()}")
        return json.loads(done.stdout)

    def ingest(self, path: Path, **options: Any) -> dict[str, Any]:
        args = ["ingest", "--tenant", TENANT]
        for key, value in options.items():
            args += ["--option", f"{key}={json.dumps(value)}"]
        job: dict[str, Any] = self.cli(*args, str(path))
        return job

    def wait(
        self,
        condition: Callable[[], Any],
        what: str,
        timeout: float = 60,
    ) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.log()}")
            time.sleep(0.1)

    def finished(self, job_id: str) -> dict[str, Any]:
        job: dict[str, Any] = self.wait(
            lambda: (j := self.cli("job", job_id)) and j["state"] in FINISHED and j,
            f"job {job_id} to finish",
        )
        return job

    def jobs(self, **filters: str) -> list[dict[str, Any]]:
        args = ["jobs"]
        for key, value in filters.items():
            args += [f"--{key}", value]
        listed = self.cli(*args)
        jobs: list[dict[str, Any]] = listed["jobs"] if isinstance(listed, dict) else listed
        return jobs

    def node(self, node_id: str) -> dict[str, Any] | None:
        node: dict[str, Any] | None = self.cli("node", node_id, "--tenant", TENANT, check=False)
        return node
