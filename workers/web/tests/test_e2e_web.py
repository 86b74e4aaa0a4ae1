"""End to end: `telha serve` spawning the web pool, URL jobs submitted with the CLI, a real
local site, real Chromium; and a real site nobody here wrote (the Rust book)."""

from __future__ import annotations

import glob
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_projection import MINIMAL_PDF, article, calendar
from test_render import APP_JS, SCRIPTED, _group_members, _wait_gone

from web_worker.browser import find_chromium

from web_e2e import MISSING, TELHA_BIN, WebCore
from web_site import Answer, Site, html_page, serve


@pytest.fixture
def site() -> Iterator[Site]:
    """A real HTTP server on 127.0.0.1 for this test."""
    with serve() as running:
        yield running


pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(MISSING, reason=f"core binary {TELHA_BIN} not built (cargo build)"),
    pytest.mark.timeout(300),
]


@pytest.fixture
def core(tmp_path: Path) -> Iterator[WebCore]:
    running = WebCore(tmp_path / "core")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def only_job(out: Any) -> dict[str, Any]:
    jobs = out["jobs"] if isinstance(out, dict) and "jobs" in out else out
    if isinstance(jobs, list):
        [job] = jobs
        return dict(job)
    return dict(jobs)


def page_node(graph: dict[str, Any]) -> dict[str, Any]:
    pages = [n for n in graph["nodes"] if n["labels"] == ["PAGE"]]
    assert len(pages) == 1, (graph.get("job"), graph.get("truncated"), len(graph["nodes"]))
    [page] = pages
    return dict(page["properties"])


def test_ingest_wait_projects_a_local_page(core: WebCore, site: Site) -> None:
    """The README's quick start: `telha ingest --wait URL` ends succeeded, and the graph
    holds the PAGE with its sections and paragraphs."""
    site.add("/articles/tiles", Answer(body=article()))
    job = only_job(core.ingest(site.url("/articles/tiles"), wait=True, crawl_delay_ms=0))
    assert job["state"] == "succeeded", core.job(job["id"])
    graph = core.graph(job["id"])
    assert page_node(graph)["title"] == "Roof tiles"
    assert graph["canonicalText"].startswith("Making roof tiles")
    labels = {label for n in graph["nodes"] for label in n["labels"]}
    assert {"PAGE", "SECTION", "PARAGRAPH", "LIST_ITEM", "TABLE", "URL_REF"} <= labels


def test_recrawl_with_the_same_content_is_unchanged(core: WebCore, site: Site) -> None:
    """A second crawl whose footer timestamp and ad changed is `unchanged`; nothing new
    is projected."""
    versions = iter([article(), article(stamp="Rendered at 23:59", ad="New offer")])
    site.add("/a", lambda _path: Answer(body=next(versions)))
    first = only_job(core.ingest(site.url("/a"), wait=True, crawl_delay_ms=0))
    second = only_job(core.ingest(site.url("/a"), wait=True, crawl_delay_ms=0))
    assert first["id"] != second["id"]
    assert (first["state"], second["state"]) == ("succeeded", "succeeded")
    assert core.job(first["id"]).get("unchanged") is False
    assert core.job(second["id"]).get("unchanged") is True
    assert site.hits("/a") == 2


def ended(core: WebCore, job_id: Any) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        job = core.job(job_id)
        return job if job["state"] in ("dead", "succeeded") else None

    done: dict[str, Any] = core.wait(check, f"job {job_id} to end")
    return done


def test_failures_reach_the_core_typed(core: WebCore, site: Site) -> None:
    """404 dead at once (invalid_input); a refused address dead (unsupported); 500 retried
    then dead after max_attempts (fetch_failed); the pool keeps serving."""
    site.add("/gone", Answer(404, b"no"))
    site.add("/err", Answer(500, b"boom"))
    site.add("/ok", Answer(body=html_page("ok", "<p>" + "Fine text. " * 30 + "</p>")))
    site.add("/to-private", Answer(302, headers={"Location": "http://192.168.7.7/"}))
    expected = {
        "/gone": ("invalid_input", True, 1),
        "/to-private": ("unsupported", True, 1),
        "/err": ("fetch_failed", False, 2),
    }
    for path, (kind, permanent, attempts) in expected.items():
        job = only_job(core.ingest(site.url(path), wait=False, crawl_delay_ms=0))
        done = ended(core, job["id"])
        assert done["state"] == "dead"
        failures = done["failures"]
        assert len(failures) == attempts
        assert {f["kind"] for f in failures} == {kind}
        assert failures[-1]["permanent"] is permanent
    ok = only_job(core.ingest(site.url("/ok"), wait=True, crawl_delay_ms=0))
    assert ok["state"] == "succeeded"


def test_retry_after_holds_the_cores_retry_back(core: WebCore, site: Site) -> None:
    """A 429 with Retry-After: 4 reaches the core as the failure's retry_after_ms, and the
    retry is due no sooner than 4 s after the failure (the backoff alone is ~1 s)."""
    site.add("/busy", Answer(429, b"slow down", headers={"Retry-After": "4"}))
    job = only_job(core.ingest(site.url("/busy"), wait=False, crawl_delay_ms=0))

    def failed_once() -> dict[str, Any] | None:
        seen = core.job(job["id"])
        return seen if seen["failures"] else None

    failed = core.wait(failed_once, "the first failure")
    first = failed["failures"][0]
    assert first["kind"] == "fetch_failed"
    assert first["retry_after_ms"] == 4000
    if failed["state"] == "retrying":
        assert failed["next_attempt_at"] - first["at"] >= 4_000_000
    # Past the backoff's 1 s (which alone would have retried by now), short of the 4 s.
    time.sleep(max(0.0, first["at"] / 1e6 + 2.5 - time.time()))
    assert site.hits("/busy") == 1, "fetched again before Retry-After ran out"
    core.cli("cancel", str(job["id"]))


def test_calendar_trap_is_stopped_by_depth_and_max_pages(core: WebCore, site: Site) -> None:
    """Months link to months forever; the crawl ends within max_pages and crawl_depth."""
    site.add("/robots.txt", Answer(404, b""))
    site.add("/cal*", calendar)
    core.ingest(site.url("/cal?m=0"), crawl_depth=3, max_pages=6, crawl_delay_ms=0)
    jobs = core.settled()
    assert 1 < len(jobs) <= 6
    assert all(j["state"] == "succeeded" for j in jobs)
    months = {int(j["name"].rsplit("=", 1)[1]) for j in jobs}
    assert max(abs(m) for m in months) <= 3
    deep = core.ingest(site.url("/cal?m=100"), crawl_depth=50, max_pages=5, crawl_delay_ms=0)
    assert deep
    jobs = [j for j in core.settled() if int(j["name"].rsplit("=", 1)[1]) >= 90]
    assert 1 < len(jobs) <= 5


def test_a_pdf_link_becomes_a_pdf_child_job(core: WebCore, site: Site) -> None:
    """The page's link to a PDF is a web child; that child routes the bytes to a `pdf` job
    (queued here: no pdf pool in this config) named by their content hash."""
    body = "<p>" + "The report is attached below for anyone who wants it. " * 4 + "</p>"
    site.add("/report", Answer(body=html_page("Report", body + '<a href="/r.pdf">PDF</a>')))
    site.add("/r.pdf", Answer(body=MINIMAL_PDF, content_type="application/pdf"))
    core.ingest(site.url("/report"), crawl_depth=1, crawl_delay_ms=0)
    webs = core.settled()
    assert sorted(j["name"] for j in webs) == sorted(
        [site.url("/report"), f"url:{site.url('/r.pdf')}"]
    )
    assert all(j["state"] == "succeeded" for j in webs)
    pdfs = core.wait(lambda: core.jobs(format="pdf"), "the pdf child job")
    [pdf] = pdfs
    assert pdf["name"].startswith("attachment:")


needs_chromium = pytest.mark.skipif(find_chromium() is None, reason="chromium is not installed")


@needs_chromium
def test_sigkill_of_a_pool_worker_leaves_no_chromium(core: WebCore, site: Site) -> None:
    """A supervised worker renders a page, so its Chromium is up in the worker's process
    group; SIGKILL of the worker alone leaves no process of that group, and the pool
    respawns a worker that serves the next job."""
    site.add("/app*", Answer(body=html_page("App", SCRIPTED)))
    site.add("/app.js", Answer(body=APP_JS, content_type="text/javascript"))
    job = only_job(core.ingest(site.url("/app"), wait=True, crawl_delay_ms=0))
    assert job["state"] == "succeeded", core.job(job["id"])
    assert page_node(core.graph(job["id"]))["fetched_via"] == "chromium"
    [pid] = core.worker_pids()
    members = [p for p in _group_members(os.getpgid(pid)) if p != pid]
    assert len(members) >= 3  # chromium, its helpers, Playwright's driver
    os.kill(pid, signal.SIGKILL)
    assert _wait_gone(members) == []
    assert _group_members(pid) == []
    core.wait(lambda: core.worker_pids() and core.worker_pids() != [pid], "a new worker")
    again = only_job(core.ingest(site.url("/app?again"), wait=True, crawl_delay_ms=0))
    assert again["state"] == "succeeded"


def rust_book() -> Path | None:
    found = sorted(glob.glob(os.path.expanduser("~/.rustup/toolchains/*/share/doc/rust/html/book")))
    books = [Path(b) for b in found if (Path(b) / "ch04-01-what-is-ownership.html").is_file()]
    return books[0] if books else None


BOOK = rust_book()


@pytest.mark.skipif(BOOK is None, reason="no Rust book under ~/.rustup/toolchains (rustup docs)")
def test_crawl_the_rust_book_served_locally(tmp_path: Path) -> None:
    """A real site nobody here wrote: crawled from a chapter, depth 2, 30 pages at most,
    links kept inside /book/; every page succeeds with a title, sections and text."""
    assert BOOK is not None
    running = WebCore(tmp_path / "core", workers=2)
    running.start()
    try:
        # The whole docs tree, as rustup ships it: the book links into std as well.
        with serve(directory=BOOK.parent) as docs:
            started = time.monotonic()
            running.ingest(
                docs.url("/book/ch04-00-understanding-ownership.html"),
                crawl_depth=2,
                max_pages=30,
                crawl_delay_ms=0,
                include="/book/",
            )
            jobs = running.settled(timeout=240)
            elapsed = time.monotonic() - started
        assert 10 <= len(jobs) <= 30
        failed = [
            (j["name"], j["failures"][-1]["reason"]) for j in jobs if j["state"] != "succeeded"
        ]
        assert failed == []
        graphs = [running.graph(j["id"]) for j in jobs]
        titles = [page_node(g)["title"] for g in graphs]
        assert all(t.endswith("The Rust Programming Language") for t in titles)
        assert sum(1 for g in graphs if any("SECTION" in n["labels"] for n in g["nodes"])) >= 5
        assert all(len(g["canonicalText"]) > 200 for g in graphs)
        print(f"rust book: {len(jobs)} pages in {elapsed:.1f} s")
    finally:
        running.stop()
