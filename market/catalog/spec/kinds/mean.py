"""The mean of a number column's clamped values: its sum divided by the public size or by a
released count; and the size release that quotes a mean's bound before purchase."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from releases.engine import size as size_engine
from releases.engine.postprocess import laplace_error_bound

from ..grammar import _periods, _scope
from ..stability import _count_cases, _count_group
from .base import PlanView, _scope_text
from .registry import register
from .sum import Sum


#: what a mean cell too small for any useful estimate says, before purchase and after
TOO_FEW = "too few records to estimate"
#: what the automatic catch-all cell of a group-by says
OTHER_NOTE = "other: values outside the declared categories"
#: what it says when its noisy count is 0
EMPTY_OTHER = "no records outside the declared categories"


def _other_cell(stat: dict) -> int | None:
    """The position of a group-by's automatic "other" cell among its cells (None: it has none)."""
    if "by" not in stat:
        return None
    if "categories" in stat:
        values = stat["categories"]
        if all(isinstance(v, bool) for v in values) and set(values) == {True, False}:
            return None
        return len(values)
    return len(_periods(stat))


def size_layout(plan: PlanView) -> tuple[tuple[int, ...], int, frozenset[int]]:
    """What a size release publishes for ``plan`` (docs/mathematics.md "The size release and a
    mean's quote"): the coordinates of the counts its means divide by (each once, in layout order),
    the release's weight (the l1-sensitivity of those counts together under the relation: each
    distinct count group moves by its own sensitivity; a whole number) and which of them are a
    group-by's automatic "other" cell. Empty with weight 0 when no mean divides by a released count
    (a public size with no filter, group-by or missing value; no mean; the float path)."""
    if plan.lattice is None:
        return (), 0, frozenset()
    coords: list[int] = []
    weight = 0
    others: set[int] = set()
    seen: set[tuple[int, ...]] = set()
    for stat, where in zip(plan.statistics, plan.indices):
        if stat["kind"] != "mean" or len(where) < 2:
            continue
        counts = tuple(where[len(where) // 2:])
        other = _other_cell(stat)
        if other is not None and other < len(counts):
            others.add(counts[other])
        if counts in seen:
            continue
        seen.add(counts)
        coords += [i for i in counts if i not in coords]
        weight += int(max(sum(case) for case in _count_cases(plan.neighbours, len(counts))))
    return tuple(coords), weight, frozenset(others)


@dataclass(frozen=True)
class SizeRelease:
    """A listing's published noisy counts (``Listing.size_release``): ``level`` (eps_p), ``weight``,
    ``counts`` (coordinate -> noisy count), ``others`` (the "other" cells' coordinates) and ``top``,
    the highest level buyers may buy (the listing's ceiling less eps_p)."""

    level: Decimal
    weight: int
    counts: dict
    others: frozenset
    top: Decimal

    def note(self, count: int) -> tuple[str, bool]:
        """What the cell of count coordinate ``count`` says before any purchase, and whether it is
        too small for any useful mean (its lower confidence end is 0 or less), by post-processing
        of its noisy count alone."""
        return cell_note(self.counts[count], size_engine.lower_end(self.counts[count], self.level, self.weight),
                         other=count in self.others, source="noisy count")


def cell_note(noisy, low, *, other: bool, source: str) -> tuple[str, bool]:
    """A mean cell's words from a noisy count of it (``noisy``) and that count's lower confidence end
    (``low``): ``(note, too_few)``."""
    too_few = low <= 0
    if other and noisy <= 0:
        return f"{EMPTY_OTHER} (its {source} is 0)", True
    if other:
        return (f"{OTHER_NOTE}; {TOO_FEW}" if too_few else OTHER_NOTE), too_few
    return (TOO_FEW if too_few else ""), too_few


@register
class Mean(Sum):
    """The mean of a column's present values (clamped), per cell: its sum divided by
    the public number of records when that is public, the column is declared
    complete and there is no filter or group-by; otherwise divided by a released
    count of the present values in the same cell (:func:`mean_estimate`)."""

    name = "mean"

    def groups(self, stat, number, nb, columns, lattice=False):
        scope = _scope(stat, columns)
        column = columns[stat["column"]]
        total = self._sum(stat, nb, columns, scope, lattice)
        if nb.public and column.complete and not scope.key:
            return (total,)
        return (total, _count_group(nb, scope, present=None if column.complete else column.name))

    def describe(self, stat, nb):
        simple = nb.public and "where" not in stat and "by" not in stat
        by = f"divided by the public number of records, {nb.size:,}" if simple else "derived from the released sum and count"
        return (f"Mean of {stat['column']} (each value clamped to {stat['lower']:g} … {stat['upper']:g}; {by})"
                + _scope_text(stat))

    def statistic_name(self, stat, where, labels):
        # one cell: its sum's label, read as a mean ("mean(age) | sex = female"), as its reading is labelled
        return "mean" + labels[where[0]].removeprefix("sum") if len(where) <= 2 else self.curve_name(stat)

    def reading_labels(self, stat, where, labels):
        # one reading per cell, labelled like its sum, read as a mean
        totals = where[:1] if len(where) == 1 else where[:len(where) // 2]
        return ["mean" + labels[total].removeprefix("sum") for total in totals]

    def cell_curves(self, stat, where, plan, size: "SizeRelease") -> list[dict]:
        """With the listing's size release: one curve per cell, its bound from the cell's noisy count
        (``releases.engine.size.mean_quote``, docs/mathematics.md "The size release and a mean's
        quote"); a cell whose count is too small for any useful mean says so (``too_few``, its
        ``note``) and has the whole range as its bound."""
        cells = len(where) // 2
        width = stat["upper"] - stat["lower"]
        each = 1.0 - float(size_engine.EACH_MISS)
        out = []
        for total, count in zip(where[:cells], where[cells:]):
            noisy = size.counts[count]
            divisor = size_engine.lower_end(noisy, size.level, size.weight)
            note, too_few = size.note(count)
            estimable = not too_few

            def bound(eps, total=total, divisor=divisor):
                found = size_engine.mean_quote(plan.bound(total, eps, each), plan.bound(count, eps, each),
                                               stat["lower"], stat["upper"], divisor)
                return width if found is None else found

            if estimable and size_engine.mean_quote(plan.bound(total, size.top, each), plan.bound(count, size.top, each),
                                                    stat["lower"], stat["upper"], divisor) is None:
                note, estimable = (f"{OTHER_NOTE}; {TOO_FEW}" if note else TOO_FEW), False
            out.append({"name": "mean" + plan.labels[total].removeprefix("sum"), "bound": bound,
                        "assumes_records": None, "too_few": not estimable, "note": note})
        return out

    def curve(self, stat, where, plan, records=None):
        # The mean's bound divides by the number of records in its cell. Divided by the public size: exact.
        # Otherwise the divisor is a private count c, and the bound is stated only as a function of an
        # assumed c (``records``), on the union event of the sum and count bounds at 97.5% each
        # (:func:`mean_error_bound`, docs/mathematics.md "A mean's bound before purchase").
        width = stat["upper"] - stat["lower"]
        if len(where) == 1:
            i, n = where[0], plan.neighbours.size
            return {"name": self.curve_name(stat), "bound": lambda eps: min(width, plan.bound(i, eps) / n),
                    "assumes_records": None, "range": (stat["lower"], stat["upper"])}
        if records is None:
            return None
        total, count = where[0], where[len(where) // 2]  # every cell's sum (and count) has the same weight
        each = 1.0 - (1.0 - 0.95) / 2.0

        def bound(eps):
            return mean_error_bound(plan.bound(total, eps, each), plan.bound(count, eps, each),
                                    stat["lower"], stat["upper"], records)

        return {"name": self.curve_name(stat), "bound": bound, "assumes_records": records,
                "range": (stat["lower"], stat["upper"])}

    def read(self, stat, labels, where, r):
        lower, upper = stat["lower"], stat["upper"]
        out = []
        if len(where) == 1:  # divided by the public size
            total = where[0]
            n = r.neighbours.size
            value = min(max(r.vector[total] / n, lower), upper)
            bound = min(r.bounds[total] / n, upper - lower)
            out.append((total, value, bound, r.scales[total] / n))
            notes = [""]
        else:
            cells = len(where) // 2
            other = _other_cell(stat)
            notes = []
            for position, (total, count) in enumerate(zip(where[:cells], where[cells:])):
                value, bound = mean_estimate(
                    r.vector[total], r.vector[count], lower, upper, r.scales[total], r.confidence, r.scales[count],
                    bounds=None if r.half is None else (r.half[total], r.half[count]),
                )
                # the sum's noise, read through the division: its scale over the released count divided by
                # (at least 1; a count of 0.5 or less gives the midpoint, and the scale of what it divides)
                out.append((total, value, bound, r.scales[total] / max(float(r.vector[count]), 1.0)))
                # post-processing of the released count: its lower end, and whether the bound is the whole range
                half = r.half[count] if r.half is not None else laplace_error_bound(r.scales[count], 0.975)
                note, too_few = cell_note(r.vector[count], r.vector[count] - half, other=position == other,
                                          source="released count")
                if not too_few and bound >= upper - lower:
                    note = f"{note}; {TOO_FEW}" if note else TOO_FEW
                notes.append(note)
        return [{"label": "mean" + labels[total].removeprefix("sum"), "kind": self.name, "value": float(value),
                 "noise_scale": float(scale), "error_bound": float(bound)} | ({"note": note} if note else {})
                for (total, value, bound, scale), note in zip(out, notes)]


def mean_estimate(
    released_sum,
    released_count,
    lower: float,
    upper: float,
    scale: float,
    confidence: float = 0.95,
    count_scale: float | None = None,
    bounds: tuple[float, float] | None = None,
):
    """A mean read off a released sum and count, with its error bound.

    The true mean is ``m = s / c`` for the true sum ``s`` of the values
    clamped to ``[lower, upper]`` and the true count ``c``, so ``m`` lies in
    ``[lower, upper]``. The released ``S = s + a`` and ``C = c + b`` carry
    Laplace noise of scale ``scale`` and ``count_scale`` (default: the same),
    rounded to the grid and clamped to a range holding the true value. Let

        t_s = laplace_error_bound(scale, 1 - (1 - confidence) / 2)
        t_c = laplace_error_bound(count_scale, 1 - (1 - confidence) / 2)

    (each includes half a grid step; on the lattice path ``bounds`` gives
    ``(t_s, t_c)`` from the discrete Laplace tails): ``|a| > t_s`` and ``|b| > t_c`` each
    have probability at most ``(1 - confidence) / 2``, so by the union bound
    both are within bounds with probability at least ``confidence``. On that
    event, with the raw estimate ``M = S / C``,

        M - m = (a - M b) / c,  so  |M - m| <= (t_s + |M| t_c) / c <= (t_s + |M| t_c) / (C - t_c)

    when ``C > t_c`` (then ``c >= C - t_c > 0``). The value returned is ``M``
    clamped to ``[lower, upper]``, which only brings it closer to ``m``; and
    no error exceeds the width ``upper - lower``, so the bound is capped
    there. When ``C <= t_c`` nothing better than the width is known. When
    ``C <= 0.5`` dividing by ``C`` is meaningless and the value is the
    midpoint of ``[lower, upper]``, with the width as its bound.

    Works elementwise on arrays; returns ``(value, bound)``.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    each = 1.0 - (1.0 - confidence) / 2.0
    if bounds is not None:
        t_s, t_c = (float(b) for b in bounds)
    else:
        t_s = laplace_error_bound(scale, each)
        t_c = t_s if count_scale is None else laplace_error_bound(count_scale, each)
    s = np.asarray(released_sum, dtype=np.float64)
    c = np.asarray(released_count, dtype=np.float64)
    width = upper - lower
    meaningful = c > 0.5
    raw = s / np.where(meaningful, c, 1.0)
    value = np.where(meaningful, np.clip(raw, lower, upper), (lower + upper) / 2.0)
    informative = meaningful & (c > t_c)
    bound = np.where(informative, (t_s + np.abs(raw) * t_c) / np.where(informative, c - t_c, 1.0), width)
    bound = np.minimum(bound, width)
    return value[()], bound[()]


def mean_error_bound(t_s: float, t_c: float, lower: float, upper: float, records: int) -> float:
    """The error bound of a mean read off a released sum and count (:func:`mean_estimate`), stated
    before release for a cell of ``records`` present values (the true count ``c``, private).

    ``t_s``, ``t_c``: the sum's and the count's error bounds at ``1 - (1 - confidence) / 2`` each,
    so that both hold together with probability at least ``confidence`` (the union bound). On that
    event, with ``K = max(|lower|, |upper|)`` and the true mean ``m`` in ``[lower, upper]`` (so
    ``|m| <= K``), the raw estimate ``M = S / C`` has ``M - m = (a - M b) / c``, hence

        |M - m| <= (t_s + |M| t_c) / c <= (t_s + K t_c) / c + (t_c / c) |M - m|,

    and for ``c > t_c``: ``|M - m| <= (t_s + K t_c) / (c - t_c)``. The estimate is ``M`` clamped to
    ``[lower, upper]`` (closer to ``m``; the midpoint when ``C <= 0.5``, which on that event needs
    ``c - t_c <= 0.5``, so ``t_c >= 0.5`` as ``c >= 1``, and a bound of at least ``K``, more than the
    midpoint's error), and never errs by more than the width: the bound is the smaller of the two,
    the width when ``c <= t_c``. Before clamping the bound is reached (``m = upper = K``, ``a = t_s``,
    ``b = -t_c``); after clamping it is cautious. docs/mathematics.md, "A mean's bound before
    purchase".
    """
    width = upper - lower
    if records <= t_c:
        return float(width)
    k = max(abs(lower), abs(upper))
    return float(min(width, (t_s + k * t_c) / (records - t_c)))


