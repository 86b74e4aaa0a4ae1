"""Items in batches a submission can carry: at most `max_items` each, and at most
`max_weight` of their weight (an item heavier than that alone is a batch of its own).
A fan-out handler (a code archive's files, a mailbox's messages) sends its child jobs
this way, one partial a batch."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

__all__ = ["batches"]

_T = TypeVar("_T")


def batches(
    items: Iterable[_T], weight: Callable[[_T], int], *, max_items: int, max_weight: int
) -> Iterator[list[_T]]:
    batch: list[_T] = []
    size = 0
    for item in items:
        heavy = weight(item)
        if batch and (len(batch) >= max_items or size + heavy > max_weight):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += heavy
    if batch:
        yield batch
