"""The static fetch against a real local server: the SSRF guard on every hop, redirects,
statuses, charsets, size and time limits, robots.txt and the per-host turns."""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from web_worker.guard import Guard, refusal_rule
from web_worker.handler import WebWorker
from workers_common import (
    EXIT_CONFIG,
    FetchFailed,
    InvalidInput,
    TooLarge,
    Unsupported,
    describe_failure,
)

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


TEXT = "<p>" + "A sentence of ordinary page text that an extractor keeps as content. " * 4 + "</p>"


def page(worker: WebWorker, url: str, **options: Any) -> dict[str, Any]:
    options.setdefault("crawl_delay_ms", 0)
    result: dict[str, Any] = json.loads(worker.handle(url_job(url, **options)))
    return result


def props(result: dict[str, Any]) -> dict[str, Any]:
    [first] = [n for n in result["nodes"] if n["labels"] == ["PAGE"]]
    return dict(first["properties"])


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.20.0.1", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("100.64.0.1", "cgnat"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("fd00::1", "ipv6-ula"),
        ("::ffff:127.0.0.1", "ipv4-mapped"),
        ("::ffff:8.8.8.8", "ipv4-mapped"),
        ("64:ff9b::a00:1", "nat64"),
        ("8.8.8.8", None),
        ("2606:4700::1111", None),
    ],
)
def test_each_refused_network_has_its_rule(address: str, rule: str | None) -> None:
    """Every network the issue names is refused under a named rule; public ones pass."""
    assert refusal_rule(ipaddress.ip_address(address)) == rule


def test_allow_nets_is_the_only_way_through() -> None:
    """WEB_ALLOW_NETS lets exactly its CIDRs through; a malformed entry is refused."""
    guard = Guard.from_env({"WEB_ALLOW_NETS": "127.0.0.1/32, 10.0.0.0/8"})
    assert guard.verdict(ipaddress.ip_address("127.0.0.1")) is None
    assert guard.verdict(ipaddress.ip_address("127.0.0.2")) == "loopback"
    assert guard.verdict(ipaddress.ip_address("10.9.9.9")) is None
    assert Guard.from_env({}).verdict(ipaddress.ip_address("127.0.0.1")) == "loopback"
    with pytest.raises(ValueError, match="not a CIDR"):
        Guard.from_env({"WEB_ALLOW_NETS": "localhost"})


def test_default_guard_refuses_the_local_server(site: Site, tmp_path: Path) -> None:
    """Without WEB_ALLOW_NETS a loopback URL is permanent unsupported naming address and rule,
    and nothing reaches the server."""
    site.add("/", Answer(body=html_page("x", TEXT)))
    worker = make_worker(tmp_path, WEB_ALLOW_NETS="")
    with pytest.raises(Unsupported) as err:
        page(worker, site.url("/"))
    reason, permanent, _ = describe_failure(err.value)
    assert permanent
    assert "127.0.0.1" in reason
    assert "loopback" in reason
    assert site.seen == []


def test_the_name_is_resolved_once_per_hop_and_the_address_pinned(
    site: Site, worker: WebWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`localhost` is looked up once for each hop; httpx connects to the pinned address and
    sends the original Host header."""
    site.add("/start", Answer(302, headers={"Location": "/end"}))
    site.add("/end", Answer(body=html_page("End", TEXT)))
    lookups: list[str] = []
    real = socket.getaddrinfo

    def counting(host: Any, *args: Any, **kwargs: Any) -> Any:
        lookups.append(str(host))
        return [i for i in real(host, *args, **kwargs) if i[0] == socket.AF_INET]

    monkeypatch.setattr(socket, "getaddrinfo", counting)
    port = site.base.rsplit(":", 1)[1]
    result = page(worker, f"http://localhost:{port}/start", respect_robots=False)
    assert props(result)["final_url"] == f"http://localhost:{port}/end"
    # httpx passes the pinned literal to getaddrinfo too, which does no DNS.
    assert [h for h in lookups if h != "127.0.0.1"] == ["localhost", "localhost"]
    assert [s.headers["host"] for s in site.seen] == [f"localhost:{port}"] * 2


def test_redirect_chain_is_followed_by_hand(site: Site, worker: WebWorker) -> None:
    """Three hops (absolute, relative, 307) end on the page; each is on the PAGE."""
    site.add("/a", Answer(301, headers={"Location": site.url("/b")}))
    site.add("/b", Answer(302, headers={"Location": "c"}))
    site.add("/c", Answer(307, headers={"Location": "/d?x=1#frag"}))
    site.add("/d?x=1", Answer(body=html_page("D", TEXT)))
    result = page(worker, site.url("/a"))
    p = props(result)
    assert p["final_url"] == site.url("/d?x=1")
    assert p["redirects"] == [site.url("/b"), site.url("/c"), site.url("/d?x=1")]
    assert p["status"] == 200


def test_more_than_ten_redirects_is_invalid_input(site: Site, worker: WebWorker) -> None:
    site.add("/loop*", lambda path: Answer(302, headers={"Location": path + "x"}))
    with pytest.raises(InvalidInput, match="more than 10 redirects"):
        page(worker, site.url("/loop"))
    assert sum(1 for s in site.seen if s.path.startswith("/loop")) == 11


def test_redirect_to_a_private_address_is_refused_before_connecting(
    site: Site, worker: WebWorker
) -> None:
    """The guard checks the redirect's target: 10.1.2.3 is refused as private, permanent."""
    site.add("/go", Answer(302, headers={"Location": "http://10.1.2.3/admin"}))
    with pytest.raises(Unsupported, match=r"10\.1\.2\.3.*private") as err:
        page(worker, site.url("/go"), respect_robots=False)
    assert describe_failure(err.value).permanent


def test_redirect_to_metadata_by_name_is_refused(site: Site, worker: WebWorker) -> None:
    """A redirect to another loopback address than the allowed one is refused as loopback."""
    site.add("/go", Answer(302, headers={"Location": "http://127.0.0.2:9/"}))
    with pytest.raises(Unsupported, match="loopback"):
        page(worker, site.url("/go"), respect_robots=False)


@pytest.mark.parametrize(
    ("status", "failure", "permanent"),
    [
        (404, InvalidInput, True),
        (410, InvalidInput, True),
        (500, FetchFailed, False),
        (503, FetchFailed, False),
        (429, FetchFailed, False),
        (403, InvalidInput, True),
    ],
)
def test_statuses_map_to_failures(
    site: Site, worker: WebWorker, status: int, failure: type[Exception], permanent: bool
) -> None:
    site.add("/s", Answer(status, b"no"))
    with pytest.raises(failure) as err:
        page(worker, site.url("/s"))
    reason, is_permanent, _ = describe_failure(err.value)
    assert is_permanent is permanent
    assert f"HTTP {status}" in reason


def test_retry_after_delays_the_next_fetch_of_the_host(site: Site, worker: WebWorker) -> None:
    """A 429 with Retry-After: 2 fails retryable, and the host's next fetch waits >= 2 s."""
    site.add("/busy", Answer(429, b"slow down", headers={"Retry-After": "2"}))
    site.add("/ok", Answer(body=html_page("ok", TEXT)))
    with pytest.raises(FetchFailed, match="Retry-After 2"):
        page(worker, site.url("/busy"), respect_robots=False)
    refused_at = site.seen[-1].at
    page(worker, site.url("/ok"), respect_robots=False)
    assert site.seen[-1].at - refused_at >= 1.9


def test_latin1_without_header_charset_decodes_by_meta(site: Site, worker: WebWorker) -> None:
    body = html_page("Café", "<p>Ça coûte cher, très cher: " + "é" * 50 + " " + TEXT[3:])
    latin = (
        body.decode()
        .replace('charset="utf-8"', 'charset="iso-8859-1"')
        .replace('<meta charset="utf-8">', '<meta charset="iso-8859-1">')
    )
    site.add("/l", Answer(body=latin.encode("iso-8859-1"), content_type="text/html"))
    result = page(worker, site.url("/l"))
    assert props(result)["title"] == "Café"
    assert props(result)["encoding"] == "iso8859-1"
    assert "Ça coûte cher, très cher" in result["canonicalText"]


def test_latin1_without_any_charset_is_detected(site: Site, worker: WebWorker) -> None:
    text = "Le prix de la maison a augmenté de façon considérable, déjà très cher à Noël. " * 8
    body = f"<html><head><title>Prix</title></head><body><p>{text}</p></body></html>"
    site.add("/d", Answer(body=body.encode("iso-8859-1"), content_type="text/html"))
    result = page(worker, site.url("/d"))
    assert "augmenté de façon considérable, déjà très cher à Noël" in result["canonicalText"]
    assert "\ufffd" not in result["canonicalText"]


def test_twenty_megabyte_page_is_too_large(site: Site, worker: WebWorker) -> None:
    """Over the default 10 MiB cap: permanent too_large, read no further than the cap."""
    site.add("/big", Answer(body=html_page("big", "<p>" + "x" * (20 << 20) + "</p>")))
    with pytest.raises(TooLarge, match="max_bytes"):
        page(worker, site.url("/big"))


def test_a_body_that_never_ends_times_out(site: Site, worker: WebWorker) -> None:
    """A server dribbling its body byte by byte: fetch_failed at timeout_ms, not a hang."""
    site.add("/slow", Answer(body=html_page("s", TEXT), dribble_s=0.05))
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="timeout"):
        page(worker, site.url("/slow"), timeout_ms=1500, respect_robots=False)
    assert time.monotonic() - started < 5


@pytest.fixture
def slowloris() -> Iterator[str]:
    """A raw server on 127.0.0.1 that sends its status line and then one header byte every
    50 ms, for up to 60 s: an answer that never gets past its headers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def dribble(conn: socket.socket) -> None:
        with conn, suppress(OSError):
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            deadline = time.monotonic() + 60
            while not stop.is_set() and time.monotonic() < deadline:
                conn.sendall(b"a")
                time.sleep(0.05)

    def accept() -> None:
        with suppress(OSError):
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=dribble, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        stop.set()
        listener.close()


def test_headers_dribbled_forever_time_out_at_the_deadline(
    slowloris: str, worker: WebWorker
) -> None:
    """httpx's timeouts are per read, and a byte every 50 ms satisfies every read: the
    fetch's own deadline must hold while the headers arrive (it lasted past the pool's
    job timeout, and the supervisor killed the worker)."""
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="timeout"):
        page(worker, slowloris, timeout_ms=1500, respect_robots=False)
    assert time.monotonic() - started < 5


def test_connection_refused_is_fetch_failed(worker: WebWorker) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(FetchFailed):
        page(worker, f"http://127.0.0.1:{port}/", respect_robots=False)


def test_robots_disallow_is_permanent_unsupported(site: Site, worker: WebWorker) -> None:
    site.add(
        "/robots.txt",
        Answer(body=b"User-agent: *\nDisallow: /private\n", content_type="text/plain"),
    )
    site.add("/private/x", Answer(body=html_page("p", TEXT)))
    site.add("/public", Answer(body=html_page("p", TEXT)))
    with pytest.raises(Unsupported, match=r"disallowed by robots\.txt") as err:
        page(worker, site.url("/private/x"))
    assert describe_failure(err.value).permanent
    assert site.hits("/private/x") == 0
    page(worker, site.url("/public"))
    assert site.hits("/robots.txt") == 1  # cached per host
    page(worker, site.url("/private/x"), respect_robots=False)
    assert site.hits("/private/x") == 1


def test_robots_for_our_agent_and_crawl_delay(site: Site, worker: WebWorker) -> None:
    """Rules for TelhaBot apply to us; Crawl-delay spaces two fetches of the host."""
    site.add(
        "/robots.txt",
        Answer(
            body=b"User-agent: TelhaBot\nDisallow: /no\nCrawl-delay: 1\n", content_type="text/plain"
        ),
    )
    site.add("/a", Answer(body=html_page("a", TEXT)))
    site.add("/b", Answer(body=html_page("b", TEXT)))
    with pytest.raises(Unsupported):
        page(worker, site.url("/no"))
    page(worker, site.url("/a"))
    page(worker, site.url("/b"))
    times = [s.at for s in site.seen if s.path in ("/a", "/b")]
    assert times[1] - times[0] >= 0.95


def test_robots_unavailable_is_retryable(site: Site, worker: WebWorker) -> None:
    site.add("/robots.txt", Answer(503, b"down"))
    site.add("/a", Answer(body=html_page("a", TEXT)))
    with pytest.raises(FetchFailed, match=r"robots\.txt unavailable"):
        page(worker, site.url("/a"))
    assert site.hits("/a") == 0


def test_crawl_delay_ms_spaces_fetches_across_workers(site: Site, tmp_path: Path) -> None:
    """Two workers sharing the state dir take turns on the host, crawl_delay_ms apart."""
    site.add("/x*", Answer(body=html_page("x", TEXT)))
    first, second = make_worker(tmp_path), make_worker(tmp_path)
    try:
        for i, w in enumerate([first, second, first]):
            page(w, site.url(f"/x{i}"), crawl_delay_ms=400, respect_robots=False)
    finally:
        first.close()
        second.close()
    times = [s.at for s in site.seen]
    assert all(b - a >= 0.38 for a, b in itertools.pairwise(times))


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


@pytest.fixture
def tls_site(tmp_path: Path) -> Iterator[tuple[Site, Path]]:
    """An HTTPS server whose certificate (for `localhost`) is signed by a test CA."""
    ca_key, ca, key, csr, cert = (
        tmp_path / n for n in ("ca.key", "ca.pem", "k.pem", "r.csr", "c.pem")
    )
    _openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(ca_key),
        "-out",
        str(ca),
        "-days",
        "2",
        "-subj",
        "/CN=test CA",
    )
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        str(key),
        "-out",
        str(csr),
        "-subj",
        "/CN=localhost",
    )
    ext = tmp_path / "ext.cnf"
    ext.write_text("subjectAltName=DNS:localhost\n")
    _openssl(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-out",
        str(cert),
        "-days",
        "2",
        "-extfile",
        str(ext),
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with serve(tls=context) as running:
        yield running, ca


def test_https_is_pinned_and_checks_the_certificate_for_the_name(
    tls_site: tuple[Site, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over TLS the worker connects to the pinned address yet sends SNI and checks the
    certificate for `localhost`; with the CA unknown, the fetch fails (retryable)."""
    site, ca = tls_site
    site.add("/", Answer(body=html_page("Secure", TEXT)))
    untrusting = make_worker(tmp_path / "a")
    try:
        with pytest.raises(FetchFailed, match="CERTIFICATE_VERIFY_FAILED"):
            page(untrusting, site.url("/"), respect_robots=False)
    finally:
        untrusting.close()
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    trusting = make_worker(tmp_path / "b")
    try:
        result = page(trusting, site.url("/"), respect_robots=False)
    finally:
        trusting.close()
    assert props(result)["title"] == "Secure"
    assert props(result)["final_url"] == site.url("/")


def test_a_malformed_allow_list_stops_the_worker_with_the_config_code() -> None:
    """A bad WEB_ALLOW_NETS is the operator's error: exit 78 at start, not failed jobs."""
    env = {
        **os.environ,
        "WEB_ALLOW_NETS": "127.0.0.1/32, intranet",
        "TELHA_CORE_ADDR": "127.0.0.1:1",
        "TELHA_WORKER_ID": "web-test",
        "TELHA_TOKEN": "t",
        "TELHA_FORMATS": "web",
    }
    done = subprocess.run(
        [sys.executable, "-m", "web_worker"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == EXIT_CONFIG
    assert "'intranet' is not a CIDR network" in done.stderr


def test_the_politeness_state_is_shared_by_the_pool_not_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the core each worker's TMPDIR is its own (removed when it exits): the per-host
    turns must live where every worker of the pool sees them, the pool's shared folder."""
    from web_worker.polite import default_state_dir

    monkeypatch.delenv("WEB_STATE_DIR", raising=False)
    monkeypatch.setenv("TELHA_POOL_TMP", str(tmp_path / "pool"))
    assert default_state_dir() == tmp_path / "pool" / "web-hosts"
    monkeypatch.setenv("WEB_STATE_DIR", str(tmp_path / "chosen"))
    assert default_state_dir() == tmp_path / "chosen"  # the operator's choice wins
