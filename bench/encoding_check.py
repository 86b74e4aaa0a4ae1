"""bench/encoding_check: how often undeclared legacy-encoded text is read back exactly.

    .venv/bin/python bench/encoding_check.py

Real sentences, nobody's fixtures: the translations under /usr/share/locale (the .mo
catalogs Debian's packages install; the three largest per language), 29 languages, each
encoded in the legacy code pages its text was commonly written in (windows-125x,
ISO-8859-2, KOI8, Shift_JIS, EUC-JP, GB 18030, Big5, cp949). Samples of ~150, ~1,000 and
~8,000 characters (up to 12 each) go through workers_common.text.decode_text, the
decoding of the text pool (and, for the choice of encoding, of tabular's CSV and web's
undeclared pages). Prints the share decoded exactly per size and what each miss was
taken for. When CPython's test data is installed, its cjkencodings pairs (X.txt in X
beside X-utf8.txt) are checked too.
"""

from __future__ import annotations

import collections
import gettext
import os
import sysconfig
from pathlib import Path

from workers_common.text import decode_text

LOCALE = Path("/usr/share/locale")
LANGUAGES = {
    **{lang: ("cp1252",) for lang in ("fr", "de", "es", "it", "pt_BR", "nl", "da", "sv")},
    **{lang: ("cp1252",) for lang in ("fi", "ca")},
    "pl": ("cp1250", "iso8859_2"),
    **{lang: ("cp1250",) for lang in ("cs", "hu", "sk", "hr", "sl")},
    "ru": ("cp1251", "koi8_r"),
    "uk": ("cp1251", "koi8_u"),
    "bg": ("cp1251",),
    "el": ("cp1253",),
    "tr": ("cp1254",),
    "lt": ("cp1257",),
    "et": ("cp1257",),
    "he": ("cp1255",),
    "ar": ("cp1256",),
    "ja": ("cp932", "euc_jp"),
    "zh_CN": ("gb18030",),
    "zh_TW": ("big5",),
    "ko": ("cp949",),
}
SIZES = (150, 1000, 8000)
PER_SIZE = 12


def messages(lang: str) -> list[str]:
    """The non-ASCII translations (over 20 characters) of the language's largest catalogs."""
    catalogs = sorted(
        (LOCALE / lang / "LC_MESSAGES").glob("*.mo"), key=lambda p: (-p.stat().st_size, p.name)
    )[:3]
    out: list[str] = []
    for path in catalogs:
        try:
            with path.open("rb") as handle:
                catalog: dict[object, object] = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeError, ValueError):
            continue
        for _key, value in sorted(catalog.items(), key=lambda kv: str(kv[0])):
            if isinstance(value, str) and len(value) > 20 and not value.isascii():
                out.append(value)
    return out


def samples(texts: list[str], encoding: str, size: int) -> list[str]:
    """Up to PER_SIZE runs of consecutive messages of about `size` characters that the
    encoding can write."""
    out: list[str] = []
    run = ""
    for text in texts:
        try:
            text.encode(encoding)
        except UnicodeEncodeError:
            continue
        run += text + "\n"
        if len(run) >= size:
            out.append(run)
            run = ""
            if len(out) == PER_SIZE:
                break
    return out


def outcome(data: bytes, text: str) -> str:
    try:
        decoded = decode_text(data)
    except Exception as err:  # a typed refusal is a miss like any other
        return type(err).__name__
    return "ok" if decoded.text == text else decoded.encoding


def locale_check() -> None:
    totals: collections.Counter[tuple[int, bool]] = collections.Counter()
    misses: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for lang, encodings in LANGUAGES.items():
        texts = messages(lang)
        for encoding in encodings:
            for size in SIZES:
                for sample in samples(texts, encoding, size):
                    got = outcome(sample.encode(encoding), sample)
                    totals[(size, got == "ok")] += 1
                    if got != "ok":
                        misses[f"{lang} in {encoding}"][got] += 1
    print(f"translations under {LOCALE}: {len(LANGUAGES)} languages")
    for size in SIZES:
        right, wrong = totals[(size, True)], totals[(size, False)]
        if right + wrong:
            share = right / (right + wrong) * 100
            print(f"  ~{size:>5} chars: {share:5.1f} % exact of {right + wrong}")
    for key in sorted(misses):
        print(f"  missed {key}: {dict(misses[key].most_common())}")


def cpython_check() -> None:
    cjk = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    if not cjk.is_dir():
        return
    print(f"CPython's {cjk}:")
    for path in sorted(cjk.glob("*.txt")):
        reference = cjk / f"{path.stem}-utf8.txt"
        if path.stem.endswith("-utf8") or not reference.exists():
            continue
        got = outcome(path.read_bytes(), reference.read_text("utf-8"))
        print(f"  {path.name:<22} {got}")


def main() -> None:
    locale_check()
    cpython_check()
    print(f"(machine: {os.cpu_count()} cores; decode_text of workers_common)")


if __name__ == "__main__":
    main()
