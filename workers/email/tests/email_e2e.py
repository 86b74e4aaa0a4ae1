"""The real core for the email worker's end-to-end tests (and the code worker's, which
read graphs back the same way): `telha serve` with no pools, and worker processes joined
the way a worker on another host joins (TELHA_* environment pointing at the core)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from serve_core import FINISHED, MISSING, TELHA_BIN, TENANT, ServeCore

__all__ = ["FINISHED", "MISSING", "TELHA_BIN", "TENANT", "Core", "has_graph_reads"]


def has_graph_reads() -> bool:
    """Whether this core has the graph store's reads (`telha graph`, `telha node`)."""
    if MISSING:
        return False
    done = subprocess.run(
        [str(TELHA_BIN), "--help"], capture_output=True, text=True, check=False, timeout=30
    )
    return "graph" in done.stdout and "node" in done.stdout


class Core(ServeCore):
    """One `telha serve` with its own supervisor.toml (no pools: tests start workers)."""

    def worker(self, argv: list[str], formats: str, worker_id: str) -> None:
        """Starts a worker process (its log beside the core's)."""
        self.spawn(argv, worker_id, self.worker_env(worker_id, formats))

    def email_worker(self, worker_id: str = "email-1") -> None:
        self.worker([sys.executable, "-m", "email_worker"], "eml,msg,mbox", worker_id)

    def ingest(self, path: Path, **options: Any) -> dict[str, Any]:
        job: dict[str, Any] = self.submit(path, options=options)
        return job
