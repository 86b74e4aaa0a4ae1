"""The languages this worker projects, and which one a file is.

One module per family, each a `Spec` (base.py): its tree-sitter grammar wheel, its query
file (queries/<name>.scm) and its import and call rules.

The file name says the language, except for `.h`: C and C++ projects both name their
headers so (LLVM's, Node's, Qt's are C++). A header whose first 64 KiB show C++ (a
template, a namespace or class block, an access label, a C++ standard header, `std::`) is
parsed as C++ (content_language); one with Objective-C's `@interface`, `@protocol` or
`#import` and nothing of C++ is Objective-C (a FILE, no grammar here); else C. Measured on
800 headers under /usr/include, the C grammar left errors in 546, the C++ grammar in 411;
React Native's 346 headers read as C held 2,927 errors and 64 symbols, 326 of them are
Objective-C. And a JavaScript file whose leading comments carry Flow's `@flow` pragma is
still JavaScript, but parsed with the TSX grammar (grammar_for): Flow's annotations are
TypeScript's, near enough.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .base import Spec
from .cfamily import CPP, C
from .ecmascript import FLOW, JAVASCRIPT, TSX, TYPESCRIPT
from .golang import SPEC as GO
from .java import SPEC as JAVA
from .python import SPEC as PYTHON
from .rust import SPEC as RUST

__all__ = [
    "BY_EXTENSION",
    "LANGUAGES",
    "Spec",
    "content_language",
    "grammar_for",
    "language_for",
    "other_language",
]

LANGUAGES: Mapping[str, Spec] = {
    spec.name: spec for spec in (PYTHON, RUST, JAVASCRIPT, TYPESCRIPT, TSX, GO, JAVA, C, CPP)
}

BY_EXTENSION: Mapping[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".ipynb": "python",  # a notebook's kernel may say otherwise (notebook.py, in its job)
    ".rs": "rust",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
}

_ALIASES = {"py": "python", "js": "javascript", "ts": "typescript", "golang": "go", "c++": "cpp"}


def _extension(path: str) -> str | None:
    """The file name's extension, lowercase, with its dot (None: it has none)."""
    name = path.rsplit("/", 1)[-1].lower()
    dot = name.rfind(".")
    return None if dot <= 0 else name[dot:]


def extension_language(path: str) -> str | None:
    """The language a file name says (None: not a language this worker parses)."""
    extension = _extension(path)
    return None if extension is None else BY_EXTENSION.get(extension)


OTHER_LANGUAGES: Mapping[str, str] = {
    **dict.fromkeys((".kt", ".kts"), "kotlin"),
    ".swift": "swift",
    **dict.fromkeys((".m", ".mm"), "objective-c"),
    ".cs": "csharp",
    ".fs": "fsharp",
    ".php": "php",
    ".rb": "ruby",
    **dict.fromkeys((".scala", ".sc"), "scala"),
    **dict.fromkeys((".groovy", ".gradle"), "groovy"),
    ".dart": "dart",
    ".lua": "lua",
    **dict.fromkeys((".pl", ".pm"), "perl"),
    ".r": "r",
    ".jl": "julia",
    **dict.fromkeys((".ex", ".exs"), "elixir"),
    ".erl": "erlang",
    ".hs": "haskell",
    **dict.fromkeys((".ml", ".mli"), "ocaml"),
    **dict.fromkeys((".clj", ".cljs"), "clojure"),
    ".zig": "zig",
    ".nim": "nim",
    ".vue": "vue",
    ".svelte": "svelte",
    **dict.fromkeys((".sh", ".bash", ".zsh", ".fish"), "shell"),
    ".ps1": "powershell",
    ".sql": "sql",
    **dict.fromkeys((".graphql", ".gql"), "graphql"),
    ".proto": "protobuf",
    ".tf": "terraform",
    ".nix": "nix",
    **dict.fromkeys((".s", ".asm"), "assembly"),
    **dict.fromkeys((".v", ".sv"), "verilog"),
    **dict.fromkeys((".vhd", ".vhdl"), "vhdl"),
    ".cmake": "cmake",
}
"""Source files of languages without a grammar here (the CLI sends them to `code` too):
an archive makes them children all the same, each a FILE over its text, no symbols, so
that a Kotlin, Swift or PHP repository is not an empty one."""


def other_language(path: str) -> str | None:
    """The language of a source file this worker has no grammar for (None: not source)."""
    extension = _extension(path)
    return None if extension is None else OTHER_LANGUAGES.get(extension)


def language_for(path: str, override: object = None) -> tuple[str, Spec | None]:
    """(language name, its spec): the option `language` wins over the file name; a name
    this worker has no grammar for is kept (a FILE node without symbols)."""
    if isinstance(override, str) and override.strip():
        name = override.strip().lower()
        name = _ALIASES.get(name, name)
        return name, LANGUAGES.get(name)
    known = extension_language(path)
    if known is not None:
        return known, LANGUAGES[known]
    other = other_language(path)
    if other is not None:
        return other, None
    extension = _extension(path)
    return ("unknown" if extension is None else extension[1:]), None


_HEADER_SNIFF = 64 * 1024
_CPP_MARKERS = re.compile(
    rb"""(?mx)
    ^[ \t]*(?:
        template[ \t]*<
      | namespace(?:[ \t]+[\w:]+)?[ \t]*\{
      | class[ \t]+(?:\w+[ \t]+)?\w+(?:[ \t]+final)?[ \t]*
        (?:\{|:[ \t]*(?:public|private|protected|virtual)\b|$)
      | (?:public|private|protected)[ \t]*:(?!:)
      | using[ \t]+namespace\b
      | \#[ \t]*include[ \t]*<(?:
            cstddef|cstdint|cstdlib|cstring|cstdio|cmath|string|string_view|vector|map|set|list
          | array|memory|utility|functional|algorithm|iostream|istream|ostream|sstream
          | unordered_map|unordered_set|optional|variant|tuple|type_traits|limits|atomic
          | mutex|thread|chrono|initializer_list|iterator|stdexcept|exception|new)>
    )
    | \bstd::\w
    """
)
"""What only C++ writes: each alternative is a line start a C header does not have (a
C `extern "C"` guard is both languages' and does not count)."""


_OBJC_MARKERS = re.compile(rb"^[ \t]*(?:@(?:interface|protocol|end)\b|\#[ \t]*import\b)", re.M)
"""What only Objective-C writes in a header: its class and protocol blocks, `#import`."""


def content_language(path: str, language: str, data: bytes) -> str:
    """`language` (what the file name says) refined by the bytes: a `.h` header that
    reads as C++ is "cpp", one that reads as Objective-C alone is "objective-c" (no
    grammar here: a FILE over its text, as its .m files); anything else is left as is."""
    if language == "c" and path.lower().endswith(".h"):
        if _CPP_MARKERS.search(data, 0, _HEADER_SNIFF):
            return "cpp"  # Objective-C++ too: its C++ parses
        return "objective-c" if _OBJC_MARKERS.search(data, 0, _HEADER_SNIFF) else "c"
    return language


_LEADING_COMMENTS = re.compile(rb"(?:\s+|//[^\n]*|/\*.*?\*/|\#![^\n]*)*", re.S)
_FLOW_PRAGMA = re.compile(rb"@flow\b")


def grammar_for(spec: Spec | None, data: bytes) -> Spec | None:
    """The spec to parse `data` with: FLOW for JavaScript whose leading comments (where
    Flow reads it) hold the `@flow` pragma, else `spec` itself."""
    if spec is not JAVASCRIPT:
        return spec
    head = _LEADING_COMMENTS.match(data, 0, _HEADER_SNIFF)
    return FLOW if head is not None and _FLOW_PRAGMA.search(head.group()) else spec
