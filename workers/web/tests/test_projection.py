"""What a page becomes: golden projections of real pages served locally, link
normalization and dedup, recrawl dedup, determinism, non-HTML routing and crawl planning."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import blake3
import pytest

from web_worker.crawl import plan_children
from web_worker.handler import WebWorker
from web_worker.options import settings_from
from web_worker.urls import normalize
from workers_common import InvalidInput, Job, Unsupported
from workers_common.conformance import check_determinism, check_submissions
from workers_common.pytest_plugin import GoldenDir

from web_site import Answer, Site, html_page, make_worker, run_url, serve, with_base


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


PARA = "This paragraph is the kind of text a reader came for, and it runs long enough. "

ARTICLE_HEAD = (
    '<link rel="canonical" href="/articles/tiles?utm_source=feed">'
    '<meta name="description" content="How roof tiles are made.">'
    '<meta property="article:published_time" content="2026-03-01T09:00:00Z">'
    '<meta property="article:modified_time" content="2026-03-04T10:30:00Z">'
)


def article(stamp: str = "Rendered at 10:00", ad: str = "Buy now!") -> bytes:
    """A page with boilerplate around its content: nav, cookie banner, ad, footer."""
    return html_page(
        "Roof tiles",
        f"""<nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>
<div class="cookie-banner">We use cookies. <a href="/cookies">Accept</a></div>
<main><article><h1>Making roof tiles</h1>
<p>{PARA}Clay is dug in <a href="/clay#origin">the quarry</a> and left to weather.</p>
<h2>Firing</h2><p>{PARA}See <a href="HTTP://Example.COM:80/kilns?utm_medium=x&amp;id=7">kilns</a>
and <a href="/clay">clay again</a> and <a href="#top">the top</a>.</p>
<h3>Temperatures</h3>
<table><tr><th>Stage</th><th>°C</th></tr><tr><td>Drying</td><td>60</td></tr>
<tr><td>Firing</td><td>1050</td></tr></table>
<h2>Shapes</h2><ul><li>Pantiles, the <a href="/pan">S-shaped</a> ones</li><li>Flat tiles</li></ul>
<p>{PARA}Tiles last a century or more when they are fired well.</p>
</article></main>
<aside class="ad">{ad}</aside><footer>{stamp} · <a href="/legal">Legal</a></footer>""",
        head=ARTICLE_HEAD,
    )


def submission(subs: list[bytes]) -> dict[str, Any]:
    [only] = subs
    result: dict[str, Any] = json.loads(only)
    return result


def nodes(result: dict[str, Any], label: str) -> list[dict[str, Any]]:
    return [n for n in result["nodes"] if label in n["labels"]]


def test_article_golden(site: Site, worker: WebWorker, golden: GoldenDir) -> None:
    """A page with nav, cookie banner, ad and footer: the golden projection."""
    site.add("/articles/tiles", Answer(body=article()))
    subs = run_url(worker, site.url("/articles/tiles"), crawl_delay_ms=0)
    golden.check("article", with_base(subs, site.base))


def test_main_content_only_and_metadata(site: Site, worker: WebWorker) -> None:
    site.add("/articles/tiles", Answer(body=article()))
    result = submission(run_url(worker, site.url("/articles/tiles"), crawl_delay_ms=0))
    text = result["canonicalText"]
    assert text.startswith("Making roof tiles\n\n")
    for boilerplate in ("cookies", "Buy now", "Legal", "Rendered at", "Shop"):
        assert boilerplate not in text
    [page] = nodes(result, "PAGE")
    props = page["properties"]
    assert props["title"] == "Roof tiles"
    assert props["lang"] == "en"
    assert props["canonical_url"] == site.url("/articles/tiles")
    assert props["description"] == "How roof tiles are made."
    assert props["published"] == "2026-03-01T09:00:00Z"
    assert props["modified"] == "2026-03-04T10:30:00Z"
    assert props["fetched_via"] == "static"
    assert [s["properties"]["title"] for s in nodes(result, "SECTION")] == [
        "Making roof tiles",
        "Firing",
        "Temperatures",
        "Shapes",
    ]
    [table] = nodes(result, "TABLE")
    assert table["properties"] == {"rows": 3, "columns": 2}
    assert len(nodes(result, "LIST_ITEM")) == 2


def test_links_are_normalized_and_deduped(site: Site, worker: WebWorker) -> None:
    """Relative, absolute, fragment and tracking-parameter spellings of a target are one
    URL_REF; each anchor is its own LINKS_TO from its section, with the anchor's span."""
    site.add("/articles/tiles", Answer(body=article()))
    result = submission(run_url(worker, site.url("/articles/tiles"), crawl_delay_ms=0))
    refs = [n["properties"]["url"] for n in nodes(result, "URL_REF")]
    assert refs == [
        site.url("/clay"),
        "http://example.com/kilns?id=7",
        site.url("/articles/tiles"),
        site.url("/pan"),
    ]
    edges = [r for r in result["relationships"] if r["type"] == "LINKS_TO"]
    encoded = result["canonicalText"].encode()
    anchors = [
        encoded[e["properties"]["anchor_start"] : e["properties"]["anchor_end"]].decode()
        for e in edges
    ]
    assert anchors == ["the quarry", "kilns", "clay again", "the top", "S-shaped"]
    assert [e["properties"]["anchor_text"] for e in edges] == anchors
    sections = {i for i, n in enumerate(result["nodes"]) if n["labels"] == ["SECTION"]}
    assert all(e["fromRef"] in sections for e in edges)


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("/a/../b?x=1#f", "http://h.test/b?x=1"),
        ("HTTPS://H.Test:443/", "https://h.test/"),
        ("http://h.test:8080", "http://h.test:8080/"),
        ("?utm_source=a&q=2&fbclid=z", "http://h.test/p?q=2"),
        ("mailto:a@h.test", None),
        ("javascript:void(0)", None),
        ("http://user:pw@h.test/x", "http://h.test/x"),
        ("http://h.test:99999/", None),
    ],
)
def test_normalize(href: str, expected: str | None) -> None:
    assert normalize(href, "http://h.test/p") == expected


def test_content_hash_ignores_boilerplate_changes(site: Site, worker: WebWorker) -> None:
    """A new timestamp and ad give the same contentHash; changed content does not."""
    site.add("/v1", Answer(body=article()))
    site.add("/v2", Answer(body=article(stamp="Rendered at 11:42", ad="Half price!")))
    site.add("/v3", Answer(body=article().replace(b"a century", b"two centuries")))
    hashes = [
        submission(run_url(worker, site.url(p), crawl_delay_ms=0))["contentHash"]
        for p in ("/v1", "/v2", "/v3")
    ]
    assert hashes[0] == hashes[1] != hashes[2]
    text = submission(run_url(worker, site.url("/v1"), crawl_delay_ms=0))["canonicalText"]
    assert hashes[0] == blake3.blake3(text.encode()).hexdigest()


def test_same_page_same_bytes_across_interpreters(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two fresh interpreters (other PYTHONHASHSEED, TZ, LC_ALL) submit the same bytes."""
    site.add("/articles/tiles", Answer(body=article()))
    url_file = tmp_path / "url.txt"
    url_file.write_text(site.url("/articles/tiles"))
    monkeypatch.setenv("WEB_ALLOW_NETS", "127.0.0.1/32")
    monkeypatch.setenv("WEB_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    subs = check_determinism("web_site:determinism_handler", url_file, format="web")
    check_submissions(subs)


MINIMAL_PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


def test_a_pdf_response_becomes_a_pdf_child_job(site: Site, worker: WebWorker) -> None:
    """The bytes go to a `pdf` child named by their blake3; the PAGE points at it."""
    site.add("/doc.pdf", Answer(body=MINIMAL_PDF, content_type="application/pdf"))
    site.add("/blob", Answer(body=MINIMAL_PDF, content_type="application/octet-stream"))
    for path in ("/doc.pdf", "/blob"):
        result = submission(run_url(worker, site.url(path), crawl_delay_ms=0))
        [child] = result["childJobs"]
        name = f"attachment:{blake3.blake3(MINIMAL_PDF).hexdigest()}"
        assert (child["format"], child["name"]) == ("pdf", name)
        assert base64.b64decode(child["contentB64"]) == MINIMAL_PDF
        [page] = nodes(result, "PAGE")
        assert page["properties"]["child_job"] == name
        assert page["properties"]["child_format"] == "pdf"


def test_a_type_no_pool_serves_is_unsupported(site: Site, tmp_path: Path) -> None:
    site.add("/img.png", Answer(body=b"\x89PNG\r\n", content_type="image/png"))
    site.add("/doc.pdf", Answer(body=MINIMAL_PDF, content_type="application/pdf"))
    worker = make_worker(tmp_path, WEB_CONTENT_FORMATS="csv,txt")
    try:
        with pytest.raises(Unsupported, match="image/png"):
            run_url(worker, site.url("/img.png"), crawl_delay_ms=0)
        with pytest.raises(Unsupported, match="application/pdf"):
            run_url(worker, site.url("/doc.pdf"), crawl_delay_ms=0)
    finally:
        worker.close()


def test_bad_options_and_jobs_without_url_are_invalid_input(worker: WebWorker) -> None:
    with pytest.raises(InvalidInput, match="render must be one of"):
        run_url(worker, "http://127.0.0.1:9/", render="sometimes")
    with pytest.raises(InvalidInput, match="crawl_depth"):
        run_url(worker, "http://127.0.0.1:9/", crawl_depth=-1)
    with pytest.raises(InvalidInput, match="not an http"):
        run_url(worker, "ftp://127.0.0.1/")
    job = Job(
        job_id="j",
        tenant_id="t",
        organization_id="",
        format="web",
        name="x",
        options={},
        attempts=0,
        attempt=1,
    )
    with pytest.raises(InvalidInput, match="needs a URL"):
        worker.handle(job)


def calendar(path: str) -> Answer:
    """A calendar trap: every month links to the next and the previous, forever."""
    month = int(path.rsplit("=", 1)[1])
    body = f'<p>{PARA}Month {month}.</p><a href="/cal?m={month + 1}">next</a>'
    return Answer(body=html_page(f"Month {month}", body + f'<a href="/cal?m={month - 1}">prev</a>'))


def test_crawl_children_carry_depth_and_budget(site: Site, worker: WebWorker) -> None:
    """Each in-scope link is a `url:` child with depth + 1 and a share of the budget;
    off-host, excluded and at-depth links are not followed."""
    site.add("/cal*", calendar)
    result = submission(
        run_url(worker, site.url("/cal?m=0"), crawl_delay_ms=0, crawl_depth=2, max_pages=5)
    )
    children = result["childJobs"]
    assert [c["name"] for c in children] == [
        f"url:{site.url('/cal?m=1')}",
        f"url:{site.url('/cal?m=-1')}",
    ]
    assert all(c["format"] == "web" and "contentB64" not in c for c in children)
    assert [c["options"]["crawl_budget"] for c in children] == [2, 2]
    assert {c["options"]["depth"] for c in children} == {1}
    at_depth = submission(
        run_url(worker, site.url("/cal?m=5"), crawl_delay_ms=0, crawl_depth=2, depth=2)
    )
    assert "childJobs" not in at_depth


def test_crawl_scope_rules() -> None:
    links = [
        "http://h.test/a",
        "http://other.test/b",
        "http://h.test/skip/c",
        "http://h.test/d",
    ]
    settings = settings_from({"crawl_depth": 1, "exclude": "/skip/"}, "UA")
    planned = plan_children(links, "http://h.test/", settings, {"crawl_depth": 1})
    assert [c.url for c in planned] == ["http://h.test/a", "http://h.test/d"]
    wide = settings_from({"crawl_depth": 1, "same_host": False, "include": ["/b$", "/a$"]}, "UA")
    assert [c.url for c in plan_children(links, "http://h.test/", wide, {})] == [
        "http://h.test/a",
        "http://other.test/b",
    ]
    tight = settings_from({"crawl_depth": 3, "max_pages": 2}, "UA")
    assert [c.url for c in plan_children(links, "http://h.test/", tight, {})] == ["http://h.test/a"]
    assert (
        plan_children(
            links, "http://h.test/", settings_from({"max_pages": 1, "crawl_depth": 3}, "UA"), {}
        )
        == []
    )


def test_links_no_child_job_can_be_named_after_are_not_followed() -> None:
    """A link with a control character left in its path, or one over 4,096 bytes, made a
    child name the core refuses, and the core refused the page's whole submission."""
    links = ["http://h.test/a\x01b", "http://h.test/" + "q" * 5000, "http://h.test/ok"]
    planned = plan_children(links, "http://h.test/", settings_from({"crawl_depth": 1}, "UA"), {})
    assert [c.url for c in planned] == ["http://h.test/ok"]


def test_the_crawl_ledger_spends_budget_on_new_pages_only(site: Site, worker: WebWorker) -> None:
    """Pages of one crawl that link to each other: a page does not hand out a link another
    page of the crawl already handed out (its budget goes to new pages), and a retried
    attempt of the same job gets its own links back."""
    ring = ["/r0", "/r1", "/r2", "/r3"]
    for i, path in enumerate(ring):
        links = "".join(f'<a href="{p}">page {p}</a> ' for p in ring if p != path)
        site.add(path, Answer(body=html_page(f"Ring {i}", f"<p>{PARA}</p>{links}")))
    first = submission(run_url(worker, site.url("/r0"), crawl_depth=3, crawl_delay_ms=0))
    handed = [c["name"] for c in first["childJobs"]]
    assert handed == [f"url:{site.url(p)}" for p in ("/r1", "/r2", "/r3")]
    options = dict(first["childJobs"][0]["options"])
    assert len(options["crawl_id"]) == 32
    child = submission(run_url(worker, site.url("/r1"), job_id="job-2", **options))
    assert "childJobs" not in child  # r0 is the root; r2 and r3 are r0's already
    again = submission(run_url(worker, site.url("/r0"), crawl_depth=3, crawl_delay_ms=0))
    assert [c["name"] for c in again["childJobs"]] == handed
