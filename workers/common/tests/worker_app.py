"""A worker process for tests: `python worker_app.py`, configured by the TELHA_* environment.

It serves formats that each exercise one harness path, steered by the job's options:

- stream:  a generator handler; partial 0 holds the DOCUMENT, later partials hold
           PARAGRAPHs with PART_OF edges to the DOCUMENT's core-assigned id (node_ids
           feedback); option open_end=true ends without a final partial (the consumer
           finalizes)
- fail:    raises the failure kind in option `kind` (or ValueError for kind=unexpected)
- slow:    sleeps option `sleep_secs`, then projects like txt (lease and heartbeat tests)
- oom:     raises MemoryError (the OOM exit code)
- crash:   sleeps option `sleep_secs`, then aborts the process (SIGABRT: a crash)
- remote:  projects like txt but as a worker on another host would, with the content
           streamed by ReadBlob (the job's local blob path, or its inline bytes, hidden
           from it)
- txt:     the example worker, or with option mode=stream|fail|slow|oom|crash the handler
           above
           (the real core only routes formats it knows, and it knows "txt")

TELHA_TEST_HEARTBEAT_SECS overrides the heartbeat interval; TELHA_TEST_RECORD_DIR, when
set, receives `<job_id>.json` with the node ids the stream handler was sent.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

from example_worker import handle as handle_txt
from workers_common import (
    FetchFailed,
    Handler,
    HandlerResult,
    IngestionResultBuilder,
    InvalidInput,
    Job,
    TooLarge,
    Unsupported,
    WorkerConsumer,
    WorkerFailure,
)

STREAM_PARAGRAPHS = ("First paragraph.", "Second — with ünïcödé.", "Third 😀.")


def handle_stream(job: Job) -> Generator[Mapping[str, Any], Sequence[str], None]:
    first = IngestionResultBuilder()
    title = first.add_span_text("Streamed document\n", kind="title")
    first.add_node(["DOCUMENT"], {"name": job.name}, spans=[title])
    ids = yield first.build()
    if len(ids) != 1 or not ids[0]:
        raise InvalidInput(f"expected one node id for the DOCUMENT, got {ids!r}")
    document_id = ids[0]
    received = [list(ids)]
    offset = first.end_offset
    for index, text in enumerate(STREAM_PARAGRAPHS):
        last = index == len(STREAM_PARAGRAPHS) - 1
        builder = IngestionResultBuilder(base_offset=offset)
        span = builder.add_span_text(text, kind="paragraph")
        builder.add_text("\n")
        node = builder.add_node(["PARAGRAPH"], {"index": index}, spans=[span])
        builder.add_relationship("PART_OF", from_ref=node, to_id=document_id)
        offset = builder.end_offset
        if last and not job.options.get("open_end"):
            _record(job, received)
            yield builder.build(partial=False)
            return
        received.append(list((yield builder.build())))
    _record(job, received)


def _record(job: Job, received: list[list[str]]) -> None:
    record_dir = os.environ.get("TELHA_TEST_RECORD_DIR")
    if record_dir:
        (Path(record_dir) / f"{job.job_id}.json").write_text(json.dumps(received))


_FAILURES: dict[str, type[WorkerFailure]] = {
    "transient": WorkerFailure,
    "invalid_input": InvalidInput,
    "unsupported": Unsupported,
    "too_large": TooLarge,
    "fetch_failed": FetchFailed,
}


def handle_fail(job: Job) -> bytes:
    kind = str(job.options.get("kind", "transient"))
    detail = str(job.options.get("detail", "boom"))
    if kind == "unexpected":
        raise ValueError(detail)
    raise _FAILURES[kind](detail)


def handle_slow(job: Job) -> bytes:
    time.sleep(float(job.options.get("sleep_secs", 1.0)))
    return handle_txt(job)


def handle_oom(job: Job) -> bytes:
    raise MemoryError("simulated allocation failure")


def handle_crash(job: Job) -> bytes:
    time.sleep(float(job.options.get("sleep_secs", 0.0)))
    os.abort()


def handle_remote(job: Job) -> bytes:
    if job.content is None:
        raise InvalidInput("remote mode needs content")
    hidden = dataclasses.replace(job.content, path=None, data=None)
    return handle_txt(dataclasses.replace(job, content=hidden))


BY_MODE: dict[str, Handler] = {
    "stream": handle_stream,
    "fail": handle_fail,
    "slow": handle_slow,
    "oom": handle_oom,
    "crash": handle_crash,
    "remote": handle_remote,
}


def handle_by_mode(job: Job) -> HandlerResult:
    return BY_MODE.get(str(job.options.get("mode")), handle_txt)(job)


HANDLERS: dict[str, Handler] = {"txt": handle_by_mode, **BY_MODE}


def main() -> int:
    interval = os.environ.get("TELHA_TEST_HEARTBEAT_SECS")
    consumer = WorkerConsumer(HANDLERS, heartbeat_interval=float(interval) if interval else None)
    return consumer.run()


if __name__ == "__main__":
    raise SystemExit(main())
