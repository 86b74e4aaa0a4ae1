"""A misbehaving worker on the real harness: `python fault_worker.py` (TELHA_* environment).

It serves formats `faulty` and `faulty-cpu` (one handler); the job's option `mode` says
how it ends:

    ok            projects the text like the example worker
    memory        allocates until MemoryError under RLIMIT_AS (harness exit 86)      -> oom
    native_oom    the message of a native allocation failure on stderr, then abort  -> oom
    exit          os._exit(option `code`)                                          -> crash
    segv          reads address 0                                                  -> crash
    abort         os.abort()                                                       -> crash
    sleep         sleeps past the pool's job timeout                               -> timeout
    spin          spins past the pool's per-job CPU limit (SIGXCPU)                -> cpu_limit
    malformed     a submission the core must refuse (option `variant`)             -> protocol
    invalid_input / unsupported / too_large / transient: the typed worker failure
    then_ok       dies as option `first` on attempt 0, then succeeds

Before a death it causes itself, it writes the time (µs) to
`$FAULTS_RECORD_DIR/<job>-<lease>.died`, so the suite can time death -> job failed.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from example_worker import handle as handle_txt
from workers_common import (
    InvalidInput,
    Job,
    TooLarge,
    Unsupported,
    WorkerConsumer,
    WorkerFailure,
)

MALFORMED: dict[str, bytes] = {
    "not_json": b"this is not json",
    "span_past_end": b'{"v":1,"canonicalText":"abc","spans":[{"start":0,"end":9,"kind":"p"}]}',
    "inside_utf8": '{"v":1,"canonicalText":"é","spans":[{"start":0,"end":1,"kind":"p"}]}'.encode(),
    "bad_ref": b'{"v":1,"canonicalText":"a","nodes":[{"labels":["A"],"spanRefs":[3]}]}',
    "wrong_type": b'{"v":1,"canonicalText":5}',
    "bad_label": b'{"v":1,"canonicalText":"a","nodes":[{"labels":["1 bad"]}]}',
}


def _record_death(job: Job) -> None:
    record = os.environ.get("FAULTS_RECORD_DIR")
    if record:
        path = Path(record) / f"{job.job_id}-{job.attempt}.died"
        path.write_text(str(time.time_ns() // 1000))


def _memory(job: Job) -> bytes:
    hoard: list[bytearray] = []
    try:
        while True:
            hoard.append(bytearray(64 << 20))
    except MemoryError:
        hoard.clear()
        _record_death(job)
        raise


def _native_oom(job: Job) -> bytes:
    _record_death(job)
    sys.stderr.write("memory allocation of 68719476736 bytes failed\n")
    sys.stderr.flush()
    os.abort()


def _exit(job: Job) -> bytes:
    _record_death(job)
    os._exit(int(job.options.get("code", 3)))


def _segv(job: Job) -> bytes:
    _record_death(job)
    ctypes.string_at(0)
    return b""


def _abort(job: Job) -> bytes:
    _record_death(job)
    os.abort()


def _sleep(job: Job) -> bytes:
    time.sleep(float(job.options.get("secs", 600)))
    return handle_txt(job)


def _spin(job: Job) -> bytes:
    deadline = time.monotonic() + float(job.options.get("secs", 600))
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return handle_txt(job)


def _malformed(job: Job) -> bytes:
    return MALFORMED[str(job.options.get("variant", "not_json"))]


def _typed(cls: type[WorkerFailure]) -> Callable[[Job], bytes]:
    def handle(job: Job) -> bytes:
        raise cls(f"fault suite: {cls.__name__}")

    return handle


MODES: dict[str, Callable[[Job], bytes]] = {
    "ok": handle_txt,
    "memory": _memory,
    "native_oom": _native_oom,
    "exit": _exit,
    "segv": _segv,
    "abort": _abort,
    "sleep": _sleep,
    "spin": _spin,
    "malformed": _malformed,
    "invalid_input": _typed(InvalidInput),
    "unsupported": _typed(Unsupported),
    "too_large": _typed(TooLarge),
    "transient": _typed(WorkerFailure),
}


def handle(job: Job) -> bytes:
    mode = str(job.options.get("mode", "ok"))
    if mode == "then_ok":
        mode = str(job.options.get("first", "segv")) if job.attempts == 0 else "ok"
    return MODES[mode](job)


def main() -> int:
    return WorkerConsumer({"faulty": handle, "faulty-cpu": handle}).run()


if __name__ == "__main__":
    raise SystemExit(main())
