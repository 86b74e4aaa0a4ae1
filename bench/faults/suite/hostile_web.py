"""Hostile web servers for part 4's `web` format: raw sockets on 127.0.0.1, made by code.

Every answer is written byte by byte by a route function, so a route can do what no
well-behaved HTTP library would: lie about its length, break its chunked encoding,
dribble its headers, never end its body, redirect to the cloud metadata address. Each
connection runs in a daemon thread and every slow route stops at the first of: the
client hanging up, the server being stopped, or its own bound (so nothing outlives the
part). Separate servers (separate `host:port`, the web worker's unit of politeness and
of the robots cache) carry the cases that change a host's state: a `429 Retry-After`
makes the worker defer the whole host, and each robots.txt variant needs a host of its own.
"""

from __future__ import annotations

import gzip
import logging
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("faults.hostile.web")

# A route writes the whole answer (status line included) to the connection.
Route = Callable[[socket.socket, "HostileServer"], None]

SLOW_BOUND_S = 200.0
"""The longest any slow route keeps writing: past the web pool's job timeout (180 s), so a
fetch that ignores its own deadline (5 s here) shows as the supervisor's `timeout`."""

SEED_HTML = (
    b"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Field notes</title>"
    b"</head><body><h1>Field notes</h1><p>The survey of the northern ridge took three days."
    b" Every cairn was measured and photographed, and the notes were typed up the same"
    b" evening so nothing would be lost.</p><h2>Findings</h2><p>Two of the cairns had been"
    b" rebuilt in living memory; the rest are older than the oldest map of the valley.</p>"
    b"<p>See <a href='/notes/2'>the second day</a> and <a href='/notes/3'>the third</a>.</p>"
    b"</body></html>"
)

# The smallest well-formed PDF with one page of text (a non-HTML response: a child job).
_PDF_OBJECTS = [
    b"<< /Type /Catalog /Pages 2 0 R >>",
    b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R"
    b" /Resources << /Font << /F1 5 0 R >> >> >>",
    None,  # the content stream, below
    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
]


def tiny_pdf() -> bytes:
    stream = b"BT /F1 18 Tf 20 100 Td (Hello from the hostile server) Tj ET"
    objects = list(_PDF_OBJECTS)
    objects[3] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _head(status: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in headers), "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def answer(
    body: bytes = b"",
    status: str = "200 OK",
    content_type: str | None = "text/html; charset=utf-8",
    headers: tuple[tuple[str, str], ...] = (),
    length: int | None = None,
) -> Route:
    """A fixed answer; `length` overrides the Content-Length sent (a lie)."""
    sent = [*headers]
    if content_type is not None:
        sent.append(("Content-Type", content_type))
    sent.append(("Content-Length", str(len(body) if length is None else length)))
    data = _head(status, sent) + body

    def route(conn: socket.socket, _server: HostileServer) -> None:
        conn.sendall(data)

    return route


def raw(data: bytes) -> Route:
    """Exactly these bytes, whatever they are."""

    def route(conn: socket.socket, _server: HostileServer) -> None:
        conn.sendall(data)

    return route


def redirect(location: str, status: str = "302 Found") -> Route:
    return answer(b"", status, None, (("Location", location),))


def trickle(prefix: bytes, unit: bytes, every_s: float, head: bytes = b"") -> Route:
    """`head`, then `prefix` one byte at a time... or `unit` repeated: bytes every `every_s`
    until the client hangs up, the server stops or SLOW_BOUND_S passes."""

    def route(conn: socket.socket, server: HostileServer) -> None:
        conn.sendall(head)
        deadline = time.monotonic() + SLOW_BOUND_S
        pieces: Iterator[bytes] = (
            (prefix[i : i + 1] for i in range(len(prefix))) if prefix else iter(lambda: unit, b"")
        )
        for piece in pieces:
            if server.stopping.is_set() or time.monotonic() > deadline:
                return
            conn.sendall(piece)
            time.sleep(every_s)

    return route


def endless_chunked() -> Route:
    head = _head("200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")])
    chunk = b"400\r\n" + b"<p>more</p>".ljust(1024, b" ") + b"\r\n"
    return trickle(b"", chunk, 0.005, head)


def _html_bomb(depth: int) -> bytes:
    return b"<!doctype html><html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth


@dataclass
class HostileServer:
    """One listening socket on 127.0.0.1 and its routes (by request path)."""

    routes: dict[str, Route]
    name: str = "hostile"
    stopping: threading.Event = field(default_factory=threading.Event)
    requests: int = 0

    def __post_init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, name=f"web-{self.name}", daemon=True)
        self._thread.start()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.stopping.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(SLOW_BOUND_S)
            try:
                path = _read_path(conn)
                if path is None:
                    return
                self.requests += 1
                route = (
                    self.routes.get(path) or self.routes.get("*") or answer(b"", "404 Not Found")
                )
                route(conn, self)
            except OSError:
                return  # the client hung up or the server stopped: both expected here


def _read_path(conn: socket.socket) -> str | None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece or len(data) > 1 << 16:
            return None
        data += piece
    parts = data.split(b"\r\n", 1)[0].split(b" ")
    return parts[1].decode("latin-1") if len(parts) >= 2 else None


@dataclass(frozen=True)
class WebCase:
    name: str
    url: str
    options: dict[str, Any] = field(default_factory=dict)


# Every case's fetch gives up after 5 s and connects within 2 s: a slow server costs
# seconds, not the 30 s default (the worker's own timeouts are what is under test).
# crawl_delay_ms 0: the cases share hosts, and politeness would only add waiting.
OPTIONS: dict[str, Any] = {
    "render": "never",
    "crawl_delay_ms": 0,
    "timeout_ms": 5000,
    "connect_timeout_ms": 2000,
    "render_timeout_ms": 8000,
    "settle_ms": 500,
}


@dataclass
class Sites:
    """The part's servers; `cases()` are the hostile URLs, `seed` the good page."""

    rng: random.Random
    servers: list[HostileServer] = field(default_factory=list)

    def __post_init__(self) -> None:
        robots_ok = answer(b"User-agent: *\nAllow: /\n", content_type="text/plain")
        gzip_bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=6)
        import brotli  # type: ignore[import-untyped]  # httpx's br decoder, in the venv

        br_bomb = brotli.compress(b"\0" * (64 << 20), quality=5)
        routes: dict[str, Route] = {
            "/robots.txt": robots_ok,
            "/seed": answer(SEED_HTML),
            "/endless-chunked": endless_chunked(),
            "/slowloris": trickle(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n" + b"X-Slow: " + b"a" * 100_000,
                b"",
                0.05,
            ),
            "/dribble-body": trickle(
                b"<p>" + b"x" * 10_000,
                b"",
                0.01,
                _head("200 OK", [("Content-Type", "text/html"), ("Content-Length", "10003")]),
            ),
            "/over-cap-declared": answer(b"<p>small</p>", length=50 << 20),
            "/over-cap-chunked": trickle(
                b"",
                b"10000\r\n" + b"<p>" + b"y" * (0x10000 - 3) + b"\r\n",
                0,
                _head("200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")]),
            ),
            "/gzip-bomb": answer(gzip_bomb, headers=(("Content-Encoding", "gzip"),)),
            "/br-bomb": answer(br_bomb, headers=(("Content-Encoding", "br"),)),
            "/bad-gzip": answer(
                b"\x1f\x8b\x08\x00not gzip at all", headers=(("Content-Encoding", "gzip"),)
            ),
            "/length-short": answer(b"<p>only this</p>", length=100_000),
            "/length-long": answer(SEED_HTML + b"<p>trailing junk" * 200, length=50),
            "/length-negative": raw(_head("200 OK", [("Content-Length", "-5")]) + b"<p>x</p>"),
            "/length-twice": raw(
                _head("200 OK", [("Content-Length", "5"), ("Content-Length", "500")]) + b"<p>x</p>"
            ),
            "/bad-chunked": raw(
                _head("200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")])
                + b"zz\r\n<p>not hex</p>\r\n0\r\n\r\n"
            ),
            "/chunked-and-length": raw(
                _head(
                    "200 OK",
                    [
                        ("Transfer-Encoding", "chunked"),
                        ("Content-Length", "3"),
                        ("Content-Type", "text/html"),
                    ],
                )
                + b"5\r\n<p>x<\r\n0\r\n\r\n"
            ),
            "/bad-charset": answer(SEED_HTML, content_type="text/html; charset=x-no-such-charset"),
            "/charset-utf7": answer(
                b"<html><body><p>+ADw-script+AD4-alert(1)+ADw-/script+AD4-</p></body></html>",
                content_type="text/html; charset=utf-7",
            ),
            "/binary-as-html": answer(self.rng.randbytes(256 << 10)),
            "/empty-200": answer(b""),
            "/no-content-type": answer(SEED_HTML, content_type=None),
            "/deep-nesting": answer(_html_bomb(50_000)),
            "/many-links": answer(
                b"<html><body>" + b"<a href='/same'>same</a> " * 120_000 + b"</body></html>"
            ),
            "/redirect-loop": redirect("/redirect-loop"),
            "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
            "/to-private": redirect("http://10.0.0.1/admin"),
            "/to-file": redirect("file:///etc/passwd"),
            "/to-gopher": redirect("gopher://127.0.0.1:70/1"),
            "/to-bad-port": redirect("http://127.0.0.1:99999/"),
            "/status-404": answer(b"gone", "404 Not Found"),
            "/status-410": answer(b"gone", "410 Gone"),
            "/status-500": answer(b"oops", "500 Internal Server Error"),
            "/status-999": raw(b"HTTP/1.1 999 Whatever\r\nContent-Length: 0\r\n\r\n"),
            "/not-http": raw(b"SSH-2.0-OpenSSH_9.2\r\n" + self.rng.randbytes(512)),
            "/http09": raw(SEED_HTML),
            "/hang-up": raw(b""),
            "/bad-header": raw(
                b"HTTP/1.1 200 OK\r\nX-Bad\x00: a\rb\r\nContent-Length: 2\r\n\r\nok"
            ),
            "/huge-header": raw(
                b"HTTP/1.1 200 OK\r\nX-Big: "
                + b"h" * (1 << 20)
                + b"\r\nContent-Length: 2\r\n\r\nok"
            ),
            "/meta-refresh-loop": answer(
                b"<html><head><meta http-equiv='refresh' content='0;url=/meta-refresh-loop'>"
                b"<title>again</title></head><body><p>Refreshing forever.</p></body></html>"
            ),
            "/pdf": answer(tiny_pdf(), content_type="application/pdf"),
            "/pdf-as-octets": answer(tiny_pdf(), content_type="application/octet-stream"),
            "/unknown-type": answer(b"\x00\x01binary", content_type="application/x-unknown"),
            "/inject": answer(SEED_HTML),
        }
        for hop in range(1, 13):
            routes[f"/chain/{hop}"] = (
                redirect(f"/chain/{hop - 1}") if hop > 1 else redirect("/seed")
            )
        self.main = self._server(routes, "main")
        # Its own port is known once it listens (the routes are looked up per request).
        routes["/to-ipv6-loopback"] = redirect(f"http://[::1]:{self.main.port}/seed")
        self.throttled = self._server(
            {
                "/robots.txt": robots_ok,
                "/status-429": answer(
                    b"slow down", "429 Too Many Requests", headers=(("Retry-After", "2"),)
                ),
            },
            "throttled",
        )
        self.huge_robots = self._server(
            {
                "/robots.txt": answer(
                    b"User-agent: *\nDisallow:\n" * ((600 << 10) // 24), content_type="text/plain"
                ),
                "*": answer(SEED_HTML),
            },
            "huge-robots",
        )
        self.binary_robots = self._server(
            {
                "/robots.txt": answer(self.rng.randbytes(64 << 10), content_type="text/plain"),
                "*": answer(SEED_HTML),
            },
            "binary-robots",
        )
        self.slow_robots = self._server(
            {
                "/robots.txt": trickle(
                    b"",
                    b"#",
                    0.05,
                    _head("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "100000")]),
                ),
                "*": answer(SEED_HTML),
            },
            "slow-robots",
        )
        self.refused_port = _closed_port()

    def _server(self, routes: dict[str, Route], name: str) -> HostileServer:
        server = HostileServer(routes, name)
        self.servers.append(server)
        return server

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    @property
    def seed(self) -> str:
        return self.main.url("/seed")

    def cases(self) -> list[WebCase]:
        m = self.main
        static = [
            WebCase(path.strip("/").replace("/", "-"), m.url(path))
            for path in (
                "/endless-chunked",
                "/slowloris",
                "/dribble-body",
                "/over-cap-declared",
                "/over-cap-chunked",
                "/gzip-bomb",
                "/br-bomb",
                "/bad-gzip",
                "/length-short",
                "/length-long",
                "/length-negative",
                "/length-twice",
                "/bad-chunked",
                "/chunked-and-length",
                "/bad-charset",
                "/charset-utf7",
                "/binary-as-html",
                "/empty-200",
                "/no-content-type",
                "/deep-nesting",
                "/many-links",
                "/redirect-loop",
                "/chain/11",
                "/to-metadata",
                "/to-private",
                "/to-ipv6-loopback",
                "/to-file",
                "/to-gopher",
                "/to-bad-port",
                "/status-404",
                "/status-410",
                "/status-500",
                "/status-999",
                "/not-http",
                "/http09",
                "/hang-up",
                "/bad-header",
                "/huge-header",
                "/meta-refresh-loop",
                "/pdf",
                "/pdf-as-octets",
                "/unknown-type",
            )
        ]
        port = m.port
        return [
            *static,
            WebCase("chain-10-ok", m.url("/chain/10")),
            WebCase("userinfo", f"http://user:secret@127.0.0.1:{port}/seed"),
            WebCase("idn-unresolvable", "http://bücher-hostile.invalid/"),
            WebCase("punycode-unresolvable", "http://xn--bcher-hostile-kva.invalid/"),
            WebCase("refused-port", f"http://127.0.0.1:{self.refused_port}/"),
            WebCase("metadata-direct", "http://169.254.169.254/latest/meta-data/"),
            WebCase("ipv6-loopback-direct", f"http://[::1]:{port}/seed"),
            WebCase("header-injection-encoded", m.url("/inject%0d%0aX-Injected:%201")),
            WebCase("status-429-retry-after", self.throttled.url("/status-429")),
            WebCase("robots-huge", self.huge_robots.url("/page")),
            WebCase("robots-binary", self.binary_robots.url("/page")),
            WebCase("robots-slow", self.slow_robots.url("/page")),
        ]

    def render_cases(self) -> list[WebCase]:
        """A few cases through the real Chromium (render=always), bounded by render_timeout_ms."""
        always = {"render": "always"}
        return [
            WebCase("render-seed", self.main.url("/seed"), always),
            WebCase("render-meta-refresh-loop", self.main.url("/meta-refresh-loop"), always),
            WebCase("render-deep-nesting", self.main.url("/deep-nesting"), always),
            WebCase("render-dribble-body", self.main.url("/dribble-body"), always),
        ]

    def smoke_cases(self) -> list[WebCase]:
        """A handful of quick static cases for `--smoke`."""
        wanted = {"redirect-loop", "to-metadata", "status-404", "gzip-bomb", "bad-chunked", "pdf"}
        return [c for c in self.cases() if c.name in wanted]


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
