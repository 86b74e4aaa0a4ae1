"""An archive's members → the repository: which files are source, which are skipped.

The archive's paths lose a top folder every member shares (`git archive --prefix`,
GitHub tarballs); then default excludes (vendored and generated trees, minified files),
the archive's own `.gitignore` files and the `exclude` option drop paths, and the
`include` option, when given, keeps only what it matches. All patterns are gitignore
patterns (pathspec). A file whose extension names a language becomes a `code` child job;
a document (README.md, a PDF, a spreadsheet: `workers_common.formats`, its name checked
against its bytes) becomes a child job of its own format when that format is routed;
manifests become PACKAGE nodes; everything else is counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pathspec

from workers_common import formats

from .archive import Listing, Member
from .languages import content_language, extension_language, other_language
from .manifests import MANIFEST_NAMES, Package, parse_manifest
from .tsconfig import is_config

__all__ = ["DEFAULT_EXCLUDES", "Repository", "plan_repository"]

DEFAULT_EXCLUDES = (
    ".git/",
    ".hg/",
    ".svn/",
    "target/",
    "node_modules/",
    "dist/",
    "build/",
    "vendor/",
    "__pycache__/",
    ".venv/",
    ".tox/",
    "*.min.js",
    "*.min.css",
    "*.min.mjs",
    "*-min.js",
    "*.bundle.js",
)
_MINIFIED_LINE = 1000
"""A .js/.css file whose average line is longer than this is minified, whatever its name."""


@dataclass(slots=True)
class Repository:
    sources: list[Member] = field(default_factory=list)
    documents: list[tuple[Member, str]] = field(default_factory=list)
    """(member, its format): child jobs of another pool; the member's data is None when
    it is over max_document_bytes."""
    languages: dict[str, str] = field(default_factory=dict)
    packages: list[Package] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    bad_manifests: list[str] = field(default_factory=list)
    go_modules: dict[str, str] = field(default_factory=dict)
    crate_names: dict[str, str] = field(default_factory=dict)
    ts_configs: dict[str, bytes] = field(default_factory=dict)
    """tsconfig*.json / jsconfig*.json by path: their import aliases (tsconfig.py)."""


def _patterns(value: object) -> list[str]:
    if isinstance(value, str):
        return [p for p in value.split(",") if p.strip()]
    if isinstance(value, Sequence):
        return [p for p in value if isinstance(p, str) and p.strip()]
    return []


def _strip_top(members: list[Member]) -> list[Member]:
    tops = {m.path.split("/", 1)[0] for m in members}
    if len(tops) != 1 or any("/" not in m.path for m in members):
        return members
    cut = len(next(iter(tops))) + 1
    return [Member(m.path[cut:], m.size, m.data) for m in members]


def _gitignores(members: list[Member]) -> list[tuple[str, pathspec.GitIgnoreSpec]]:
    specs = []
    for member in members:
        if member.path.rsplit("/", 1)[-1] != ".gitignore" or member.data is None:
            continue
        folder = member.path.rpartition("/")[0]
        lines = member.data.decode("utf-8", errors="replace").splitlines()
        specs.append((folder, pathspec.GitIgnoreSpec.from_lines(lines)))
    return specs


def _ignored(path: str, specs: list[tuple[str, pathspec.GitIgnoreSpec]]) -> bool:
    for folder, spec in specs:
        if folder and not path.startswith(folder + "/"):
            continue
        if spec.match_file(path[len(folder) + 1 :] if folder else path):
            return True
    return False


def _minified(member: Member) -> bool:
    if member.data is None or not member.path.endswith((".js", ".mjs", ".cjs", ".css")):
        return False
    lines = member.data.count(b"\n") + 1
    return len(member.data) > 4096 and len(member.data) / lines > _MINIFIED_LINE


def _project_file(repo: Repository, member: Member) -> None:
    """A manifest's PACKAGE, a tsconfig's aliases: what a member says of the project."""
    if member.path.rsplit("/", 1)[-1] in MANIFEST_NAMES:
        _manifest(repo, member)
    if member.data is not None and is_config(member.path):
        repo.ts_configs[member.path] = member.data


def _manifest(repo: Repository, member: Member) -> None:
    if member.data is None:
        repo.bad_manifests.append(member.path)
        return
    try:
        package = parse_manifest(member.path, member.data)
    except (ValueError, UnicodeDecodeError):
        repo.bad_manifests.append(member.path)
        return
    if package is None:
        return
    repo.packages.append(package)
    folder = member.path.rpartition("/")[0]
    if package.ecosystem == "go":
        repo.go_modules[package.name] = folder
    if package.ecosystem == "cargo":
        repo.crate_names[folder] = package.name


def _document(repo: Repository, member: Member, routed: frozenset[str]) -> bool:
    """Files `member` (a file of no language parsed here) among the documents when its
    format is routed; False: it is not one."""
    named = formats.by_name(member.path) if routed else None
    if named is None:
        return False
    if member.data is None:
        if named not in routed:
            return False
        repo.documents.append((member, named))
        return True
    route = formats.detect_format(member.path, "", member.data)
    if route.format is None:
        repo.skipped["document_bytes_mismatch"] += 1
        return True
    if route.format not in routed:
        return False
    repo.documents.append((member, route.format))
    return True


def plan_repository(
    listing: Listing, options: Mapping[str, object], routed: frozenset[str] = frozenset()
) -> Repository:
    """Sorts the archive's members into sources, documents (of the `routed` formats),
    manifests and skipped (with reasons)."""
    repo = Repository(skipped=Counter(listing.skipped))
    members = sorted(_strip_top(listing.members), key=lambda m: m.path)
    defaults = [] if options.get("default_excludes") is False else list(DEFAULT_EXCLUDES)
    excluded = pathspec.GitIgnoreSpec.from_lines([*defaults, *_patterns(options.get("exclude"))])
    include = _patterns(options.get("include"))
    included = pathspec.GitIgnoreSpec.from_lines(include) if include else None
    ignores = [] if options.get("gitignore") is False else _gitignores(members)
    for member in members:
        if excluded.match_file(member.path):
            repo.skipped["excluded"] += 1
            continue
        if _ignored(member.path, ignores):
            repo.skipped["gitignored"] += 1
            continue
        _project_file(repo, member)
        if included is not None and not included.match_file(member.path):
            repo.skipped["not_included"] += 1
            continue
        language = extension_language(member.path) or other_language(member.path)
        if language is None:
            if not _document(repo, member, routed):
                repo.skipped["not_source"] += 1
            continue
        if _minified(member):
            repo.skipped["minified"] += 1
            continue
        if member.data is not None:  # a `.h` header: C or C++ by its bytes, as its job sees it
            language = content_language(member.path, language, member.data)
        repo.sources.append(member)
        repo.languages[member.path] = language
    return repo
