"""example_worker: Telha's plain-text format worker, the smallest complete worker package.

- handler     the entry: formats "txt" and "text" -> `handle(job)` -> result_json bytes
- projection  text -> one DOCUMENT node and a PARAGRAPH node per paragraph, with spans
- __main__    `python -m example_worker` runs WorkerConsumer with these handlers

Real format workers copy this shape.
"""

from .handler import FORMATS, HANDLERS, handle
from .projection import project

__all__ = ["FORMATS", "HANDLERS", "handle", "project"]
