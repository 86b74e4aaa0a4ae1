from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkerExit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKER_EXIT_OK: _ClassVar[WorkerExit]
    WORKER_EXIT_CONFIG: _ClassVar[WorkerExit]
    WORKER_EXIT_OOM: _ClassVar[WorkerExit]
WORKER_EXIT_OK: WorkerExit
WORKER_EXIT_CONFIG: WorkerExit
WORKER_EXIT_OOM: WorkerExit

class PollJobsRequest(_message.Message):
    __slots__ = ("worker_id", "formats", "max_in_flight")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    FORMATS_FIELD_NUMBER: _ClassVar[int]
    MAX_IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    formats: _containers.RepeatedScalarFieldContainer[str]
    max_in_flight: int
    def __init__(self, worker_id: _Optional[str] = ..., formats: _Optional[_Iterable[str]] = ..., max_in_flight: _Optional[int] = ...) -> None: ...

class JobPayload(_message.Message):
    __slots__ = ("job_id", "tenant_id", "organization_id", "kind", "payload_json", "lease_deadline", "attempts", "attempt", "content")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_JSON_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    tenant_id: str
    organization_id: str
    kind: str
    payload_json: str
    lease_deadline: int
    attempts: int
    attempt: int
    content: bytes
    def __init__(self, job_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., organization_id: _Optional[str] = ..., kind: _Optional[str] = ..., payload_json: _Optional[str] = ..., lease_deadline: _Optional[int] = ..., attempts: _Optional[int] = ..., attempt: _Optional[int] = ..., content: _Optional[bytes] = ...) -> None: ...

class IngestionResult(_message.Message):
    __slots__ = ("job_id", "success", "result_json", "failure_reason", "permanent", "worker_id", "attempt", "retry_after_ms", "request_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_JSON_FIELD_NUMBER: _ClassVar[int]
    FAILURE_REASON_FIELD_NUMBER: _ClassVar[int]
    PERMANENT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    success: bool
    result_json: bytes
    failure_reason: str
    permanent: bool
    worker_id: str
    attempt: int
    retry_after_ms: int
    request_id: int
    def __init__(self, job_id: _Optional[str] = ..., success: _Optional[bool] = ..., result_json: _Optional[bytes] = ..., failure_reason: _Optional[str] = ..., permanent: _Optional[bool] = ..., worker_id: _Optional[str] = ..., attempt: _Optional[int] = ..., retry_after_ms: _Optional[int] = ..., request_id: _Optional[int] = ...) -> None: ...

class SubmitResponse(_message.Message):
    __slots__ = ("accepted", "node_ids", "lease_deadline", "reason", "job_id", "request_id", "status_code")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_CODE_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    node_ids: _containers.RepeatedScalarFieldContainer[str]
    lease_deadline: int
    reason: str
    job_id: str
    request_id: int
    status_code: int
    def __init__(self, accepted: _Optional[bool] = ..., node_ids: _Optional[_Iterable[str]] = ..., lease_deadline: _Optional[int] = ..., reason: _Optional[str] = ..., job_id: _Optional[str] = ..., request_id: _Optional[int] = ..., status_code: _Optional[int] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("worker_id", "job_ids", "leases")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    LEASES_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    leases: _containers.RepeatedCompositeFieldContainer[LeaseRef]
    def __init__(self, worker_id: _Optional[str] = ..., job_ids: _Optional[_Iterable[str]] = ..., leases: _Optional[_Iterable[_Union[LeaseRef, _Mapping]]] = ...) -> None: ...

class LeaseRef(_message.Message):
    __slots__ = ("job_id", "attempt")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    attempt: int
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("job_ids", "lease_deadline")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    lease_deadline: int
    def __init__(self, job_ids: _Optional[_Iterable[str]] = ..., lease_deadline: _Optional[int] = ...) -> None: ...

class ReadBlobRequest(_message.Message):
    __slots__ = ("job_id", "attempt", "worker_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    attempt: int
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., worker_id: _Optional[str] = ...) -> None: ...

class BlobChunk(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class SubmitJobRequest(_message.Message):
    __slots__ = ("header", "chunk")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    header: SubmitHeader
    chunk: bytes
    def __init__(self, header: _Optional[_Union[SubmitHeader, _Mapping]] = ..., chunk: _Optional[bytes] = ...) -> None: ...

class SubmitHeader(_message.Message):
    __slots__ = ("tenant_id", "organization_id", "format", "name", "options_json", "url", "idempotency_key")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    organization_id: str
    format: str
    name: str
    options_json: str
    url: str
    idempotency_key: str
    def __init__(self, tenant_id: _Optional[str] = ..., organization_id: _Optional[str] = ..., format: _Optional[str] = ..., name: _Optional[str] = ..., options_json: _Optional[str] = ..., url: _Optional[str] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("job_id", "tenant_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    tenant_id: str
    def __init__(self, job_id: _Optional[str] = ..., tenant_id: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("state", "format", "tenant_id", "page_size", "page_token")
    STATE_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    state: str
    format: str
    tenant_id: str
    page_size: int
    page_token: str
    def __init__(self, state: _Optional[str] = ..., format: _Optional[str] = ..., tenant_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetProjectionRequest(_message.Message):
    __slots__ = ("job_id", "tenant_id", "max_items", "skip")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    SKIP_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    tenant_id: str
    max_items: int
    skip: int
    def __init__(self, job_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., max_items: _Optional[int] = ..., skip: _Optional[int] = ...) -> None: ...

class ProjectionSpan(_message.Message):
    __slots__ = ("start", "end", "kind")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    kind: str
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ..., kind: _Optional[str] = ...) -> None: ...

class ProjectionNode(_message.Message):
    __slots__ = ("id", "labels", "properties_json", "span_refs", "version")
    ID_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_JSON_FIELD_NUMBER: _ClassVar[int]
    SPAN_REFS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    labels: _containers.RepeatedScalarFieldContainer[str]
    properties_json: str
    span_refs: _containers.RepeatedScalarFieldContainer[int]
    version: int
    def __init__(self, id: _Optional[str] = ..., labels: _Optional[_Iterable[str]] = ..., properties_json: _Optional[str] = ..., span_refs: _Optional[_Iterable[int]] = ..., version: _Optional[int] = ...) -> None: ...

class GraphRelationship(_message.Message):
    __slots__ = ("type", "from_id", "to_id", "properties_json", "from_dangling", "to_dangling")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FROM_ID_FIELD_NUMBER: _ClassVar[int]
    TO_ID_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_JSON_FIELD_NUMBER: _ClassVar[int]
    FROM_DANGLING_FIELD_NUMBER: _ClassVar[int]
    TO_DANGLING_FIELD_NUMBER: _ClassVar[int]
    type: str
    from_id: str
    to_id: str
    properties_json: str
    from_dangling: bool
    to_dangling: bool
    def __init__(self, type: _Optional[str] = ..., from_id: _Optional[str] = ..., to_id: _Optional[str] = ..., properties_json: _Optional[str] = ..., from_dangling: _Optional[bool] = ..., to_dangling: _Optional[bool] = ...) -> None: ...

class AmbiguityCandidate(_message.Message):
    __slots__ = ("label", "valid_from", "valid_to")
    LABEL_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    label: str
    valid_from: int
    valid_to: int
    def __init__(self, label: _Optional[str] = ..., valid_from: _Optional[int] = ..., valid_to: _Optional[int] = ...) -> None: ...

class GraphAmbiguity(_message.Message):
    __slots__ = ("job_id", "node_id", "kind", "candidates", "detector_confidence", "applied_candidate_confidence", "severity_hint")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    DETECTOR_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    APPLIED_CANDIDATE_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_HINT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    node_id: str
    kind: str
    candidates: _containers.RepeatedCompositeFieldContainer[AmbiguityCandidate]
    detector_confidence: float
    applied_candidate_confidence: float
    severity_hint: str
    def __init__(self, job_id: _Optional[str] = ..., node_id: _Optional[str] = ..., kind: _Optional[str] = ..., candidates: _Optional[_Iterable[_Union[AmbiguityCandidate, _Mapping]]] = ..., detector_confidence: _Optional[float] = ..., applied_candidate_confidence: _Optional[float] = ..., severity_hint: _Optional[str] = ...) -> None: ...

class Projection(_message.Message):
    __slots__ = ("job_id", "tenant_id", "canonical_text", "spans", "nodes", "relationships", "ambiguities", "unchanged", "truncated", "submission_hash")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    CANONICAL_TEXT_FIELD_NUMBER: _ClassVar[int]
    SPANS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    RELATIONSHIPS_FIELD_NUMBER: _ClassVar[int]
    AMBIGUITIES_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_HASH_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    tenant_id: str
    canonical_text: str
    spans: _containers.RepeatedCompositeFieldContainer[ProjectionSpan]
    nodes: _containers.RepeatedCompositeFieldContainer[ProjectionNode]
    relationships: _containers.RepeatedCompositeFieldContainer[GraphRelationship]
    ambiguities: _containers.RepeatedCompositeFieldContainer[GraphAmbiguity]
    unchanged: bool
    truncated: bool
    submission_hash: str
    def __init__(self, job_id: _Optional[str] = ..., tenant_id: _Optional[str] = ..., canonical_text: _Optional[str] = ..., spans: _Optional[_Iterable[_Union[ProjectionSpan, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[ProjectionNode, _Mapping]]] = ..., relationships: _Optional[_Iterable[_Union[GraphRelationship, _Mapping]]] = ..., ambiguities: _Optional[_Iterable[_Union[GraphAmbiguity, _Mapping]]] = ..., unchanged: _Optional[bool] = ..., truncated: _Optional[bool] = ..., submission_hash: _Optional[str] = ...) -> None: ...

class GetNodeRequest(_message.Message):
    __slots__ = ("tenant_id", "node_id")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    node_id: str
    def __init__(self, tenant_id: _Optional[str] = ..., node_id: _Optional[str] = ...) -> None: ...

class NodeVersion(_message.Message):
    __slots__ = ("version", "labels", "properties_json", "job_id", "attempt", "committed_at", "valid_from", "valid_to")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_JSON_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    COMMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    version: int
    labels: _containers.RepeatedScalarFieldContainer[str]
    properties_json: str
    job_id: str
    attempt: int
    committed_at: int
    valid_from: int
    valid_to: int
    def __init__(self, version: _Optional[int] = ..., labels: _Optional[_Iterable[str]] = ..., properties_json: _Optional[str] = ..., job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., committed_at: _Optional[int] = ..., valid_from: _Optional[int] = ..., valid_to: _Optional[int] = ...) -> None: ...

class GraphNode(_message.Message):
    __slots__ = ("tenant_id", "id", "versions", "edges_out", "edges_in", "truncated")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    EDGES_OUT_FIELD_NUMBER: _ClassVar[int]
    EDGES_IN_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    id: str
    versions: _containers.RepeatedCompositeFieldContainer[NodeVersion]
    edges_out: _containers.RepeatedCompositeFieldContainer[GraphRelationship]
    edges_in: _containers.RepeatedCompositeFieldContainer[GraphRelationship]
    truncated: bool
    def __init__(self, tenant_id: _Optional[str] = ..., id: _Optional[str] = ..., versions: _Optional[_Iterable[_Union[NodeVersion, _Mapping]]] = ..., edges_out: _Optional[_Iterable[_Union[GraphRelationship, _Mapping]]] = ..., edges_in: _Optional[_Iterable[_Union[GraphRelationship, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class ListAmbiguitiesRequest(_message.Message):
    __slots__ = ("tenant_id", "job_id", "page_size", "page_token")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    job_id: str
    page_size: int
    page_token: str
    def __init__(self, tenant_id: _Optional[str] = ..., job_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAmbiguitiesResponse(_message.Message):
    __slots__ = ("ambiguities", "next_page_token")
    AMBIGUITIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ambiguities: _containers.RepeatedCompositeFieldContainer[GraphAmbiguity]
    next_page_token: str
    def __init__(self, ambiguities: _Optional[_Iterable[_Union[GraphAmbiguity, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Failure(_message.Message):
    __slots__ = ("attempt", "kind", "permanent", "reason", "at", "worker_id", "exit_code", "signal", "stderr_tail", "peak_rss_bytes", "retry_after_ms")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PERMANENT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    STDERR_TAIL_FIELD_NUMBER: _ClassVar[int]
    PEAK_RSS_BYTES_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    kind: str
    permanent: bool
    reason: str
    at: int
    worker_id: str
    exit_code: int
    signal: int
    stderr_tail: str
    peak_rss_bytes: int
    retry_after_ms: int
    def __init__(self, attempt: _Optional[int] = ..., kind: _Optional[str] = ..., permanent: _Optional[bool] = ..., reason: _Optional[str] = ..., at: _Optional[int] = ..., worker_id: _Optional[str] = ..., exit_code: _Optional[int] = ..., signal: _Optional[int] = ..., stderr_tail: _Optional[str] = ..., peak_rss_bytes: _Optional[int] = ..., retry_after_ms: _Optional[int] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("id", "name", "tenant_id", "organization_id", "format", "state", "attempts", "failures", "options_json", "url", "content_blake3", "content_size", "created_at", "updated_at", "next_attempt_at", "worker_id", "lease_attempt", "lease_deadline", "submission_hash", "node_count", "parents", "children", "unchanged")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    ORGANIZATION_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_JSON_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    CONTENT_BLAKE3_FIELD_NUMBER: _ClassVar[int]
    CONTENT_SIZE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    NEXT_ATTEMPT_AT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_HASH_FIELD_NUMBER: _ClassVar[int]
    NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    tenant_id: str
    organization_id: str
    format: str
    state: str
    attempts: int
    failures: _containers.RepeatedCompositeFieldContainer[Failure]
    options_json: str
    url: str
    content_blake3: str
    content_size: int
    created_at: int
    updated_at: int
    next_attempt_at: int
    worker_id: str
    lease_attempt: int
    lease_deadline: int
    submission_hash: str
    node_count: int
    parents: _containers.RepeatedScalarFieldContainer[str]
    children: _containers.RepeatedScalarFieldContainer[str]
    unchanged: bool
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., tenant_id: _Optional[str] = ..., organization_id: _Optional[str] = ..., format: _Optional[str] = ..., state: _Optional[str] = ..., attempts: _Optional[int] = ..., failures: _Optional[_Iterable[_Union[Failure, _Mapping]]] = ..., options_json: _Optional[str] = ..., url: _Optional[str] = ..., content_blake3: _Optional[str] = ..., content_size: _Optional[int] = ..., created_at: _Optional[int] = ..., updated_at: _Optional[int] = ..., next_attempt_at: _Optional[int] = ..., worker_id: _Optional[str] = ..., lease_attempt: _Optional[int] = ..., lease_deadline: _Optional[int] = ..., submission_hash: _Optional[str] = ..., node_count: _Optional[int] = ..., parents: _Optional[_Iterable[str]] = ..., children: _Optional[_Iterable[str]] = ..., unchanged: _Optional[bool] = ...) -> None: ...

class GetStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class QueueDepth(_message.Message):
    __slots__ = ("format", "state", "count")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    format: str
    state: str
    count: int
    def __init__(self, format: _Optional[str] = ..., state: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class Status(_message.Message):
    __slots__ = ("queue", "known_formats", "pollers", "pools")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    KNOWN_FORMATS_FIELD_NUMBER: _ClassVar[int]
    POLLERS_FIELD_NUMBER: _ClassVar[int]
    POOLS_FIELD_NUMBER: _ClassVar[int]
    queue: _containers.RepeatedCompositeFieldContainer[QueueDepth]
    known_formats: _containers.RepeatedScalarFieldContainer[str]
    pollers: _containers.RepeatedCompositeFieldContainer[PollerInfo]
    pools: _containers.RepeatedCompositeFieldContainer[PoolInfo]
    def __init__(self, queue: _Optional[_Iterable[_Union[QueueDepth, _Mapping]]] = ..., known_formats: _Optional[_Iterable[str]] = ..., pollers: _Optional[_Iterable[_Union[PollerInfo, _Mapping]]] = ..., pools: _Optional[_Iterable[_Union[PoolInfo, _Mapping]]] = ...) -> None: ...

class PoolInfo(_message.Message):
    __slots__ = ("name", "formats", "desired", "live", "degraded", "restarts", "last_error", "workers")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORMATS_FIELD_NUMBER: _ClassVar[int]
    DESIRED_FIELD_NUMBER: _ClassVar[int]
    LIVE_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    formats: _containers.RepeatedScalarFieldContainer[str]
    desired: int
    live: int
    degraded: bool
    restarts: int
    last_error: str
    workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    def __init__(self, name: _Optional[str] = ..., formats: _Optional[_Iterable[str]] = ..., desired: _Optional[int] = ..., live: _Optional[int] = ..., degraded: _Optional[bool] = ..., restarts: _Optional[int] = ..., last_error: _Optional[str] = ..., workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ("worker_id", "pid", "state", "job_id", "restarts", "jobs_done")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    JOBS_DONE_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    pid: int
    state: str
    job_id: str
    restarts: int
    jobs_done: int
    def __init__(self, worker_id: _Optional[str] = ..., pid: _Optional[int] = ..., state: _Optional[str] = ..., job_id: _Optional[str] = ..., restarts: _Optional[int] = ..., jobs_done: _Optional[int] = ...) -> None: ...

class PollerInfo(_message.Message):
    __slots__ = ("worker_id", "formats", "in_flight")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    FORMATS_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    formats: _containers.RepeatedScalarFieldContainer[str]
    in_flight: int
    def __init__(self, worker_id: _Optional[str] = ..., formats: _Optional[_Iterable[str]] = ..., in_flight: _Optional[int] = ...) -> None: ...
