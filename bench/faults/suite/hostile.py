"""Part 4: hostile files per served format, through the real pools.

Each format gets a valid seed and at least `per_format` hostile variants made by code
from it (cut, flipped, padded, re-encoded, swapped for another format's bytes, ...),
plus the workers' own curated hostile fixtures (docling's HOSTILE, tabular's BAD). Every
job must end succeeded or dead with a typed worker kind (invalid_input, unsupported,
too_large) within its deadline; after each format's batch, its seed must still succeed.

`web` jobs are URLs of hostile servers on 127.0.0.1 (hostile_web.py: endless and
dribbled bodies, lying lengths, broken chunking, compression bombs, redirect loops and
redirects to metadata, private, file: and gopher: targets, unresolvable names, refused
ports, error statuses, bad robots.txt, ...), fetched by the real `[pools.web]` with
WEB_ALLOW_NETS = 127.0.0.1/32; a few go through Chromium (render=always). For web,
`fetch_failed` is typed too: it is the worker's verdict on a network failure (a timeout,
a refused connection, a broken response), retried by the core and dead-lettered after
the part's max_attempts (2, 50-200 ms apart). After the batch the seed page must succeed.
"""

from __future__ import annotations

import io
import logging
import random
import shutil
import sys
import time
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import grpc

from . import inputs
from .core import REPO, Core, Pool, real_pools, worker_module
from .hostile_web import OPTIONS as WEB_OPTIONS
from .hostile_web import Sites, WebCase

log = logging.getLogger("faults.hostile")

TYPED = {"invalid_input", "unsupported", "too_large"}
TYPED_WEB = TYPED | {"fetch_failed"}
"""Typed outcomes of a URL job: a network failure is the worker's `fetch_failed`."""
# What a web job may route its non-HTML responses to: the formats served in the part.
_ROUTABLE = ("pdf", "docx", "md", "txt", "csv", "tsv", "xlsx", "parquet", "eml", "msg")
SUPERVISOR_KINDS = {"crash", "oom", "timeout", "cpu_limit"}

for _tests in ("tabular", "email", "docling", "code"):
    sys.path.insert(0, str(REPO / "workers" / _tests / "tests"))


def seeds() -> dict[str, tuple[str, bytes]]:
    """format -> (file name, valid bytes)."""
    import workbook_corpus

    import code_corpus
    import docling_corpus
    import email_corpus
    import tabular_corpus

    msg = email_corpus.msg(
        email_corpus.Msg(
            subject="Quarterly plan",
            sender_name="Alice",
            sender_address="alice@example.com",
            body="Hello Bob,\n\nthe plan is attached.\n",
            message_id="<plan@example.com>",
            recipients=[email_corpus.MsgRecipient("Bob", "bob@example.com", 1)],
        )
    )
    py = code_corpus.LANGUAGE_FILES["python"]
    return {
        "txt": ("seed.txt", inputs.text(1)),
        "csv": ("seed.csv", inputs.csv(20)),
        "tsv": ("seed.tsv", inputs.csv(20).replace(b",", b"\t")),
        "xlsx": ("seed.xlsx", tabular_corpus.xlsx_bytes()),
        "xlsb": ("seed.xlsb", workbook_corpus.xlsb_bytes()),
        "xls": ("seed.xls", workbook_corpus.legacy_xls()),
        "ods": ("seed.ods", workbook_corpus.ods_bytes()),
        "parquet": ("seed.parquet", tabular_corpus.parquet_bytes()),
        "text": ("seed.text", inputs.text(3)),
        "eml": ("seed.eml", inputs.eml(1, [("a.txt", "text/plain", inputs.text(2))])),
        "msg": ("seed.msg", msg),
        "mbox": (
            "seed.mbox",
            b"From alice@example.com Mon Mar  2 09:30:00 2026\n"
            + inputs.eml(2, []).replace(b"\r\n", b"\n")
            + b"\n",
        ),
        "pdf": ("seed.pdf", docling_corpus.simple_pdf()),
        "image": ("seed.png", docling_corpus.text_image()),
        "docx": ("seed.docx", docling_corpus.report_docx()),
        "pptx": ("seed.pptx", docling_corpus.deck_pptx()),
        "odt": ("seed.odt", docling_corpus.report_odt()),
        "odp": ("seed.odp", docling_corpus.deck_odp()),
        "doc": (
            "seed.doc",
            docling_corpus.saved_by_libreoffice(docling_corpus.report_docx(), "docx", "doc"),
        ),
        "ppt": (
            "seed.ppt",
            docling_corpus.saved_by_libreoffice(docling_corpus.deck_pptx(), "pptx", "ppt"),
        ),
        "rtf": ("seed.rtf", docling_corpus.LETTER_RTF),
        "ics": ("seed.ics", email_corpus.invitation().encode()),
        "mhtml": ("seed.mhtml", docling_corpus.saved_page_mhtml()),
        "epub": ("seed.epub", docling_corpus.book_epub()),
        "latex": ("seed.tex", docling_corpus.PAPER_TEX.encode()),
        "html": ("seed.html", docling_corpus.REPORT_HTML.encode()),
        "md": ("seed.md", docling_corpus.REPORT_MD.encode()),
        "docling": (
            "seed.json",
            docling_corpus.docling_json(docling_corpus.docling_sections()),
        ),
        "code": (Path(py.filename).name, py.text.encode()),
        "code-archive": ("seed.zip", code_corpus.zip_bytes(code_corpus.PY_REPO)),
    }


def _zip_bomb(inner: str) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(inner, b"\0" * (64 << 20))
    return out.getvalue()


def _flip(data: bytes, rng: random.Random, flips: int) -> bytes:
    out = bytearray(data)
    for _ in range(flips):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def mutations(
    fmt: str, seed: bytes, others: list[bytes], rng: random.Random
) -> list[tuple[str, bytes]]:
    """At least 20 hostile variants of `seed`, deterministic for a seeded `rng`."""
    mid = len(seed) // 2
    out: list[tuple[str, bytes]] = [
        ("empty", b""),
        ("one-nul", b"\0"),
        ("random-4k", rng.randbytes(4096)),
        ("random-1m", rng.randbytes(1 << 20)),
        ("cut-half", seed[:mid]),
        ("cut-10", seed[:10]),
        ("cut-last", seed[:-1]),
        ("flip-1", _flip(seed, rng, 1)),
        ("flip-8", _flip(seed, rng, 8)),
        ("flip-64", _flip(seed, rng, 64)),
        ("middle-zeroed", seed[:mid] + b"\0" * min(4096, len(seed) - mid) + seed[mid + 4096 :]),
        ("invalid-utf8", seed[:mid] + b"\xff\xfe\xc3\x28\xed\xa0\x80" + seed[mid:]),
        ("nuls-inside", seed.replace(b"e", b"e\0", 50)),
        ("utf16-bom", b"\xff\xfe" + seed),
        ("utf16", seed.decode("latin-1").encode("utf-16")),
        ("high-bytes", bytes(128 + (b % 128) for b in seed)),
        ("one-line-2m", b"A" * (2 << 20)),
        ("long-line-in-seed", seed[:mid] + b"x" * 200_000 + seed[mid:]),
        ("repeated-x200", seed * 200),
        ("cr-only", seed.replace(b"\n", b"\r")),
        ("other-format", rng.choice(others)),
        (
            "zip-bomb",
            _zip_bomb(
                {
                    "docx": "word/document.xml",
                    "pptx": "ppt/slides/slide1.xml",
                    "odt": "content.xml",
                    "odp": "content.xml",
                    "epub": "OEBPS/ch1.xhtml",
                }.get(fmt, "xl/worksheets/sheet1.xml")
            ),
        ),
    ]
    if fmt == "code-archive":
        out.append(("archive-traversal", _zip_named({"../../etc/evil.py": b"x = 1\n"})))
        out.append(("archive-absolute", _zip_named({"/abs/evil.py": b"x = 1\n"})))
        out.append(("archive-many-members", _zip_named({f"m{i}.py": b"" for i in range(20_000)})))
    return out


def _zip_named(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


def curated() -> list[tuple[str, str, str, bytes, dict[str, Any]]]:
    """(format, name, file name, bytes, options) of the workers' own hostile fixtures."""
    import hostile as docling_hostile
    import tabular_corpus

    found: list[tuple[str, str, str, bytes, dict[str, Any]]] = []
    for name, (fmt, make, _expected) in docling_hostile.HOSTILE.items():
        found.append((fmt, f"docling-{name}", f"{name}.{fmt}", make(), {}))
    for name, (fixture, _kind, _phrase) in tabular_corpus.BAD.items():
        found.append(
            (
                fixture.format,
                f"tabular-{name}",
                fixture.filename,
                fixture.data,
                dict(fixture.options),
            )
        )
    return found


DOCLING_FORMATS = [
    "pdf", "image", "docx", "pptx", "odt", "odp", "epub", "html", "md", "latex", "docling",
    "doc", "ppt", "rtf", "mhtml",
]  # fmt: skip


def pools(smoke: bool, work: Path, *, render: bool = True) -> dict[str, Pool]:
    """The served formats' pools, with the shipped supervisor.toml's limits (a smoke run
    serves the same formats with fewer cases each)."""
    base = real_pools()
    base["tabular"].formats = ["csv", "tsv", "xlsx", "xlsb", "xls", "ods", "parquet"]
    base["email"].formats = ["eml", "msg", "mbox", "ics"]
    base["docling"] = Pool(
        DOCLING_FORMATS,
        worker_module("docling_worker"),
        1,
        600,
        3072,
        600,
    )
    base["code"] = Pool(["code", "code-archive"], worker_module("code_worker"), 1, 600, 2048, 600)
    served = {f for p in base.values() for f in p.formats}
    base["web"] = Pool(
        ["web"],
        worker_module("web_worker"),
        2,
        180,
        memory_mb=None,
        cpu_secs=300,
        rss_mb=3072,
        open_files=1024,
        env={
            "WEB_ALLOW_NETS": "127.0.0.1/32",
            "WEB_STATE_DIR": str(work / "web-state"),
            "WEB_CONTENT_FORMATS": ",".join(f for f in _ROUTABLE if f in served),
            # Without Chromium the render cases are skipped; the worker must not find one.
            **({} if render else {"WEB_CHROMIUM": "/nonexistent/chromium"}),
        },
    )
    return base


def run(
    work: Path, per_format: int, rng: random.Random, tag: str, *, smoke: bool
) -> dict[str, Any]:
    render = not smoke and shutil.which("chromium") is not None
    served = pools(smoke, work, render=render)
    core = Core(work / "core", served, run_tag=tag, jobs={"max_attempts": 2})
    # Its own generator, untouched by `rng`: the files' mutations stay the bytes they were
    # before web joined the part.
    sites = Sites(random.Random("hostile-web"))
    core.start()
    try:
        web = sites.smoke_cases() if smoke else sites.cases()
        if render:
            web += sites.render_cases()
        formats = {f for p in served.values() for f in p.formats}
        return _run(core, per_format, rng, formats, web, sites.seed) | {
            "web_render_cases": render,
            "web_server_requests": sum(s.requests for s in sites.servers),
        }
    finally:
        core.stop()
        sites.stop()


def _run(
    core: Core,
    per_format: int,
    rng: random.Random,
    served: set[str],
    web: list[WebCase],
    web_seed: str,
) -> dict[str, Any]:
    started = time.monotonic()
    seed = {fmt: s for fmt, s in seeds().items() if fmt in served}
    others = [data for _, data in seed.values()]
    planned: list[tuple[str, str, str, bytes, dict[str, Any]]] = []
    for fmt, (filename, data) in seed.items():
        variants = (
            mutations(fmt, data, others, rng)[: max(per_format, 1)]
            if per_format < 20
            else mutations(fmt, data, others, rng)
        )
        stem, _, ext = filename.rpartition(".")
        planned += [
            (fmt, f"{fmt}-{name}", f"{stem}-{name}.{ext}", body, {}) for name, body in variants
        ]
    if per_format >= 20:
        planned += [c for c in curated() if c[0] in served]
    ids: dict[str, tuple[str, str]] = {}
    for fmt, name, filename, body, options in planned:
        job = core.submit(body, format=fmt, name=filename, options=options)
        ids[job.id] = (fmt, name)
    refused_at_submit: list[str] = []
    if "web" in served:
        refused_at_submit = _submit_web(core, web, ids)
    done = core.wait_finished(list(ids), timeout=900)
    per: dict[str, Counter[str]] = defaultdict(Counter)
    untyped: list[str] = []
    web_outcomes: dict[str, str] = {}
    for job_id, job in done.items():
        fmt, name = ids[job_id]
        outcome = _outcome(job)
        per[fmt][outcome] += 1
        per[fmt]["worker_crashes"] += sum(f.kind in SUPERVISOR_KINDS for f in job.failures)
        if fmt == "web":
            web_outcomes[name] = outcome + (f" ({len(job.children)} child)" if job.children else "")
        typed = TYPED_WEB if fmt == "web" else TYPED
        if outcome not in typed | {"ok"}:
            untyped.append(f"{name}: {outcome} {[f.reason[:100] for f in job.failures]}")
    if refused_at_submit:
        per["web"]["refused_at_submit"] = len(refused_at_submit)
    hangs = sum(c["hang"] for c in per.values())
    next_failed = _next_jobs(core, seed, web_seed if "web" in served else None)
    total = len(done) + len(refused_at_submit)
    typed_total = sum(
        c[k] for f, c in per.items() for k in (*(TYPED_WEB if f == "web" else TYPED), "ok")
    ) + len(refused_at_submit)
    return {
        "files": total,
        "per_format": {fmt: dict(c) for fmt, c in sorted(per.items())},
        "typed_or_ok_pct": round(100 * typed_total / max(1, total), 2),
        "untyped": len(untyped),
        "untyped_examples": untyped[:8],
        "hangs": hangs,
        "next_job_failed": len(next_failed),
        "next_job_failed_formats": next_failed,
        "web_outcomes": dict(sorted(web_outcomes.items())),
        "web_refused_at_submit": refused_at_submit,
        "seconds": round(time.monotonic() - started, 1),
    }


def _submit_web(core: Core, web: list[WebCase], ids: dict[str, tuple[str, str]]) -> list[str]:
    """Submits the URL cases into `ids`; returns those the core refused at submission."""
    refused: list[str] = []
    for case in web:
        try:
            job = core.submit(
                b"",
                format="web",
                name=f"web-{case.name}",
                url=case.url,
                options=WEB_OPTIONS | case.options,
            )
        except grpc.RpcError as err:
            # The core's own check of the URL (a typed INVALID_ARGUMENT): no job at all.
            refused.append(f"web-{case.name}: {err.code().name}")
            continue
        ids[job.id] = ("web", f"web-{case.name}")
    return refused


def _outcome(job: Any) -> str:
    if job.state == "succeeded":
        return "ok"
    if job.state != "dead":
        return "hang"
    return str(job.failures[-1].kind) if job.failures else "dead-without-failure"


def _next_jobs(core: Core, seed: dict[str, tuple[str, bytes]], web_seed: str | None) -> list[str]:
    ids = {
        core.submit(data, format=fmt, name=f"next-{name}").id: fmt
        for fmt, (name, data) in seed.items()
    }
    if web_seed is not None:
        job = core.submit(
            b"", format="web", name="next-web-seed", url=web_seed, options=WEB_OPTIONS
        )
        ids[job.id] = "web"
    done = core.wait_finished(list(ids), timeout=300)
    return sorted(ids[i] for i, job in done.items() if job.state != "succeeded")
