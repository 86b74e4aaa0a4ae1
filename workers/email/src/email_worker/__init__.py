"""email_worker: Telha's email format worker (.eml and Outlook .msg).

- handler              the entry: formats "eml" and "msg" -> `handle(job)` -> result_json bytes
- eml                  RFC 5322/MIME bytes -> ParsedMessage (stdlib email, policy.default)
- outlook              .msg (OLE) -> ParsedMessage (extract-msg)
- headers              header fields and address lists, read without ever raising
- charsets             bytes to text when declared charsets lie; surrogate clean-up
- html_text            HTML-only bodies rendered to plain text
- model                ParsedMessage and friends: what both parsers produce
- identity             deterministic MESSAGE / PERSON ids, subject_normalized
- quotes               quoted reply blocks in a body
- dates                Date header, Received hops, explicit dates in text
- temporal             relative-date phrases and self-dating, anchored to the Date header
- attachments          attachment format (extension + magic), child-job names, routing
- layout               the canonical text (headers block + body) and byte offsets
- projection           ParsedMessage -> nodes, edges, spans, child jobs
- temporal_projection  relative_date / missing_date / conflicting_dates ambiguities
- __main__             `python -m email_worker` runs WorkerConsumer with these handlers
"""

from .handler import FORMATS, HANDLERS, handle

__all__ = ["FORMATS", "HANDLERS", "handle"]
