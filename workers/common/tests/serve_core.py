"""One real `telha serve` for end-to-end tests, driven the way an operator drives it.

Every worker package's end-to-end tests start the core through this class: its own
supervisor.toml and data dir under a temp root, the address and token read back from the
files `serve` writes, and the CLI (`--json`) for everything else. Subclasses add only
what their format needs (a pool section, how their workers join).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[3]
TELHA_BIN = Path(os.environ.get("TELHA_BIN") or REPO_ROOT / "target" / "debug" / "telha")
MISSING = not (TELHA_BIN.is_file() and os.access(TELHA_BIN, os.X_OK))
FINISHED = frozenset({"succeeded", "dead", "cancelled"})
TENANT = "t1"

#: `[jobs]` for tests: few attempts and short backoff, so failures settle quickly.
TEST_JOBS: dict[str, float | int] = {
    "max_attempts": 2,
    "lease_secs": 30,
    "backoff_base_ms": 50,
    "backoff_max_ms": 200,
}


def clean_env(prefixes: tuple[str, ...] = ("TELHA_",)) -> dict[str, str]:
    """This process's environment without the variables that would steer the CLI or a
    worker away from the core under test (the CLI reads TELHA_TOKEN, TELHA_ADDR, ...)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


def children(pid: int) -> list[int]:
    """The pids whose parent is `pid` (from /proc: Linux)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    """The process's command line, words joined by spaces ("" once it is gone)."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class ServeCore:
    """`telha serve` with its own config and data dir; restartable on the same data dir."""

    #: Environment prefixes kept from the core and the CLI.
    env_prefixes: tuple[str, ...] = ("TELHA_",)
    #: How long `wait` polls by default, in seconds.
    wait_timeout: float = 60

    def __init__(
        self,
        root: Path,
        *,
        listen: str = "127.0.0.1:0",
        jobs: dict[str, float | int] | None = None,
        extra_toml: str = "",
        stop_timeout: float = 15,
    ) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.data_dir = root / "data"
        self.config = root / "supervisor.toml"
        settings = {**TEST_JOBS, **(jobs or {})}
        self.config.write_text(
            f'[server]\nlisten = "{listen}"\ndata_dir = "{self.data_dir}"\n'
            "[jobs]\n"
            + "".join(f"{key} = {value}\n" for key, value in settings.items())
            + extra_toml
        )
        self.log_path = root / "serve.log"
        self.stop_timeout = stop_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self.addr = ""
        self.token = ""
        #: Processes the test started beside the core (workers); stopped with it.
        self.children: list[subprocess.Popen[bytes]] = []

    # -- the process ---------------------------------------------------------------------

    def start(self, timeout: float = 30) -> None:
        addr_file = self.data_dir / "serve.addr"
        addr_file.unlink(missing_ok=True)  # left by the previous run: wait for the new one
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [str(TELHA_BIN), "serve", "--config", str(self.config)],
                stdout=log,
                stderr=log,
                env=clean_env(self.env_prefixes),
            )
        deadline = time.monotonic() + timeout
        while True:
            text = addr_file.read_text().strip() if addr_file.exists() else ""
            if text.rpartition(":")[2].isdigit():
                break
            if self.process.poll() is not None:
                raise AssertionError(f"telha serve exited {self.process.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"telha serve wrote no {addr_file} in {timeout}s:\n{self.log()}"
                )
            time.sleep(0.02)
        self.addr = text
        self.token = (self.data_dir / "token").read_text().strip()

    def stop(self) -> None:
        """SIGTERM to the children and the core, then SIGKILL what outlives the timeout."""
        running = [p for p in [*self.children, self.process] if p is not None and p.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        for process in running:
            try:
                process.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def kill(self) -> None:
        """Ends the core the hard way, as a crash would."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    def spawn(self, argv: list[str], name: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Starts a process beside the core (stdout and stderr to `<name>.log` in the root)."""
        with (self.root / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                argv, env={**clean_env(self.env_prefixes), **env}, stdout=log, stderr=log
            )
        self.children.append(process)
        return process

    def worker_env(self, worker_id: str, formats: str) -> dict[str, str]:
        """The environment a worker on another host joins with."""
        return {
            "TELHA_CORE_ADDR": self.addr,
            "TELHA_WORKER_ID": worker_id,
            "TELHA_TOKEN": self.token,
            "TELHA_FORMATS": formats,
        }

    def log(self) -> str:
        """The tail of the core's log and of every other log in the root."""
        others = sorted(p for p in self.root.glob("*.log") if p != self.log_path)
        logs = [p for p in [self.log_path, *others] if p.exists()]
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in logs)

    # -- the CLI -------------------------------------------------------------------------

    def run_cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        addr = ["--addr", self.addr] if self.addr else []
        return subprocess.run(
            [str(TELHA_BIN), *args, "--config", str(self.config), *addr],
            env=clean_env(self.env_prefixes),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def cli(self, *args: str, check: bool = True) -> Any:
        """`telha ARGS --json`, parsed; a failing command fails the test unless `check=False`
        (then None)."""
        done = self.run_cli(*args, "--json")
        if done.returncode != 0:
            if not check:
                return None
            raise AssertionError(
                f"telha {' '.join(args)} exited {done.returncode}:\n{done.stderr}\n{self.log()}"
            )
        return json.loads(done.stdout)

    def submit(
        self,
        source: str | Path,
        *,
        options: dict[str, Any] | None = None,
        fmt: str | None = None,
        wait: bool = False,
        tenant: str = TENANT,
    ) -> Any:
        """`telha ingest` of one file or URL, with JSON-encoded options."""
        args = ["ingest", "--tenant", tenant]
        if fmt is not None:
            args += ["--format", fmt]
        for key, value in (options or {}).items():
            args += ["--option", f"{key}={json.dumps(value)}"]
        if wait:
            args.append("--wait")
        return self.cli(*args, str(source))

    def wait(self, condition: Callable[[], Any], what: str, timeout: float | None = None) -> Any:
        """Polls `condition` until it returns something true, which it returns."""
        deadline = time.monotonic() + (self.wait_timeout if timeout is None else timeout)
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.log()}")
            time.sleep(0.1)

    def job(self, job_id: Any) -> dict[str, Any]:
        job: dict[str, Any] = self.cli("job", str(job_id))
        return job

    def finished(self, job_id: Any, timeout: float | None = None) -> dict[str, Any]:
        job: dict[str, Any] = self.wait(
            lambda: (j := self.job(job_id))["state"] in FINISHED and j,
            f"job {job_id} to finish",
            timeout,
        )
        return job

    def jobs(self, **filters: str) -> list[dict[str, Any]]:
        args = ["jobs"]
        for key, value in filters.items():
            args += [f"--{key}", value]
        listed = self.cli(*args)
        jobs: list[dict[str, Any]] = listed["jobs"] if isinstance(listed, dict) else listed
        return jobs

    def graph(self, job_id: Any, tenant: str = TENANT) -> dict[str, Any]:
        graph: dict[str, Any] = self.cli("graph", str(job_id), "--tenant", tenant)
        return graph

    def node(self, node_id: str, tenant: str = TENANT) -> dict[str, Any] | None:
        node: dict[str, Any] | None = self.cli("node", node_id, "--tenant", tenant, check=False)
        return node
