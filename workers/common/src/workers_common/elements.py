"""Elements: one array of a submission being built (its spans, nodes or relationships).

The builder appends the elements it made and checked itself one by one; a streaming worker
may also append runs of pre-encoded elements (EncodedRun, see wire.py). Indices count
both kinds, so refs stay right whichever way an element came in, and the array goes on
the wire as a plain list when it holds no run, else as an EncodedArray whose runs
canonical_json splices in verbatim.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from typing import Any

from .wire import EncodedArray, EncodedRun, JsonValue

__all__ = ["Elements"]


class Elements:
    """An array of plain elements (dicts) with encoded runs among them, in order."""

    __slots__ = ("_count", "_plain", "_run_plain", "_run_starts", "_runs")

    def __init__(self) -> None:
        self._plain: list[dict[str, Any]] = []
        self._runs: list[EncodedRun] = []
        self._run_starts: list[int] = []
        """Index of each run's first element (ascending: runs are only appended)."""
        self._run_plain: list[int] = []
        """How many plain elements came before each run."""
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, element: dict[str, Any]) -> int:
        """Appends one plain element; returns its index."""
        self._plain.append(element)
        self._count += 1
        return self._count - 1

    def extend(self, run: EncodedRun) -> range:
        """Appends an encoded run; returns the indices its elements got."""
        first = self._count
        self._runs.append(run)
        self._run_starts.append(first)
        self._run_plain.append(len(self._plain))
        self._count += run.count
        return range(first, self._count)

    def plain(self, index: int) -> dict[str, Any] | None:
        """The plain element at `index` (0 <= index < len), or None inside an encoded run."""
        if not self._runs:
            return self._plain[index]
        at = bisect_right(self._run_starts, index) - 1  # the last run starting at or before
        if at < 0:
            return self._plain[index]
        start = self._run_starts[at]
        if index < start + self._runs[at].count:
            return None
        return self._plain[self._run_plain[at] + index - start - self._runs[at].count]

    def wire(self, copy: Callable[[dict[str, Any]], JsonValue]) -> list[JsonValue] | EncodedArray:
        """The array for build(): fresh copies of the plain elements, runs as they are."""
        if not self._runs:
            return [copy(element) for element in self._plain]
        segments: list[list[JsonValue] | EncodedRun] = []
        done = 0
        for run, before in zip(self._runs, self._run_plain, strict=True):
            segments.append([copy(element) for element in self._plain[done:before]])
            segments.append(run)
            done = before
        segments.append([copy(element) for element in self._plain[done:]])
        return EncodedArray(segments)
