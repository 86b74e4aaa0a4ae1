"""Job: what a handler receives, with the job's identity, options and a way to its content.

The core passes a small content (up to its `[store] inline_kb`) in the JobPayload itself,
and a larger one by reference: a blake3-addressed blob file under its data dir. A worker
on the same host reads that file directly; a worker on another host (or one that sees a
different file there) streams it with ReadBlob. Handlers do not care which: they call
`read_bytes()`, `read_text()`, `iter_chunks()` or `content_path()`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ._proto import telha_pb2
from .failures import InvalidInput, Unsupported, WorkerFailure

__all__ = ["BlobSource", "Content", "Job", "JobPayloadError"]

BlobSource = Callable[[], Iterable[bytes]]
"""Opens the job's content stream from the core (ReadBlob), chunk by chunk."""

_CHUNK = 1 << 20


class JobPayloadError(WorkerFailure):
    """The core sent a payload this harness cannot read: a version mismatch, retryable."""


@dataclass(frozen=True, slots=True)
class Content:
    """The job's content blob as the core stored it."""

    blake3: str
    size: int
    path: str | None
    """Where the core keeps the blob on its own host; may not exist on this one."""
    data: bytes | None = field(default=None, repr=False)
    """The content itself, when the core sent it inline (then `path` is None)."""


@dataclass(frozen=True, slots=True)
class Job:
    """One leased job, as a handler sees it."""

    job_id: str
    tenant_id: str
    organization_id: str
    format: str
    name: str
    options: Mapping[str, Any]
    attempts: int
    """0-based count of this job's prior failed attempts."""
    attempt: int
    """The lease number (fencing token) this worker holds the job under."""
    url: str | None = None
    content: Content | None = None
    lease_deadline: int = 0
    _blob_source: BlobSource | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_payload(
        cls, payload: telha_pb2.JobPayload, blob_source: BlobSource | None = None
    ) -> Job:
        """Reads a JobPayload; a malformed payload_json raises JobPayloadError."""
        body = _payload_body(payload.payload_json)
        return cls(
            job_id=payload.job_id,
            tenant_id=payload.tenant_id,
            organization_id=payload.organization_id,
            # `kind` is what the core routed on; the body's copy is only a fallback.
            format=payload.kind or _str_field(body, "format"),
            name=_str_field(body, "name"),
            options=_options(body),
            attempts=payload.attempts,
            attempt=payload.attempt,
            url=_str_field(body, "url") or None,
            content=_content(body, payload.content),
            lease_deadline=payload.lease_deadline,
            _blob_source=blob_source,
        )

    @classmethod
    def for_file(
        cls,
        path: str | os.PathLike[str],
        *,
        format: str,
        name: str | None = None,
        options: Mapping[str, Any] | None = None,
        job_id: str = "local-job",
        tenant_id: str = "local",
    ) -> Job:
        """A job whose content is a local file: for the conformance kit and tests."""
        resolved = Path(path).resolve()
        return cls(
            job_id=job_id,
            tenant_id=tenant_id,
            organization_id="",
            format=format,
            name=resolved.name if name is None else name,
            options=MappingProxyType(dict(options or {})),
            attempts=0,
            attempt=1,
            content=Content(blake3="", size=resolved.stat().st_size, path=str(resolved)),
        )

    # -- content ---------------------------------------------------------------------------

    def _local_file(self) -> Path | None:
        content = self._require_content()
        if content.path is None:
            return None
        path = Path(content.path)
        try:
            # A blob file of another size is not ours (another host's data dir mounted at
            # the same path, a partial copy): fall back to the stream.
            return path if path.stat().st_size == content.size else None
        except OSError:
            return None

    def _require_content(self) -> Content:
        if self.content is None:
            raise Unsupported(f"job {self.job_id} carries a URL, not content")
        return self.content

    def iter_chunks(self, chunk_size: int = _CHUNK) -> Iterator[bytes]:
        """Yields the content in chunks, from the local blob file or from ReadBlob."""
        content = self._require_content()
        if content.data is not None:
            view = memoryview(content.data)
            for start in range(0, len(view), chunk_size):
                yield bytes(view[start : start + chunk_size])
            return
        local = self._local_file()
        if local is not None:
            with local.open("rb") as handle:
                while chunk := handle.read(chunk_size):
                    yield chunk
            return
        if self._blob_source is None:
            raise WorkerFailure(f"content of job {self.job_id} is neither local nor streamable")
        received = 0
        for chunk in self._blob_source():
            received += len(chunk)
            yield chunk
        if received != content.size:
            raise WorkerFailure(f"ReadBlob returned {received} bytes, expected {content.size}")

    def read_bytes(self) -> bytes:
        """The whole content in memory."""
        content = self._require_content()
        if content.data is not None:
            return content.data
        return b"".join(self.iter_chunks())

    def read_text(self, encoding: str = "utf-8") -> str:
        """The content decoded; bytes that do not decode are the input's fault (invalid_input)."""
        data = self.read_bytes()
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as err:
            raise InvalidInput(
                f"content is not valid {encoding}: {err.reason} at byte {err.start}"
            ) from err

    @contextmanager
    def content_path(self) -> Iterator[Path]:
        """A path to the content for libraries that want a file: the core's blob itself when
        it is local (read it, never write it), else a temporary copy (of the inline content,
        or streamed from the core) removed when the block ends."""
        local = self._local_file()
        if local is not None:
            yield local
            return
        with tempfile.TemporaryDirectory(prefix="telha-job-") as tmp:
            target = Path(tmp) / "content"
            with target.open("wb") as handle:
                for chunk in self.iter_chunks():
                    handle.write(chunk)
            yield target


def _payload_body(text: str) -> dict[str, Any]:
    try:
        body = json.loads(text or "{}")
    except json.JSONDecodeError as err:
        raise JobPayloadError(f"payload_json is not JSON: {err}") from err
    if not isinstance(body, dict):
        raise JobPayloadError("payload_json is not a JSON object")
    return body


def _str_field(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise JobPayloadError(f"payload_json.{key} is not a string")
    return value


def _options(body: Mapping[str, Any]) -> Mapping[str, Any]:
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise JobPayloadError("payload_json.options is not an object")
    # Read-only: a handler that wrote into its options would surprise the next reader.
    return MappingProxyType(options)


def _content(body: Mapping[str, Any], inline: bytes) -> Content | None:
    content = body.get("content")
    if content is None:
        return None
    if not isinstance(content, dict):
        raise JobPayloadError("payload_json.content is not an object")
    size = content.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise JobPayloadError("payload_json.content.size is not a byte count")
    path = content.get("path")
    if path is not None and not isinstance(path, str):
        raise JobPayloadError("payload_json.content.path is not a string")
    flag = content.get("inline", False)
    if not isinstance(flag, bool):
        raise JobPayloadError("payload_json.content.inline is not a boolean")
    if not flag:
        return Content(blake3=_str_field(content, "blake3"), size=size, path=path or None)
    if len(inline) != size:
        raise JobPayloadError(f"inline content is {len(inline)} bytes, payload_json says {size}")
    return Content(blake3=_str_field(content, "blake3"), size=size, path=None, data=inline)
