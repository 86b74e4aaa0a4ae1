"""What the archive knows that one file does not: each child's `resolve` table.

A child job sees only its own bytes, so the archive worker, which sees every path,
tells each file where the modules it imports live. It finds the imports with a cheap
line scan (a regex per language, a few percent of a parse); the child parses properly
and looks up what it finds. A name the scan missed is simply not in the table: the child
counts the call as unresolved rather than guessing.

- Python: module name → file, from each file's source root (the first folder above it
  without an `__init__.py`); the importer's own root wins, else a unique match.
- Rust: the module tree of the file's crate (`crate::a::b` → file) and `@crate`.
- JavaScript/TypeScript: a relative specifier → the file it names (extensions, `index`).
- Java: fully qualified class → file (from `package` lines), plus the own package's classes.
- C/C++: a quoted include → the header beside the includer, at the root, in `include/`,
  else the one header with that path suffix.
- Go needs no table: import paths map to folders through go.mod (option `go_modules`).
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial

from .languages import extension_language
from .languages.ecmascript import relative_target
from .languages.python import module_name
from .languages.rust import module_of_path
from .reexports import HOPS, python_reexports, rust_absolute, rust_reexports
from .tsconfig import nearest, path_maps

__all__ = ["MAX_TABLE", "Layout"]

MAX_TABLE = 2000
"""Entries at most in one child's table."""

_PY_LINE = re.compile(
    rb"\n[ \t]*+(?:"
    rb"from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)"
    rb"|import[ \t]+([^\n#;]+)"
    rb"|(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)"
    rb")",
)
"""The Python lines the layout reads, in one scan of a file: `from M import names`
(groups 1, 2; `names` starting with `*` is a star import), `import M, …` (group 3), and
a `def` or `class` (group 4, its name). It is matched against the file after a newline:
led by the literal newline instead of a MULTILINE `^`, it tries line starts only; the
indent is possessive (`*+`): every alternative starts with a letter, so giving a blank
back could only fail again, once per blank (most of the scan's time on indented code)."""
_JS_FROM = rb"""(?:\bfrom|\bimport|\brequire\s*\(|\bimport\s*\()\s*"""
"""What a specifier follows: `from`, `import`, `require(`, `import(`."""
_JS_SPEC = re.compile(_JS_FROM + rb"""['"](\.{1,2}/[^'"\n]*)['"]""")
_JS_ALIAS = re.compile(_JS_FROM + rb"""['"]([^'".#*=\s][^'"\n]*)['"]""")
"""A specifier that is not relative (nor `#` subpath import): a package, or an alias."""
_JAVA_PACKAGE = re.compile(rb"^[ \t]*package[ \t]+([\w.]+)[ \t]*;", re.M)
_JAVA_IMPORT = re.compile(rb"^[ \t]*import[ \t]+(?:static[ \t]+)?([\w.]+)[ \t]*;", re.M)
_NON_WORD = bytes(
    c if chr(c).isascii() and (chr(c).isalnum() or c == 0x5F) else 0x20 for c in range(256)
)
"""bytes.translate table: every byte `\\w` does not match in a bytes pattern becomes a
space, so that splitting the result gives `re.findall(rb"\\w+")`'s words (at C speed)."""
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
_RUST_DEFINES = re.compile(
    rb"\b(?:fn|struct|enum|trait|union|mod|pub(?:\([^)\n]*\))?[ \t]+type)[ \t\r\n]++(?:r#)?(\w+)"
)
"""Rust items by name; `type` only with a visibility (an impl's associated `type Err` is
not an item another file can name). The blanks before the name are possessive, as
`_PY_LINE`'s indent is (what follows them is never a blank)."""
_RUST_KEYWORDS = frozenset({b"fn", b"struct", b"enum", b"trait", b"union", b"mod", b"pub"})
_RUST_ITEMS = tuple(
    re.compile(keyword + rb"(?<!\w" + keyword + rb")[ \t\r\n]++(?:r#)?(\w+)")
    for keyword in (b"fn", b"struct", b"enum", b"trait", b"union", b"mod")
)
_RUST_PUB_TYPE = re.compile(rb"pub(?<!\wpub)(?:\(([^)\n]*)\))?[ \t]+type[ \t\r\n]++(?:r#)?(\w+)")
"""`_RUST_DEFINES` one keyword at a time (the visibility of a `type` kept): led by a literal,
a scan jumps from one occurrence of its keyword to the next instead of trying the
alternation at every byte (about twice as fast over a crate). The `\\b` before the keyword
is the lookbehind after it. Their matches are `_RUST_DEFINES`'s unless one starts inside
another (`struct fn fn x` is `struct fn` to the one scan, which then goes on after it),
and it can only start at the other's name or in a visibility's parentheses: when a name
or those hold a keyword, `_rust_defines` takes the one scan."""
_RUST_STAR = re.compile(rb"\n[ \t]*+(?:pub(?:\([^)\n]*\))?[ \t]+)?use[ \t]+([\w:]+)::\*[ \t]*;")
"""A `use …::*;` line, matched after a newline as `_PY_LINE` is."""
_JS_DEFINES = re.compile(
    rb"\b(?:function\*?|class|interface|enum|type)[ \t]+([A-Za-z_$][\w$]*)"
    rb"|(?:\b(?:const|let|var)[ \t]+|\bexports[ \t]*\.[ \t]*)([A-Za-z_$][\w$]*)"
    rb"(?:[ \t]*:(?:=>|[^=\n])*)?\s*=(?!>)\s*(?:async\b|function\b|\(|[A-Za-z_$][\w$]*\s*=>)"
)
"""JavaScript/TypeScript definitions by name: declarations, and a variable (or CommonJS's
`exports.f`, `module.exports.f`) only when a function is assigned to it, as the query
defines it (`const isValid = isToken` is an alias: a call through it names no symbol)."""
_JS_STAR = re.compile(rb"""\bexport[ \t]*\*[ \t]*from[ \t]*['"](\.{1,2}/[^'"\n]*)['"]""")
STAR_HOPS = 3
"""How many `*` re-exports deep a child's table follows (and symbols.py resolves)."""
_JS_SUFFIXES = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts")
_JS_INDEX = ("/index.ts", "/index.tsx", "/index.js", "/index.jsx", "/index.mjs")


@dataclass(frozen=True, slots=True)
class _PythonLines:
    """A Python file's import and definition lines (`_PY_LINE`)."""

    froms: list[tuple[bytes, bytes]]
    """`from M import names`: M as written (dots included) and the names' text."""
    imports: list[bytes]
    """`import …`: the text after the keyword."""
    defines: frozenset[bytes]
    """Names of `def` and `class` lines."""


class _KeyIndex:
    """Keys like `crate::a::b` (or `=crate::a::b`) by their last segment: the keys a file
    can name are found from its words without testing every key of the crate."""

    def __init__(self, keys: Iterable[str]) -> None:
        self._by_last: dict[bytes, list[tuple[str, tuple[bytes, ...]]]] = defaultdict(list)
        self._always: list[str] = []
        for key in keys:
            segments = tuple(s.encode() for s in key.lstrip("=").split("::")[1:])
            if segments:
                self._by_last[segments[-1]].append((key, segments[:-1]))
            else:
                self._always.append(key)

    def named(self, words: frozenset[bytes], extra: frozenset[bytes]) -> list[str]:
        """The keys all of whose segments are in `words` or `extra`, sorted (`extra` apart:
        the file's words are not copied to add a few)."""
        found = list(self._always)
        by_last = self._by_last
        for word in (words & by_last.keys()) | (extra & by_last.keys()):
            found.extend(
                k for k, rest in by_last[word] if all(s in words or s in extra for s in rest)
            )
        return sorted(found)


def _words_of(data: bytes) -> frozenset[bytes]:
    """The words (`\\w+`) in `data`."""
    return frozenset(data.translate(_NON_WORD).split())


def _rust_defines(data: bytes) -> frozenset[bytes]:
    """The names `_RUST_DEFINES` finds in `data`, by the faster keyword scans."""
    names = {name for pattern in _RUST_ITEMS for name in pattern.findall(data)}
    scoped = False
    for scope, name in _RUST_PUB_TYPE.findall(data):
        names.add(name)
        if scope and not _words_of(scope).isdisjoint(_RUST_KEYWORDS):
            scoped = True
    if not scoped and names.isdisjoint(_RUST_KEYWORDS):
        return frozenset(names)
    # A keyword as a name: a match may start inside another (`struct fn fn x` is
    # `struct fn`, then `fn x`), which only the one scan, left to right, tells apart.
    return frozenset(_RUST_DEFINES.findall(data))


def _module_in(root: str, path: str) -> list[str] | None:
    return module_of_path(path, root)


class Layout:
    """Indexes of one archive's source files, and each file's table from them."""

    def __init__(
        self,
        files: Mapping[str, bytes],
        languages: Mapping[str, str],
        ts_configs: Mapping[str, bytes] | None = None,
    ) -> None:
        self.files = files
        self.languages = languages
        self.ts_paths = path_maps(ts_configs or {})
        """Folder → its tsconfig's import aliases (tsconfig.py)."""
        self.paths = frozenset(files)
        self._defined: dict[str, frozenset[bytes]] = {}
        self._py_lines: dict[str, _PythonLines] = {}
        self._stars: dict[str, list[str]] = {}
        self._last_words: tuple[str, frozenset[bytes]] = ("", frozenset())
        self._rust_keys: dict[tuple[str, bool], _KeyIndex] = {}
        self._modules: dict[str, str] = {}
        self._lookups: dict[tuple[str, str | None], str | None] = {}
        self._python_index()
        self._rust_index()
        self._java_index()
        self._header_index()

    # -- python ----------------------------------------------------------------------------

    def _python_index(self) -> None:
        packages = {
            p.rpartition("/")[0] for p in self.paths if p.rsplit("/", 1)[-1] == "__init__.py"
        }
        self.py_root: dict[str, str] = {}
        self.py_modules: dict[str, list[str]] = defaultdict(list)
        for path in sorted(p for p, lang in self.languages.items() if lang == "python"):
            folder = path.rpartition("/")[0]
            while folder and folder in packages:
                folder = folder.rpartition("/")[0]
            self.py_root[path] = folder
            relative = path[len(folder) + 1 :] if folder else path
            self.py_modules[module_name(relative)].append(path)
        inits = {p: self.files[p] for p in self.py_root if p.rsplit("/", 1)[-1] == "__init__.py"}
        self.py_reexports = python_reexports(inits, self.python_module, self._python_absolute)

    def python_module(self, path: str) -> str:
        module = self._modules.get(path)
        if module is None:
            root = self.py_root.get(path, "")
            module = module_name(path[len(root) + 1 :] if root else path)
            self._modules[path] = module
        return module

    def _python_lookup(self, module: str, importer: str) -> str | None:
        """The file of `module` seen from `importer` (kept by module and the importer's
        source root, all the answer depends on: the stdlib asks ~160,000 times)."""
        root = self.py_root.get(importer)
        key = (module, root)
        if key in self._lookups:
            return self._lookups[key]
        found = self.py_modules.get(module, [])
        own = [p for p in found if self.py_root.get(p) == root]
        result = None
        for candidates in (own, found):
            # A module beside its stub (x.py and x.pyi) is the module, not the stub.
            runtime = [p for p in candidates if not p.endswith(".pyi")] or candidates
            if len(runtime) == 1:
                result = runtime[0]
                break
        self._lookups[key] = result
        return result

    def _python_absolute(self, written: str, importer: str) -> str | None:
        level = len(written) - len(written.lstrip("."))
        if level == 0:
            return written
        parts = self.python_module(importer).split(".")
        drop = (
            level - 1 if importer.endswith("/__init__.py") or importer == "__init__.py" else level
        )
        if drop > len(parts):
            return None
        base = parts[: len(parts) - drop]
        rest = written[level:]
        return ".".join([*base, rest] if rest else base)

    def _python_wanted(self, path: str) -> set[str]:
        """Every dotted name the file's import lines could need: modules and `M.name`."""
        lines = self._python_lines(path)
        wanted: set[str] = set()
        for written, listed in lines.froms:
            module = self._python_absolute(written.decode("ascii", "replace"), path)
            if module is None:
                continue
            wanted.add(module)
            names = listed.decode("utf-8", "replace").strip("()")
            for item in names.replace("\n", ",").split(","):
                name = item.strip().split(" ")[0]
                if name.isidentifier():
                    wanted.add(f"{module}.{name}" if module else name)
        for imported in lines.imports:
            for item in imported.decode("utf-8", "replace").split(","):
                name = item.strip().split(" ")[0]
                if name:
                    wanted.add(name)
        return wanted

    def _python_lines(self, path: str) -> _PythonLines:
        cached = self._py_lines.get(path)
        if cached is None:
            froms: list[tuple[bytes, bytes]] = []
            imports: list[bytes] = []
            defines: set[bytes] = set()
            for written, listed, imported, defined in _PY_LINE.findall(b"\n" + self.files[path]):
                if defined:
                    defines.add(defined)
                elif imported:
                    imports.append(imported)
                else:
                    froms.append((written, listed))
            cached = self._py_lines[path] = _PythonLines(froms, imports, frozenset(defines))
        return cached

    def _python_table(self, path: str) -> dict[str, str]:
        table = {}
        for module in sorted(self._python_wanted(path)):
            found = self._python_lookup(module, path)
            if found is not None:
                table[module] = found
            elif module in self.py_reexports:
                origin = self._python_origin(module, path)
                if origin is not None:
                    table["=" + module] = origin
        return table

    def _python_origin(self, name: str, importer: str) -> str | None:
        """`pkg.f` that `pkg/__init__.py` re-exports → `pkg/impl.py#f` (a few hops)."""
        for _ in range(HOPS):
            source, member = self.py_reexports[name]
            found = self._python_lookup(source, importer)
            following = f"{source}.{member}"
            if following not in self.py_reexports or following == name:
                return None if found is None else f"{found}#{member}"
            name = following
        return None

    # -- rust ------------------------------------------------------------------------------

    def _rust_index(self) -> None:
        roots = sorted(
            p
            for p in self.paths
            if p == "src/lib.rs"
            or p == "src/main.rs"
            or p.endswith(("/src/lib.rs", "/src/main.rs"))
        )
        # One root per crate folder: lib.rs before main.rs.
        self.crates: dict[str, str] = {}
        for root in roots:
            folder = root.rpartition("/")[0]
            if folder not in self.crates or root.endswith("lib.rs"):
                self.crates[folder] = root
        self.crate_of: dict[str, str] = {}
        self.crate_modules: dict[str, dict[str, str]] = defaultdict(dict)
        for path in sorted(p for p, lang in self.languages.items() if lang == "rust"):
            crate = self._crate_root_of(path)
            if crate is None:
                continue
            module = module_of_path(path, crate)
            if module is None:
                continue
            self.crate_of[path] = crate
            key = "::".join(["crate", *module])
            self.crate_modules[crate].setdefault(key, path)
        members: dict[str, dict[str, bytes]] = defaultdict(dict)
        for path, crate in self.crate_of.items():
            members[crate][path] = self.files[path]
        self.crate_reexports: dict[str, dict[str, str]] = {}
        for root in self.crate_modules:
            self.crate_reexports[root] = rust_reexports(members[root], partial(_module_in, root))

    def _crate_root_of(self, path: str) -> str | None:
        """The root of the crate whose folder is the deepest holding `path`: its folders
        looked up from the file's own up (not every crate tested against every file)."""
        folder = path
        while folder:
            folder = folder.rpartition("/")[0]
            if folder in self.crates:
                return self.crates[folder]
        return None

    def _words(self, path: str) -> frozenset[bytes]:
        """The words `path` writes; the last file's are kept (a child's table asks twice)."""
        if self._last_words[0] != path:
            self._last_words = (path, _words_of(self.files[path]))
        return self._last_words[1]

    def _rust_table(self, path: str) -> dict[str, str]:
        """The crate's module tree and re-exports, cut to the paths this file could name
        (every segment of a key appears in the file or in its own module's path: a path it
        uses has all of them)."""
        root = self.crate_of.get(path)
        if root is None:
            return {}
        # `super::x` and `self::x` name the file's own module without writing it.
        own = module_of_path(path, root) or []
        words = self._words(path)
        extra = frozenset(segment.encode() for segment in own)
        modules = self.crate_modules[root]
        table = {"@crate": root}
        table.update((k, modules[k]) for k in self._rust_named(root, False, words, extra))
        reexports = self.crate_reexports.get(root, {})
        pending = self._rust_named(root, True, words, extra)
        for _ in range(HOPS):  # what a kept re-export leads to: its modules, its chain
            following = []
            for key in pending:
                table[key] = reexports[key]
                parts = reexports[key].split("::")
                for cut in range(2, len(parts) + 1):
                    prefix = "::".join(parts[:cut])
                    if prefix in modules:
                        table[prefix] = modules[prefix]
                    if "=" + prefix in reexports and "=" + prefix not in table:
                        following.append("=" + prefix)
            pending = following
        return dict(sorted(table.items())[:MAX_TABLE])

    def _rust_named(
        self, root: str, reexported: bool, words: frozenset[bytes], extra: frozenset[bytes]
    ) -> list[str]:
        """The crate's module keys (or re-export keys) every segment of which is in `words`
        or `extra`, sorted."""
        index = self._rust_keys.get((root, reexported))
        if index is None:
            keys = self.crate_reexports.get(root, {}) if reexported else self.crate_modules[root]
            index = _KeyIndex(k for k in keys if reexported or k != "crate")
            self._rust_keys[(root, reexported)] = index
        return index.named(words, extra)

    # -- javascript / typescript -----------------------------------------------------------

    def _js_table(self, path: str) -> dict[str, str]:
        table = {}
        for match in _JS_SPEC.finditer(self.files[path]):
            specifier = match.group(1).decode("utf-8", "replace")
            base = relative_target(specifier, path)
            found = None if base is None else self._js_file(base)
            if found is not None:
                table[specifier] = found
        aliases = nearest(self.ts_paths, path) if self.ts_paths else None
        if aliases is not None:  # `@/components/x` through the project's tsconfig paths
            for match in _JS_ALIAS.finditer(self.files[path]):
                specifier = match.group(1).decode("utf-8", "replace")
                for base in aliases.targets(specifier):
                    found = self._js_file(base)
                    if found is not None:
                        table[specifier] = found
                        break
        return table

    def _js_file(self, base: str) -> str | None:
        """The archive's file a module path names: as written, with a suffix, or an index."""
        for candidate in [base + s for s in _JS_SUFFIXES] + [base + s for s in _JS_INDEX]:
            if candidate in self.paths:
                return candidate
        return None

    # -- java ------------------------------------------------------------------------------

    def _java_index(self) -> None:
        self.java_classes: dict[str, str] = {}
        self.java_package: dict[str, str] = {}
        self.java_by_package: dict[str, list[str]] = defaultdict(list)
        for path in sorted(p for p, lang in self.languages.items() if lang == "java"):
            found = _JAVA_PACKAGE.search(self.files[path])
            package = found.group(1).decode("ascii", "replace") if found else ""
            simple = posixpath.basename(path)[: -len(".java")]
            fqcn = f"{package}.{simple}" if package else simple
            self.java_package[path] = package
            self.java_classes.setdefault(fqcn, path)
            self.java_by_package[package].append(fqcn)

    def _java_table(self, path: str) -> dict[str, str]:
        table = {}
        package = self.java_package.get(path, "")
        words = self._words(path)
        for fqcn in self.java_by_package.get(package, []):
            if fqcn.rpartition(".")[2].encode() in words:  # the file names that class
                table[fqcn] = self.java_classes[fqcn]
        for match in _JAVA_IMPORT.finditer(self.files[path]):
            name = match.group(1).decode("ascii", "replace")
            for candidate in (name, name.rpartition(".")[0]):  # a static import's class
                if candidate in self.java_classes:
                    table[candidate] = self.java_classes[candidate]
        return table

    # -- c / c++ ---------------------------------------------------------------------------

    def _header_index(self) -> None:
        self.by_suffix: dict[str, list[str]] = defaultdict(list)
        for path in sorted(p for p, lang in self.languages.items() if lang in ("c", "cpp")):
            parts = path.split("/")
            for cut in range(len(parts)):
                self.by_suffix["/".join(parts[cut:])].append(path)

    def _c_table(self, path: str) -> dict[str, str]:
        table = {}
        folder = path.rpartition("/")[0]
        for match in _INCLUDE.finditer(self.files[path]):
            header = match.group(1).decode("utf-8", "replace")
            candidates = [
                posixpath.normpath(posixpath.join(folder, header)),
                header,
                f"include/{header}",
            ]
            found = next((c for c in candidates if c in self.paths), None)
            if found is None and len(self.by_suffix.get(header, [])) == 1:
                found = self.by_suffix[header][0]
            if found is not None:
                table[header] = found
        return table

    # -- what other files define (`#path`) and re-export with `*` (`*path`) ----------------

    def defined_names(self, path: str) -> frozenset[bytes]:
        """Names a file defines, by a line scan: functions, methods, types, Rust modules
        (a superset: a nested or shadowed name counts too, never a name it lacks)."""
        cached = self._defined.get(path)
        if cached is None:
            language = self.languages.get(path)
            if language == "python":
                cached = self._python_lines(path).defines
            else:
                data = self.files[path]
                if language == "rust":
                    cached = _rust_defines(data)
                elif language in ("javascript", "typescript", "tsx"):
                    cached = frozenset(a or b for a, b in _JS_DEFINES.findall(data))
                else:
                    cached = frozenset()
            self._defined[path] = cached
        return cached

    def star_sources(self, path: str) -> list[str]:
        """The files whose names `path` re-exports or imports wholesale (`*`)."""
        cached = self._stars.get(path)
        if cached is None:
            language = self.languages.get(path)
            if language == "python":
                found = self._python_stars(path)
            elif language == "rust":
                found = self._rust_stars(path)
            elif language in ("javascript", "typescript", "tsx"):
                found = self._js_stars(path)
            else:
                found = []
            cached = self._stars[path] = sorted(set(found) - {path})
        return cached

    def _python_stars(self, path: str) -> list[str]:
        out = []
        for written, listed in self._python_lines(path).froms:
            if not listed.startswith(b"*"):
                continue
            module = self._python_absolute(written.decode("ascii", "replace"), path)
            found = None if module is None else self._python_lookup(module, path)
            if found is not None:
                out.append(found)
        return out

    def _rust_stars(self, path: str) -> list[str]:
        root = self.crate_of.get(path)
        data = self.files[path]
        if root is None or b"::*" not in data:  # most files have no glob import
            return []
        own = module_of_path(path, root) or []
        out = []
        for match in _RUST_STAR.finditer(b"\n" + data):
            full = rust_absolute(match.group(1).decode("ascii", "replace").split("::"), own)
            found = (
                None if full is None else self.crate_modules[root].get("::".join(["crate", *full]))
            )
            if found is not None:
                out.append(found)
        return out

    def _js_stars(self, path: str) -> list[str]:
        out = []
        for match in _JS_STAR.finditer(self.files[path]):
            base = relative_target(match.group(1).decode("utf-8", "replace"), path)
            candidates = [] if base is None else [base + x for x in _JS_SUFFIXES + _JS_INDEX]
            found = next((c for c in candidates if c in self.paths), None)
            if found is not None:
                out.append(found)
        return out

    def _defined_entries(self, path: str, table: Mapping[str, str]) -> dict[str, str]:
        """`#<file>` → the names it defines that `path` mentions, for each file the table
        leads to (and the files those re-export with `*`); `*<file>` → those files. A
        child checks a cross-file call against them: a name the other file does not
        define (an enum variant, a derived or generated method) never heals."""
        if self.languages.get(path) not in ("python", "rust", "javascript", "typescript", "tsx"):
            return {}
        targets = {v.partition("#")[0] for v in table.values() if v in self.paths or "#" in v}
        own_stars = self.star_sources(path)
        targets |= set(own_stars)
        out: dict[str, str] = {"*" + path: " ".join(own_stars)} if own_stars else {}
        pending = sorted(t for t in targets if t in self.paths and t != path)
        if not pending:  # most files import no file of the archive: no words needed
            return out
        # The names this file writes, and those its table's re-exports lead through
        # (`crate::bits::varsize::VarBitSet` for a file that writes only `VarBitSet`).
        written = self._words(path)
        through = _words_of(f"{' '.join(table)} {' '.join(table.values())}".encode())
        for _ in range(STAR_HOPS + 1):
            following: list[str] = []
            for target in pending:
                if "#" + target in out:
                    continue
                defined = self.defined_names(target)
                # The names are ASCII (`\w` in a bytes pattern): sorted as bytes or as text
                # alike.
                out["#" + target] = b" ".join(
                    sorted((defined & written) | (defined & through))
                ).decode()
                stars = self.star_sources(target)
                if stars:
                    out["*" + target] = " ".join(stars)
                    following.extend(stars)
            pending = following
        return out

    # -- per child -------------------------------------------------------------------------

    def options_for(self, path: str) -> dict[str, object]:
        """The layout options of one child: its `resolve` table and language facts."""
        language = self.languages.get(path) or extension_language(path)
        out: dict[str, object] = {}
        if language == "python":
            out["module"] = self.python_module(path)
            table = self._python_table(path)
        elif language == "rust":
            table = self._rust_table(path)
        elif language in ("javascript", "typescript", "tsx"):
            table = self._js_table(path)
        elif language == "java":
            table = self._java_table(path)
        elif language in ("c", "cpp"):
            table = self._c_table(path)
        else:
            table = {}
        table = dict(sorted(table.items())[:MAX_TABLE])
        extra = self._defined_entries(path, table)
        table.update(sorted(extra.items())[:MAX_TABLE])
        out["resolve"] = dict(sorted(table.items()))
        return out
