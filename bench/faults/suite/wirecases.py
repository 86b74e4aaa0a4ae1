"""Malformed and adversarial wire submissions, made by code from a seeded generator.

A case is a list of result_json bodies sent in order for one job (more than one for
partials: seq gaps, partials after the final) and whether a correct core may accept the
last one. `valid` cases are well-formed submissions with awkward content (unicode,
float edge values, big integers, deep but legal nesting): the core may accept them, and
what it accepted must read back unchanged.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

MIB = 1 << 20


@dataclass(frozen=True)
class Case:
    family: str
    bodies: list[bytes]
    valid: bool = False
    """Well-formed: accepting it is allowed (then the read-back must match)."""
    either: bool = False
    """A random mutation: it may still be a valid submission; refused or accepted, both fine."""


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def base(text: str = "Alpha beta.\n", **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "v": 1,
        "canonicalText": text,
        "spans": [{"start": 0, "end": len(text.encode()) - 1, "kind": "paragraph"}],
        "nodes": [{"labels": ["DOCUMENT"], "properties": {"name": "x"}, "spanRefs": [0]}],
    }
    doc.update(extra)
    return doc


def _random_bytes(rng: random.Random) -> Case:
    n = rng.choice([0, 1, 2, 7, 64, 1000, 4096, 65536])
    return Case("random_bytes", [rng.randbytes(n)])


def _json_prefixed_garbage(rng: random.Random) -> Case:
    return Case("garbage_after_brace", [b"{" + rng.randbytes(rng.randint(1, 2000))])


def _invalid_utf8(rng: random.Random) -> Case:
    bad = rng.choice(
        [b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf"]
    )
    body = dumps(base()).replace(b"Alpha", b"Al" + bad + b"pha")
    return Case("invalid_utf8", [body])


def _lone_surrogate(rng: random.Random) -> Case:
    esc = rng.choice([r"\ud800", r"\udfff", r"\ud83d", r"\ude00x"])
    body = dumps(base()).replace(b'"name":"x"', b'"name":"' + esc.encode() + b'"')
    return Case("lone_surrogate", [body])


def _deep_nesting(rng: random.Random) -> Case:
    depth = rng.choice([200, 1000, 10_000, 100_000, 1_000_000])
    kind = rng.choice(["object", "array"])
    inner = (
        ('{"a":' * depth + "1" + "}" * depth) if kind == "object" else ("[" * depth + "]" * depth)
    )
    body = dumps(base()).replace(b'{"name":"x"}', ('{"deep":' + inner + "}").encode())
    return Case(f"deep_{kind}", [body])


def _huge_array(rng: random.Random) -> Case:
    what = rng.choice(["spans", "nodes", "labels", "spanRefs"])
    # Each past its cap (rules.json: 200,000 spans, 100,000 nodes, 256 labels and 100,000
    # span refs per node).
    n = {"spans": 200_001, "nodes": 100_001, "labels": 257, "spanRefs": 100_001}[what]
    n *= rng.choice([1, 5])
    text = "x" * 10
    doc = base(text)
    if what == "spans":
        doc["spans"] = [{"start": 0, "end": 1, "kind": "p"}] * n
    elif what == "nodes":
        doc["nodes"] = [{"labels": ["A"]}] * n
    elif what == "labels":
        doc["nodes"] = [{"labels": ["A"] * n}]
    else:
        doc["nodes"] = [{"labels": ["A"], "spanRefs": [0] * n}]
    return Case(f"huge_{what}", [dumps(doc)])


SPAN_REFS_CAP = 100_000
"""rules.json `max_span_refs_per_node` (the core's default, which the suite runs with)."""


def _span_refs_per_node(rng: random.Random) -> Case:
    """A node citing many spans: up to the cap it is a valid submission that must read back
    with every entry (duplicates too), one past the cap it is refused with the node's path."""
    over = rng.random() < 0.5
    count = SPAN_REFS_CAP + 1 if over else SPAN_REFS_CAP
    distinct = rng.random() < 0.5
    text = "x" * (count if distinct else 1)
    doc = base(text)
    if distinct:
        doc["spans"] = [{"start": i, "end": i + 1, "kind": "p"} for i in range(count)]
    doc["nodes"][0]["spanRefs"] = list(range(count)) if distinct else [0] * count
    shape = "distinct" if distinct else "one_span"
    return Case(f"span_refs_{'over' if over else 'at'}_cap_{shape}", [dumps(doc)], valid=not over)


def _offsets(rng: random.Random) -> Case:
    text = rng.choice(["héllo wörld", "😀😀 emoji", "abc", "日本語テキスト"])
    size = len(text.encode())
    inside = [i for i in range(1, size) if (text.encode()[i] & 0xC0) == 0x80]
    start, end = rng.choice(
        [
            (0, size + 1),
            (size, size + 5),
            (size + 100, size + 200),
            (3, 2),
            (0, 2**63),
            (-1, 2),
            (0, 2**64),
            (inside[0] if inside else size + 1, size),
            (0, inside[-1] if inside else size + 3),
        ]
    )
    doc = base(text)
    doc["spans"] = [{"start": start, "end": end, "kind": "p"}]
    return Case("offsets", [dumps(doc)])


def _bad_refs(rng: random.Random) -> Case:
    doc = base()
    choice = rng.randrange(6)
    if choice == 0:
        doc["nodes"][0]["spanRefs"] = [rng.choice([1, 5, 2**32, -1])]
    elif choice == 1:
        doc["relationships"] = [{"type": "R", "fromRef": 0, "toRef": rng.choice([1, 9, -1])}]
    elif choice == 2:
        doc["relationships"] = [{"type": "R", "fromRef": 0}]
    elif choice == 3:
        doc["relationships"] = [{"type": "R", "fromRef": 0, "toRef": 0, "toId": "x"}]
    elif choice == 4:
        doc["ambiguities"] = [
            {
                "nodeRef": 7,
                "kind": "k",
                "candidates": [{"label": "a", "validFrom": 1}],
                "detectorConfidence": 0.5,
                "appliedCandidateConfidence": 0.5,
            }
        ]
    else:
        doc["nodes"][0]["id"] = rng.choice(["n12", "", "a\u0001b", "x" * 5000])
    return Case("bad_refs", [dumps(doc)])


def _wrong_types(rng: random.Random) -> Case:
    doc = base()
    choices: list[tuple[str, Any]] = [
        ("canonicalText", 5),
        ("canonicalText", None),
        ("spans", {}),
        ("nodes", "A"),
        ("v", "1"),
        ("v", 1.5),
        ("seq", -1),
        ("seq", "0"),
        ("partial", "yes"),
        ("relationships", [1]),
        ("stats", [1]),
        ("contentHash", 7),
        ("childJobs", {}),
    ]
    field, value = rng.choice(choices)
    doc[field] = value
    if rng.random() < 0.5:
        doc["nodes"] = [{"labels": rng.choice(["A", [1], [""], ["1x"], [None]]), "properties": [1]}]
    return Case("wrong_types", [dumps(doc)])


def _numbers(rng: random.Random) -> Case:
    """Literals JSON does not have, or offsets past u64: always refused."""
    lit = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"0x10", b"01", b"1.", b".5", b"+1"])
    where = rng.choice([b'"name":"x"', b'"start":0'])
    if where == b'"start":0' and rng.random() < 0.4:
        lit = rng.choice([b"1e400", b"18446744073709551616", b"-1", b"0.5", b"1e3"])
    body = dumps(base()).replace(where, where.split(b":")[0] + b":" + lit)
    return Case("numbers", [body])


def _number_edges(rng: random.Random) -> Case:
    """JSON numbers past float64 or past 64-bit integers, as property values: a core may
    refuse them, or keep them; it may not change them."""
    lit = rng.choice(
        [
            b"1e400",
            b"-1e400",
            b"123456789012345678901234567890",
            b"18446744073709551617",
            b"-9223372036854775809",
            b"1E+2",
            b"1e-400",
            b"-0",
            b"0.1000000000000000055511",
        ]
    )
    body = dumps(base()).replace(b'"name":"x"', b'"n":' + lit)
    return Case("number_edges", [body], valid=True)


def _confidence(rng: random.Random) -> Case:
    doc = base()
    doc["ambiguities"] = [
        {
            "nodeRef": 0,
            "kind": "k",
            "candidates": [{"label": "a", "validFrom": 1}],
            "detectorConfidence": rng.choice([1.5, -0.1, 1e308]),
            "appliedCandidateConfidence": 0.5,
        }
    ]
    return Case("confidence", [dumps(doc)])


def _big_text(rng: random.Random) -> Case:
    size = rng.choice([33 * MIB, 64 * MIB, 64 * MIB + 10])
    text = "a" * size
    return Case(f"text_{size // MIB}mib", [dumps(base(text))])


def _seq_gap(rng: random.Random) -> Case:
    first = dumps(base(seq=0, partial=True))
    gap = rng.choice([2, 3, 100, 2**40])
    second = dumps(base("More.\n", seq=gap, partial=False) | {"spans": [], "nodes": []})
    return Case("seq_gap", [first, second])


def _after_final(rng: random.Random) -> Case:
    first = dumps(base(seq=0, partial=False))
    second = dumps(
        base("More.\n", seq=1, partial=rng.choice([True, False])) | {"spans": [], "nodes": []}
    )
    return Case("partial_after_final", [first, second])


def _mutation(rng: random.Random) -> Case:
    body = bytearray(dumps(base(relationships=[{"type": "R", "fromRef": 0, "toId": "other"}])))
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(3)
        i = rng.randrange(len(body))
        if op == 0:
            body[i] = rng.randrange(256)
        elif op == 1:
            del body[i]
        else:
            body.insert(i, rng.choice(b'{}[]",:0123456789\\e-.'))
    return Case("mutation", [bytes(body)], either=True)


def _truncated(rng: random.Random) -> Case:
    body = dumps(base())
    return Case("truncated", [body[: rng.randrange(1, len(body))]])


def _unknown_and_duplicate(rng: random.Random) -> Case:
    body = dumps(base())
    variant = rng.choice(
        [
            body[:-1] + b',"extra":1}',
            body[:-1] + b',"canonicalText":"other"}',
            body.replace(b'"kind":"paragraph"', b'"kind":"paragraph","kind":"p2"'),
        ]
    )
    return Case("unknown_or_duplicate_key", [variant])


def _valid(rng: random.Random) -> Case:
    """Well-formed, awkward content: accepting it is fine, changing it is not."""
    pieces = [
        "Plain words",
        "ünïcödé NFC",
        "emoji 😀👍🏽",
        "日本語",
        "tab\there",
        "CJK 漢字",
        'quote " and \\ backslash',
        "zero-width\u200bjoin",
        "RTL \u05e9\u05dc\u05d5\u05dd",
    ]
    parts = rng.sample(pieces, rng.randint(1, len(pieces)))
    text = "\n".join(parts) + "\n"
    spans, offset = [], 0
    for p in parts:
        size = len(p.encode())
        spans.append({"start": offset, "end": offset + size, "kind": "paragraph"})
        offset += size + 1
    values: list[Any] = [
        0.1,
        1e308,
        5e-324,
        -0.0,
        9007199254740993,
        2**63 - 1,
        -(2**63),
        "",
        "\u0000nul",
        "😀",
        [1, [2, [3]]],
        {"a": {"b": {"c": None}}},
        True,
    ]
    props = {f"p{i}": rng.choice(values) for i in range(rng.randint(0, 6))}
    if rng.random() < 0.3:
        # The 64-bit extremes (past them the core refuses: see _number_edges).
        props["big"] = rng.choice([2**64 - 1, -(2**63), 2**53 + 1])
    nodes = [{"labels": ["DOCUMENT"], "properties": props, "spanRefs": list(range(len(spans)))}]
    nodes += [
        {"labels": ["PARAGRAPH", "X"], "properties": {"i": i}, "spanRefs": [i]}
        for i in range(len(spans))
    ]
    rels = [{"type": "HAS", "fromRef": 0, "toRef": i + 1} for i in range(len(spans))]
    doc = {"v": 1, "canonicalText": text, "spans": spans, "nodes": nodes, "relationships": rels}
    return Case("valid", [dumps(doc)], valid=True)


FAMILIES: list[tuple[Callable[[random.Random], Case], int]] = [
    (_random_bytes, 8),
    (_json_prefixed_garbage, 4),
    (_invalid_utf8, 6),
    (_lone_surrogate, 4),
    (_deep_nesting, 4),
    (_huge_array, 2),
    (_span_refs_per_node, 2),
    (_offsets, 10),
    (_bad_refs, 10),
    (_wrong_types, 10),
    (_numbers, 6),
    (_number_edges, 6),
    (_confidence, 3),
    (_seq_gap, 4),
    (_after_final, 4),
    (_mutation, 14),
    (_truncated, 5),
    (_unknown_and_duplicate, 4),
    (_valid, 12),
]


def cases(count: int, rng: random.Random, *, big: int) -> Iterator[Case]:
    """`count` cases: each family once, then weighted draws; `big` multi-MiB texts."""
    for family, _ in FAMILIES:
        yield family(rng)
    funcs = [f for f, _ in FAMILIES]
    weights = [w for _, w in FAMILIES]
    for _ in range(max(0, count - len(FAMILIES) - big)):
        yield rng.choices(funcs, weights)[0](rng)
    for _ in range(big):
        yield _big_text(rng)
