"""`python -m docling_worker`: serve document jobs until SIGTERM (TELHA_* environment)."""

from __future__ import annotations

import logging
import os
import sys

from .pdf_helper import HELPER


def main() -> int:
    HELPER.start()  # first: it imports docling-parse on another core while this one does
    from workers_common import WorkerConsumer

    from .handler import HANDLERS

    try:
        return WorkerConsumer(HANDLERS).run()
    finally:
        HELPER.stop()


if __name__ == "__main__":
    code = main()
    # Every job is settled and the helper is gone: nothing is left to clean up. The
    # interpreter's own teardown of docling's modules (pydantic models, C++ extensions)
    # would add ~0.3 s to every stop (a `telha run`, a recycle), so it is skipped.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
