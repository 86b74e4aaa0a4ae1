"""Politeness across the pool's workers: one fetch at a time per host, and a minimum interval.

The state lives in a directory every worker of the pool shares (`WEB_STATE_DIR`, default
the pool's shared folder under the core's data dir, `TELHA_POOL_TMP`, else
`<tmp>/telha-web-<uid>`): per host a file holding, under an exclusive `flock`, the time the
last fetch ended and a "not before" time set by a `Retry-After`. Why there:

- the workers are separate processes (one pool, one host), and the core keeps no per-host
  state and routes jobs by format only, so the rule must be shared below the core;
- a kernel lock is released when its holder dies, even by SIGKILL: no stale lock to clean
  up after a crash, and no extra process to keep alive;
- the file is the only state, so a recycled worker picks up where the last one left off.

Workers on other hosts share it only if the directory is on a file system with working
`flock` between them; otherwise each host keeps its own count (documented).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workers_common import FetchFailed

__all__ = ["STATE_DIR_ENV", "HostSlots", "default_state_dir"]

STATE_DIR_ENV = "WEB_STATE_DIR"
POOL_TMP_ENV = "TELHA_POOL_TMP"
_POLL_S = 0.05
_FIRST_POLL_S = 0.002
_MAX_NOT_BEFORE_S = 3600.0


def default_state_dir() -> Path:
    """`WEB_STATE_DIR`; else the pool's shared folder the core gives its workers
    (`TELHA_POOL_TMP`: each worker's TMPDIR is its own); else `<tmp>/telha-web-<uid>`."""
    configured = os.environ.get(STATE_DIR_ENV)
    if configured:
        return Path(configured)
    pool = os.environ.get(POOL_TMP_ENV)
    if pool:
        return Path(pool) / "web-hosts"
    return Path(tempfile.gettempdir()) / f"telha-web-{os.getuid()}"


def _read(handle: int) -> tuple[float, float]:
    os.lseek(handle, 0, os.SEEK_SET)
    raw = os.read(handle, 128).decode("ascii", "replace").split()
    try:
        return float(raw[0]), float(raw[1])
    except (IndexError, ValueError):
        return 0.0, 0.0


def _write(handle: int, last_end: float, not_before: float) -> None:
    # A fixed-width record written in place: no truncation, one syscall.
    os.pwrite(handle, f"{last_end:20.6f} {not_before:20.6f}\n".encode("ascii"), 0)


class HostSlots:
    """Per-host turns, shared through lock files; wall-clock times (shared by processes)."""

    def __init__(self, state_dir: Path | None = None, max_wait_s: float = 120.0) -> None:
        self.dir = state_dir or default_state_dir()
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.max_wait_s = max_wait_s

    def _path(self, host: str) -> Path:
        digest = hashlib.sha256(host.encode("utf-8")).hexdigest()[:32]
        return self.dir / f"{digest}.host"

    @contextmanager
    def turn(self, host: str, min_interval_s: float) -> Iterator[None]:
        """Holds `host`'s turn: waits for the lock, then for the interval since the last
        fetch (and any Retry-After); the fetch runs inside, its end is recorded after.
        Waiting longer than `max_wait_s` in all is `fetch_failed` (retried later)."""
        give_up = time.monotonic() + self.max_wait_s
        handle = os.open(self._path(host), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _lock(handle, host, give_up)
            last_end, not_before = _read(handle)
            ready = max(last_end + min_interval_s, not_before)
            wait = ready - time.time()
            if wait > give_up - time.monotonic():
                raise FetchFailed(f"politeness: {host} may not be fetched for {wait:.1f} s")
            if wait > 0:
                time.sleep(wait)
            try:
                yield
            finally:
                _, not_before = _read(handle)
                _write(handle, time.time(), not_before)
        finally:
            os.close(handle)  # closing releases the flock

    def defer(self, host: str, seconds: float) -> None:
        """Records that `host` asked not to be fetched for `seconds` (Retry-After)."""
        seconds = min(max(seconds, 0.0), _MAX_NOT_BEFORE_S)
        handle = os.open(self._path(host), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
            last_end, not_before = _read(handle)
            _write(handle, last_end, max(not_before, time.time() + seconds))
        finally:
            os.close(handle)


def _lock(handle: int, host: str, give_up: float) -> None:
    # Polled, not blocking, so the wait is bounded; from 2 ms doubling to 50 ms, as a fetch
    # of a small page holds the lock for a few milliseconds only.
    pause = _FIRST_POLL_S
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > give_up:
                raise FetchFailed(f"politeness: {host} stayed busy (another fetch)") from None
            time.sleep(pause)
            pause = min(pause * 2, _POLL_S)
