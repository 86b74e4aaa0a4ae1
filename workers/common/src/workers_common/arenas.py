"""Caps glibc's malloc arenas in a worker that runs under an address-space limit.

glibc gives every thread that allocates an arena of its own, up to eight per core, and
reserves 64 MiB of address space for each one as it creates it. The reservation is not
resident, but RLIMIT_AS (the supervisor's `memory_mb`) counts it: a worker's gRPC, heartbeat
and submit threads took six arenas, so an idle text worker held 500 MB of address space
with 40 MB resident, and under the shipped `memory_mb = 512` a 2 MB one-line text file
died of MemoryError while its submission was encoded (found by the fault suite).

`cap_malloc_arenas()` runs when workers_common is imported, before the harness starts a
thread (glibc settles its arena limit once it holds more than eight arenas, so the cap
must come before that): two arenas, the main one and one for every other thread. Python's
own allocator serves small objects from its own pools and the GIL serializes most of
the rest, so sharing an arena costs a worker nothing measurable. An operator's
MALLOC_ARENA_MAX (read by glibc itself at start) is left as given, and a process
without an address-space limit is left alone: there a reservation costs nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os
import resource

__all__ = ["ARENA_MAX", "cap_malloc_arenas"]

log = logging.getLogger(__name__)

ARENA_MAX = 2
"""The arenas a worker under RLIMIT_AS keeps: the main arena and one shared by its threads."""

_M_ARENA_MAX = -8  # malloc.h


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):
        return False


def cap_malloc_arenas(arena_max: int = ARENA_MAX) -> bool:
    """Limits glibc to `arena_max` malloc arenas when this process's address space is
    limited; returns whether it did (False: not glibc, no limit, or MALLOC_ARENA_MAX set)."""
    if "MALLOC_ARENA_MAX" in os.environ or not _glibc():
        return False
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        done = bool(libc.mallopt(_M_ARENA_MAX, arena_max))
    except (OSError, AttributeError):
        done = False
    if not done:
        log.warning("could not cap glibc's malloc arenas at %d (mallopt failed)", arena_max)
    return done


CAPPED = cap_malloc_arenas()
"""Whether importing workers_common capped this process's arenas."""
