"""Capped exponential backoff with jitter, for reconnecting to a core that went away.

Jitter spreads the reconnects of many workers after a core restart, so they do not all
arrive in the same millisecond. It only paces connections; it never touches output.
"""

from __future__ import annotations

import random

__all__ = ["Backoff"]


class Backoff:
    """Delays of initial, 2x, 4x, … up to `maximum` seconds, each scaled into [½, 1]."""

    def __init__(self, initial: float = 0.1, maximum: float = 5.0, multiplier: float = 2.0) -> None:
        if not 0 < initial <= maximum or multiplier < 1:
            raise ValueError("want 0 < initial <= maximum and multiplier >= 1")
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self._failures = 0
        self._random = random.Random()

    def reset(self) -> None:
        """Forget past failures: the next delay is the initial one again."""
        self._failures = 0

    def next_delay(self) -> float:
        """The delay before the next attempt; each call counts one more failure."""
        ceiling = min(self.maximum, self.initial * self.multiplier**self._failures)
        if ceiling < self.maximum:
            self._failures += 1
        return ceiling * (0.5 + 0.5 * self._random.random())
