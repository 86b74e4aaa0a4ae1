"""Lease keeping: which leases a heartbeat round marks lost, and the thread's pacing."""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Sequence

import grpc
import pytest

from workers_common.heartbeat import Heartbeater, InFlight


def test_a_lease_the_core_does_not_extend_is_lost() -> None:
    in_flight = InFlight()
    kept = in_flight.add("a", 1)
    dropped = in_flight.add("b", 2)
    asked: list[Sequence[tuple[str, int]]] = []

    def beat(leases: Sequence[tuple[str, int]]) -> set[str]:
        asked.append(list(leases))
        return {"a"}

    lost = Heartbeater(in_flight, beat, interval=60).beat_once()
    assert asked == [[("a", 1), ("b", 2)]]
    assert lost == [dropped]
    assert dropped.lost.is_set()
    assert not kept.lost.is_set()


def test_no_rpc_without_jobs() -> None:
    def beat(_leases: Sequence[tuple[str, int]]) -> set[str]:
        raise AssertionError("no heartbeat without in-flight jobs")

    assert Heartbeater(InFlight(), beat, interval=60).beat_once() == []


def test_a_job_finished_meanwhile_is_not_marked() -> None:
    in_flight = InFlight()
    lease = in_flight.add("a", 1)

    def beat(_leases: Sequence[tuple[str, int]]) -> set[str]:
        in_flight.remove(lease)  # the final submission landed while the heartbeat was out
        return set()

    assert Heartbeater(in_flight, beat, interval=60).beat_once() == []
    assert not lease.lost.is_set()


def test_an_rpc_error_loses_nothing() -> None:
    in_flight = InFlight()
    lease = in_flight.add("a", 1)

    def beat(_leases: Sequence[tuple[str, int]]) -> set[str]:
        raise grpc.RpcError("core unreachable")

    assert Heartbeater(in_flight, beat, interval=60).beat_once() == []
    assert not lease.lost.is_set()


def test_the_thread_beats_every_interval_until_stopped() -> None:
    in_flight = InFlight()
    in_flight.add("a", 1)
    beats = threading.Semaphore(0)

    def beat(_leases: Sequence[tuple[str, int]]) -> set[str]:
        beats.release()
        return {"a"}

    heartbeater = Heartbeater(in_flight, beat, interval=0.01)
    heartbeater.start()
    try:
        for _ in range(3):
            assert beats.acquire(timeout=5)
    finally:
        heartbeater.stop()


def test_default_interval_is_the_seed_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    import workers_common
    from workers_common import heartbeat

    assert workers_common.HEARTBEAT_INTERVAL_SECS == 60
    monkeypatch.setattr(heartbeat, "HEARTBEAT_INTERVAL_SECS", 0.5)
    assert Heartbeater(InFlight(), lambda _l: set())._interval == 0.5


def test_a_lease_shorter_than_three_intervals_is_beaten_at_a_third_of_its_length() -> None:
    """A core with short leases (lease_secs = 0.6 here; 30 in a real config, under the
    seed's 60 s interval) gets beats every third of the lease, from a lease added while
    the thread was already waiting out the long interval."""
    in_flight = InFlight()
    beats: list[float] = []
    beaten = threading.Semaphore(0)

    def beat(leases: Sequence[tuple[str, int]]) -> set[str]:
        beats.append(time.monotonic())
        beaten.release()
        return {job_id for job_id, _ in leases}

    heartbeater = Heartbeater(in_flight, beat)  # the default: the seed's 60 s, adapting
    assert heartbeater.interval() == 60
    heartbeater.start()
    try:
        time.sleep(0.05)  # the thread now waits out its 60 s
        added = time.monotonic()
        in_flight.add("short", 1, deadline_us=int((time.time() + 0.6) * 1e6))
        assert 0.1 < heartbeater.interval() <= 0.2
        for _ in range(3):
            assert beaten.acquire(timeout=5), "no beat within 5 s"
        assert beats[0] - added < 0.5, "the first beat came after the lease would have run out"
        assert all(b - a < 0.5 for a, b in itertools.pairwise(beats))
    finally:
        heartbeater.stop()


def test_a_deadline_in_the_past_or_absent_keeps_the_interval() -> None:
    in_flight = InFlight()
    in_flight.add("skewed", 1, deadline_us=int((time.time() - 5) * 1e6))
    in_flight.add("unknown", 1)
    assert Heartbeater(in_flight, lambda _l: set()).interval() == 60
    # An interval given explicitly is kept, short leases or not.
    in_flight.add("short", 1, deadline_us=int((time.time() + 0.6) * 1e6))
    assert Heartbeater(in_flight, lambda _l: set(), interval=60).interval() == 60
    assert Heartbeater(in_flight, lambda _l: set()).interval() < 1


def test_only_a_lease_that_needs_a_sooner_beat_wakes_the_thread() -> None:
    """Jobs of one core share a lease length: the thread is woken by the first, and not
    again by each job that follows (a thread switch per job), unless a lease is shorter."""
    in_flight = InFlight()
    in_flight.plan(time.monotonic() + 60)
    in_flight.add("unknown", 1)  # no deadline: nothing to beat sooner for
    assert not in_flight.added.is_set()
    in_flight.add("a", 1, deadline_us=int((time.time() + 30) * 1e6))  # a third: 10 s < 60 s
    assert in_flight.added.is_set()
    in_flight.added.clear()
    in_flight.plan(time.monotonic() + 10)
    in_flight.add("b", 1, deadline_us=int((time.time() + 30.5) * 1e6))
    assert not in_flight.added.is_set()
    in_flight.add("c", 1, deadline_us=int((time.time() + 3) * 1e6))
    assert in_flight.added.is_set()
    # While the thread works out its next beat, every lease wakes it.
    in_flight.added.clear()
    in_flight.plan(math.inf)
    in_flight.add("d", 1, deadline_us=int((time.time() + 30) * 1e6))
    assert in_flight.added.is_set()
