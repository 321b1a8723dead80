"""A listing's size release: the noisy count of each cell its means divide by, published once for
everyone (docs/mathematics.md, "The size release and a mean's quote").

A listing whose means divide by a released count (a private size; a filter, group-by or column
with missing values) draws it at creation, at ``size_level`` (eps_p) carved out of the owner's
ceiling: buyers may buy up to ``ceiling`` (the owner's ceiling less eps_p), the listing's total is
``Listing.total_level`` and its dataset is charged eps_p at once (``selectors.with_budget_figures``).
The counts are whole numbers: the true counts plus discrete Laplace noise from the operating
system's bits (``releases.engine.size``), clamped to the counts' public range. Every figure read
from them (each cell's lower end, a mean's quote, "too few records to estimate") is post-processing.

Listings made before size releases have none (``size_release`` null): nothing is ever drawn for
them after the fact; their mean quotes still assume a number of records and say so.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal

from market.core.errors import InvalidInput
from market.core.fields import LEVEL_QUANTUM
from market.core.levels import level_text, parse_level
from releases.engine import lattice
from releases.engine import size as size_engine

from .spec import Plan, SizeRelease, size_layout

#: eps_p when the owner names none: this share of the ceiling (rounded down to the level grid).
DEFAULT_SHARE = Decimal("0.1")


def needed(plan: Plan) -> bool:
    """Whether the plan's means divide by a released count (so the listing makes a size release)."""
    return bool(size_layout(plan)[0])


def default_level(ceiling: Decimal) -> Decimal:
    """A tenth of the ceiling, rounded down to the level grid (at least its smallest step)."""
    return max((ceiling * DEFAULT_SHARE).quantize(LEVEL_QUANTUM, rounding=ROUND_DOWN), LEVEL_QUANTUM)


def chosen_level(value, ceiling: Decimal) -> Decimal:
    """The owner's eps_p (``value``; None or "" for the default), checked against the ceiling: it must
    leave buyers a level to buy (InvalidInput otherwise)."""
    level = default_level(ceiling) if value in (None, "") else parse_level(value, field="size_level")
    if level >= ceiling:
        raise InvalidInput(
            f"size_level: {level_text(level)} leaves nothing to sell under the ceiling of {level_text(ceiling)}; the size release is "
            "carved out of the ceiling, so choose a smaller level (the default is a tenth of the ceiling)",
            fields={"size_level": [f"Below {level_text(ceiling)} (the ceiling)."]},
        )
    return level


def draw(plan: Plan, answer, level: Decimal, rng=None) -> dict:
    """The size release of a listing with true answer ``answer`` (the lattice plan's int64 steps; a
    count's grid is 1): ``{"level", "weight", "cells": [{"index", "label", "value", "other"}]}``."""
    coords, weight, others = size_layout(plan)
    upper = [int(plan.lattice.unit_upper[i]) for i in coords]
    noisy = size_engine.release([int(answer[i]) for i in coords], level, weight, upper, rng or lattice.new_rng())
    return {
        "level": str(level),
        "weight": weight,
        "cells": [{"index": i, "label": plan.labels[i], "value": int(v), "other": i in others}
                  for i, v in zip(coords, noisy)],
    }


def release_of(listing) -> SizeRelease | None:
    """The listing's size release as the quotes read it (None: a listing made before them)."""
    stored = listing.size_release
    if not stored:
        return None
    return SizeRelease(
        level=Decimal(stored["level"]), weight=int(stored["weight"]),
        counts={int(c["index"]): int(c["value"]) for c in stored["cells"]},
        others=frozenset(int(c["index"]) for c in stored["cells"] if c.get("other")),
        top=listing.ceiling,
    )


def shown(listing) -> dict | None:
    """The size release as pages and the API show it: ``{"level", "confidence", "error_bound", "cells":
    [{"label", "value", "note"}]}``, the error bound being each count's own 95% bound (None: none)."""
    size = release_of(listing)
    if size is None:
        return None
    cells = []
    for cell in listing.size_release["cells"]:
        note, _ = size.note(int(cell["index"]))
        cells.append({"label": cell["label"], "value": int(cell["value"]), "note": note})
    return {
        "level": size.level,
        "confidence": "0.95",
        "error_bound": size_engine.error_bound(size.level, size.weight),
        "cells": cells,
    }
