"""Chart data for the pages (plotly specs as plain dicts) and the tables beside them.

Everything here is public: prices, ceilings and the noise's error bounds,
which depend on eps and the listing's declared bounds only, never on data.
"""

from __future__ import annotations

from decimal import Decimal


from market.catalog.accuracy import statistic_curves
from market.catalog.pricing import price_at
from market.catalog.selectors import listing_plan


def level_grid(ceiling: Decimal, points: int = 40) -> list[Decimal]:
    top = Decimal(ceiling)
    return [(top * i / points).quantize(Decimal("0.0001")) for i in range(1, points + 1)]


def accuracy_curves(listing, records: int | None = None) -> list[dict]:
    """Per statistic (a histogram counts once: every bin has the same bound), the
    95% error bound as a function of eps: ``{"name", "bound": f(eps), ...}``. Each kind
    states its own (``market.catalog.accuracy``); a mean over a private count is drawn
    for an assumed number of records in its cell (``records``, default 1,000), and its
    ``name`` says so."""
    return [c | {"name": c["shown"], "statistic": c["name"]}
            for c in statistic_curves(listing_plan(listing), records=records)]


def listing_charts(listing, held: Decimal | None = None) -> dict:
    """Price and 95% error bound against eps, as plotly specs and as table rows."""
    grid = level_grid(listing.ceiling)
    xs = [float(e) for e in grid]
    curves = accuracy_curves(listing)
    price = {
        "data": [{"x": xs, "y": [float(price_at(listing, e)) for e in grid], "type": "scatter", "mode": "lines",
                  "name": "price of the whole path up to eps", "line": {"width": 3}}],
        "layout": {"xaxis": {"title": {"text": "privacy level eps"}}, "yaxis": {"title": {"text": "credits"}, "rangemode": "tozero"}},
    }
    if held:
        price["layout"]["shapes"] = [{"type": "line", "x0": float(held), "x1": float(held), "yref": "paper", "y0": 0, "y1": 1,
                                      "line": {"dash": "dot", "color": "#1b7a43"}}]
    error = {
        "data": [{"x": xs, "y": [c["bound"](e) for e in grid], "type": "scatter", "mode": "lines", "name": c["name"]} for c in curves],
        "layout": {"xaxis": {"title": {"text": "privacy level eps"}},
                   "yaxis": {"title": {"text": "95% error bound (±)"}, "rangemode": "tozero"}},
    }
    table_levels = [e for e in grid if e * 4 % listing.ceiling == 0] or grid[-1:]
    rows = [
        {"eps": e, "price": price_at(listing, e), "bounds": [c["bound"](e) for c in curves]}
        for e in table_levels
    ]
    return {"price": price, "error": error, "curve_names": [c["name"] for c in curves], "rows": rows}


def bounds_at(listing, eps: Decimal, records: int | None = None) -> list[dict]:
    return [{"name": c["name"], "bound": c["bound"](eps)} for c in accuracy_curves(listing, records=records)]


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
