"""The real core for the web worker's end-to-end tests: `telha serve` with a `[pools.web]`
shaped like the shipped one (rss_mb watchdog, WEB_ALLOW_NETS in the pool's env), so the
supervisor itself spawns the workers, and the CLI as an operator runs it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from serve_core import FINISHED, MISSING, TELHA_BIN, TENANT, ServeCore

__all__ = ["FINISHED", "MISSING", "TELHA_BIN", "TENANT", "WebCore"]


class WebCore(ServeCore):
    """One `telha serve` whose web pool may reach 127.0.0.1 only."""

    env_prefixes = ("TELHA_", "WEB_")
    wait_timeout = 90

    def __init__(self, root: Path, workers: int = 1, content_formats: str = "pdf,txt") -> None:
        env = {
            "WEB_ALLOW_NETS": "127.0.0.1/32",
            "WEB_STATE_DIR": str(root / "web-state"),
            "WEB_CONTENT_FORMATS": content_formats,
        }
        env_toml = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
        pool = (
            f'[pools.web]\nformats = ["web"]\nworkers = {workers}\n'
            f'command = [{json.dumps(sys.executable)}, "-m", "web_worker"]\n'
            "job_timeout_secs = 120\n"
            f"env = {{ {env_toml} }}\n"
            "[pools.web.limits]\nrss_mb = 2048\nopen_files = 1024\n"
        )
        super().__init__(root, jobs={"lease_secs": 60}, extra_toml=pool, stop_timeout=40)

    def ingest(self, url: str, *, wait: bool = False, **options: Any) -> Any:
        return self.submit(url, options=options, wait=wait)

    def settled(self, fmt: str = "web", timeout: float = 120) -> list[dict[str, Any]]:
        """The jobs of `fmt` once none is queued, leased or retrying."""

        def done() -> list[dict[str, Any]] | None:
            jobs = self.jobs(format=fmt)
            return jobs if jobs and all(j["state"] in FINISHED for j in jobs) else None

        settled: list[dict[str, Any]] = self.wait(done, f"{fmt} jobs to finish", timeout)
        return settled

    def worker_pids(self) -> list[int]:
        status = self.cli("status")
        [pool] = [p for p in status["pools"] if p["name"] == "web"]
        return [int(w["pid"]) for w in pool["workers"] if w.get("pid")]
