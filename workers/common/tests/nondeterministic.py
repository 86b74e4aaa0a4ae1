"""Handlers that leak the process environment into their output, to prove the kit notices."""

from __future__ import annotations

import time

from workers_common import IngestionResultBuilder, Job


def set_order(job: Job) -> bytes:
    """Iterates a set of strings: its order follows PYTHONHASHSEED."""
    builder = IngestionResultBuilder()
    for word in {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}:
        builder.add_span_text(word + " ")
    return builder.to_json()


def local_time(job: Job) -> bytes:
    """Formats an instant in local time: follows TZ."""
    builder = IngestionResultBuilder()
    builder.add_node(["DOC"], {"stamp": time.strftime("%H:%M", time.localtime(0))})
    return builder.to_json()
