"""Bit-report microdata: every record, each of its bits randomised, sold level by level
(docs/mathematics.md, "Bit reports").

A microdata listing does not sell statistics: it sells the records
themselves, each chosen column turned into bits and every bit reported with
randomised response. The owner picks the columns:

* a categorical or boolean column becomes **one-hot** bits: one per category
  the owner declares public (never read from the data), then "other"
  (present values outside the list; left out when the list is a boolean's
  whole domain) and "missing" (when the column's policy counts missing values
  as a category). A record sets at most one of them, so changing a record
  flips at most **2** of a column's bits;
* a categorical column with too many values to list can instead be hashed
  into a **Bloom filter** of ``bits`` bits with ``hashes`` hash functions
  (keyed by the listing's public salt, so buyers can test candidate values):
  changing a record flips at most ``2 * hashes`` of them.

The listing's *weight* is the most bits one record change can flip, summed
over its columns. Each bit of each record runs its own exact lattice path
(``releases.engine.bitreport``) at the per-bit level ``eps / weight``, so a
record's whole report is eps-DP for the record (local DP: it holds even
against someone who sees every other record's report). The report at level
eps of a bit ``y`` is ``[y + V >= 1]``, which says 1 with probability
``p = 1 / (1 + a)`` when ``y = 1`` and ``q = a / (1 + a)`` when ``y = 0``
(``a = e^{-eps / weight}``): randomised response whose odds ratio is exactly
``e^{eps / weight}``.

The number of records is part of what is sold (one row per record), so a
microdata listing needs a dataset whose size is public (the replace-one
relation); it is refused otherwise. The rows are shuffled once, when the
listing is made, by a secret permutation: row ``i`` is the same record at
every level, but the file's order says nothing about the data's.

Levels are sold on a ladder the owner declares (at most :data:`MAX_LEVELS`
levels; the top one is the ceiling): the paths are sampled from the top down
(only tightening steps), so every level on the ladder between the lowest sold
and the top is known once any is, and none is ever sampled twice.

What a buyer sees beside the bits: for each bit, the number of records whose
bit is set, decoded without bias from the reports, with its 95% interval
(normal approximation; its half-width ``1.96 sqrt(n a) / (1 - a)`` is the same
for every bit and known before purchase).

This module is plain Python and numpy; it imports neither Django nor DuckDB. The records' true
bits are read with DuckDB by ``market.catalog.microdata.truth``.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np

from .columns import CATEGORICAL, columns_from
from .grammar import CONFIRM_PUBLIC, SpecError, group_by, group_cells, named_column

__all__ = [
    "KIND",
    "MAX_BITS",
    "MAX_LEVELS",
    "Field",
    "Microdata",
    "build",
    "restore",
    "declares_microdata",
]

#: The kind a microdata listing stores in ``Listing.statistics`` (and ``Listing.kinds``).
KIND = "microdata"
#: A record has at most this many bits.
MAX_BITS = 256
#: At most this many columns.
MAX_COLUMNS = 20
#: A ladder has at most this many levels.
MAX_LEVELS = 8
#: A Bloom filter has 8 to this many bits, and 1 to MAX_HASHES hash functions.
MAX_BLOOM_BITS = 128
MAX_HASHES = 8
#: The two-sided 95% point of the normal law.
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Field:
    """One column's bits: ``encoding`` "onehot" (``categories`` declared, then "other" if
    ``other``, then "missing" if ``missing``) or "bloom" (``bits`` positions, ``hashes`` hash
    functions). ``labels``: one per bit; ``weight``: the most of its bits one record change flips."""

    column: str
    encoding: str
    labels: tuple[str, ...]
    weight: int
    categories: tuple = ()
    other: bool = False
    missing: bool = False
    bits: int = 0
    hashes: int = 0

    def as_dict(self) -> dict:
        """As given (a spec's column object)."""
        if self.encoding == "bloom":
            return {"column": self.column, "bloom": {"bits": self.bits, "hashes": self.hashes}}
        return {"column": self.column, "categories": list(self.categories)}

    def stored(self) -> dict:
        """As a listing stores it: everything needed to read it back without the dataset."""
        return {**self.as_dict(), "encoding": self.encoding, "labels": list(self.labels), "weight": self.weight,
                "other": self.other, "missing": self.missing}

    @classmethod
    def from_stored(cls, item: dict) -> "Field":
        bloom = item.get("bloom") or {}
        return cls(item["column"], item["encoding"], tuple(item["labels"]), int(item["weight"]),
                   categories=tuple(item.get("categories", ())), other=bool(item["other"]),
                   missing=bool(item["missing"]), bits=int(bloom.get("bits", 0)), hashes=int(bloom.get("hashes", 0)))

    def describe(self) -> str:
        if self.encoding == "bloom":
            return (f"{self.column}: a Bloom filter of {self.bits} bits, {self.hashes} hash"
                    f"{'es' if self.hashes != 1 else ''} per value")
        return f"{self.column}: one bit per category ({', '.join(label.split(' = ', 1)[-1] for label in self.labels)})"


@dataclass(frozen=True)
class Microdata:
    """A validated microdata spec: its fields, the ladder of levels (ascending; the last is the
    ceiling), the public Bloom salt (hex) and the public number of records."""

    fields: tuple[Field, ...]
    levels: tuple[Decimal, ...]
    salt: str
    records: int

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for f in self.fields for label in f.labels)

    @property
    def bits(self) -> int:
        return len(self.labels)

    @property
    def weight(self) -> int:
        """The most bits one record change flips: each bit's level is ``eps / weight``."""
        return sum(f.weight for f in self.fields)

    @property
    def ceiling(self) -> Decimal:
        return self.levels[-1]

    def as_statistics(self) -> list[dict]:
        """What ``Listing.statistics`` stores: one object of kind :data:`KIND`."""
        return [{"kind": KIND, "columns": [f.stored() for f in self.fields],
                 "levels": [str(level) for level in self.levels], "salt": self.salt}]

    def bit_level(self, eps) -> Fraction:
        """The exact per-bit level ``eps / weight``."""
        return Fraction(Decimal(str(eps))) / self.weight

    def rates(self, eps) -> tuple[float, float]:
        """``(p, q)``: the chance a bit is reported 1 when it is 1, and when it is 0 (for display
        and decoding only; the reports themselves are drawn exactly)."""
        a = math.exp(-float(self.bit_level(eps)))
        return 1.0 / (1.0 + a), a / (1.0 + a)

    def bound(self, eps) -> float:
        """The 95% half-width of every decoded count at level ``eps`` (normal approximation):
        ``1.96 sqrt(n p q) / (p - q) = 1.96 sqrt(n a) / (1 - a)``; the same for every bit."""
        a = math.exp(-float(self.bit_level(eps)))
        return Z95 * math.sqrt(self.records * a) / -math.expm1(-float(self.bit_level(eps)))

    def level_at_or_above(self, eps) -> Decimal | None:
        """The lowest ladder level at or above ``eps`` (None above the ceiling)."""
        return next((level for level in self.levels if level >= eps), None)

    def decoded(self, ones, eps) -> list[dict]:
        """Per bit: ``{"label", "reported", "estimate", "low", "high", "error_bound"}``: the number
        of records with the bit set, estimated without bias from ``ones`` (the number of reports
        saying 1), and its 95% interval clipped to ``[0, n]``."""
        n = self.records
        p, q = self.rates(eps)
        ones = np.asarray(ones, dtype=np.float64)
        estimate = (ones - n * q) / (p - q)
        half = self.bound(eps)
        out = []
        for label, k, c in zip(self.labels, ones.tolist(), estimate.tolist()):
            out.append({"label": label, "reported": int(k), "estimate": c,
                        "low": max(0.0, c - half), "high": min(float(n), c + half), "error_bound": half})
        return out

    def describe(self) -> list[str]:
        return [f.describe() for f in self.fields]

    def deltas(self, eps, at) -> list[float]:
        """The privacy-loss profile of a record's report at level ``eps``: ``delta(eps')`` for each
        ``eps'`` in ``at``. A worst-case neighbour flips ``weight`` bits; each flipped bit's loss is
        ``+lam`` (probability ``p``) or ``-lam`` (probability ``q``), ``lam = eps / weight``,
        independently, so the loss is ``lam (2B - weight)`` with ``B ~ Binomial(weight, p)`` and
        ``delta(eps') = E[(1 - e^{eps' - L})_+]``: a finite sum (floating point), 0 at ``eps' = eps``."""
        lam = float(self.bit_level(eps))
        p, q = self.rates(eps)
        w = self.weight
        out = []
        for x in at:
            total = 0.0
            for b in range(w + 1):
                loss = lam * (2 * b - w)
                if loss > x:
                    total += math.comb(w, b) * p**b * q ** (w - b) * -math.expm1(x - loss)
            out.append(max(0.0, total))
        return out


# --------------------------------------------------------------------------
# validation

#: Why a dataset whose number of records is private cannot have a microdata listing.
PUBLIC_SIZE_NEEDED = (
    "microdata needs a dataset whose number of records is public: one row per record is sold, "
    "so the number of records is part of the release (set the dataset's relation to public size)"
)


def _ladder(raw, where: str) -> tuple[Decimal, ...]:
    if not isinstance(raw, (list, tuple)) or not raw:
        raise SpecError(f"{where}: levels must be a non-empty list of levels such as [\"0.5\", \"1\", \"2\"]")
    if len(raw) > MAX_LEVELS:
        raise SpecError(f"{where}: at most {MAX_LEVELS} levels, got {len(raw)}")
    out = []
    for item in raw:
        if isinstance(item, bool) or not isinstance(item, (str, int, float, Decimal)):
            raise SpecError(f"{where}: a level must be a number such as 0.5, got {item!r}")
        try:
            level = Decimal(str(item).strip())
        except InvalidOperation:
            raise SpecError(f"{where}: {str(item)[:30]!r} is not a level") from None
        if not level.is_finite() or level <= 0 or level > 10000 or level != level.quantize(Decimal("0.0001")):
            raise SpecError(f"{where}: each level must be above 0, at most 10000, with at most 4 decimal places; got {item}")
        out.append(level.quantize(Decimal("0.0001")))
    if len(set(out)) != len(out):
        raise SpecError(f"{where}: a level is listed twice")
    return tuple(sorted(out))


def _field(item, number: int, columns) -> Field:
    where = f"column {number}"
    if not isinstance(item, dict):
        raise SpecError(f'{where}: expected an object such as {{"column": "island", "categories": ["Biscoe"]}}')
    unknown = set(item) - {"column", "categories", "bloom", CONFIRM_PUBLIC}  # the confirmation: the services read it
    if unknown:
        raise SpecError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    if "column" not in item:
        raise SpecError(f"{where}: missing field 'column'")
    name = named_column(item, where, columns, types=CATEGORICAL)
    column = columns[name]
    where = f"column {number} ({name})"
    if "bloom" in item:
        if "categories" in item:
            raise SpecError(f"{where}: give categories or a Bloom filter, not both")
        if column.type != "categorical":
            raise SpecError(f"{where}: a Bloom filter hashes text; {name!r} is {column.type}")
        bloom = item["bloom"]
        if not isinstance(bloom, dict) or set(bloom) != {"bits", "hashes"}:
            raise SpecError(f'{where}: bloom must be {{"bits": 32, "hashes": 2}}')
        size, hashes = bloom["bits"], bloom["hashes"]
        for key, value, low, high in (("bits", size, 8, MAX_BLOOM_BITS), ("hashes", hashes, 1, MAX_HASHES)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise SpecError(f"{where}: bloom {key} must be a whole number from {low} to {high}")
        if hashes > size // 2:
            raise SpecError(f"{where}: at most half as many hashes as bits")
        labels = tuple(f"{name} bloom bit {i}" for i in range(size))
        return Field(name, "bloom", labels, 2 * hashes, bits=size, hashes=hashes)
    grouped = group_by({"by": name, **({"categories": item["categories"]} if "categories" in item else {})},
                  where, columns)
    cells = group_cells(grouped, columns)
    values = tuple(grouped["categories"])
    other = any(label.endswith(" = other") for label, _ in cells)
    missing = column.missing == "category"
    return Field(name, "onehot", tuple(label for label, _ in cells), 2, categories=values, other=other,
                 missing=missing)


def build(spec, columns, *, records: int | None, public: bool, salt: str | None = None) -> Microdata:
    """Validate a microdata spec ``{"columns": [...], "levels": [...]}`` against the dataset's
    ``columns`` (anything ``columns_from`` reads). ``public``: the dataset's size is public (else
    refused: the rows would reveal the number of records); ``records``: that size. ``salt``: the
    Bloom salt (hex; a fresh random one when None). Raises :class:`SpecError` with the reason."""
    if not public or records is None:
        raise SpecError(PUBLIC_SIZE_NEEDED)
    if not isinstance(spec, dict):
        raise SpecError('microdata must be an object such as {"columns": [...], "levels": ["1", "2"]}')
    unknown = set(spec) - {"columns", "levels"}
    if unknown:
        raise SpecError(f"microdata: unknown field {sorted(unknown)[0]!r}")
    for key in ("columns", "levels"):
        if key not in spec:
            raise SpecError(f"microdata: missing field {key!r}")
    raw = spec["columns"]
    if not isinstance(raw, (list, tuple)) or not raw:
        raise SpecError("microdata: columns must be a non-empty list")
    if len(raw) > MAX_COLUMNS:
        raise SpecError(f"microdata: at most {MAX_COLUMNS} columns, got {len(raw)}")
    mapping = {c.name: c for c in columns_from(columns)}
    fields = tuple(_field(item, number, mapping) for number, item in enumerate(raw, start=1))
    names = [f.column for f in fields]
    for name in names:
        if names.count(name) > 1:
            raise SpecError(f"microdata: column {name!r} is listed twice")
    bits = sum(len(f.labels) for f in fields)
    if bits > MAX_BITS:
        raise SpecError(f"microdata: {bits} bits per record; at most {MAX_BITS}")
    levels = _ladder(spec["levels"], "levels")
    md = Microdata(fields, levels, salt or secrets.token_hex(16), int(records))
    lowest = md.bit_level(levels[0])
    if lowest < Fraction(1, 1000):
        raise SpecError(
            f"levels: the lowest level {levels[0]} gives each bit a level of {float(lowest):.2g} "
            f"(eps / {md.weight}, the bits one record change can flip); at least 0.001 per bit is needed, "
            f"so the lowest level must be at least {Decimal(md.weight) / 1000}"
        )
    return md


def restore(statistics, *, records: int) -> Microdata:
    """A listing's stored microdata spec read back as it was made (its fields, levels and salt)."""
    stored = statistics[0]
    fields = tuple(Field.from_stored(item) for item in stored["columns"])
    return Microdata(fields, tuple(Decimal(level) for level in stored["levels"]), stored["salt"], int(records))


def declares_microdata(statistics) -> bool:
    return bool(statistics) and isinstance(statistics[0], dict) and statistics[0].get("kind") == KIND
