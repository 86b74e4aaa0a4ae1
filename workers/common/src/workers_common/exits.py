"""Exit codes of a worker process, read from the generated `WorkerExit` enum.

The supervisor classifies a worker's exit by its code (78: configuration, 86: out of
memory), so both sides read one table: the `WorkerExit` enum in proto/telha/v1/telha.proto.
Nothing here spells a number.
"""

from __future__ import annotations

from typing import Final

from ._proto import telha_pb2

__all__ = ["EXIT_CONFIG", "EXIT_OK", "EXIT_OOM", "exit_codes"]

EXIT_OK: Final[int] = telha_pb2.WORKER_EXIT_OK
"""Stopped cleanly: asked to (SIGTERM) or recycled."""

EXIT_CONFIG: Final[int] = telha_pb2.WORKER_EXIT_CONFIG
"""The TELHA_* environment is missing or wrong (or the token is refused): respawning won't help."""

EXIT_OOM: Final[int] = telha_pb2.WORKER_EXIT_OOM
"""MemoryError reached the top of the harness: the supervisor classifies it as `oom`."""


def exit_codes() -> dict[str, int]:
    """The whole generated table, name (without the WORKER_EXIT_ prefix) -> code."""
    return {
        name.removeprefix("WORKER_EXIT_"): int(value)
        for name, value in telha_pb2.WorkerExit.items()
    }
