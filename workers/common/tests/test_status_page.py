"""The core's status page in real headless Chromium, against a live `telha serve`.

A supervised pool runs the misbehave worker (tests/workers/misbehave.py); one job's worker
prints a native allocation failure to stderr and aborts (the supervisor's `oom`). The page,
opened with the token, shows the pool and its worker's last exit, the failure with that
stderr tail, and the job's own page; the browser's console stays free of errors. A
screenshot of each page is saved in the test's temp dir.

The core is started by serve_core.ServeCore (TELHA_BIN or target/debug/telha); Chromium is
Debian's (`scripts/system-deps.sh` installs it). Without either, the test skips.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from web_worker.browser import BASE_FLAGS, find_chromium

from serve_core import MISSING, REPO_ROOT, TELHA_BIN, ServeCore

CHROMIUM = find_chromium()
MISBEHAVE = REPO_ROOT / "tests" / "workers" / "misbehave.py"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(120),
    pytest.mark.skipif(MISSING, reason=f"core binary {TELHA_BIN} not built yet (cargo build)"),
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/system-deps.sh)"),
]


class StatusCore(ServeCore):
    """The shared `telha serve` helper with one misbehave pool and the operations
    endpoint on a free port (written to <data_dir>/http.addr)."""

    def __init__(self, root: Path) -> None:
        pool = (
            "[pools.misbehave]\n"
            'formats = ["txt"]\n'
            "workers = 1\n"
            f'command = ["{sys.executable}", "{MISBEHAVE}"]\n'
        )
        super().__init__(root, jobs={"max_attempts": 1}, extra_toml=pool)
        text = self.config.read_text()
        self.config.write_text(text.replace("[jobs]\n", 'http_listen = "127.0.0.1:0"\n[jobs]\n', 1))
        self.http = ""

    def start(self, timeout: float = 30) -> None:
        super().start(timeout)
        http_file = self.data_dir / "http.addr"
        self.http = self.wait(
            lambda: http_file.exists() and http_file.read_text().strip(), "http.addr"
        )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[StatusCore]:
    core = StatusCore(tmp_path / "core")
    core.start()
    yield core
    core.stop()


def test_status_page_shows_pools_and_the_failure_stderr_without_console_errors(
    served: StatusCore, tmp_path: Path
) -> None:
    from playwright.sync_api import sync_playwright

    doc = tmp_path / "bad.txt"
    doc.write_text("fails\n")
    job = served.submit(doc, options={"mode": "abort_alloc"}, fmt="txt", wait=False)
    job_id = job["id"]
    assert served.finished(job_id)["state"] == "dead"

    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(BASE_FLAGS))
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
