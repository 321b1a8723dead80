"""The 95% error bound of each statistic a buyer gets, before purchase.

One home for "how accurate is each statistic at level eps", used by the listing
page (quote card, charts, the next step), the API's quote and the search for the
cheapest level meeting a buyer's targets. Each kind states its own bound
(``Kind.curve`` in ``market.catalog.spec``); this module names the
statistics uniquely and evaluates and searches them.

A mean whose divisor is a private count (a private size, a filter or group-by, a
column with missing values) has a bound that depends on that count, which no
one but the owner may see. A listing made with a size release (``Listing.size_release``,
docs/mathematics.md "The size release and a mean's quote") states it per cell from
the cell's published noisy count, with that count's own error folded in. A listing
made before size releases states it only as a function of an assumed number of
records in the cell (``records``, the buyer's to choose; default
:data:`DEFAULT_RECORDS`), and every figure says so (``assumes_records``).
Everything else is exact from public information.
"""

from __future__ import annotations

from decimal import Decimal

from market.core.fields import LEVEL_QUANTUM
from market.core.levels import level_text, rounded_text

from .spec import KINDS, MICRODATA_CURVE_NAME, Plan, SizeRelease

#: The number of records assumed in a mean's cell when the buyer names none.
DEFAULT_RECORDS = 1000
#: The largest assumption a buyer may make.
MAX_RECORDS = 10**9


def default_records(plan: Plan) -> int:
    """The assumption used when the buyer gives none: :data:`DEFAULT_RECORDS`, at most the dataset's
    public size (a cell of a public-size dataset cannot hold more)."""
    return min(DEFAULT_RECORDS, plan.neighbours.rows) if plan.neighbours.public else DEFAULT_RECORDS


def statistic_curves(plan: Plan, *, records: int | None = None, size: SizeRelease | None = None) -> list[dict]:
    """Per statistic, in spec order: ``{"name", "kind", "bound": f(eps), "assumes_records",
    "assumption", "shown", "too_few", "note"}``. ``name`` is unique within the listing (it is what a
    buyer's target names); ``assumption`` the words for ``assumes_records`` ("" when exact), ``shown``
    the name with them. A statistic whose bound cannot be stated at all is left out (none today).

    With the listing's size release (``size``), a mean dividing by a released count has one curve
    per cell, its bound from the cell's noisy count and nothing assumed; a cell too small for any
    useful mean is ``too_few`` (its bound the whole range; ``note`` says why), and buy-by-accuracy
    leaves it out of a target for every statistic."""
    records = default_records(plan) if records is None else records
    out, seen = [], set()
    for number, (stat, where) in enumerate(zip(plan.statistics, plan.indices), start=1):
        kind = KINDS[stat["kind"]]
        if size is not None and stat["kind"] == "mean" and len(where) > 1 and where[-1] in size.counts:
            cells = len(where) // 2
            for curve, total, count in zip(kind.cell_curves(stat, where, plan, size), where[:cells], where[cells:]):
                name = curve["name"] if curve["name"] not in seen else f"{curve['name']} (statistic {number})"
                seen.add(name)
                shown = f"{name} ({curve['note']})" if curve["note"] else name
                out.append({"name": name, "kind": "mean", "bound": curve["bound"], "assumes_records": None,
                            "assumption": "", "shown": shown, "too_few": curve["too_few"], "note": curve["note"],
                            "labels": (curve["name"], plan.labels[total], plan.labels[count]),
                            "range": (stat["lower"], stat["upper"])})
            continue
        found = kind.curves(stat, where, plan, records=records)
        for curve in found:
            name = curve["name"] if len(found) > 1 else kind.statistic_name(stat, where, plan.labels)
            if name in seen:
                name = f"{name} (statistic {number})"
            seen.add(name)
            assumes = curve.get("assumes_records")
            assumption = ""
            if assumes is not None:
                cell = curve.get("assumes_what") or ("each cell holds" if len(where) > 2 else "the cell holds")
                assumption = f"if {cell} {assumes:,} record{'s' if assumes != 1 else ''}"
            out.append({"name": name, "kind": stat["kind"], "bound": curve["bound"], "assumes_records": assumes,
                        "assumption": assumption, "shown": f"{name}, {assumption}" if assumption else name,
                        "too_few": False, "note": "", "labels": curve.get("labels") or _labels(kind, stat, where, plan),
                        "range": curve.get("range")})
    return out


def _labels(kind, stat: dict, where: tuple[int, ...], plan: Plan) -> tuple[str, ...]:
    """Every label a buyer sees of a statistic: its readings' in a release, then its values' in a quote's
    ``accuracy`` (a mean's sum and count)."""
    return tuple(dict.fromkeys([*kind.reading_labels(stat, where, plan.labels), *(plan.labels[i] for i in where)]))


def microdata_curves(md) -> list[dict]:
    """A microdata listing's one curve (``market.catalog.microdata``): the 95% half-width of every
    decoded count, the same for each bit (the number of records is public, nothing is assumed)."""
    name = MICRODATA_CURVE_NAME
    return [{"name": name, "kind": "microdata", "bound": md.bound, "assumes_records": None, "assumption": "",
             "shown": name, "too_few": False, "note": "", "labels": (), "range": (0, md.records)}]


def bounds_at(curves: list[dict], eps) -> list[dict]:
    """Each curve's figure at level ``eps``: ``{"name", "kind", "error_bound", "assumes_records",
    "assumption", "shown"}``."""
    return [{key: value for key, value in c.items() if key not in ("bound", "labels")}
            | {"error_bound": float(c["bound"](eps))} for c in curves]


def target_name(curves: list[dict], name: str) -> str | None:
    """The statistic a buyer's target names, as its curve is named (None: no such statistic). A target
    may name a statistic as the quote does ("mean of weight (each group)") or by any label of the
    readings a release gives ("mean(weight) | gender = female", "median(age)"): exactly first, then
    ignoring case. A label names the statistic that reads it (its one bound covers every value)."""
    for same in (lambda a: a == name, lambda a: a.casefold() == name.casefold()):
        for c in curves:
            if same(c["name"]):
                return c["name"]
        for c in curves:
            if any(same(label) for label in c.get("labels", ())):
                return c["name"]
    return None


def target_examples(curves: list[dict], most: int = 4) -> list[str]:
    """A few names a target may use: the statistics' names, then their readings' labels."""
    names = [c["name"] for c in curves]
    labels = [label for c in curves for label in c.get("labels", ()) if label not in names]
    return list(dict.fromkeys(names[:most] + labels[:most]))


def _plain(value) -> str:
    return f"{Decimal(str(value)).normalize():f}"


def wide_bounds(statistics: list[dict]) -> list[dict]:
    """The statistics (figures of :func:`bounds_at`) whose 95% interval, ± the error bound, is wider than
    the whole range their true value can take (``range``, where it is public: 0 to n for a count of n
    records, a mean's clamp range): at such a level an answer says next to nothing about the data."""
    return [s for s in statistics if s.get("range") is not None and not s.get("too_few")
            and 2 * s["error_bound"] > float(s["range"][1]) - float(s["range"][0])]


def warning(statistics: list[dict], eps) -> str | None:
    """A plain sentence for a quote whose figures say next to nothing (:func:`wide_bounds`), or None."""
    wide = wide_bounds(statistics)
    if not wide:
        return None
    parts = [f"{s['name']} is within ±{rounded_text(s['error_bound'], -1, up=True)} but can only lie between "
             f"{_plain(s['range'][0])} and {_plain(s['range'][1])}" for s in wide]
    return (f"At ε {level_text(Decimal(eps))} the answers are mostly noise: {'; '.join(parts)}. "
            "The error interval is wider than everything the value could be; a higher level narrows it.")


def misses(curves: list[dict], targets: list[tuple[str | None, Decimal]], eps) -> list[tuple[dict, Decimal, float]]:
    """The targets not met at ``eps``: ``(curve, target, bound)`` for each statistic whose bound exceeds a
    target naming it or naming every statistic (``None``; a cell with too few records to estimate is
    not one of every statistic: no level meets a target on it, and the caller refuses one naming it)."""
    out = []
    for curve in curves:
        wanted = [t for name, t in targets if name == curve["name"] or (name is None and not curve.get("too_few"))]
        if wanted:
            bound = float(curve["bound"](eps))
            out += [(curve, t, bound) for t in wanted if bound > float(t)]
    return out


def cheapest_level(curves: list[dict], targets: list[tuple[str | None, Decimal]], *, above: Decimal,
                   cap: Decimal) -> Decimal | None:
    """The smallest level on the 4-place grid in ``(above, cap]`` at which every target is met, or None
    when even ``cap`` misses one. Every bound falls (or stays) as eps grows, so the levels meeting the
    targets are an interval up to ``cap``: bisection over the grid finds its first level, rounding up."""
    lo, hi = int(above / LEVEL_QUANTUM), int(cap / LEVEL_QUANTUM)  # lo misses (or is held), hi meets
    if hi <= lo or misses(curves, targets, cap):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if misses(curves, targets, mid * LEVEL_QUANTUM):
            lo = mid
        else:
            hi = mid
    return (hi * LEVEL_QUANTUM).quantize(LEVEL_QUANTUM)
