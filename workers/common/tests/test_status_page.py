"""The core's status page in real headless Chromium, against a live `telha serve`.

A supervised pool runs the misbehave worker (tests/workers/misbehave.py); one job's
worker prints a native allocation failure to stderr and aborts (the supervisor's `oom`). The page, opened with the token, shows the pool and its worker,
the failure with that stderr tail, and the job's own page; the browser's console stays
free of errors. A screenshot of each page is saved in the test's temp dir.

The core binary is TELHA_BIN or target/debug/telha; Chromium is Debian's
(`scripts/system-deps.sh` installs it). Without either, the test skips.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
TELHA_BIN = Path(os.environ.get("TELHA_BIN") or REPO_ROOT / "target" / "debug" / "telha")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MISBEHAVE = REPO_ROOT / "tests" / "workers" / "misbehave.py"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        not (TELHA_BIN.is_file() and os.access(TELHA_BIN, os.X_OK)),
        reason=f"core binary {TELHA_BIN} not built yet (cargo build, or set TELHA_BIN)",
    ),
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/system-deps.sh)"),
]


def _wait_file(path: Path, process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + 30
    while not (path.exists() and path.read_text().strip()):
        if process.poll() is not None:
            raise AssertionError(f"telha serve exited:\n{log.read_text(errors='replace')}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {path}:\n{log.read_text(errors='replace')}")
        time.sleep(0.02)
    return path.read_text().strip()


class Served:
    """`telha serve` with one misbehave pool and the operations endpoint on port 0."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "supervisor.toml"
        self.config.write_text(
            "[server]\n"
            'listen = "127.0.0.1:0"\n'
            'data_dir = "data"\n'
            'http_listen = "127.0.0.1:0"\n'
            "shutdown_grace_secs = 1\n"
            "[jobs]\n"
            "max_attempts = 1\n"
            "[pools.misbehave]\n"
            'formats = ["txt"]\n'
            "workers = 1\n"
            f'command = ["{sys.executable}", "{MISBEHAVE}"]\n'
        )
        self.log = root / "serve.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TELHA_")}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [str(TELHA_BIN), "--config", str(self.config), "serve"],
                stdout=log,
                stderr=log,
                env=env,
            )
        data = root / "data"
        self.addr = _wait_file(data / "serve.addr", self.process, self.log)
        self.http = _wait_file(data / "http.addr", self.process, self.log)
        self.token = (data / "token").read_text().strip()
        self.env = env

    def ingest_and_wait(self, path: Path, mode: str) -> str:
        """Submits `path` with option mode=`mode`, waits, and returns the job id."""
        argv = [str(TELHA_BIN), "--config", str(self.config), "ingest", "--format", "txt"]
        argv += ["--option", f"mode={mode}", "--wait", "--json", str(path)]
        done = subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.stdout.startswith("{"), f"{done.stdout}\n{done.stderr}"
        job = json.loads(done.stdout)
        assert job["state"] in {"succeeded", "dead"}, job
        job_id: str = job["id"]
        return job_id

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    s = Served(tmp_path)
    yield s
    s.stop()


def test_status_page_shows_pools_and_the_failure_stderr_without_console_errors(
    served: Served, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    doc = tmp_path / "bad.txt"
    doc.write_text("fails\n")
    job_id = served.ingest_and_wait(doc, "abort_alloc")

    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"http://{served.http}/?token={served.token}", wait_until="load")
            pools = page.locator("#pools").inner_text()
            assert "misbehave" in pools
            assert "oom (signal 6)" in page.locator("#workers").inner_text()
            failure = page.locator("#failures tr.failure").first
            assert "oom" in failure.locator("td.kind").inner_text()
            stderr = failure.locator("pre.stderr").inner_text()
            assert "memory allocation of 1073741824 bytes failed" in stderr
            page.screenshot(path=str(tmp_path / "status.png"), full_page=True)

            # The cookie set by ?token= carries the job page.
            failure.locator(f'a[href="/jobs/{job_id}"]').click()
            page.wait_for_load_state("load")
            assert page.locator("#state").inner_text() == "dead"
            assert "bytes failed" in page.locator("#job-failures").inner_text()
            page.screenshot(path=str(tmp_path / "job.png"), full_page=True)
        finally:
            browser.close()
    assert errors == [], errors
    assert (tmp_path / "status.png").stat().st_size > 1000
