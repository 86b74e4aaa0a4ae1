"""Running workers for tests: a consumer in a thread, or a real worker process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from workers_common import WorkerConsumer

WORKER_APP = Path(__file__).with_name("worker_app.py")


class WorkerProcess:
    """`python worker_app.py` with the TELHA_* environment; stderr goes to a file."""

    def __init__(
        self,
        addr: str,
        token: str,
        formats: str,
        log_dir: Path,
        *,
        worker_id: str = "w1",
        env: dict[str, str] | None = None,
        module: str | None = None,
    ) -> None:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
        full_env = {
            **clean,
            "TELHA_CORE_ADDR": addr,
            "TELHA_WORKER_ID": worker_id,
            "TELHA_TOKEN": token,
            "TELHA_FORMATS": formats,
            **(env or {}),
        }
        self.log_path = log_dir / f"worker-{worker_id}.log"
        argv = [sys.executable, "-m", module] if module else [sys.executable, str(WORKER_APP)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(argv, env=full_env, stdout=log, stderr=log)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self, timeout: float = 20) -> int:
        """SIGTERM, then the exit code (SIGKILL and a failure if it does not stop)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"worker ignored SIGTERM for {timeout}s:\n{self.log()}") from None

    def wait(self, timeout: float = 20) -> int:
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class ConsumerThread:
    """A WorkerConsumer running in a thread of the test process (no signal handlers)."""

    def __init__(self, consumer: WorkerConsumer) -> None:
        self.consumer = consumer
        self.exit_code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.exit_code = self.consumer.run()

    def stop(self, timeout: float = 10) -> int | None:
        self.consumer.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the consumer did not stop"
        return self.exit_code
