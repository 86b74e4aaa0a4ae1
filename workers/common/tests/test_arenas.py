"""glibc's malloc arenas under the supervisor's RLIMIT_AS (workers_common.arenas).

Each thread that allocates gets an arena reserving 64 MiB of address space; before the
cap, a worker's threads held ~380 MB of a 512 MB limit and a 2 MB one-line text died of
MemoryError. These tests run a fresh interpreter under the limit, as the supervisor
starts a worker, with as many allocating threads as a busy worker has.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap

import pytest

from workers_common import arenas

pytestmark = pytest.mark.skipif(
    os.confstr("CS_GNU_LIBC_VERSION") is None, reason="glibc's arenas only"
)

LIMIT_MB = 512  # the shipped supervisor.toml's [pools.text.limits].memory_mb

# Ten threads that each allocate (4 KiB objects: below glibc's mmap threshold, so they come
# from the thread's arena) and stay alive, then the example worker's projection of a 2 MB
# line of one character, as the hostile fault suite submits it.
CHILD = textwrap.dedent(
    """
    import json, threading
    import workers_common
    from workers_common import arenas
    from example_worker import project

    def vm_kib():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1])

    before = vm_kib()
    ready, release = threading.Barrier(11), threading.Event()

    def hold():
        try:
            held = [bytearray(4096) for _ in range(64)]
        except MemoryError:
            ready.abort()  # the main thread's wait raises: the child fails at once
            raise
        ready.wait()
        release.wait()
        del held

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(10)]
    for thread in threads:
        thread.start()
    ready.wait()
    grown = vm_kib() - before
    out = project("A" * (2 << 20), name="one-line.txt")
    release.set()
    for thread in threads:
        thread.join()
    print(json.dumps({"capped": arenas.CAPPED, "grown_kib": grown, "bytes": len(out)}))
    """
)


def _run(limit_mb: int | None, env: dict[str, str] | None = None) -> dict[str, object]:
    def limit() -> None:
        if limit_mb is not None:
            size = limit_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (size, size))

    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env={**clean, **(env or {})},
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_threads_under_the_text_pools_limit_leave_room_for_a_2mb_line() -> None:
    result = _run(LIMIT_MB)
    assert result["capped"] is True
    assert isinstance(result["bytes"], int)
    assert result["bytes"] > 2 << 20
    # Ten threads' stacks (8 MiB each, reserved) and at most one more 64 MiB arena: without
    # the cap each thread reserved an arena of its own (10 x 64 MiB, over the limit).
    grown = result["grown_kib"]
    assert isinstance(grown, int)
    assert grown < (10 * 8 + 64 + 16) << 10, f"{grown} KiB of address space for 10 threads"


def test_no_address_space_limit_is_left_alone() -> None:
    assert _run(None)["capped"] is False


def test_an_operators_malloc_arena_max_is_kept() -> None:
    assert _run(LIMIT_MB, {"MALLOC_ARENA_MAX": "1"})["capped"] is False


def test_this_process_reports_what_it_did() -> None:
    limited = resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
    assert arenas.CAPPED is (limited and "MALLOC_ARENA_MAX" not in os.environ)
