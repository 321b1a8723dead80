"""The listing page's charts (SVG drawn by :mod:`market.web.svg`) and the tables beside them.

Everything here is public: prices, ceilings and the noise's error bounds,
which depend on eps and the listing's declared bounds only, never on data.
"""

from __future__ import annotations

import math
from decimal import Decimal

from market.catalog import sizes
from market.catalog.accuracy import statistic_curves
from market.catalog.pricing import price_at
from market.catalog.selectors import listing_plan

from . import svg
from .templatetags.levels import level

STEP = Decimal("0.0001")  # levels are stored with four decimals


def level_grid(ceiling: Decimal, points: int = 40, low: Decimal | None = None) -> list[Decimal]:
    """``points`` levels evenly spread up to the ceiling: from ceiling/points, or from ``low``."""
    top = Decimal(ceiling)
    if low is None:
        return [(top * i / points).quantize(STEP) for i in range(1, points + 1)]
    return [(low + (top - low) * i / (points - 1)).quantize(STEP) for i in range(points)]


def table_levels(ceiling: Decimal) -> list[Decimal]:
    """A few levels as people write them, cheap to dear: 1, 2 and 5 times a power of ten from the
    one nearest ceiling/32 up to the ceiling, and the ceiling itself (ceiling 5: 0.2, 0.5, 1, 2, 5;
    ceiling 3: 0.1, 0.2, 0.5, 1, 2, 3)."""
    top = Decimal(ceiling)
    if top <= 0:
        return []
    target = math.log10(top / 32)
    nice = [Decimal(m) * Decimal(10) ** p for p in range(math.floor(target) - 1, math.ceil(math.log10(top)) + 1)
            for m in (1, 2, 5)]
    start = max(STEP, min(nice, key=lambda x: (abs(math.log10(x) - target), x)))
    return [x.quantize(STEP) for x in nice if start <= x < top] + [top]


def accuracy_curves(listing, records: int | None = None) -> list[dict]:
    """Per statistic (a histogram counts once: every bin has the same bound), the
    95% error bound as a function of eps: ``{"name", "bound": f(eps), ...}``. Each kind
    states its own (``market.catalog.accuracy``); a mean over a private count is drawn per
    cell from the listing's size release (``market.catalog.sizes``), or, on a listing made
    before size releases, for an assumed number of records in its cell (``records``, default
    1,000), and its ``name`` says so."""
    return [c | {"name": c["shown"], "statistic": c["name"]}
            for c in statistic_curves(listing_plan(listing), records=records, size=sizes.release_of(listing))]


def listing_charts(listing, held: Decimal | None = None) -> dict:
    """The price and, one chart per statistic, the 95% error bound against eps, drawn as SVG;
    and the same figures at a few levels for the table beside them.

    Each statistic has its own chart and scale (a logarithmic one: the bound falls like 1/eps),
    so a sum's thousands never flatten a count's units."""
    levels = table_levels(listing.ceiling)
    every = accuracy_curves(listing)
    curves = [c for c in every if not c.get("too_few")]  # a cell too small for any mean has no curve to draw
    marks = ((held, f"you hold ε {level(held)}"),) if held else ()
    x_title = "privacy level ε"
    grid = level_grid(listing.ceiling)
    price = {"x_title": x_title, "y_title": "credits", "series": [
        {"name": "price of the whole path up to ε", "x": grid, "y": [price_at(listing, e) for e in grid]}]}
    price_svg = svg.line_chart(price, label="Price in credits against ε, rising to the ceiling", marks=marks)
    fine = level_grid(listing.ceiling, 48, low=levels[0]) if levels else []
    errors = []
    for curve in curves:
        chart = {"x_title": x_title, "y_title": "± at 95% (log scale)",
                 "series": [{"name": curve["name"], "x": fine, "y": [curve["bound"](e) for e in fine]}]}
        drawing = svg.line_chart(chart, y_log=True, marks=marks,
                                 label=f"95% error bound of the {curve['name']} against ε, falling as ε grows")
        errors.append({"name": curve["name"], "svg": drawing, "assumes": curve.get("assumes")})
    rows = [{"eps": e, "price": price_at(listing, e), "bounds": [c["bound"](e) for c in curves]} for e in levels]
    return {"price": price_svg, "errors": errors, "curve_names": [c["name"] for c in curves], "rows": rows,
            "too_few": [c["name"] for c in every if c.get("too_few")]}


def bounds_at(listing, eps: Decimal, records: int | None = None) -> list[dict]:
    return [{"name": c["name"], "bound": c["bound"](eps)} for c in accuracy_curves(listing, records=records)
            if not c.get("too_few")]


def point_plot(readings: list[dict], listing) -> dict | None:
    """An SVG-ready picture of a released 2-d point with its 95% error circle.

    Coordinates are mapped into a 320 x 320 box around the point (or the
    listing's declared area, for a centroid); no map tiles, nothing external.
    """
    if len(readings) != 2 or readings[0]["kind"] not in ("centroid", "point"):
        return None
    x, y = readings[0]["value"], readings[1]["value"]
    radius = readings[0]["error_bound"]
    stat = listing.statistics[0]
    if stat["kind"] == "centroid":
        cx, cy = stat["center"]
        half = max(stat["radius"], radius * 1.2)
    else:
        cx, cy, half = x, y, radius * 2.5
    size, pad = 320.0, 20.0
    scale = (size - 2 * pad) / (2 * half)

    def to_svg(px, py):
        return pad + (px - (cx - half)) * scale, size - pad - (py - (cy - half)) * scale

    sx, sy = to_svg(x, y)
    return {
        "size": size,
        "x": sx, "y": sy, "r": radius * scale,
        "frame": {"left": f"{cx - half:.4g}", "right": f"{cx + half:.4g}", "bottom": f"{cy - half:.4g}", "top": f"{cy + half:.4g}"},
        "labels": (readings[0]["label"], readings[1]["label"]),
        "value": (x, y), "radius": radius,
    }
