"""The worker's configuration, read from the TELHA_* environment (DESIGN.md §7).

The supervisor sets these for the workers it spawns; a worker started by hand on another
host sets the same ones. Anything missing or malformed is a ConfigError, which the consumer
turns into the CONFIG exit code: respawning a misconfigured worker cannot help.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ._proto import wire_rules

__all__ = ["ConfigError", "WorkerConfig"]

_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]{1,5})\Z")
# Format names are lowercase, like the core's ("csv", "code-archive").
# The format-name rule the core applies too (proto/telha/v1/rules.json).
_FORMAT = re.compile(wire_rules.FORMAT_PATTERN + r"\Z")


class ConfigError(Exception):
    """The TELHA_* environment is missing a variable or holds a malformed value."""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """Where the core is, who this worker is, and what it handles."""

    core_addr: str
    """`host:port` or `unix:/absolute/path`, as gRPC targets spell them."""
    worker_id: str
    token: str
    formats: tuple[str, ...]
    ca_pem: bytes | None = None
    """PEM CA certificate(s) from the file `TELHA_CA` names: the channel speaks TLS and
    verifies the core's certificate with them. None: plaintext."""
    running_file: str | None = None
    """`TELHA_RUNNING_FILE`: where a prefetching worker writes the job it runs as each one
    starts (the core's pool reads it when the process dies, to charge that job alone)."""
    max_in_flight: int = 1
    """`TELHA_MAX_IN_FLIGHT` (the pool's `max_in_flight`): 1 runs one job at a time, as
    the seed does; N > 1 also holds the next jobs while up to N - 1 results are on their
    way to the core, so the core's commits overlap the next jobs' work (fast handlers)."""

    @property
    def is_unix(self) -> bool:
        return self.core_addr.startswith("unix:")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WorkerConfig:
        """Reads TELHA_CORE_ADDR, TELHA_WORKER_ID, TELHA_TOKEN, TELHA_FORMATS, TELHA_CA,
        TELHA_MAX_IN_FLIGHT and TELHA_RUNNING_FILE."""
        return cls(
            core_addr=_core_addr(_required(env, "TELHA_CORE_ADDR")),
            worker_id=_required(env, "TELHA_WORKER_ID"),
            token=_token(_required(env, "TELHA_TOKEN")),
            formats=_formats(_required(env, "TELHA_FORMATS")),
            ca_pem=_ca(env.get("TELHA_CA", "").strip()),
            max_in_flight=_max_in_flight(env.get("TELHA_MAX_IN_FLIGHT", "").strip()),
            running_file=env.get("TELHA_RUNNING_FILE", "").strip() or None,
        )


MAX_IN_FLIGHT: int = wire_rules.MAX_WORKER_IN_FLIGHT
"""The most jobs a worker holds at once: one running, the others' results on their way
(the pool's `max_in_flight` is refused past the same rule, proto/telha/v1/rules.json)."""


def _max_in_flight(value: str) -> int:
    if not value:
        return 1
    if not value.isdigit() or not 1 <= int(value) <= MAX_IN_FLIGHT:
        raise ConfigError(f"TELHA_MAX_IN_FLIGHT={value!r}: want 1 to {MAX_IN_FLIGHT}")
    return int(value)


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is not set")
    return value


def _core_addr(value: str) -> str:
    if value.startswith("unix:"):
        path = value.removeprefix("unix:")
        # grpc reads "unix:relative" as relative and "unix:///abs" as absolute; insisting
        # on one spelling keeps an operator's typo from connecting somewhere surprising.
        if not path.startswith("/") or path.startswith("//"):
            raise ConfigError(f"TELHA_CORE_ADDR={value!r}: want unix:/absolute/path")
        return value
    match = _HOST_PORT.match(value)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise ConfigError(f"TELHA_CORE_ADDR={value!r}: want host:port or unix:/path")
    return value


def _ca(path: str) -> bytes | None:
    if not path:
        return None
    try:
        with open(path, "rb") as f:
            pem = f.read()
    except OSError as e:
        raise ConfigError(f"TELHA_CA={path!r}: {e.strerror}") from None
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise ConfigError(f"TELHA_CA={path!r}: no PEM certificate in it")
    return pem


def _token(value: str) -> str:
    # It travels as an HTTP/2 header value: visible ASCII only, or every call would fail.
    if not all("!" <= char <= "~" for char in value):
        raise ConfigError("TELHA_TOKEN must be printable ASCII without spaces")
    return value


def _formats(value: str) -> tuple[str, ...]:
    formats = tuple(part.strip() for part in value.split(","))
    for fmt in formats:
        if not _FORMAT.match(fmt) or len(fmt) > wire_rules.MAX_FORMAT_BYTES:
            raise ConfigError(f"TELHA_FORMATS={value!r}: {fmt!r} is not a format name")
    # Order kept as given; duplicates are dropped so the core sees each format once.
    return tuple(dict.fromkeys(formats))
