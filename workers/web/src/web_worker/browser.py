"""The worker's Chromium: started lazily, one per worker, restarted after N pages or when it
dies, and never alive after its worker.

Chromium is started here, not by Playwright's `launch()`: Playwright starts a browser in
a session of its own, out of the worker's process group, where the pool's `rss_mb`
watchdog cannot see its memory and the supervisor's group kill cannot reach it. Started
as our own child, Chromium stays in the worker's group, and `setpriv --pdeathsig KILL`
(a prctl before exec) kills it when the worker dies, even by SIGKILL; its own children
(renderers, zygote) end with it. Playwright then attaches over CDP on a loopback port.

Chromium reaches no network itself: every request the page makes is intercepted
(`route`) and either refused by the guard, or fetched by the worker's own pinned fetcher
and fulfilled from it. A dead proxy and a resolver that resolves nothing back that up,
for anything that would slip past interception (prefetches, WebSockets).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from playwright.async_api import Browser, BrowserContext, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from workers_common import FetchFailed, Unsupported
from workers_common.children import pdeathsig_argv

__all__ = ["BASE_FLAGS", "CHROMIUM_ENV", "ChromiumProcess", "Renderer", "find_chromium"]

CHROMIUM_ENV = "WEB_CHROMIUM"
BASE_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Flags for Debian's Chromium run headless as a service: no sandbox of its own (the pool's
limits are the boundary), no GPU, and nothing of its own on the network in the background."""
_FLAGS = (
    "--headless",
    *BASE_FLAGS,
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--dns-prefetch-disable",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)
_START_TIMEOUT_S = 20.0
T = TypeVar("T")


def find_chromium(environ: Mapping[str, str] = os.environ) -> str | None:
    """The Chromium to run: `WEB_CHROMIUM` (empty: rendering off), else `chromium` on PATH."""
    if CHROMIUM_ENV in environ and not environ[CHROMIUM_ENV]:
        return None
    configured = environ.get(CHROMIUM_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _cpu_limit_argv() -> list[str]:
    """Lifts the browser's CPU soft limit to the hard one.

    The supervisor's per-job RLIMIT_CPU is a soft limit it moves on the worker at each
    lease; a child inherits the value of the moment it starts and keeps it for its whole
    life, so a browser serving 50 pages would be SIGXCPU'd for the worker's budget. The
    browser is bounded by the render time limits and the job's wall clock instead.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    tool = shutil.which("prlimit")
    if soft == hard or tool is None:
        return []
    shown = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    return [tool, f"--cpu={shown}:{shown}", "--"]


_SOCKET_TAIL = len("/org.chromium.Chromium.XXXXXX/SingletonSocket")
_MAX_SOCKET_PATH = 107
"""A Unix socket's path fits 108 bytes with its NUL: Chromium does not start past it."""
_PROFILE_PREFIX = "telha-chromium-"
_SCRATCH_PREFIX = "telha-chromium-tmp-"
_LOCK = ".telha-lock"
"""In each folder made for a browser, locked (flock) by its worker while the folder is in
use: a folder whose lock nobody holds was left by a worker that was killed."""


class _Claimed:
    """A fresh folder under `parent`, named `prefix`..., locked by this process until
    `release`. It is made and locked under a hidden name and renamed into place, so a
    sweep never sees it unlocked."""

    def __init__(self, prefix: str, parent: str | None) -> None:
        staging = tempfile.mkdtemp(prefix=".claiming-", dir=parent)
        self._lock = os.open(
            os.path.join(staging, _LOCK), os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600
        )
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        final = tempfile.mkdtemp(prefix=prefix, dir=parent)  # a free name, then taken
        os.rename(staging, final)
        self.path = final

    def release(self) -> None:
        _remove_tree(self.path)
        with contextlib.suppress(OSError):
            os.close(self._lock)


def sweep_stale(parent: str, prefix: str) -> int:
    """Removes the folders under `parent` named `prefix`... whose lock nobody holds (their
    worker was SIGKILLed before it could remove them); returns how many."""
    removed = 0
    for entry in sorted(Path(parent).glob(prefix + "*")):
        try:
            fd = os.open(entry / _LOCK, os.O_RDWR | os.O_CLOEXEC)
        except OSError:  # not one of ours, or from before the locks
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its worker is alive
            os.close(fd)
            continue
        _remove_tree(str(entry))
        os.close(fd)
        removed += 1
    return removed


def _scratch_dir(profile: _Claimed) -> _Claimed | None:
    """Chromium's TMPDIR, None for inside the profile. Chromium keeps its singleton socket
    in a folder of its own under TMPDIR, which only a clean exit removes; the browser is
    SIGKILLed (stop), so the folder goes inside the profile and is removed with it, unless
    the socket's path would then be too long (a deep TMPDIR, such as a worker's under the
    core's data dir): then a locked folder of its own under /tmp, removed beside it."""
    inside = os.path.join(profile.path, "tmp")
    if len(inside.encode()) + _SOCKET_TAIL <= _MAX_SOCKET_PATH:
        os.mkdir(inside, 0o700)
        return None
    sweep_stale("/tmp", _SCRATCH_PREFIX)
    return _Claimed(_SCRATCH_PREFIX, "/tmp")


class ChromiumProcess:
    """One Chromium child in the worker's process group, with its CDP endpoint."""

    def __init__(self, executable: str) -> None:
        sweep_stale(tempfile.gettempdir(), _PROFILE_PREFIX)
        self._profile = _Claimed(_PROFILE_PREFIX, None)
        self.profile = self._profile.path
        self._scratch = _scratch_dir(self._profile)
        inside = os.path.join(self.profile, "tmp")
        self.scratch = inside if self._scratch is None else self._scratch.path
        argv = [
            *_cpu_limit_argv(),
            *pdeathsig_argv(),
            executable,
            *_FLAGS,
            f"--user-data-dir={self.profile}",
        ]
        self.process = subprocess.Popen(
            [*argv, "about:blank"],
            env={**os.environ, "TMPDIR": self.scratch},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.endpoint = self._wait_endpoint()

    def _wait_endpoint(self) -> str:
        marker = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            lines = marker.read_text().splitlines() if marker.exists() else []
            if len(lines) >= 2 and lines[0].isdigit():
                return f"ws://127.0.0.1:{lines[0]}{lines[1]}"
            time.sleep(0.02)
        self.stop()
        raise FetchFailed("chromium did not start (no DevTools endpoint)")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            # Its renderers are its children in our group: SIGKILL the browser, they follow.
            self.process.send_signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self._profile.release()
        if self._scratch is not None:
            self._scratch.release()


def _remove_tree(path: str) -> None:
    """Removes a folder the browser wrote in: its renderers outlive it by a moment and may
    still add a file while it is removed, so a second try follows a short wait."""
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.05)


class Renderer:
    """Owns the event loop, Playwright's driver and the browser; restarts the browser after
    `max_pages` pages or when it has died."""

    def __init__(self, executable: str | None, max_pages: int = 50) -> None:
        self.executable = executable
        self.max_pages = max_pages
        self.pages = 0
        self.launches = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._playwright: Playwright | None = None
        self._chromium: ChromiumProcess | None = None
        self._browser: Browser | None = None
        self._context: BrowserContext | None = None

    @property
    def available(self) -> bool:
        return self.executable is not None

    @property
    def chromium_pid(self) -> int | None:
        return self._chromium.process.pid if self._chromium is not None else None

    def run(self, make: Callable[[BrowserContext], Coroutine[Any, Any, T]]) -> T:
        """Runs `make(context)` on the worker's loop, in the context of a browser that is up
        (one context per browser: making one costs ~0.2 s over CDP)."""
        if self.executable is None:
            raise Unsupported("rendering needs Chromium, and none is installed (WEB_CHROMIUM)")
        loop = self._loop or asyncio.new_event_loop()
        self._loop = loop
        browser = loop.run_until_complete(self._ensure())
        try:
            return loop.run_until_complete(make(browser))
        except PlaywrightError as err:
            if "closed" not in str(err):
                raise
            # The browser died between pages (killed, crashed) before we could tell:
            # once more with a fresh one.
            loop.run_until_complete(self._close_browser())
            browser = loop.run_until_complete(self._ensure())
            return loop.run_until_complete(make(browser))
        finally:
            self.pages += 1

    async def _ensure(self) -> BrowserContext:
        healthy = (
            self._browser is not None
            and self._browser.is_connected()
            and self._chromium is not None
            and self._chromium.alive
        )
        if healthy and self.pages < self.max_pages and self._context is not None:
            return self._context
        await self._close_browser()
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        assert self.executable is not None
        self._chromium = ChromiumProcess(self.executable)
        self._browser = await self._playwright.chromium.connect_over_cdp(self._chromium.endpoint)
        self._context = await self._browser.new_context(service_workers="block")
        self.pages = 0
        self.launches += 1
        return self._context

    async def _close_browser(self) -> None:
        browser, self._browser = self._browser, None
        self._context = None
        if browser is not None:
            # A browser that died or hangs is killed below anyway.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), 5)
        chromium, self._chromium = self._chromium, None
        if chromium is not None:
            chromium.stop()

    def restart(self) -> None:
        """Drops the browser (a wedged page): the next page starts a fresh one."""
        if self._loop is not None:
            self._loop.run_until_complete(self._close_browser())

    def close(self) -> None:
        if self._loop is None:
            return
        # Route handlers still waiting on a sub-request of an earlier page end here.
        pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.run_until_complete(self._close_browser())
        if self._playwright is not None:
            self._loop.run_until_complete(self._playwright.stop())
            self._playwright = None
        self._loop.close()
        self._loop = None
