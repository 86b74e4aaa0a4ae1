"""A real HTTP server on 127.0.0.1 for the web worker's tests, and jobs pointing at it.

Each route is a function of the request returning the answer, or a fixed `Answer`; every
request is logged (path, headers), so tests can count fetches and see what was sent. The
server runs in a thread of the test process; `slow` routes sleep in their own thread.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import MappingProxyType
from typing import Any

from web_worker.handler import WebWorker
from workers_common import Job
from workers_common.driver import drive
from workers_common.rpc import Submitted

__all__ = [
    "LOOPBACK_ONLY",
    "Answer",
    "Seen",
    "Site",
    "html_page",
    "make_worker",
    "serve",
    "url_job",
]

LOOPBACK_ONLY = {"WEB_ALLOW_NETS": "127.0.0.1/32"}
"""The tests' guard: only the local server's address, not the rest of loopback."""


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = "text/html; charset=utf-8"
    delay_s: float = 0.0
    """Sleep before answering."""
    dribble_s: float = 0.0
    """Send the body one byte per `dribble_s` seconds."""


@dataclass(frozen=True)
class Seen:
    path: str
    headers: Mapping[str, str]
    at: float


Route = Answer | Callable[[str], Answer]


class Site:
    """Routes by path (query included); unknown paths answer 404."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self.base = ""
        self.lock = threading.Lock()

    def add(self, path: str, route: Route) -> None:
        self.routes[path] = route

    def url(self, path: str) -> str:
        return self.base + path

    def hits(self, path: str) -> int:
        with self.lock:
            return sum(1 for s in self.seen if s.path == path)

    def answer(self, path: str) -> Answer:
        route = self.routes.get(path)
        if route is None:
            prefix = [p for p in self.routes if p.endswith("*") and path.startswith(p[:-1])]
            route = self.routes[prefix[0]] if prefix else Answer(404, b"not found")
        return route(path) if callable(route) else route


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            with site.lock:
                headers = {k.lower(): v for k, v in self.headers.items()}
                site.seen.append(Seen(self.path, headers, time.monotonic()))
            answer = site.answer(self.path)
            if answer.delay_s:
                time.sleep(answer.delay_s)
            with suppress(BrokenPipeError, ConnectionResetError):
                self._send(answer)

        def _send(self, answer: Answer) -> None:
            self.send_response(answer.status)
            if answer.content_type is not None:
                self.send_header("Content-Type", answer.content_type)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if not answer.dribble_s:
                self.wfile.write(answer.body)
                return
            for i in range(len(answer.body)):
                self.wfile.write(answer.body[i : i + 1])
                self.wfile.flush()
                time.sleep(answer.dribble_s)

    return Handler


@contextmanager
def serve(
    site: Site | None = None,
    directory: Path | None = None,
    address: str = "127.0.0.1",
    tls: ssl.SSLContext | None = None,
) -> Iterator[Site]:
    """Serves `site` (or the files under `directory`) on `address` until the block ends;
    over TLS with `tls` (then the base URL names `localhost`)."""
    site = site or Site()
    if directory is not None:
        site.add("/*", lambda path: _file_answer(directory, path))
    server = ThreadingHTTPServer((address, 0), _handler(site))
    server.daemon_threads = True
    site.base = f"http://{address}:{server.server_address[1]}"
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        site.base = f"https://localhost:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="test-site", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".woff2": "font/woff2",
    ".json": "application/json",
    ".txt": "text/plain",
}


def _file_answer(directory: Path, path: str) -> Answer:
    relative = path.split("?", 1)[0].split("#", 1)[0].lstrip("/")
    target = (directory / relative).resolve()
    if target.is_dir():
        target = target / "index.html"
    if not target.is_relative_to(directory.resolve()) or not target.is_file():
        return Answer(404, b"not found")
    return Answer(200, target.read_bytes(), content_type=_TYPES.get(target.suffix))


def html_page(title: str, body: str, head: str = "", lang: str = "en") -> bytes:
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        f"<title>{title}</title>{head}</head><body>{body}</body></html>"
    ).encode()


def url_job(url: str, name: str | None = None, job_id: str = "job-1", **options: Any) -> Job:
    """A URL job as the core hands it to the worker."""
    return Job(
        job_id=job_id,
        tenant_id="t1",
        organization_id="",
        format="web",
        name=name or url,
        options=MappingProxyType(dict(options)),
        attempts=0,
        attempt=1,
        url=url,
    )


def make_worker(tmp_path: Path, **env: str) -> WebWorker:
    """A worker allowed to reach 127.0.0.1 only, its politeness state under `tmp_path`."""
    environ = {**LOOPBACK_ONLY, "WEB_STATE_DIR": str(tmp_path / "state"), **env}
    return WebWorker(environ)


def run_url(worker: WebWorker, url: str, job_id: str = "job-1", **options: Any) -> list[bytes]:
    """The submissions of one URL job, driven as the consumer drives it (no core)."""
    submitted: list[bytes] = []

    def accept(result_json: bytes) -> Submitted:
        submitted.append(result_json)
        return Submitted(accepted=True, node_ids=[], reason="")

    drive(worker.handle, url_job(url, job_id=job_id, **options), accept)
    return submitted


def with_base(
    submissions: list[bytes], base: str, stand_in: str = "http://site.test"
) -> list[bytes]:
    """The submissions with the server's random port replaced, for golden files (URLs are
    in properties only, never in the canonical text, so no offset moves)."""
    return [s.replace(base.encode(), stand_in.encode()) for s in submissions]


def determinism_handler(job: Job) -> bytes:
    """For check_determinism: the job's file holds a URL; fetch and project it."""
    worker = WebWorker()
    try:
        return worker.handle(url_job(job.read_text().strip(), crawl_delay_ms=0))
    finally:
        worker.close()
