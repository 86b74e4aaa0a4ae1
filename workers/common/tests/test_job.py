"""Job: reading the JobPayload, and getting content from the local blob or from ReadBlob."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workers_common import InvalidInput, Job, Unsupported, WorkerFailure
from workers_common._proto import telha_pb2
from workers_common.job import JobPayloadError


def payload(body: dict[str, Any] | str, **fields: Any) -> telha_pb2.JobPayload:
    text = body if isinstance(body, str) else json.dumps(body)
    defaults: dict[str, Any] = {
        "job_id": "j1",
        "tenant_id": "t1",
        "organization_id": "o1",
        "kind": "txt",
        "lease_deadline": 123,
        "attempts": 2,
        "attempt": 7,
    }
    return telha_pb2.JobPayload(payload_json=text, **{**defaults, **fields})


def content_body(path: Path | None, size: int) -> dict[str, Any]:
    return {
        "format": "txt",
        "name": "a.txt",
        "options": {"clarify": True},
        "content": {"blake3": "ab" * 32, "size": size, "path": str(path) if path else None},
    }


def test_from_payload_reads_every_field(tmp_path: Path) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(b"hello")
    job = Job.from_payload(payload(content_body(blob, 5)))
    assert (job.job_id, job.tenant_id, job.organization_id, job.format, job.name) == (
        "j1",
        "t1",
        "o1",
        "txt",
        "a.txt",
    )
    assert (job.attempts, job.attempt, job.lease_deadline, job.url) == (2, 7, 123, None)
    assert dict(job.options) == {"clarify": True}
    assert job.content is not None
    assert job.content.blake3 == "ab" * 32
    with pytest.raises(TypeError):
        job.options["x"] = 1  # type: ignore[index]


def test_local_blob_is_read_directly(tmp_path: Path) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(b"hello")

    def no_stream() -> list[bytes]:
        raise AssertionError("ReadBlob must not be used when the file is local")

    job = Job.from_payload(payload(content_body(blob, 5)), no_stream)
    assert job.read_bytes() == b"hello"
    with job.content_path() as path:
        assert path == blob


@pytest.mark.parametrize("where", ["missing", "wrong-size", "no-path"])
def test_content_falls_back_to_read_blob(tmp_path: Path, where: str) -> None:
    blob = tmp_path / "blob"
    if where == "wrong-size":
        blob.write_bytes(b"a different file")
    calls: list[int] = []

    def stream() -> list[bytes]:
        calls.append(1)
        return [b"hel", b"lo"]

    job = Job.from_payload(payload(content_body(None if where == "no-path" else blob, 5)), stream)
    assert job.read_bytes() == b"hello"
    assert job.read_text() == "hello"
    with job.content_path() as path:
        assert path.read_bytes() == b"hello"
        assert path != blob
    assert not path.exists()  # the temporary copy is gone
    assert len(calls) == 3


def test_inline_content_is_read_from_the_payload_itself() -> None:
    def no_stream() -> list[bytes]:
        raise AssertionError("ReadBlob must not be used for an inline content")

    data = bytes(range(256)) * 9
    body = content_body(None, len(data))
    body["content"] = {"blake3": "ab" * 32, "size": len(data), "inline": True}
    job = Job.from_payload(payload(body, content=data), no_stream)
    assert job.content is not None
    assert job.content.path is None
    assert job.read_bytes() == data
    assert list(job.iter_chunks(1000)) == [data[i : i + 1000] for i in range(0, len(data), 1000)]
    with job.content_path() as path:
        assert path.read_bytes() == data
    assert not path.exists()


def test_inline_content_of_the_wrong_size_is_a_retryable_failure() -> None:
    body = content_body(None, 5)
    body["content"] = {"blake3": "ab" * 32, "size": 5, "inline": True}
    with pytest.raises(JobPayloadError, match="inline content is 4 bytes") as caught:
        Job.from_payload(payload(body, content=b"four"))
    assert caught.value.kind == "transient"


def test_short_read_blob_is_a_transient_failure() -> None:
    job = Job.from_payload(payload(content_body(None, 10)), lambda: [b"short"])
    with pytest.raises(WorkerFailure, match="expected 10"):
        job.read_bytes()


def test_content_without_any_source_fails() -> None:
    with pytest.raises(WorkerFailure):
        Job.from_payload(payload(content_body(None, 1))).read_bytes()


def test_url_job_has_no_content() -> None:
    job = Job.from_payload(
        payload({"format": "web", "name": "n", "url": "https://example.org/"}, kind="web")
    )
    assert job.url == "https://example.org/"
    assert job.content is None
    with pytest.raises(Unsupported):
        job.read_bytes()


def test_undecodable_text_is_invalid_input(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café".encode("latin-1"))
    with pytest.raises(InvalidInput, match="not valid utf-8"):
        Job.for_file(path, format="txt").read_text()


def test_kind_wins_over_the_body_format() -> None:
    assert Job.from_payload(payload({"format": "csv"}, kind="tsv")).format == "tsv"
    assert Job.from_payload(payload({"format": "csv"}, kind="")).format == "csv"


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[1, 2]",
        {"name": 3},
        {"options": [1]},
        {"content": "x"},
        {"content": {"size": -1}},
        {"content": {"size": True}},
        {"content": {"size": 1, "path": 5}},
        {"content": {"size": 1, "inline": "yes"}},
    ],
)
def test_malformed_payload_is_a_retryable_failure(body: dict[str, Any] | str) -> None:
    with pytest.raises(JobPayloadError) as caught:
        Job.from_payload(payload(body))
    assert caught.value.kind == "transient"


def test_for_file(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_text("abc")
    job = Job.for_file(path, format="txt", options={"a": 1})
    assert (job.name, job.format, job.read_bytes(), dict(job.options)) == (
        "x.txt",
        "txt",
        b"abc",
        {"a": 1},
    )
    assert Job.for_file(path, format="txt", name="custom").name == "custom"
