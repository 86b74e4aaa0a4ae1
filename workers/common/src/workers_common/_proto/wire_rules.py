"""Generated from proto/telha/v1/rules.json by workers/gen_stubs.py: do not edit.

The rules a wire v1 submission must pass, enforced by the core's validator and by
workers_common (the builder, the failure taxonomy, the conformance kit).
"""

FAILURE_KINDS: tuple[tuple[str, bool, str], ...] = (
    ('transient', False, 'worker'),
    ('invalid_input', True, 'worker'),
    ('unsupported', True, 'worker'),
    ('too_large', True, 'worker'),
    ('fetch_failed', False, 'worker'),
    ('oom', False, 'supervisor'),
    ('cpu_limit', False, 'supervisor'),
    ('timeout', False, 'supervisor'),
    ('crash', False, 'supervisor'),
    ('lease_expired', False, 'core'),
    ('protocol', True, 'core'),
)
"""(kind, permanent by default, raised by), in the taxonomy's order."""
MAX_REASON_BYTES = 512
IDENTIFIER_PATTERN = '[A-Za-z][A-Za-z0-9_]*'
MAX_IDENTIFIER_BYTES = 128
MAX_NODE_ID_BYTES = 512
CORE_ID_PATTERN = 'n[0-9]+'
MAX_CHILD_NAME_BYTES = 4096
FORMAT_PATTERN = '[a-z0-9][a-z0-9_.+-]*'
MAX_FORMAT_BYTES = 64
MAX_WORKER_IN_FLIGHT = 8
SPANS_MAY_BE_EMPTY = False
CAPS: dict[str, int] = {
    'max_text_bytes': 33554432,
    'max_spans': 200000,
    'max_nodes': 100000,
    'max_relationships': 200000,
    'max_child_jobs': 10000,
    'max_ambiguities': 10000,
    'max_labels_per_node': 256,
    'max_span_refs_per_node': 100000,
}
"""Per-submission caps by `[graph]` key (the core's defaults)."""
