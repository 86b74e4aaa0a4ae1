"""The `code-archive` job: a repository archive → REPOSITORY, PACKAGEs, one child per file.

Job options (all optional):

- `root`              the repository name in ids (default: the archive's name without
                      its extension)
- `include`, `exclude`  gitignore patterns (a list, or one comma-separated string)
- `default_excludes`  false keeps target/, node_modules/, … (repository.DEFAULT_EXCLUDES)
- `gitignore`         false ignores the archive's own .gitignore files
- `max_archive_bytes`, `max_entries`, `max_file_bytes`, `max_total_bytes`, `max_ratio`
                      the caps (limits.py); `max_file_bytes` is passed on to the children
- `max_notebook_bytes`  a Jupyter notebook's file (default 32 MiB; passed on)
- `max_parse_ms`      passed on to the children when given (handler.py)
- `documents`         false: no document child jobs, whatever CODE_DOCUMENT_FORMATS says
- `max_document_bytes`  a larger document is a content-less child failing too_large
                      (default 25 MiB)

Pool environment: `CODE_DOCUMENT_FORMATS`, the formats (comma-separated) a pool of this
deployment serves that an archive's documents (README.md, docs/*.pdf, data/*.csv) may
become child jobs of; unset, none: a child of a format no pool serves would wait forever.
"""

from __future__ import annotations

import itertools
import json
import os
import posixpath
from collections import Counter
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import blake3

from workers_common import (
    IngestionResultBuilder,
    InvalidInput,
    Job,
    NodeRef,
    TooLarge,
    batches,
    formats,
)

from .archive import ArchiveLimits, Listing, Member, read_archive
from .ids import child_name, file_id, package_id, repository_id
from .layout import Layout
from .limits import (
    DEFAULT_MAX_ARCHIVE_BYTES,
    DEFAULT_MAX_DOCUMENT_BYTES,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_NOTEBOOK_BYTES,
    DEFAULT_MAX_RATIO,
    DEFAULT_MAX_TOTAL_BYTES,
    int_option,
)
from .notebook import is_notebook, notebook_script
from .repository import Repository, plan_repository

__all__ = ["DOCUMENTS_ENV", "archive_root", "document_formats", "handle_archive"]

DOCUMENTS_ENV = "CODE_DOCUMENT_FORMATS"
"""Formats an archive's documents may be routed to (the pool's `env`); unset: none."""

CHILDREN_PER_PARTIAL = 2000
"""Child jobs per partial (the core takes at most 10,000 per submission by default)."""
BYTES_PER_PARTIAL = 24 * 1024 * 1024
"""Encoded child jobs (content and options) per partial (a submission is at most 64 MiB)."""
_SUFFIXES = (
    ".tar.gz",
    ".tar.xz",
    ".tar.bz2",
    ".tgz",
    ".txz",
    ".tbz2",
    ".tbz",
    ".zip",
    ".tar",
    ".crate",  # crates.io's packages: tar.gz
    ".whl",  # Python wheels: zip
    ".pyz",  # Python zipapps: a `#!` line, then a zip
    ".jar",  # Java archives: a zip (a `-sources.jar` holds the .java files)
)


def archive_root(job: Job) -> str:
    given = job.options.get("root")
    if isinstance(given, str) and given.strip("/"):
        return given.strip("/")
    base = posixpath.basename(job.name.replace("\\", "/"))
    for suffix in _SUFFIXES:
        if base.lower().endswith(suffix):
            return base[: -len(suffix)] or "repository"
    return base or "repository"


def document_formats(job: Job, environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """The formats this archive's documents become child jobs of (none by default)."""
    if job.options.get("documents") is False or environ.get(DOCUMENTS_ENV) is None:
        return frozenset()
    return formats.routed_formats(DOCUMENTS_ENV, environ)


def _limits(job: Job, documents: bool) -> ArchiveLimits:
    options = job.options
    return ArchiveLimits(
        max_entries=int_option(options, "max_entries", DEFAULT_MAX_ENTRIES),
        max_file_bytes=int_option(options, "max_file_bytes", DEFAULT_MAX_FILE_BYTES),
        max_total_bytes=int_option(options, "max_total_bytes", DEFAULT_MAX_TOTAL_BYTES),
        max_ratio=int_option(options, "max_ratio", DEFAULT_MAX_RATIO),
        max_document_bytes=(
            int_option(options, "max_document_bytes", DEFAULT_MAX_DOCUMENT_BYTES)
            if documents
            else 0
        ),
        max_notebook_bytes=int_option(options, "max_notebook_bytes", DEFAULT_MAX_NOTEBOOK_BYTES),
    )


@dataclass(frozen=True, slots=True)
class _Child:
    name: str
    options: dict[str, object]
    content: bytes | None

    @property
    def weight(self) -> int:
        """Its bytes in a submission: the content in base64, the options as JSON."""
        content = 0 if self.content is None else len(self.content) * 4 // 3 + 4
        return content + len(json.dumps(self.options)) + len(self.name) + 64


def _child(
    root: str,
    member: Member,
    layout: Layout,
    repo: Repository,
    limits: ArchiveLimits,
    parse_ms: int | None,
) -> _Child:
    options: dict[str, object] = {
        "root": root,
        "path": member.path,
        "max_file_bytes": limits.max_file_bytes,
    }
    if is_notebook(member.path):
        options["max_notebook_bytes"] = limits.max_notebook_bytes
    if parse_ms is not None:
        options["max_parse_ms"] = parse_ms
    if member.data is None:
        options["oversize"] = {
            "bytes": member.size,
            "limit": limits.read_limit(member.path),
            "what": limits.limit_name(member.path),
        }
        return _Child(child_name(root, member.path, f"{member.size}-bytes"), options, None)
    options.update(layout.options_for(member.path))
    language = repo.languages[member.path]
    if language == "go" and repo.go_modules:
        options["go_modules"] = dict(sorted(repo.go_modules.items()))
    if language == "rust":
        crate_root = layout.crate_of.get(member.path, "")
        folder = crate_root.removesuffix("src/lib.rs").removesuffix("src/main.rs").rstrip("/")
        if folder in repo.crate_names:
            options["crate"] = repo.crate_names[folder]
    digest = blake3.blake3(member.data).hexdigest()
    return _Child(child_name(root, member.path, digest), options, member.data)


def _document_child(root: str, member: Member, limits: ArchiveLimits) -> _Child:
    """A document's child job: no options but `oversize` (each format's worker has its own
    defaults), named by its path and bytes like a source file's."""
    if member.data is None:
        limit = limits.read_limit(member.path)
        oversize = {"bytes": member.size, "limit": limit, "what": "max_document_bytes"}
        name = child_name(root, member.path, f"{member.size}-bytes", kind="doc")
        return _Child(name, {"oversize": oversize}, None)
    digest = blake3.blake3(member.data).hexdigest()
    return _Child(child_name(root, member.path, digest, kind="doc"), {}, member.data)


def _packages(builder: IngestionResultBuilder, repo: Repository, repo_ref: NodeRef) -> None:
    seen: set[str] = set()
    for package in sorted(repo.packages, key=lambda p: p.manifest):
        pid = package_id(package.ecosystem, package.name)
        if pid in seen:
            continue
        seen.add(pid)
        props: dict[str, object] = {
            "name": package.name,
            "ecosystem": package.ecosystem,
            "manifest": package.manifest,
        }
        if package.version:
            props["version"] = package.version
        ref = builder.add_node(["PACKAGE"], props, id=pid)
        builder.add_relationship("CONTAINS", from_ref=repo_ref, to_ref=ref)
        for dep, kind in package.dependencies:
            target = package_id(package.ecosystem, dep)
            if target != pid:
                builder.add_relationship(
                    "DEPENDS_ON", from_ref=ref, to_id=target, properties={"kind": kind}
                )


def _repository_node(
    builder: IngestionResultBuilder, root: str, listing: Listing, repo: Repository
) -> NodeRef:
    languages = Counter(repo.languages.values())
    props: dict[str, object] = {
        "root": root,
        "archive": listing.kind,
        "entries": listing.entries,
        "files": len(repo.sources),
        "languages": dict(sorted(languages.items())),
        "skipped": dict(sorted(repo.skipped.items())),
        "too_large_files": sum(1 for m in repo.sources if m.data is None),
        "inflated_bytes": listing.inflated,
    }
    if repo.documents:
        props["documents"] = dict(sorted(Counter(f for _, f in repo.documents).items()))
    if repo.bad_manifests:
        props["bad_manifests"] = sorted(repo.bad_manifests)[:100]
    return builder.add_node(["REPOSITORY"], props, id=repository_id(root))


def _as_source(path: str, data: bytes) -> tuple[bytes, str | None]:
    """What the layout reads of a file: a notebook's script (its imports are in there) and
    its kernel's language (an R notebook is R, whatever `.ipynb` says), or the notebook
    itself when it is not one (its child job fails invalid_input)."""
    if not is_notebook(path):
        return data, None
    try:
        script = notebook_script(data)
    except InvalidInput:
        return data, None
    return script.script, script.language


def handle_archive(job: Job) -> Generator[dict[str, Any], Sequence[str], None]:
    """Fans a repository archive out (typed failures: too_large, invalid_input): the
    REPOSITORY and PACKAGE nodes first, then the child jobs in partials."""
    limit = int_option(job.options, "max_archive_bytes", DEFAULT_MAX_ARCHIVE_BYTES)
    if job.content is not None and job.content.size > limit:
        raise TooLarge(f"archive of {job.content.size} bytes is over max_archive_bytes={limit}")
    routed = document_formats(job)
    limits = _limits(job, bool(routed))
    with job.content_path() as path:
        listing = read_archive(path, limits)
    repo = plan_repository(listing, job.options, routed)
    root = archive_root(job)
    files: dict[str, bytes] = {}
    for member in repo.sources:
        if member.data is None:
            continue
        files[member.path], language = _as_source(member.path, member.data)
        if language is not None:
            repo.languages[member.path] = language
    layout = Layout(files, {p: repo.languages[p] for p in files}, repo.ts_configs)
    builder = IngestionResultBuilder(options=job.options)
    repo_ref = _repository_node(builder, root, listing, repo)
    repo_id = repository_id(root)
    _packages(builder, repo, repo_ref)
    builder.set_stats(
        {
            "files": len(repo.sources),
            "documents": len(repo.documents),
            "skipped": sum(repo.skipped.values()),
        }
    )
    yield builder.build()
    parse_ms = job.options.get("max_parse_ms")
    if isinstance(parse_ms, bool) or not isinstance(parse_ms, int) or parse_ms < 0:
        parse_ms = None
    # Each batch's children are made as it fills (a file's table is most of the archive's
    # work): the core takes in one partial while the next is being made.
    # Documents follow the source files: their nodes' ids are the core's, so no CONTAINS
    # edge points at them; the child job links them to the archive.
    children = itertools.chain(
        (
            (file_id(root, m.path), "code", _child(root, m, layout, repo, limits, parse_ms))
            for m in repo.sources
        ),
        ((None, fmt, _document_child(root, m, limits)) for m, fmt in repo.documents),
    )
    for batch in batches(
        children,
        lambda item: item[2].weight,
        max_items=CHILDREN_PER_PARTIAL,
        max_weight=BYTES_PER_PARTIAL,
    ):
        # No node in these partials: the edges point from the REPOSITORY node of the first
        # partial by id, and the core applies a nodeless partial at the final commit.
        builder = IngestionResultBuilder(options=job.options)
        for target, fmt, child in batch:
            if target is not None:
                builder.add_relationship("CONTAINS", from_id=repo_id, to_id=target)
            builder.add_child_job(fmt, child.name, options=child.options, content=child.content)
        yield builder.build()
    yield IngestionResultBuilder(options=job.options).build(partial=False)
