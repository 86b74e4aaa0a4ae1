"""Lease keeping: the set of in-flight jobs and the thread that heartbeats them.

The consumer registers a job while its handler runs. Every interval the heartbeat thread
asks the core to extend the leases of all registered jobs; a job the core does not name
as extended has been lost (its lease expired and was fenced, or it was cancelled), so it
is marked abandoned and the consumer stops submitting for it.

The interval is the seed's 60 s, or a third of the shortest lease held when that is
shorter (a core configured with `lease_secs = 30` is beaten every 10 s), so a lease never
runs out between beats; an interval given explicitly is kept as given. A lease's length
is read from the deadline the core sent with the job, against this host's clock.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import grpc

__all__ = ["HEARTBEAT_INTERVAL_SECS", "Heartbeater", "InFlight", "Lease"]

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_SECS: float = 60
"""How often in-flight leases are extended (the seed's constant; the core's lease is longer)."""

_MIN_INTERVAL = 0.01
"""The shortest interval a short lease makes (seconds)."""


@dataclass(eq=False)
class Lease:
    """One in-flight job as the heartbeat sees it."""

    job_id: str
    attempt: int
    lost: threading.Event = field(default_factory=threading.Event)
    """Set (once, for good) when the core stopped extending this lease."""
    length: float | None = None
    """The lease's length in seconds as granted (None: not known)."""


class InFlight:
    """The jobs whose leases this worker holds; shared by the handler and heartbeat threads."""

    def __init__(self) -> None:
        # A plain lock is enough: every critical section is a few dict operations.
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}
        # When the heartbeat thread will next look (time.monotonic()): a lease whose third
        # runs out before that wakes it; any other leaves it asleep. Jobs of one core share
        # a lease length, so a prefetching worker wakes it once, not at every job (a
        # thread switch each: 2 % of a tiny job's CPU).
        self._horizon = math.inf
        self.added = threading.Event()
        """Set when a lease is added that may need a beat sooner than the one planned."""

    def add(self, job_id: str, attempt: int, deadline_us: int = 0) -> Lease:
        """Registers a lease; `deadline_us` is the core's deadline for it (Unix µs, 0: none)."""
        length = deadline_us / 1e6 - time.time() if deadline_us > 0 else None
        lease = Lease(job_id, attempt, length=length if length and length > 0 else None)
        with self._lock:
            self._leases[job_id] = lease
            sooner = (
                lease.length is not None
                and time.monotonic() + max(_MIN_INTERVAL, lease.length / 3) < self._horizon
            )
        if sooner:
            self.added.set()
        return lease

    def plan(self, horizon: float) -> None:
        """Says when the heartbeat thread will next look: `math.inf` (none planned) while
        it works out when, so that a lease added meanwhile wakes it; then the time chosen."""
        with self._lock:
            self._horizon = horizon

    def shortest(self) -> float | None:
        """The shortest known lease length held now, in seconds."""
        with self._lock:
            lengths = [lease.length for lease in self._leases.values() if lease.length]
        return min(lengths) if lengths else None

    def remove(self, lease: Lease) -> None:
        with self._lock:
            if self._leases.get(lease.job_id) is lease:
                del self._leases[lease.job_id]

    def snapshot(self) -> list[Lease]:
        with self._lock:
            return list(self._leases.values())

    def settle(self, asked: Sequence[Lease], extended: set[str]) -> list[Lease]:
        """Marks the leases that were asked about but not extended as lost; returns them."""
        lost = []
        with self._lock:
            for lease in asked:
                # A job that finished while the heartbeat was on the wire is simply gone.
                if lease.job_id not in extended and self._leases.get(lease.job_id) is lease:
                    lease.lost.set()
                    lost.append(lease)
        return lost


class Heartbeater:
    """A daemon thread extending the leases in an InFlight every `interval` seconds."""

    def __init__(
        self,
        in_flight: InFlight,
        beat: Callable[[Sequence[tuple[str, int]]], set[str]],
        interval: float | None = None,
    ) -> None:
        self._in_flight = in_flight
        self._beat = beat
        # Read at construction, not at import, so a test can monkeypatch the constant.
        self._interval = HEARTBEAT_INTERVAL_SECS if interval is None else interval
        # An interval given explicitly is kept as given; the default adapts to short leases.
        self._adapt = interval is None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telha-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._in_flight.added.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def beat_once(self) -> list[Lease]:
        """One heartbeat round; returns the leases found lost. Network errors lose nothing:
        the lease may still be alive, and the next round asks again."""
        asked = self._in_flight.snapshot()
        if not asked:
            return []
        try:
            extended = self._beat([(lease.job_id, lease.attempt) for lease in asked])
        except grpc.RpcError as err:
            log.warning("heartbeat failed: %s", err)
            return []
        lost = self._in_flight.settle(asked, extended)
        for lease in lost:
            log.warning(
                "job %s: lease %d was not extended; abandoning it", lease.job_id, lease.attempt
            )
        return lost

    def interval(self) -> float:
        """Seconds to the next beat: an interval given explicitly; by default the seed's,
        or a third of the shortest lease held (at least 10 ms) when that is sooner."""
        shortest = self._in_flight.shortest() if self._adapt else None
        if shortest is None:
            return self._interval
        return min(self._interval, max(_MIN_INTERVAL, shortest / 3))

    def _next_due(self, due: float) -> float:
        """The next beat, at `due` or sooner, published to the InFlight."""
        self._in_flight.plan(math.inf)
        due = min(due, time.monotonic() + self.interval())
        self._in_flight.plan(due)
        return due

    def _run(self) -> None:
        due = self._next_due(math.inf)
        while not self._stop.is_set():
            wait = due - time.monotonic()
            if wait > 0:
                # Woken early by a new lease: it may need a beat before `due`.
                if self._in_flight.added.wait(wait):
                    self._in_flight.added.clear()
                    due = self._next_due(due)
                continue
            self.beat_once()
            due = self._next_due(math.inf)
