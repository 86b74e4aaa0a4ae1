"""Lease keeping: the set of in-flight jobs and the thread that heartbeats them.

The consumer registers a job while its handler runs. Every interval the heartbeat thread
asks the core to extend the leases of all registered jobs; a job the core does not name
as extended has been lost (its lease expired and was fenced, or it was cancelled), so it
is marked abandoned and the consumer stops submitting for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import grpc

__all__ = ["HEARTBEAT_INTERVAL_SECS", "Heartbeater", "InFlight", "Lease"]

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_SECS: float = 60
"""How often in-flight leases are extended (the seed's constant; the core's lease is longer)."""


@dataclass(eq=False)
class Lease:
    """One in-flight job as the heartbeat sees it."""

    job_id: str
    attempt: int
    lost: threading.Event = field(default_factory=threading.Event)
    """Set (once, for good) when the core stopped extending this lease."""


class InFlight:
    """The jobs whose leases this worker holds; shared by the handler and heartbeat threads."""

    def __init__(self) -> None:
        # A plain lock is enough: every critical section is a few dict operations.
        self._lock = threading.Lock()
        self._leases: dict[str, Lease] = {}

    def add(self, job_id: str, attempt: int) -> Lease:
        lease = Lease(job_id, attempt)
        with self._lock:
            self._leases[job_id] = lease
        return lease

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
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telha-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
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

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.beat_once()
