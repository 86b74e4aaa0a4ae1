"""Placeholder until the shared date rules land: no temporal nodes."""

from __future__ import annotations

from workers_common import IngestionResultBuilder

from .model import SourceMeta
from .projection import Projection


def project_temporal(builder: IngestionResultBuilder, state: Projection, meta: SourceMeta) -> int:
    del builder, state, meta
    return 0
