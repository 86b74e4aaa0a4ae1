"""`python -m web_worker`: serve web (URL) jobs until SIGTERM (TELHA_* environment).

The worker's state is made before polling, so a malformed pool environment (a bad
`WEB_ALLOW_NETS` entry) stops the process with the configuration exit code instead of
failing every job.
"""

from __future__ import annotations

import sys

from workers_common import EXIT_CONFIG, WorkerConsumer

from .handler import HANDLERS, worker


def main() -> int:
    try:
        worker()
    except ValueError as err:
        print(f"web_worker: configuration: {err}", file=sys.stderr)
        return EXIT_CONFIG
    return WorkerConsumer(HANDLERS).run()


if __name__ == "__main__":
    raise SystemExit(main())
