"""Reconnect backoff: doubling, capped, jittered into the upper half, reset on success."""

from __future__ import annotations

import pytest

from workers_common.backoff import Backoff


def test_doubles_up_to_the_cap_with_jitter_in_the_upper_half() -> None:
    backoff = Backoff(initial=0.1, maximum=1.0)
    ceilings = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    for ceiling in ceilings:
        delay = backoff.next_delay()
        assert ceiling / 2 <= delay <= ceiling


def test_reset_starts_over() -> None:
    backoff = Backoff(initial=0.1, maximum=10)
    for _ in range(5):
        backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() <= 0.1


@pytest.mark.parametrize(
    ("initial", "maximum", "multiplier"), [(0, 1, 2), (2, 1, 2), (0.1, 1, 0.5)]
)
def test_bad_parameters(initial: float, maximum: float, multiplier: float) -> None:
    with pytest.raises(ValueError, match="want 0 < initial"):
        Backoff(initial, maximum, multiplier)
