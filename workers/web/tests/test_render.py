"""Rendering in the real Chromium (Debian's, /usr/bin/chromium): the auto rule, interception
under the guard, bounded load and settle, and the browser's life tied to its worker's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from web_worker.browser import find_chromium
from web_worker.handler import WebWorker

from web_site import Answer, Site, html_page, make_worker, serve, url_job


@pytest.fixture
def site() -> Iterator[Site]:
    """A real HTTP server on 127.0.0.1 for this test."""
    with serve() as running:
        yield running


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WebWorker]:
    """A worker allowed to reach 127.0.0.1 only."""
    running = make_worker(tmp_path)
    try:
        yield running
    finally:
        running.close()


pytestmark = [
    pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed"),
    pytest.mark.timeout(120),
]

SCRIPTED = (
    "<div id=app></div><script src='/app.js'></script>"
    "<noscript>Please enable JavaScript to use this app.</noscript>"
)
APP_JS = b"""
document.getElementById('app').innerHTML =
  '<h1>Rendered heading</h1><p>Only the script wrote this paragraph. It is long enough ' +
  'for the extractor to keep it as the main content of the page, which it is.</p>' +
  '<img src="http://169.254.169.254/latest/meta-data/">';
"""
STATIC_TEXT = "<p>" + "Plain server-side text that needs no script at all to be read. " * 4 + "</p>"


def render(worker: WebWorker, url: str, **options: Any) -> dict[str, Any]:
    options.setdefault("crawl_delay_ms", 0)
    options.setdefault("respect_robots", False)
    result: dict[str, Any] = json.loads(worker.handle(url_job(url, **options)))
    return result


def page_props(result: dict[str, Any]) -> dict[str, Any]:
    return dict(result["nodes"][0]["properties"])


@pytest.fixture
def app_site(site: Site) -> Site:
    site.add("/app", Answer(body=html_page("App", SCRIPTED)))
    site.add("/app.js", Answer(body=APP_JS, content_type="text/javascript"))
    site.add("/static", Answer(body=html_page("Static", STATIC_TEXT)))
    return site


def test_content_made_by_a_script_is_rendered(app_site: Site, worker: WebWorker) -> None:
    """auto renders a page with scripts and no text; the worker fetched its script itself,
    and the <img> at the metadata address was refused and counted on the PAGE."""
    result = render(worker, app_site.url("/app"))
    props = page_props(result)
    assert props["fetched_via"] == "chromium"
    assert "scripts" in props["render_reason"]
    assert "Only the script wrote this paragraph." in result["canonicalText"]
    assert props["blocked_requests"] == 1
    assert props["load_complete"] is True
    assert app_site.hits("/app.js") == 1
    assert app_site.hits("/app") == 1  # the document is the static fetch's bytes, not a refetch


def test_render_never_and_always(app_site: Site, worker: WebWorker) -> None:
    never = render(worker, app_site.url("/app"), render="never")
    assert page_props(never)["fetched_via"] == "static"
    assert "Only the script" not in never["canonicalText"]
    static = render(worker, app_site.url("/static"))
    assert page_props(static)["fetched_via"] == "static"  # auto: text and no script
    always = render(worker, app_site.url("/static"), render="always")
    assert page_props(always)["fetched_via"] == "chromium"
    assert always["canonicalText"] == static["canonicalText"]


@pytest.fixture
def other_loopback() -> Iterator[Site]:
    """A server on 127.0.0.2: loopback, but outside the tests' allow-list."""
    with serve(address="127.0.0.2") as running:
        running.add(
            "/x.js", Answer(body=b"document.title='reached';", content_type="text/javascript")
        )
        yield running


def test_subrequests_to_refused_addresses_never_leave(
    site: Site, other_loopback: Site, worker: WebWorker
) -> None:
    """A script on a refused address is aborted before any connection: that server sees
    nothing, and the request is counted."""
    body = f"<script src='{other_loopback.url('/x.js')}'></script>{STATIC_TEXT}"
    site.add("/p", Answer(body=html_page("Page", body)))
    result = render(worker, site.url("/p"), render="always")
    assert page_props(result)["blocked_requests"] == 1
    assert other_loopback.seen == []


def test_a_page_that_never_finishes_loading_is_bounded(site: Site, worker: WebWorker) -> None:
    """A frame that never arrives: `load` never fires; after render_timeout_ms and the
    settle the DOM is read anyway, and the PAGE says the load did not complete."""
    site.add("/hang", Answer(body=b"<p>late</p>", delay_s=30))
    script = (
        "document.body.insertAdjacentHTML('beforeend', "
        "'<p>' + 'Written by the script while the frame hangs forever. '.repeat(5) + '</p>')"
    )
    body = f"<iframe src='/hang'></iframe><script>{script}</script>"
    site.add("/slow", Answer(body=html_page("Slow", body)))
    started = time.monotonic()
    result = render(worker, site.url("/slow"), render_timeout_ms=2000, settle_ms=500)
    assert time.monotonic() - started < 15
    props = page_props(result)
    assert props["fetched_via"] == "chromium"
    assert props["load_complete"] is False
    assert "Written by the script while the frame hangs forever." in result["canonicalText"]


def test_browser_starts_lazily_and_restarts_after_n_pages(app_site: Site, tmp_path: Path) -> None:
    worker = make_worker(tmp_path, WEB_BROWSER_MAX_PAGES="2")
    try:
        render(worker, app_site.url("/static"))
        assert worker.renderer.launches == 0  # no page needed it yet
        pids = []
        for _ in range(3):
            render(worker, app_site.url("/app"))
            pids.append(worker.renderer.chromium_pid)
        assert worker.renderer.launches == 2
        assert pids[0] == pids[1] != pids[2]
        assert not _alive(pids[0])
        assert pids[2] is not None
        assert os.getpgid(pids[2]) == os.getpgid(0)
    finally:
        worker.close()


def test_a_dead_browser_is_replaced(app_site: Site, worker: WebWorker) -> None:
    render(worker, app_site.url("/app"))
    pid = worker.renderer.chromium_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    _wait_gone([pid])
    result = render(worker, app_site.url("/app"))
    assert page_props(result)["fetched_via"] == "chromium", json.dumps(page_props(result))
    assert "Only the script wrote this paragraph." in result["canonicalText"]
    assert worker.renderer.launches == 2


def _alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _wait_gone(pids: list[int], timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


RENDER_AND_WAIT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {tests!r})
    from web_site import make_worker, url_job
    from pathlib import Path
    worker = make_worker(Path({tmp!r}))
    worker.handle(url_job({url!r}, crawl_delay_ms=0, respect_robots=False, render="always"))
    print(worker.renderer.chromium_pid, flush=True)
    time.sleep(120)
    """
)


def test_sigkill_of_the_worker_leaves_no_chromium(app_site: Site, tmp_path: Path) -> None:
    """The worker process is SIGKILLed alone (not its group): Chromium and every process it
    started are gone within seconds (parent-death signal; renderers follow the browser).
    Its profile folder stays (nobody is left to remove it) until the next browser's start
    sweeps it: its lock died with the worker."""
    import tempfile

    from web_worker.browser import sweep_stale

    script = RENDER_AND_WAIT.format(
        tests=str(Path(__file__).parent), tmp=str(tmp_path), url=app_site.url("/app")
    )
    scratch_root = tempfile.mkdtemp(prefix="t", dir="/tmp")  # short: the socket path fits
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, "TMPDIR": scratch_root},
    )
    try:
        assert process.stdout is not None
        chromium = int(process.stdout.readline())
        members = [p for p in _group_members(process.pid) if p != process.pid]
        assert chromium in members
        assert len(members) >= 3  # browser, its zygote/renderers, Playwright's driver
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        assert _wait_gone(members) == []
        assert _group_members(process.pid) == []
        # (Playwright's driver leaves its own `playwright-artifacts-*`: under the core,
        # the worker's TMPDIR is its own and removed when it exits.)
        assert len(list(Path(scratch_root).glob("telha-chromium-*"))) == 1
        assert sweep_stale(scratch_root, "telha-chromium-") == 1
        assert list(Path(scratch_root).glob("telha-chromium-*")) == []
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        shutil.rmtree(scratch_root, ignore_errors=True)


@pytest.mark.parametrize("deep", [False, True], ids=["short-tmpdir", "deep-tmpdir"])
def test_a_killed_browser_leaves_nothing_in_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deep: bool
) -> None:
    """Chromium keeps a singleton socket in `$TMPDIR/org.chromium.Chromium.*`, removed only
    by a clean exit; the browser is SIGKILLed, so every run of this suite left 11 such
    folders in /tmp. Its TMPDIR is now inside its profile, which goes with it; under a
    TMPDIR too deep for the socket's path, a folder of its own removed beside it."""
    import tempfile

    from web_worker.browser import ChromiumProcess, sweep_stale

    outer = Path(tempfile.mkdtemp(prefix="t", dir="/tmp"))  # short: the socket path fits
    if deep:
        outer = outer / ("d" * 60)
        outer.mkdir()
    try:
        monkeypatch.setenv("TMPDIR", str(outer))
        monkeypatch.setattr(tempfile, "tempdir", str(outer))
        executable = find_chromium()
        assert executable is not None
        before = set(Path("/tmp").glob("telha-chromium-tmp-*"))
        browser = ChromiumProcess(executable)
        assert browser.alive
        assert Path(browser.profile).parent == outer
        assert Path(browser.scratch).parent == (Path("/tmp") if deep else Path(browser.profile))
        assert sweep_stale(str(outer), "telha-chromium-") == 0  # alive: locked, kept
        assert Path(browser.profile).is_dir()
        browser.stop()
        assert browser.process.poll() is not None
        assert list(outer.iterdir()) == []
        assert set(Path("/tmp").glob("telha-chromium-tmp-*")) == before
    finally:
        shutil.rmtree(outer if not deep else outer.parent, ignore_errors=True)
