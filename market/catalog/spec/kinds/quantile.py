"""Quantiles of a number column (the median, quartiles...) from a noisy CDF on public bins.

``{"kind": "quantile", "column": "age", "bins": [0, 18, 30, 50, 100], "quantiles": [0.25, 0.5, 0.75]}``
(optionally ``where``). The owner declares the bin edges ``e_0 < ... < e_k`` (public: the first and
last are the bounds; a value below ``e_0`` counts in the first bin, one above ``e_k`` in the last) and
the quantiles wanted. What is released is the count of each bin, exactly as a histogram's: one
record moves one bin by 1 (add or remove) or two bins by 1 each (replace one), so the group's
sensitivity follows the dataset's relation as the histogram's does (``stability._count_cases``).

The quantiles are post-processing of those noisy counts (no privacy cost, docs/mathematics.md
"Quantiles from a noisy CDF"): each count is clipped at 0, the cumulative sums ``S_j`` make a
non-negative, non-decreasing CDF and ``n^ = S_k`` (the noisy total), and the ``q``-quantile is read
where ``S`` crosses ``q n^``, interpolated linearly inside that bin (:func:`estimate`).

Accuracy: if every bin's noise is within ``t`` (per coordinate at confidence ``1 - beta / k``, so all
``k`` hold together with probability at least ``1 - beta`` by the union bound), every cumulative sum is
within ``D = k t`` of the true one and the total within ``D``; the reported quantile then lies in a bin
holding a record of true rank within ``(1 + q) D`` of ``q n`` (:func:`rank_error`), and the true
quantile lies between the edges where ``S`` crosses ``q n^ - (1 + q) D`` and ``q n^ + (1 + q) D``
(:func:`interval`), which is shown with each estimate.
"""

from __future__ import annotations

import numpy as np

from ..coordinates import Condition
from ..grammar import (
    MAX_BINS,
    SpecError,
    _fields,
    _filter,
    _number,
    _scope,
    _text,
    named_column,
)
from ..schema import _S_NAME, _S_NUMBER, _S_WHERE, _object
from ..stability import _bins_group
from .base import Kind, _scope_text
from .registry import register

#: a fraction strictly between 0 and 1, in draft 4 (OpenAPI 3.0 and the server's validator): there
#: exclusive bounds are booleans beside minimum and maximum; numbers there are another draft's spelling
_S_FRACTION = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1, "exclusiveMaximum": True}

__all__ = ["MAX_QUANTILES", "Quantile", "estimate", "interval", "rank_error"]

#: A quantile statistic asks for at most this many quantiles.
MAX_QUANTILES = 9
#: The confidence of the shown intervals and of the accuracy stated before purchase.
CONFIDENCE = 0.95


def _cdf(counts) -> np.ndarray:
    """The noisy CDF: cumulative sums of the counts clipped at 0 (non-negative, non-decreasing)."""
    return np.cumsum(np.maximum(np.asarray(counts, dtype=np.float64), 0.0))


def _crossing(cdf: np.ndarray, target: float) -> int:
    """The first bin (0-based) whose cumulative count reaches ``target`` (the last bin if none does)."""
    return min(int(np.searchsorted(cdf, target, side="left")), len(cdf) - 1)


def estimate(counts, edges, q: float) -> float | None:
    """The ``q``-quantile read off bin counts: the first bin ``j`` where the CDF reaches ``q n^``, and
    linearly inside it, ``e_j + (q n^ - S_{j-1}) / c_j (e_{j+1} - e_j)``. None when no record is counted.
    Exact (up to the position inside a bin) on noise-free counts."""
    cdf = _cdf(counts)
    total = cdf[-1]
    if total <= 0:
        return None
    target = q * total
    j = _crossing(cdf, target)
    below = cdf[j - 1] if j > 0 else 0.0
    inside = cdf[j] - below
    share = 0.0 if inside <= 0 else min(max((target - below) / inside, 0.0), 1.0)
    return float(edges[j] + share * (edges[j + 1] - edges[j]))


def rank_error(bin_bound: float, bins: int, q: float) -> float:
    """The rank error, in records, of the ``q``-quantile when each of ``bins`` counts is within
    ``bin_bound``: every cumulative sum (and the total) is then within ``D = bins * bin_bound``, and the
    bin read holds a record whose true rank is within ``(1 + q) D`` of ``q n``."""
    return (1.0 + q) * bins * bin_bound


def interval(counts, edges, q: float, bin_bound: float) -> tuple[float, float]:
    """Where the true ``q``-quantile lies when each count is within ``bin_bound``: from the lower edge of
    the first bin whose noisy CDF reaches ``q n^ - (1 + q) D`` to the upper edge of the first that
    reaches ``q n^ + (1 + q) D`` (``D = k bin_bound``); the whole range when nothing is counted."""
    cdf = _cdf(counts)
    total = cdf[-1]
    if total <= 0:
        return float(edges[0]), float(edges[-1])
    slack = rank_error(bin_bound, len(cdf), q)
    low = _crossing(cdf, q * total - slack) if q * total - slack > 0 else 0
    high = _crossing(cdf, q * total + slack)
    return float(edges[low]), float(edges[high + 1])


def _name(q: float, column: str) -> str:
    return f"median({column})" if q == 0.5 else f"quantile({column}, {q:g})"


@register
class Quantile(Kind):
    """Quantiles of a number column from its counts on public bins; the released values are the
    counts (a histogram's group), the quantiles post-processing shown with them."""

    name = "quantile"
    title = "quantile (median, quartiles...)"

    def validate(self, item, where, columns):
        _fields(item, where, ("column", "bins", "quantiles"), ("where",))
        column = named_column(item, where, columns)
        bins = item["bins"]
        if not isinstance(bins, (list, tuple)) or not 2 <= len(bins) <= MAX_BINS + 1:
            raise SpecError(f"{where}: bins must list between 2 and {MAX_BINS + 1} increasing edges")
        edges = [_number(edge, where, f"bin edge {i}") for i, edge in enumerate(bins, start=1)]
        for i in range(1, len(edges)):
            if not edges[i - 1] < edges[i]:
                raise SpecError(f"{where}: bin edges must be strictly increasing (edge {i + 1} is not above edge {i})")
        wanted = item["quantiles"]
        if not isinstance(wanted, (list, tuple)) or not 1 <= len(wanted) <= MAX_QUANTILES:
            raise SpecError(f"{where}: quantiles must list 1 to {MAX_QUANTILES} numbers between 0 and 1, e.g. [0.5]")
        qs = [_number(q, where, "a quantile") for q in wanted]
        if any(not 0 < q < 1 for q in qs):
            raise SpecError(f"{where}: each quantile must lie strictly between 0 and 1 (0.5 is the median)")
        if len(set(qs)) != len(qs):
            raise SpecError(f"{where}: a quantile is listed twice")
        out = {"kind": self.name, "column": column, "bins": edges, "quantiles": sorted(qs)}
        out.update(_filter(item, where, columns))
        return out

    def groups(self, stat, number, nb, columns, lattice=False):
        scope = _scope({"where": stat.get("where", [])}, columns)
        column, edges = stat["column"], stat["bins"]
        k = len(edges) - 1
        suffix = " | " + ", ".join(scope.parts) if scope.parts else ""
        labels, cells = [], []
        for i in range(k):
            # values below the first edge count in the first bin, above the last in the last
            low = () if i == 0 else (Condition(column, ">=", edges[i]),)
            high = () if i == k - 1 else (Condition(column, "<", edges[i + 1]),)
            labels.append(f"quantile bin of {column}: [{_text(edges[i])}, {_text(edges[i + 1])}"
                          f"{']' if i == k - 1 else ')'}" + suffix)
            cells.append(low + high or (Condition(column, "present"),))
        return (_bins_group(number, labels, cells, nb, key="quantile", where=scope.where),)

    @classmethod
    def schema(cls):
        return _object("quantile", {
            "column": _S_NAME,
            "bins": {"type": "array", "items": _S_NUMBER, "minItems": 2, "maxItems": MAX_BINS + 1,
                     "description": "public bin edges; the first and last are the bounds (values beyond them "
                                    "count in the first or last bin)"},
            "quantiles": {"type": "array", "items": _S_FRACTION,
                          "minItems": 1, "maxItems": MAX_QUANTILES, "description": "e.g. [0.5] or [0.25, 0.5, 0.75]"},
            "where": _S_WHERE,
        }, ("column", "bins", "quantiles"),
            "quantiles of a number column (the median...) read off its noisy counts on public bins")

    def curve_name(self, stat):
        return f"rank error of each quantile of {stat['column']} (records)"

    def statistic_name(self, stat, where, labels):
        return self.curve_name(stat)

    def reading_labels(self, stat, where, labels):
        # the bin counts, then one reading per quantile
        return super().reading_labels(stat, where, labels) + [_name(q, stat["column"]) for q in stat["quantiles"]]

    def describe(self, stat, nb):
        edges = stat["bins"]
        qs = ", ".join(f"{q:g}" for q in stat["quantiles"])
        return (f"Quantiles {qs} of {stat['column']}, read off its counts in {len(edges) - 1} bins from "
                f"{edges[0]:g} to {edges[-1]:g} (values beyond them count in the first or last bin)"
                + _scope_text({"where": stat.get("where")}))

    def curve(self, stat, where, plan, records=None):
        # before purchase: the rank error of the worst quantile asked, in records, at 95% for all bins at once
        k, top = len(where), max(stat["quantiles"])
        each = 1.0 - (1.0 - CONFIDENCE) / k
        return {"name": self.curve_name(stat), "assumes_records": None,
                "bound": lambda eps: rank_error(plan.bound(where[0], eps, each), k, top)}

    def read(self, stat, labels, where, r):
        out = super().read(stat, labels, where, r)  # the released values: one count per bin
        counts = [r.vector[i] for i in where]
        k = len(where)
        each = 1.0 - (1.0 - r.confidence) / k
        bin_bound = r.bound_at(where[0], each) if r.bound_at is not None else float(r.bounds[where[0]]) * k
        edges = stat["bins"]
        for q in stat["quantiles"]:
            value = estimate(counts, edges, q)
            low, high = interval(counts, edges, q, bin_bound)
            if value is None:
                value, note = (edges[0] + edges[-1]) / 2.0, "no records counted: the middle of the range"
            else:
                note = (f"post-processing of the bin counts; {r.confidence:.0%} interval {low:g} to {high:g} "
                        f"(rank error at most {rank_error(bin_bound, k, q):g} records)")
            out.append({"label": _name(q, stat["column"]), "kind": self.name, "value": float(value),
                        "noise_scale": float(r.scales[where[0]]),
                        "error_bound": float(max(value - low, high - value)), "note": note})
        return out
