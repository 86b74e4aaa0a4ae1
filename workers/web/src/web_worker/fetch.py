"""The static fetch: one GET per hop to the address the guard pinned, redirects by hand.

httpx never resolves a name here: each hop's URL is rewritten to the pinned IP, the
original host goes in the `Host` header and, for https, in the TLS SNI and certificate
check (httpcore's `sni_hostname`). Environment proxies are ignored (`trust_env=False`), or
a proxy would do its own lookup. Bodies are read decoded (gzip, br) up to a cap, under a
deadline for the whole fetch, so a slow or endless body ends as a typed failure.

The deadline holds for every byte, the response's headers included: httpx's timeouts are
per read, so a server that dribbles its headers a byte at a time (slowloris) kept a fetch
with a 5 s budget for as long as it liked (past the pool's job timeout: the worker was
killed; found by the fault suite). The connections' reads and writes are given what is
left of the fetch's deadline instead (`_DeadlineBackend`).
"""

from __future__ import annotations

import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpcore
import httpx

from workers_common import FetchFailed, InvalidInput, TooLarge, WorkerFailure

from .guard import Guard, Pinned, Refused
from .urls import DEFAULT_PORTS

__all__ = ["FetchLimits", "Fetcher", "Response", "StatusFailure", "check_status", "retry_after"]

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_CLIENTS = 16


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """Bounds of one fetch (all its hops together for `total_s`)."""

    connect_s: float = 10.0
    total_s: float = 30.0
    max_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 10


@dataclass(frozen=True, slots=True)
class Response:
    """What a fetch ended with, after its redirects."""

    url: str
    """The URL asked for."""
    final_url: str
    status: int
    headers: Mapping[str, str]
    """Lower-cased names; only the ones the worker reads."""
    body: bytes
    redirects: tuple[str, ...] = ()
    address: str = ""
    """The address the last hop connected to."""
    elapsed_s: float = field(default=0.0, compare=False)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


class StatusFailure(FetchFailed):
    """An HTTP status the fetch cannot use; retryable, carrying `Retry-After` when given
    (the harness sends it to the core as the retry's least wait)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message, retry_after_s=retry_after_s)


_KEPT_HEADERS = ("content-type", "retry-after", "location", "content-language", "x-robots-tag")


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a `Retry-After` header asks to wait (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    wait = moment.timestamp() - (time.time() if now is None else now)
    return max(0.0, wait)


def check_status(response: Response) -> None:
    """Raises the failure an unusable final status maps to (2xx passes).

    404/410 -> permanent invalid_input; 429, 408 and 5xx -> fetch_failed (retried, with
    Retry-After kept as a minimum); any other status -> permanent invalid_input.
    """
    status = response.status
    if 200 <= status < 300:
        return
    where = response.final_url
    if status in (404, 410):
        raise InvalidInput(f"HTTP {status} for {where}")
    if status in (408, 429) or status >= 500:
        wait = retry_after(response.headers.get("retry-after"))
        hint = f" (Retry-After {wait:.0f} s)" if wait is not None else ""
        raise StatusFailure(f"HTTP {status} for {where}{hint}", wait)
    raise InvalidInput(f"HTTP {status} for {where}")


def _pinned_url(url: str, pinned: Pinned) -> tuple[str, str]:
    """The URL with the pinned address in place of the host, and the Host header."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port_suffix = "" if pinned.port == DEFAULT_PORTS[scheme] else f":{pinned.port}"
    shown_host = f"[{pinned.host}]" if ":" in pinned.host else pinned.host
    netloc = f"{pinned.netloc}:{pinned.port}"
    target = urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))
    return target, shown_host + port_suffix


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise InvalidInput(f"not an http(s) URL: {url}")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError as err:
        raise InvalidInput(f"bad port in {url}: {err}") from err
    return parts.hostname.lower(), port


# The deadline of the fetch this thread is making (monotonic seconds), read by every
# connection's reads and writes; unset (None) for requests made without one.
_DEADLINE = threading.local()


def _bounded(timeout: float | None, timeout_error: type[Exception]) -> float | None:
    deadline: float | None = getattr(_DEADLINE, "at", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise timeout_error("the fetch's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the current fetch's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.SyncBackend):
    """httpcore's own sync backend, its TCP streams wrapped in `_DeadlineStream`."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            super().connect_tcp(host, port, bounded, local_address, socket_options)
        )


def _transport(tls: ssl.SSLContext) -> httpx.HTTPTransport:
    """httpx's transport over `_DeadlineBackend`. httpx takes no network backend, so its
    connection pool is rebuilt with one, as HTTPTransport builds it (httpx 0.28, pinned by
    uv.lock; test_fetch's slowloris test fails if this stops working)."""
    transport = httpx.HTTPTransport(verify=tls, http2=True, trust_env=False)
    pool = transport._pool
    transport._pool = httpcore.ConnectionPool(
        ssl_context=tls,
        max_connections=pool._max_connections,
        max_keepalive_connections=pool._max_keepalive_connections,
        keepalive_expiry=pool._keepalive_expiry,
        http1=True,
        http2=True,
        network_backend=_DeadlineBackend(),
    )
    return transport


class Fetcher:
    """Guarded GETs; one small pool of httpx clients per host, reused across jobs.

    A client per host, not one for all: an HTTP/2 connection opened (and its certificate
    checked) for one name must not carry another name's requests to the same address.
    """

    def __init__(self, guard: Guard, user_agent: str) -> None:
        self.guard = guard
        self.user_agent = user_agent
        # One TLS context for every client: building one reads the CA bundle (~20 ms).
        self._tls = ssl.create_default_context()
        self._clients: OrderedDict[str, httpx.Client] = OrderedDict()
        # The renderer fetches sub-requests from threads; the client table is shared.
        self._lock = threading.Lock()

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def _client(self, host: str) -> httpx.Client:
        with self._lock:
            return self._client_locked(host)

    def _client_locked(self, host: str) -> httpx.Client:
        client = self._clients.pop(host, None)
        if client is None:
            client = httpx.Client(
                transport=_transport(self._tls), trust_env=False, follow_redirects=False
            )
        self._clients[host] = client
        while len(self._clients) > _MAX_CLIENTS:
            _, oldest = self._clients.popitem(last=False)
            oldest.close()
        return client

    def refusal(self, url: str) -> str | None:
        """Why the guard refuses `url`'s address (its reason), or None when it may be
        fetched; a URL that does not resolve counts as not refused."""
        try:
            host, port = _host_port(url)
            self.guard.pin(host, port)
        except Refused as err:
            return str(err)
        except WorkerFailure:
            return None
        return None

    def get(
        self,
        url: str,
        limits: FetchLimits,
        *,
        on_hop: Callable[[str], None] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Response:
        """GETs `url`, following up to `limits.max_redirects` redirects, each hop guarded.

        `on_hop(url)` runs before each hop (robots and politeness hook in there).
        """
        started = time.monotonic()
        deadline = started + limits.total_s
        redirects: list[str] = []
        current = url
        while True:
            if on_hop is not None:
                on_hop(current)
            response = self._hop(current, limits, deadline, extra_headers)
            location = response.headers.get("location")
            if response.status not in _REDIRECTS or not location:
                return Response(
                    url=url,
                    final_url=current,
                    status=response.status,
                    headers=response.headers,
                    body=response.body,
                    redirects=tuple(redirects),
                    address=response.address,
                    elapsed_s=time.monotonic() - started,
                )
            if len(redirects) >= limits.max_redirects:
                raise InvalidInput(f"more than {limits.max_redirects} redirects from {url}")
            current = urljoin(current, location.strip())
            _host_port(current)  # a redirect to ftp: or a bad port is the site's fault
            redirects.append(current)

    def _hop(
        self,
        url: str,
        limits: FetchLimits,
        deadline: float,
        extra_headers: Mapping[str, str] | None,
    ) -> Response:
        host, port = _host_port(url)
        pinned = self.guard.pin(host, port)
        target, host_header = _pinned_url(url, pinned)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchFailed(f"timeout: fetch of {url} took over {limits.total_s:g} s")
        headers = {"host": host_header, "user-agent": self.user_agent, **(extra_headers or {})}
        timeout = httpx.Timeout(remaining, connect=min(limits.connect_s, remaining))
        extensions = {"sni_hostname": host} if url.lower().startswith("https:") else {}
        _DEADLINE.at = deadline
        try:
            with self._client(host).stream(
                "GET", target, headers=headers, timeout=timeout, extensions=extensions
            ) as streamed:
                body = _read_capped(streamed, url, limits, deadline)
                kept = {k: streamed.headers[k] for k in _KEPT_HEADERS if k in streamed.headers}
                return Response(
                    url=url,
                    final_url=url,
                    status=streamed.status_code,
                    headers=kept,
                    body=body,
                    address=pinned.address,
                )
        except httpx.TimeoutException as err:
            raise FetchFailed(f"timeout: {url} ({type(err).__name__})") from err
        except httpx.HTTPError as err:
            raise FetchFailed(f"{type(err).__name__}: {url}: {err}") from err
        finally:
            _DEADLINE.at = None


def _read_capped(streamed: httpx.Response, url: str, limits: FetchLimits, deadline: float) -> bytes:
    declared = streamed.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes:
        raise TooLarge(f"{url}: Content-Length {declared} is over max_bytes={limits.max_bytes}")
    chunks: list[bytes] = []
    size = 0
    # Decoded bytes are what count: a small gzip body must not unpack past the cap.
    # Chunks as they arrive (no buffering to a size), so the deadline is seen while a
    # server dribbles its body.
    for chunk in streamed.iter_bytes():
        size += len(chunk)
        if size > limits.max_bytes:
            raise TooLarge(f"{url}: body is over max_bytes={limits.max_bytes}")
        if time.monotonic() > deadline:
            raise FetchFailed(f"timeout: body of {url} took over {limits.total_s:g} s")
        chunks.append(chunk)
    return b"".join(chunks)
