"""`python -m docling_worker`: serve document jobs until SIGTERM (TELHA_* environment)."""

from __future__ import annotations

from workers_common import WorkerConsumer

from .handler import HANDLERS


def main() -> int:
    return WorkerConsumer(HANDLERS).run()


if __name__ == "__main__":
    raise SystemExit(main())
