"""The PDF decode helper (pdf_helper): a real second process sharing a long PDF's pages
with the worker (it decodes from the end, the worker from the start). The pages, and so
the submission, are the same whichever process decoded each; a helper that dies, sends
nonsense or is left behind by a failing job costs nothing but time; and in a real pool
it dies with its worker."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from docling_worker import handle
from docling_worker.pdf_helper import MIN_PAGES, Helper
from docling_worker.pdf_page import PageContent
from docling_worker.pdf_reader import PdfSource, open_pdf
from workers_common import InvalidInput
from workers_common.conformance import run_handler

import docling_corpus as corpus
from serve_core import FINISHED, MISSING, ServeCore, children, cmdline

PAGES = 40


def ready(helper: Helper, timeout: float = 60) -> None:
    """Waits until the helper has said ready and has no request open."""
    deadline = time.monotonic() + timeout
    while True:
        helper.receive()
        if helper.ready and helper._open is None:
            return
        assert helper.alive(), "the helper died"
        assert time.monotonic() < deadline, "the helper is not ready"
        time.sleep(0.02)


@pytest.fixture
def helper(monkeypatch: pytest.MonkeyPatch) -> Iterator[Helper]:
    """A real helper process, ready, installed as the worker's HELPER."""
    from docling_worker import pdf_helper

    started = Helper()
    started.start()
    ready(started)
    monkeypatch.setattr(pdf_helper, "HELPER", started)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def long_pdf() -> bytes:
    return corpus.pages_pdf(PAGES, text=lambda page: f"Page {page} says {corpus.LOREM}")


def project(data: bytes, tmp_path: Path) -> list[bytes]:
    """The handler's submissions for `data` as a PDF job (result_json bytes)."""
    path = tmp_path / "long.pdf"
    path.write_bytes(data)
    return run_handler(handle, path, format="pdf", name="long.pdf")


def pages_of(data: bytes, *, page_count: int | None = None) -> list[PageContent]:
    opened = open_pdf(data, max_pages=100)
    try:
        source = PdfSource(opened.meta, page_count or opened.page_count, opened._parsed, data)
        return list(source.pages())
    finally:
        opened.close()


def shared(helper: Helper, data: bytes) -> list[PageContent]:
    """The pages, decoded with the helper taking part (tried a few times: on a loaded
    machine the worker may finish a short PDF before the helper has sent a page)."""
    for _ in range(5):
        ready(helper)
        pages = pages_of(data)
        if helper.last_taken > 0:
            return pages
    raise AssertionError("the helper never decoded a page")


def alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCLING_PDF_HELPER", "0")


def test_the_helper_shares_the_pages_and_the_submission_is_the_same(
    helper: Helper, long_pdf: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for _ in range(5):  # a submission the helper took part in
        ready(helper)
        helped = project(long_pdf, tmp_path)
        if helper.last_taken > 0:
            break
    assert 0 < helper.last_taken < PAGES  # both decoded some (the worker page 1 at least)
    both = shared(helper, long_pdf)
    assert helper.alive()
    alone(monkeypatch)
    assert pages_of(long_pdf) == both  # every page equal, floats too
    assert project(long_pdf, tmp_path) == helped


def test_a_short_pdf_or_a_helper_turned_off_is_not_shared(
    helper: Helper, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert helper.share(b"%PDF-", MIN_PAGES - 1) is None
    alone(monkeypatch)
    assert helper.share(b"%PDF-", 100) is None
    off = Helper()
    off.start()
    assert off.proc is None


def test_a_helper_killed_mid_pdf_leaves_the_rest_to_the_worker(
    helper: Helper, long_pdf: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = open_pdf(long_pdf, max_pages=100)
    try:
        pages = opened.pages()
        first = next(pages)  # shared: the helper is decoding from the end
        assert helper.proc is not None
        killed = helper.proc.pid
        # Killed at once: after a 50 ms wait, the helper had at times sent all 40 pages on a
        # quiet machine, so there was nothing left to replace it for (a flaky failure).
        helper.proc.kill()
        rest = list(pages)
    finally:
        opened.close()
    assert helper.proc is not None
    assert helper.proc.pid != killed
    alone(monkeypatch)
    assert [first, *rest] == pages_of(long_pdf)


def test_a_helper_dead_with_a_frame_unsent_is_replaced_by_a_clean_one(
    helper: Helper, long_pdf: bytes
) -> None:
    """The helper dies between jobs while part of a frame meant for it is still waiting
    (a pipe that was full): the next PDF starts a fresh helper, which must not get that
    tail (its stream would be garbage), and the one after shares its pages with it."""
    assert helper.proc is not None
    helper.proc.kill()
    helper.proc.wait()
    helper._unsent.append(memoryview(b"\x00\x00\x00\x00\x00\x01\x00\x00tail"))
    assert helper.share(long_pdf, PAGES) is None  # gone: a fresh one starts
    assert not helper._unsent
    shared(helper, long_pdf)


def test_a_helper_sending_nonsense_is_replaced_and_costs_only_time(
    long_pdf: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from docling_worker import pdf_helper

    script = tmp_path / "liar.py"
    script.write_text(
        "import struct, sys\n"
        "out, inp = sys.stdout.buffer, sys.stdin.buffer\n"
        "def say(b):\n    out.write(struct.pack('>Q', len(b)) + b); out.flush()\n"
        "say(b'{\"ready\":true}')\n"
        "for _ in range(2):\n"
        "    n = struct.unpack('>Q', inp.read(8))[0]; inp.read(n)\n"
        'say(b\'{"id": 1, "page": [1, 2]}\')\n'
        "inp.read()\n"
    )
    liar = Helper([sys.executable, str(script)])
    liar.start()
    ready(liar)
    monkeypatch.setattr(pdf_helper, "HELPER", liar)
    try:
        first = liar.proc.pid if liar.proc else None
        lied = project(long_pdf, tmp_path)
        assert liar.proc is not None
        assert liar.proc.pid != first
    finally:
        liar.stop()
    alone(monkeypatch)
    assert lied == project(long_pdf, tmp_path)


def test_a_job_ending_early_leaves_nothing_for_the_next_one(
    helper: Helper, long_pdf: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = open_pdf(long_pdf, max_pages=100)
    try:
        pages = opened.pages()
        next(pages)
        pid = helper.proc.pid if helper.proc else None
        pages.close()  # the job stops here
    finally:
        opened.close()
    assert not helper.lock.locked()
    assert helper.proc is not None
    assert helper.proc.pid == pid
    ready(helper)  # it said done to the abandoned request
    both = shared(helper, long_pdf)
    alone(monkeypatch)
    assert both == pages_of(long_pdf)


def test_an_undecodable_page_fails_as_it_would_without_the_helper(
    helper: Helper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages docling-parse cannot decode at the end (past the last page, as a page tree
    promising more pages than it holds would): the helper stops there, and the worker
    reaches the first of them and fails with the same InvalidInput as alone."""
    data = corpus.pages_pdf(PAGES)
    messages = []
    for enabled in ("1", "0"):
        monkeypatch.setenv("DOCLING_PDF_HELPER", enabled)
        with pytest.raises(InvalidInput, match=f"PDF page {PAGES + 1} cannot be decoded") as err:
            pages_of(data, page_count=PAGES + 3)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert helper.alive()  # a page it could not decode is not the helper's failure
    assert not helper.lock.locked()


# -- in a real pool -----------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.skipif(MISSING and os.environ.get("TELHA_E2E_REQUIRED") != "1", reason="no telha")
@pytest.mark.timeout(300)
def test_in_a_pool_the_helper_serves_is_replaced_and_dies_with_its_worker(
    tmp_path: Path, long_pdf: bytes
) -> None:
    pool = (
        '[pools.docling]\nformats = ["pdf"]\nworkers = 1\n'
        f'command = ["{sys.executable}", "-m", "docling_worker"]\njob_timeout_secs = 120\n'
        "[pools.docling.limits]\nmemory_mb = 3072\ncpu_secs = 120\nopen_files = 256\n"
    )
    core = ServeCore(tmp_path / "core", extra_toml=pool)
    core.start()
    try:
        assert core.process is not None
        core_pid = core.process.pid

        def worker_and_helper() -> tuple[int, int] | None:
            for worker in children(core_pid):
                if "docling_worker" in cmdline(worker):
                    helpers = [c for c in children(worker) if "pdf_helper" in cmdline(c)]
                    if helpers:
                        return worker, helpers[0]
            return None

        worker, first_helper = core.wait(worker_and_helper, "a worker and its helper")
        pdf = tmp_path / "long.pdf"
        pdf.write_bytes(long_pdf)

        def done(tenant: str) -> str:
            job = core.submit(pdf, tenant=tenant, wait=True)
            assert job["state"] in FINISHED
            assert job["state"] == "succeeded", job
            return str(job["submission_hash"])

        hashes = [done("a")]
        os.kill(first_helper, signal.SIGKILL)  # between jobs
        hashes.append(done("b"))  # decoded by the worker alone
        found = core.wait(worker_and_helper, "a fresh helper")
        assert found[0] == worker
        assert found[1] != first_helper
        hashes.append(done("c"))
        assert len(set(hashes)) == 1, hashes

        os.kill(worker, signal.SIGKILL)
        core.wait(
            lambda: "pdf_helper" not in cmdline(found[1]), "the helper to die with its worker"
        )
    finally:
        core.stop()
