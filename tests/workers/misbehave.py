"""A worker that misbehaves on request, for the supervisor's tests.

It runs the real harness (`WorkerConsumer`) and serves `txt`; the job's option `mode`
picks what happens while it holds the job:

- ok:          a normal single-node submission
- log_memory:  logs a line with "MemoryError" to stderr, then fails cleanly (invalid_input)
- memory:      allocates until MemoryError (under RLIMIT_AS the harness exits 86)
- abort_alloc: prints a native allocation failure to stderr, then aborts (SIGABRT)
- segv:        reads address 0 (SIGSEGV)
- sleep:       sleeps option `secs` (default 3600), then succeeds
- busy:        spins the CPU forever
- rss:         starts a child in its process group that holds option `mb` MiB resident
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import time

from workers_common import IngestionResultBuilder, InvalidInput, Job, WorkerConsumer


def segv(*, leave_scratch: bool) -> None:
    """Crashes; first, with `leave_scratch`, leaves a file in the worker's temporary folder
    and says where (and where the pool's shared folder is)."""
    if leave_scratch:
        with tempfile.NamedTemporaryFile(delete=False, suffix=".partial") as scratch:
            scratch.write(b"half-written work" * 1000)
        sys.stderr.write(f"scratch file {scratch.name}\n")
        sys.stderr.write(f"pool tmp {os.environ.get('TELHA_POOL_TMP')}\n")
        sys.stderr.flush()
    ctypes.string_at(0)


def handle(job: Job) -> bytes:
    mode = job.options.get("mode", "ok")
    if mode == "log_memory":
        sys.stderr.write("warning: a MemoryError was caught and handled\n")
        sys.stderr.flush()
        raise InvalidInput("refused after logging")
    if mode == "memory":
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))
    if mode == "abort_alloc":
        sys.stderr.write("memory allocation of 1073741824 bytes failed\n")
        sys.stderr.flush()
        os.abort()
    if mode in ("segv", "scratch_segv"):
        segv(leave_scratch=mode == "scratch_segv")
    if mode == "sleep":
        time.sleep(float(job.options.get("secs", 3600)))
    if mode == "busy":
        while True:
            pass
    if mode == "rss":
        mb = int(job.options.get("mb", 300))
        code = f"import time; b = bytearray({mb} << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(3600)"
        subprocess.Popen([sys.executable, "-c", code])
        time.sleep(3600)
    builder = IngestionResultBuilder()
    span = builder.add_span_text(f"{mode} job {job.job_id}")
    builder.add_node(["DOCUMENT"], {"mode": str(mode)}, spans=[span])
    return builder.to_json()


if __name__ == "__main__":
    raise SystemExit(WorkerConsumer({"txt": handle}).run())
