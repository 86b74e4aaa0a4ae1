"""The prefetching worker's GIL switch interval follows how long its jobs run."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from workers_common.consumer import _LONG_JOB_SECS, _GilPacing


@pytest.fixture(autouse=True)
def _restore_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_short_jobs_keep_the_short_interval() -> None:
    pacing = _GilPacing(0.0002, 0.005)
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    for _ in range(100):
        pacing.job_ran(0.0003)
    assert pacing.current == 0.0002
    assert sys.getswitchinterval() == pytest.approx(0.0002)


def test_long_jobs_take_the_default_back_and_short_ones_return_it() -> None:
    pacing = _GilPacing(0.0002, 0.005)
    for _ in range(20):
        pacing.job_ran(_LONG_JOB_SECS * 3)
    assert pacing.current == 0.005
    assert sys.getswitchinterval() == pytest.approx(0.005)
    for _ in range(40):
        pacing.job_ran(0.0001)
    assert pacing.current == 0.0002
    assert sys.getswitchinterval() == pytest.approx(0.0002)


def test_one_slow_job_among_quick_ones_does_not_flip_it() -> None:
    pacing = _GilPacing(0.0002, 0.005)
    for _ in range(50):
        pacing.job_ran(0.0002)
    pacing.job_ran(_LONG_JOB_SECS * 4)
    assert pacing.current == 0.0002
