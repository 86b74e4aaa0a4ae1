"""A pytest plugin (auto-loaded when workers-common is installed) for worker packages' tests.

It offers one fixture, `golden`: golden files live in a `golden/` folder beside the test
module, and `golden.check("name", submissions)` compares (or, with TELHA_UPDATE_GOLDEN=1,
rewrites) `golden/name.json`. The checks themselves live in workers_common.conformance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

__all__ = ["GoldenDir", "golden"]


@dataclass(frozen=True)
class GoldenDir:
    """The golden files of one test module."""

    path: Path

    def check(self, name: str, submissions: Sequence[bytes]) -> None:
        """Runs the conformance checks, then compares with `<path>/<name>.json`."""
        from .conformance import assert_golden, check_submissions

        check_submissions(submissions)
        assert_golden(submissions, self.path / f"{name}.json")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> GoldenDir:
    """Golden files in the `golden/` folder beside the requesting test module."""
    return GoldenDir(Path(request.path).parent / "golden")
