"""A scripted stand-in for the core's WorkerService, for testing the consumer without `telha`.

Real gRPC on 127.0.0.1, the generated servicer, and only the behaviour the worker side can
observe: jobs handed out one at a time per stream (max_in_flight=1), submissions recorded
and answered with node ids in submission order, heartbeats extended unless a test says
otherwise, blobs streamed, and the bearer token checked on every call. The end-to-end tests
(test_e2e.py) run the same workers against the real core.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc

from workers_common._proto import telha_pb2, telha_pb2_grpc

TOKEN = "test-token"


@dataclass
class Submission:
    request: telha_pb2.IngestionResult
    metadata: dict[str, str]

    @property
    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.request.result_json)
        return body


@dataclass
class Record:
    """Everything the scripted core saw, in arrival order."""

    polls: list[telha_pb2.PollJobsRequest] = field(default_factory=list)
    submissions: list[Submission] = field(default_factory=list)
    heartbeats: list[telha_pb2.HeartbeatRequest] = field(default_factory=list)
    blob_reads: list[telha_pb2.ReadBlobRequest] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)


# The generated servicer base is untyped (Any to mypy).
class ScriptedCore(telha_pb2_grpc.WorkerServiceServicer):  # type: ignore[misc]
    def __init__(self, port: int = 0) -> None:
        self.record = Record()
        self.jobs: queue.Queue[telha_pb2.JobPayload] = queue.Queue()
        self.blobs: dict[str, bytes] = {}
        self.finished: dict[str, threading.Event] = {}
        # Policies a test may replace: accept every submission, extend every lease.
        self.accept: Callable[[telha_pb2.IngestionResult], bool] = lambda _req: True
        self.extend: Callable[[str], bool] = lambda _job_id: True
        # Off: hand out jobs of formats the worker did not declare (a routing bug).
        self.strict_routing = True
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        telha_pb2_grpc.add_WorkerServiceServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port(f"127.0.0.1:{port}")
        self._server.start()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.stop(grace=None).wait()

    # -- scripting -------------------------------------------------------------------------

    def enqueue(
        self,
        job_id: str,
        kind: str,
        *,
        content: bytes | None = None,
        path: str | None = None,
        options: dict[str, Any] | None = None,
        attempt: int = 1,
        name: str = "doc.txt",
    ) -> threading.Event:
        body: dict[str, Any] = {"format": kind, "name": name, "options": options or {}}
        if content is not None:
            self.blobs[job_id] = content
            body["content"] = {"blake3": "", "size": len(content), "path": path}
        done = threading.Event()
        self.finished[job_id] = done
        self.jobs.put(
            telha_pb2.JobPayload(
                job_id=job_id,
                tenant_id="t1",
                organization_id="o1",
                kind=kind,
                payload_json=json.dumps(body),
                lease_deadline=int(time.time() * 1e6) + 60_000_000,
                attempts=0,
                attempt=attempt,
            )
        )
        return done

    def submissions_for(self, job_id: str) -> list[Submission]:
        with self._lock:
            return [s for s in self.record.submissions if s.request.job_id == job_id]

    # -- WorkerService ---------------------------------------------------------------------

    def _authorized(self, context: grpc.ServicerContext) -> dict[str, str]:
        metadata = {k: str(v) for k, v in context.invocation_metadata()}
        with self._lock:
            self.record.auth.append(metadata.get("authorization", ""))
        if metadata.get("authorization") != f"Bearer {TOKEN}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad token")
        return metadata

    def PollJobs(
        self, request: telha_pb2.PollJobsRequest, context: grpc.ServicerContext
    ) -> Iterator[telha_pb2.JobPayload]:
        self._authorized(context)
        with self._lock:
            self.record.polls.append(request)
        while context.is_active():
            try:
                job = self.jobs.get(timeout=0.05)
            except queue.Empty:
                continue
            if self.strict_routing and job.kind not in request.formats:
                self.jobs.put(job)
                time.sleep(0.05)
                continue
            yield job
            # max_in_flight = 1: the next job only after this one is finished.
            done = self.finished[job.job_id]
            while context.is_active() and not done.wait(0.05):
                pass

    def SubmitIngestionResult(
        self, request: telha_pb2.IngestionResult, context: grpc.ServicerContext
    ) -> telha_pb2.SubmitResponse:
        metadata = self._authorized(context)
        with self._lock:
            self.record.submissions.append(Submission(request, metadata))
        if not self.accept(request):
            self.finished[request.job_id].set()
            return telha_pb2.SubmitResponse(accepted=False, reason="fenced")
        node_ids: list[str] = []
        final = True
        if request.success:
            body = json.loads(request.result_json)
            seq = body.get("seq", 0)
            final = not body.get("partial", False)
            node_ids = [
                node.get("id") or f"{request.job_id}/{seq}/{i}"
                for i, node in enumerate(body.get("nodes", []))
            ]
        if final:
            self.finished[request.job_id].set()
        return telha_pb2.SubmitResponse(accepted=True, node_ids=node_ids, lease_deadline=1)

    def Heartbeat(
        self, request: telha_pb2.HeartbeatRequest, context: grpc.ServicerContext
    ) -> telha_pb2.HeartbeatResponse:
        self._authorized(context)
        with self._lock:
            self.record.heartbeats.append(request)
        extended = [job_id for job_id in request.job_ids if self.extend(job_id)]
        for job_id in set(request.job_ids) - set(extended):
            # A lease the core gave up on is finished as far as the stream is concerned.
            self.finished[job_id].set()
        return telha_pb2.HeartbeatResponse(job_ids=extended, lease_deadline=1)

    def ReadBlob(
        self, request: telha_pb2.ReadBlobRequest, context: grpc.ServicerContext
    ) -> Iterator[telha_pb2.BlobChunk]:
        self._authorized(context)
        with self._lock:
            self.record.blob_reads.append(request)
        data = self.blobs[request.job_id]
        for start in range(0, len(data), 3):  # tiny chunks: reassembly is what is tested
            yield telha_pb2.BlobChunk(data=data[start : start + 3])


def wait_for(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
