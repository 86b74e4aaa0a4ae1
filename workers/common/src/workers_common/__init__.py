"""workers_common: the harness every Telha format worker is built on.

Modules, one role each:

- result      IngestionResultBuilder: assembles a wire v1 submission; misuse raises at the call
- elements    one array of a submission being built: checked elements and encoded runs
- normalize   normalize_canonical: NFC + LF, applied once, in the builder
- wire        canonical JSON bytes for result_json; encoded runs spliced in verbatim
- failures    WorkerFailure and its typed kinds; "{kind}: {detail}" capped at 512 bytes
- exits       process exit codes, read from the generated WorkerExit enum
- config      the TELHA_* environment
- job         Job: what a handler receives, and its content (local blob or ReadBlob)
- driver      one handler over one job: single-shot bytes or streamed partials
- heartbeat   in-flight leases and the heartbeat thread
- backoff     capped exponential backoff for reconnecting
- rpc         CoreClient: the typed WorkerService client (auth, deadlines, retries)
- consumer    WorkerConsumer.run(): poll, dispatch, heartbeat, stop on SIGTERM
- conformance run a handler without a core; golden, determinism and span checks
- formats     which format a file is (name, media type, bytes), for workers that route child jobs
- arenas      caps glibc's malloc arenas under RLIMIT_AS (applied here, at import)
- _proto      generated gRPC stubs of proto/telha/v1/telha.proto
"""

# Imported first, before any module starts a thread: it caps glibc's malloc arenas, each
# of which reserves 64 MiB of a worker's limited address space (arenas.py).
from . import arenas  # noqa: F401
from .batches import batches
from .config import ConfigError, WorkerConfig
from .consumer import WorkerConsumer
from .driver import Handler, HandlerResult, Outcome
from .exits import EXIT_CONFIG, EXIT_OK, EXIT_OOM
from .failures import (
    FAILURE_REASON_MAX_BYTES,
    FetchFailed,
    InvalidInput,
    TooLarge,
    Unsupported,
    WorkerFailure,
    describe_failure,
)
from .heartbeat import HEARTBEAT_INTERVAL_SECS
from .job import Content, Job
from .normalize import normalize_canonical
from .result import (
    SUBMISSION_CAPS,
    BuilderError,
    BuilderTypeError,
    Candidate,
    IngestionResultBuilder,
    NodeRef,
    SpanRef,
    ValidTime,
    is_child_name,
    is_node_id,
)
from .wire import EncodedRun

__all__ = [
    "EXIT_CONFIG",
    "EXIT_OK",
    "EXIT_OOM",
    "FAILURE_REASON_MAX_BYTES",
    "HEARTBEAT_INTERVAL_SECS",
    "SUBMISSION_CAPS",
    "BuilderError",
    "BuilderTypeError",
    "Candidate",
    "ConfigError",
    "Content",
    "EncodedRun",
    "FetchFailed",
    "Handler",
    "HandlerResult",
    "IngestionResultBuilder",
    "InvalidInput",
    "Job",
    "NodeRef",
    "Outcome",
    "SpanRef",
    "TooLarge",
    "Unsupported",
    "ValidTime",
    "WorkerConfig",
    "WorkerConsumer",
    "WorkerFailure",
    "batches",
    "describe_failure",
    "is_child_name",
    "is_node_id",
    "normalize_canonical",
]
