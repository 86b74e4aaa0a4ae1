"""A second process that shares the decoding of a long PDF's pages with the worker, so one
PDF job uses two cores for its slowest step.

docling-parse holds the GIL while it decodes a page (about 3.5 ms of a text page, most of
a PDF job), so threads cannot share that work; a process can. The worker starts the
helper at its own start (`python -m docling_worker.pdf_helper`), before its own imports,
so both import side by side. For a PDF of at least MIN_PAGES pages, `PdfSource.pages`
sends the helper the file; the helper decodes pages from the last one down, sending each
as it is done (pdf_page's JSON form, which round-trips exactly), while the worker decodes
from the first one up and, before each page, takes what has arrived. The worker tells the
helper which pages it has claimed; they meet in the middle wherever that falls (a busy
core, a slow helper, heavier pages at one end), and neither waits for the other: a page
the helper has not sent yet, the worker decodes itself. The pages, and so the
submission, are the same bytes whichever process decoded each.

What can go wrong, and what happens:

- the helper is not ready yet (still importing), still finishing an earlier request, or
  turned off (`DOCLING_PDF_HELPER=0` in the pool's env): the worker decodes every page;
- the helper dies (a crash in docling-parse, its CPU limit, a kill) or sends nonsense:
  the worker keeps the pages it already had and decodes the rest (so a PDF that crashes
  the decoder still crashes the worker, and the core classifies it as before); a fresh
  helper is started;
- a page the helper cannot decode: it stops there, and the worker reaches that page
  itself and fails with the same InvalidInput it always would (the first bad page in
  page order);
- the job ends early (an error in the worker's half): the helper is told every page is
  claimed and stops after its current page; its late frames carry the old request id
  and are skipped.

Limits: the helper inherits the worker's rlimits at spawn (RLIMIT_AS, RLIMIT_NOFILE); the
core sets the worker's RLIMIT_CPU afresh for each job, so each request carries the CPU
seconds the worker has left and the helper sets its own limit to that much more than it
has used. It ignores SIGTERM (the pool's stop signal goes to the whole process group; the
worker finishes its job, and the helper exits when the worker's pipe closes) and dies
with the worker (PR_SET_PDEATHSIG). Its stdout carries only frames (8-byte big-endian
length, then JSON or the PDF's bytes); anything a library prints goes to stderr instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import logging
import math
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pdf_page import PageContent

__all__ = ["ENV", "HELPER", "MIN_PAGES", "Helper", "Share", "serve"]

log = logging.getLogger(__name__)

ENV = "DOCLING_PDF_HELPER"
"""`0` in the pool's env turns the helper off (default on)."""
MIN_PAGES = 8
"""PDFs with fewer pages are decoded by the worker alone (under ~30 ms of decoding)."""
_PARENT = "DOCLING_PDF_HELPER_PARENT"
_FRAME = struct.Struct(">Q")
_READY = {"ready": True}
_PR_SET_PDEATHSIG = 1


class _Broken(Exception):
    """The other side's stream ended or carried something that is not a frame we know."""


def _write_all(out: IO[bytes], payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = out.write(view)
        if not written:
            raise _Broken("the pipe took nothing")
        view = view[written:]


def _send(out: IO[bytes], message: dict[str, Any]) -> None:
    payload = _message(message)
    _write_all(out, _FRAME.pack(len(payload)) + payload)


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            raise _Broken("the stream ended")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> bytes:
    return _read_exact(stream, _FRAME.unpack(_read_exact(stream, _FRAME.size))[0])


def _readable(stream: IO[bytes]) -> bool:
    return bool(select.select([stream], [], [], 0)[0])


def _cpu_left() -> float | None:
    """CPU seconds this process may still use under its RLIMIT_CPU (None: unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_CPU)
    if soft == resource.RLIM_INFINITY:
        return None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return max(1.0, soft - usage.ru_utime - usage.ru_stime)


def _message(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class Share:
    """One PDF's pages shared with the helper: `take(n)` is page n if the helper sent it,
    else None (the worker decodes it, and has claimed it)."""

    def __init__(self, helper: Helper, request: int, page_count: int) -> None:
        self.helper = helper
        self.request = request
        self.page_count = page_count
        self.pages: dict[int, PageContent] = {}
        self.taken = 0  # pages the helper sent that the worker used
        self.low = page_count + 1  # the lowest page the helper has sent
        self.claimed = 0  # the highest claim sent

    def take(self, number: int) -> PageContent | None:
        self.helper.receive()
        page = self.pages.pop(number, None)
        if page is not None:
            self.taken += 1
            return page
        # Claims are what stops the helper, and it only needs them near where the two
        # meet: every 16th page, then each page within 32 of the helper's lowest (a few
        # KB of claims at most, so the pipe to the helper never fills).
        if number >= self.claimed + 16 or number >= self.low - 32:
            self.claimed = number
            self.helper.claim(self.request, number)
        return None

    def close(self) -> None:
        """The worker is done with this PDF (all pages in, or the job ended early)."""
        self.helper.finish(self)


class Helper:
    """The worker's handle on its helper process (one per worker process)."""

    def __init__(self, argv: Sequence[str] | None = None) -> None:
        self.argv = list(argv or [sys.executable, "-m", "docling_worker.pdf_helper"])
        self.proc: subprocess.Popen[bytes] | None = None
        self._unsent: deque[memoryview] = deque()  # frames not yet in the pipe, in order
        self.ready = False
        self.wanted = False  # start() was called: keep one running (a worker's helper)
        self.lock = threading.Lock()
        self._ids = itertools.count(1)
        self._share: Share | None = None  # the request being answered
        self._open: int | None = None  # the last request the helper has not said done to
        self.last_taken = 0  # pages of the last shared PDF the helper decoded (a figure)

    @staticmethod
    def enabled() -> bool:
        return os.environ.get(ENV, "1").strip() != "0"

    def start(self) -> None:
        """Starts the helper unless it is off or already running (never raises)."""
        self.wanted = True
        if not self.enabled() or self.alive():
            return
        # One that died between jobs: reap it, close its pipes and drop what was still
        # meant for it (a frame's tail would corrupt the new one's stream).
        self._kill()
        env = {**os.environ, _PARENT: str(os.getpid())}
        try:
            # Unbuffered both ways: select() must see every byte the helper wrote.
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0
            )
        except OSError as err:
            log.warning("pdf helper: cannot start %s: %s", self.argv, err)
            self.proc = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Kills the helper; a stopped one is not restarted until start() again."""
        self.wanted = False
        self._kill()

    def _kill(self) -> None:
        proc, self.proc, self.ready, self._open = self.proc, None, False, None
        self._share = None
        self._unsent.clear()
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()

    def _broken(self, why: str) -> None:
        log.warning("pdf helper: %s; the worker decodes the pages it has not sent", why)
        self._kill()
        if self.wanted:
            self.start()

    # -- frames to the helper --------------------------------------------------------------

    def _put(self, *frames: bytes) -> None:
        for frame in frames:
            self._unsent.append(memoryview(_FRAME.pack(len(frame))))
            self._unsent.append(memoryview(frame))
        self._pump()

    def _pump(self) -> None:
        """Writes what the pipe takes. A ready helper reads its requests at once, so the
        writes may block (briefly); to one still importing they never do: what the pipe
        cannot hold waits here, written by a later call (the worker never waits for it)."""
        proc = self.proc
        if proc is None or proc.stdin is None or not self._unsent:
            return
        fd = proc.stdin.fileno()
        try:
            os.set_blocking(fd, self.ready)
            while self._unsent:
                view = self._unsent[0]
                try:
                    written = os.write(fd, view[: 1 << 20])
                except BlockingIOError:
                    return
                if written == len(view):
                    self._unsent.popleft()
                else:
                    self._unsent[0] = view[written:]
        except OSError as err:
            self._broken(f"a frame could not be written ({err})")

    # -- frames from the helper ------------------------------------------------------------

    def receive(self) -> None:
        """Reads every frame the helper has written so far (never waits for more)."""
        self._pump()
        proc = self.proc
        try:
            while proc is not None and proc.stdout is not None and _readable(proc.stdout):
                self._on_frame(json.loads(_read_frame(proc.stdout)))
                proc = self.proc
        except (_Broken, OSError, ValueError, TypeError, KeyError) as err:
            self._broken(f"its frames could not be read ({err})")

    def _on_frame(self, message: Any) -> None:
        from .pdf_page import page_from_wire

        if message == _READY:
            self.ready = True
            return
        request = message["id"]
        if "done" in message:
            if request == self._open:
                self._open = None
            return
        share = self._share
        if share is None or request != share.request:
            return  # a late page of an earlier request
        page = page_from_wire(message["page"])
        if not 1 <= page.number <= share.page_count:
            raise ValueError(f"page {page.number} of {share.page_count}")
        share.pages[page.number] = page
        share.low = min(share.low, page.number)

    # -- requests --------------------------------------------------------------------------

    def share(self, data: bytes, page_count: int) -> Share | None:
        """Starts sharing a PDF of `page_count` pages with the helper; None when the worker
        should decode every page itself (a short PDF, the helper off, gone or still on an
        earlier request)."""
        if page_count < MIN_PAGES or not self.enabled():
            return None
        if not self.lock.acquire(blocking=False):
            return None
        if not self.alive():
            if self.wanted:
                self.start()  # gone (killed between jobs): ready for a later job
            self.lock.release()
            return None
        self.receive()
        if self._open is not None:
            log.info("pdf helper: still on an earlier request; the worker decodes every page")
            self.lock.release()
            return None
        # A helper still importing gets the request too: it joins in when it can.
        request = next(self._ids)
        header = {"id": request, "pages": page_count, "cpu_secs": _cpu_left()}
        self._put(_message(header), data)
        self._share = Share(self, request, page_count)
        self._open = request
        return self._share

    def claim(self, request: int, number: int) -> None:
        """Tells the helper the worker decodes pages up to `number` itself."""
        if self._share is not None:
            self._put(_message({"id": request, "claim": number}))

    def finish(self, share: Share) -> None:
        if self._share is share:
            self.claim(share.request, share.page_count)  # stop after the current page
            self._share = None
            self.last_taken = share.taken
            log.debug("pdf helper: %d of %d pages decoded by the helper", share.taken,
                      share.page_count)  # fmt: skip
        self.lock.release()


HELPER = Helper()
"""The worker process's helper, started by `python -m docling_worker`."""


# The helper process's side.


def _tie_to_parent() -> None:
    """Dies with the worker (Linux's parent-death signal), or now if it is already gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    parent = os.environ.get(_PARENT)
    if parent and parent.isdigit() and os.getppid() != int(parent):
        raise SystemExit(0)


def _set_cpu_budget(seconds: Any) -> None:
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (want, hard))


def _claimed(requests: IO[bytes], request: int, claimed: int) -> int:
    """The highest page the worker has claimed so far (claims waiting in the pipe read)."""
    while _readable(requests):
        message = json.loads(_read_frame(requests))
        if message.get("id") == request and "claim" in message:
            claimed = max(claimed, int(message["claim"]))
    return claimed


def _answer(requests: IO[bytes], frames: IO[bytes], header: dict[str, Any], data: bytes) -> None:
    """Decodes pages from the last one down until the worker's claims meet them."""
    from workers_common import InvalidInput

    from .pdf_page import page_to_wire
    from .pdf_reader import decode_page, load_pdf

    request, pages = int(header["id"]), int(header["pages"])
    try:
        parsed = load_pdf(data)
    except InvalidInput:
        return  # the worker loaded the same bytes: it decodes them all
    try:
        claimed = 0
        for number in range(pages, 0, -1):
            claimed = _claimed(requests, request, claimed)
            if number <= claimed:
                return
            try:
                page = decode_page(parsed, number)
            except InvalidInput:
                return  # the worker reaches this page and raises the same error
            _send(frames, {"id": request, "page": page_to_wire(page)})
    finally:
        parsed.unload()


def serve() -> int:
    """The helper's loop: one request (header frame, PDF frame) at a time, until EOF."""
    _tie_to_parent()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    frames = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints must not break frames
    requests = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    from . import pdf_reader  # noqa: F401  (the imports, before saying ready)

    _send(frames, _READY)
    while True:
        try:
            header = json.loads(_read_frame(requests))
            if "pages" not in header:
                continue  # a claim for a request already over
            data = _read_frame(requests)
        except _Broken:
            return 0  # the worker is gone
        _set_cpu_budget(header.get("cpu_secs"))
        with contextlib.suppress(MemoryError):  # the worker decodes what is left
            _answer(requests, frames, header, data)
        del data
        _send(frames, {"id": header["id"], "done": True})


if __name__ == "__main__":
    raise SystemExit(serve())
