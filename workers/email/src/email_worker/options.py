"""Job options both email formats read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_MAX_BYTES", "int_option"]

DEFAULT_MAX_BYTES = 100 * 1024 * 1024
"""A message larger than this is too_large (option `max_bytes`)."""


def int_option(options: Mapping[str, Any], key: str, default: int) -> int:
    """A non-negative integer option; the default for anything else."""
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return default
    return value
