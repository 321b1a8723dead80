"""Reading an owner's uploaded edge list: who is connected to whom, and how strongly.

One edge per line, ``a,b`` or ``a,b,weight`` (CSV: a name may be quoted, e.g.
``"Smith, Jones & Co",acme``), no header line; blank lines are skipped. The
names are those of organisations, the weight a finite number > 0 (default 1).
:func:`parse_edge_list` returns the edges, or raises :class:`EdgeListError`
listing what is wrong, each problem with its line ("line 4: 'acme' is joined
to itself"). It never returns part of a file.

This module is plain Python; it does not import Django.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass

__all__ = [
    "MAX_BYTES",
    "MAX_EDGES",
    "MAX_NAME_LENGTH",
    "MAX_REPORTED",
    "EdgeListError",
    "ParsedEdge",
    "parse_edge_list",
]

#: The most edges a network may have.
MAX_EDGES = 2000
#: The longest node name accepted, in characters.
MAX_NAME_LENGTH = 100
#: The largest file accepted, in bytes.
MAX_BYTES = 1024 * 1024
#: At most this many problems are collected before reading stops.
MAX_REPORTED = 20
#: A value quoted in a message is cut to this many characters.
_QUOTE_LENGTH = 30


@dataclass(frozen=True)
class ParsedEdge:
    line: int
    a: str
    b: str
    weight: float


class EdgeListError(ValueError):
    """The file was rejected; ``errors`` lists why, in file order, each message
    starting with its line (``"line 3: ..."``) unless it is about the whole file."""

    def __init__(self, errors: list[str]):
        self.errors = list(errors)
        hidden = len(self.errors) - 5
        super().__init__("; ".join(self.errors[:5]) + (f"; and {hidden} more" if hidden > 0 else ""))


def _quoted(text: str) -> str:
    return repr(text if len(text) <= _QUOTE_LENGTH else text[:_QUOTE_LENGTH] + "…")


def _weight(text: str) -> tuple[float | None, str | None]:
    """The weight written in a line's third field, or the reason it is not one."""
    try:
        weight = float(text)
    except ValueError:
        return None, f"the weight {_quoted(text)} is not a number"
    if not math.isfinite(weight) or weight <= 0:
        return None, f"the weight must be a number greater than 0, not {_quoted(text)}"
    return weight, None


def _edge(line: int, fields: list[str]) -> tuple[ParsedEdge | None, list[str]]:
    """One line's edge, or its problems (without the line number)."""
    if len(fields) not in (2, 3):
        return None, [f"expected two names and an optional weight (a,b or a,b,weight), found {len(fields)} fields"]
    a, b = fields[0].strip(), fields[1].strip()
    problems = []
    for which, name in (("first", a), ("second", b)):
        if not name:
            problems.append(f"the {which} name is empty")
        elif len(name) > MAX_NAME_LENGTH:
            problems.append(f"the {which} name is longer than {MAX_NAME_LENGTH} characters")
    if a and a == b:
        problems.append(f"{_quoted(a)} is joined to itself: an edge joins two different organisations")
    weight = 1.0
    if len(fields) == 3:
        weight, problem = _weight(fields[2].strip())
        if problem:
            problems.append(problem)
    if problems:
        return None, problems
    return ParsedEdge(line=line, a=a, b=b, weight=weight), []


def parse_edge_list(data: bytes) -> list[ParsedEdge]:
    """The edges of an uploaded edge list (UTF-8), in file order, or EdgeListError.

    Each pair of names may appear once (in either order); at most
    :data:`MAX_EDGES` edges and :data:`MAX_BYTES` bytes.
    """
    if len(data) > MAX_BYTES:
        raise EdgeListError([f"the file is larger than {MAX_BYTES // 2**20} MB"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise EdgeListError([f"line {line}: not UTF-8 text: save the file as UTF-8"]) from None
    edges: list[ParsedEdge] = []
    errors: list[str] = []
    seen: dict[frozenset, int] = {}
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        if len(edges) == MAX_EDGES:
            errors.append(f"line {line}: more than {MAX_EDGES} edges; a network has at most {MAX_EDGES}")
            break
        try:
            fields = next(csv.reader([raw]))
        except csv.Error as exc:
            fields, problems = None, [f"not a CSV line ({exc})"]
        else:
            edge, problems = _edge(line, fields)
        if not problems:
            pair = frozenset((edge.a, edge.b))
            if pair in seen:
                problems = [f"the edge {edge.a}–{edge.b} is already on line {seen[pair]}"]
            else:
                seen[pair] = line
                edges.append(edge)
        errors.extend(f"line {line}: {problem}" for problem in problems)
        if len(errors) >= MAX_REPORTED:
            errors = errors[:MAX_REPORTED] + [f"checking stopped after {MAX_REPORTED} problems"]
            break
    if not errors and not edges:
        errors.append("the file has no edges: write one edge per line, a,b or a,b,weight")
    if errors:
        raise EdgeListError(errors)
    return edges
