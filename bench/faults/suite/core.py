"""A real `telha serve` for the fault suite: its supervisor.toml, its process, its gRPC.

The core runs in its own session (so a SIGKILL of its group is a crash of the core alone:
the workers are in their own groups and must die by their parent-death signal). Every
pool gets `FAULTS_TAG=<run>-<generation>` in its environment, so the suite can find the
workers of one core generation in /proc and count orphans after a crash.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from workers_common._proto import telha_pb2, telha_pb2_grpc

log = logging.getLogger("faults.core")

REPO = Path(__file__).resolve().parents[3]
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
FAULT_WORKER = Path(__file__).with_name("fault_worker.py")


def telha_bin() -> Path:
    return Path(os.environ.get("TELHA_BIN", REPO / "target" / "debug" / "telha"))


@dataclass
class Pool:
    """One `[pools.NAME]` table."""

    formats: Sequence[str]
    command: Sequence[str]
    workers: int = 1
    job_timeout_secs: float = 60
    memory_mb: int | None = 1024
    cpu_secs: int | None = 60
    rss_mb: int | None = None
    """The resident-size watchdog instead of RLIMIT_AS (browsers: never both)."""
    open_files: int = 256
    max_restarts: int = 1000
    restart_window_secs: float = 1
    kill_grace_secs: float = 1
    env: Mapping[str, str] = field(default_factory=dict)


def worker_module(module: str) -> list[str]:
    return [str(VENV_PYTHON), "-m", module]


def real_pools(workers: int = 1) -> dict[str, Pool]:
    """The project's own workers, with the limits of the shipped supervisor.toml."""
    attach = "txt,eml,msg,csv,tsv,xlsx"
    return {
        "text": Pool(["txt", "text"], worker_module("example_worker"), workers, 60, 512, 120),
        "tabular": Pool(
            ["csv", "tsv", "xlsx"], worker_module("tabular_worker"), workers, 120, 2048
        ),
        "email": Pool(
            ["eml", "msg", "mbox"],
            worker_module("email_worker"),
            workers,
            60,
            1024,
            env={"EMAIL_ATTACHMENT_FORMATS": attach},
        ),
    }


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return "[" + ", ".join(_toml(v) for v in value) + "]"


class Core:
    """One data dir, one config, successive `telha serve` processes (generations)."""

    http_listen_known = True
    """Whether this binary knows `[server].http_listen` (the ops endpoint, DESIGN.md §7):
    when it does, it is turned off, so parallel cores never contend for its port."""

    def __init__(
        self,
        workdir: Path,
        pools: Mapping[str, Pool],
        *,
        run_tag: str,
        jobs: Mapping[str, Any] | None = None,
        graph: Mapping[str, Any] | None = None,
    ) -> None:
        self.workdir = workdir
        self.pools = dict(pools)
        self.run_tag = run_tag
        self.jobs = {
            "max_attempts": 3,
            # Over workers_common's 60 s heartbeat interval (a shorter lease expires under
            # any job longer than itself: a CPU spin on a loaded machine did).
            "lease_secs": 180,
            "backoff_base_ms": 50,
            "backoff_max_ms": 200,
            **(jobs or {}),
        }
        self.graph = dict(graph or {})
        self.config = workdir / "supervisor.toml"
        self.data_dir = workdir / "data"
        self.log_path = workdir / "serve.log"
        self.generation = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.addr = ""
        self.token = ""
        self._channel: grpc.Channel | None = None
        self.ingest: telha_pb2_grpc.IngestServiceStub
        self.worker: telha_pb2_grpc.WorkerServiceStub

    # -- configuration ---------------------------------------------------------------------

    def tag(self, generation: int | None = None) -> str:
        return f"{self.run_tag}-{self.generation if generation is None else generation}"

    def write_config(self) -> None:
        lines = [
            "[server]",
            'listen = "127.0.0.1:0"',
            f"data_dir = {_toml(str(self.data_dir))}",
            "shutdown_grace_secs = 5",
            *(['http_listen = ""'] if Core.http_listen_known else []),
            "",
            "[jobs]",
            *(f"{k} = {_toml(v)}" for k, v in self.jobs.items()),
            "",
        ]
        if self.graph:
            lines += ["[graph]", *(f"{k} = {_toml(v)}" for k, v in self.graph.items()), ""]
        for name, pool in self.pools.items():
            env = {**pool.env, "FAULTS_TAG": self.tag()}
            lines += [
                f"[pools.{name}]",
                f"formats = {_toml(list(pool.formats))}",
                f"workers = {pool.workers}",
                f"command = {_toml(list(pool.command))}",
                f"job_timeout_secs = {_toml(float(pool.job_timeout_secs))}",
                f"max_restarts = {pool.max_restarts}",
                f"restart_window_secs = {_toml(float(pool.restart_window_secs))}",
                f"kill_grace_secs = {_toml(float(pool.kill_grace_secs))}",
                f"env = {_toml(env)}",
                f"[pools.{name}.limits]",
                f"open_files = {pool.open_files}",
            ]
            if pool.memory_mb is not None:
                lines.append(f"memory_mb = {pool.memory_mb}")
            if pool.rss_mb is not None:
                lines.append(f"rss_mb = {pool.rss_mb}")
            if pool.cpu_secs is not None:
                lines.append(f"cpu_secs = {pool.cpu_secs}")
            lines.append("")
        self.config.write_text("\n".join(lines))

    # -- process ---------------------------------------------------------------------------

    def start(self, timeout: float = 90) -> None:
        """Starts a new generation and waits until its gRPC answers GetStatus."""
        self.generation += 1
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.write_config()
        addr_file = self.data_dir / "serve.addr"
        addr_file.unlink(missing_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
        env.setdefault("RUST_LOG", "warn")
        with self.log_path.open("ab") as out:
            out.write(f"\n=== generation {self.generation} ===\n".encode())
            out.flush()
            self.process = subprocess.Popen(
                [str(telha_bin()), "serve", "--config", str(self.config)],
                stdout=out,
                stderr=out,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not addr_file.exists():
            if self.process.poll() is not None:
                if Core.http_listen_known and "unknown field `http_listen`" in self.tail():
                    Core.http_listen_known = False
                    self.generation -= 1
                    self.start(timeout)
                    return
                raise RuntimeError(f"telha serve exited {self.process.returncode}: {self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"telha serve did not bind in {timeout}s: {self.tail()}")
            time.sleep(0.02)
        self.addr = addr_file.read_text().strip()
        self.token = (self.data_dir / "token").read_text().strip()
        self._connect()
        while True:
            try:
                self.ingest.GetStatus(telha_pb2.GetStatusRequest(), timeout=5)
                return
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _connect(self) -> None:
        if self._channel is not None:
            self._channel.close()
        creds = grpc.composite_channel_credentials(
            grpc.local_channel_credentials(),
            grpc.access_token_call_credentials(self.token),
        )
        opts = [
            ("grpc.max_send_message_length", 80 << 20),
            ("grpc.max_receive_message_length", 80 << 20),
            ("grpc.enable_retries", 0),
        ]
        self._channel = grpc.secure_channel(self.addr, creds, options=opts)
        self.ingest = telha_pb2_grpc.IngestServiceStub(self._channel)
        self.worker = telha_pb2_grpc.WorkerServiceStub(self._channel)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill9(self) -> None:
        """A crash of the core: SIGKILL its process group (the workers are not in it)."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM (drain), then SIGKILL if it does not stop in `timeout`."""
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log.warning("telha serve ignored SIGTERM for %ss; killing it", timeout)
            self.kill9()
            return None
        finally:
            if self._channel is not None:
                self._channel.close()
                self._channel = None

    def tail(self, size: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-size:].decode(errors="replace")
        except OSError:
            return ""

    def rss_mib(self) -> float:
        return rss_mib(self.pid)

    # -- clients ---------------------------------------------------------------------------

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> Any:
        """`telha --config C --json ARGS`: the parsed JSON document (None when it printed none)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
        env["RUST_LOG"] = "warn"
        done = subprocess.run(
            [str(telha_bin()), "--config", str(self.config), "--json", *args],
            capture_output=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode not in (0, 1):
            raise RuntimeError(f"telha {' '.join(args)} exited {done.returncode}: {done.stderr!r}")
        out = done.stdout.decode().strip()
        return json.loads(out) if out else None

    def job(self, job_id: str) -> telha_pb2.Job:
        job: telha_pb2.Job = self.ingest.GetJob(telha_pb2.GetJobRequest(job_id=job_id), timeout=30)
        return job

    def all_jobs(self, state: str = "", format: str = "") -> list[telha_pb2.Job]:
        jobs: list[telha_pb2.Job] = []
        token = ""
        while True:
            resp = self.ingest.ListJobs(
                telha_pb2.ListJobsRequest(
                    state=state, format=format, page_token=token, page_size=1000
                ),
                timeout=60,
            )
            jobs += resp.jobs
            if not resp.next_page_token:
                return jobs
            token = resp.next_page_token

    def status(self) -> telha_pb2.Status:
        status: telha_pb2.Status = self.ingest.GetStatus(telha_pb2.GetStatusRequest(), timeout=10)
        return status

    def submit(
        self,
        content: bytes,
        *,
        format: str,
        name: str,
        options: Mapping[str, Any] | None = None,
        key: str = "",
        tenant: str = "default",
        url: str = "",
    ) -> telha_pb2.Job:
        """Submits `content` (or, with `url`, a fetch job: no content follows)."""
        header = telha_pb2.SubmitHeader(
            tenant_id=tenant,
            format=format,
            name=name,
            options_json=json.dumps(dict(options or {})),
            idempotency_key=key,
            url=url,
        )

        def parts() -> Iterator[telha_pb2.SubmitJobRequest]:
            yield telha_pb2.SubmitJobRequest(header=header)
            for i in range(0, 0 if url else len(content), 1 << 20):
                yield telha_pb2.SubmitJobRequest(chunk=content[i : i + (1 << 20)])

        job: telha_pb2.Job = self.ingest.SubmitJob(parts(), timeout=60)
        return job

    def wait_finished(
        self, ids: Sequence[str], timeout: float, formats: Sequence[str] = ("",)
    ) -> dict[str, telha_pb2.Job]:
        """Polls until every job is succeeded/dead/cancelled or `timeout` passes."""
        final = {"succeeded", "dead", "cancelled"}
        pending = set(ids)
        done: dict[str, telha_pb2.Job] = {}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for job in (j for f in formats for j in self.all_jobs(format=f)):
                if job.id in pending and job.state in final:
                    done[job.id] = job
                    pending.discard(job.id)
            if pending:
                time.sleep(0.25)
        for job_id in pending:
            done[job_id] = self.job(job_id)
        return done


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def tagged_pids(tag_prefix: str) -> dict[int, str]:
    """Live processes whose environment has FAULTS_TAG starting with `tag_prefix`."""
    found: dict[int, str] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue
        for var in environ.split(b"\0"):
            if var.startswith(b"FAULTS_TAG=") and var[11:].decode().startswith(tag_prefix):
                found[int(entry.name)] = var[11:].decode()
    return found


def kill_tagged(tag_prefix: str) -> int:
    """SIGKILLs the process groups of every tagged process; how many processes there were."""
    pids = tagged_pids(tag_prefix)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
    return len(pids)


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def setup_logging() -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr
    )
