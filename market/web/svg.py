"""Charts drawn on the server as inline SVG: no chart library, nothing to run in the browser.

A page gets finished markup, so its charts show with JavaScript off, weigh a few
kilobytes and obey the Content-Security-Policy: no ``style`` attribute, no script;
colours and type come from classes in ``static/css/site.css``. Every string drawn
is escaped here; numbers are written with a fixed number of decimals.

The charts take one plain shape, which selectors can build without knowing how it
is drawn::

    {"x_title": str, "y_title": str,
     "series": [{"name": str, "x": [numbers], "y": [numbers or None], "style": "line" | "dash" | "dots"}]}

A ``None`` (or, on a log scale, a value that is not positive) leaves a gap.
"""

from __future__ import annotations

import math
from decimal import Decimal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

#: the drawing's own units; the SVG scales to its box's width (``.plot`` in site.css)
WIDTH, HEIGHT = 360, 230
LEFT, RIGHT, TOP, BOTTOM = 58, 14, 12, 44
STYLES = ("line", "dash", "dots")


def number(value: float, step: float | None = None) -> str:
    """A tick's or point's label as people write it: ``2,000``, ``0.5``, ``12.25`` (no exponent,
    no trailing zeros; ``step`` sets the decimals, else up to 4 significant figures)."""
    value = float(value)
    if value == 0:
        return "0"
    if step:
        decimals = max(0, -math.floor(math.log10(abs(step)) + 1e-9))
        if abs(step * 10**decimals - round(step * 10**decimals)) > 1e-6:
            decimals += 1  # a 2.5 step needs one more
    else:
        decimals = max(0, 3 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{min(decimals, 12)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def linear_ticks(low: float, high: float) -> list[float]:
    """Round ticks (steps of 1, 2, 2.5 or 5 times a power of ten) covering ``[low, high]`` in three
    to six steps, the ends as close to ``low`` and ``high`` as such a step allows."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    power = 10 ** math.floor(math.log10(high - low))
    best = None
    for m, scale in ((m, scale) for scale in (0.1, 1) for m in (1, 2, 2.5, 5, 10)):
        step = m * power * scale
        first = math.floor(low / step + 1e-9) * step
        steps = math.ceil((high - first) / step - 1e-9)
        if 3 <= steps <= 6:
            fit = (round(first + steps * step - high + low - first, 12), m == 2.5, steps)  # 2.5: only if it fits better
            if best is None or fit < best[0]:
                best = (fit, first, step, steps)
    _, first, step, steps = best
    return [round(first + k * step, 12) for k in range(steps + 1)]


def log_ticks(low: float, high: float) -> list[float]:
    """Ticks at 1, 2 and 5 times powers of ten (only the powers when that is more than seven),
    from the one at or below ``low`` to the one at or above ``high`` (both positive)."""
    lo_power, hi_power = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for multiples in ((1, 2, 5), (1,)):
        candidates = [m * 10.0**p for p in range(lo_power, hi_power + 1) for m in multiples]
        below = max([c for c in candidates if c <= low * (1 + 1e-9)] or [candidates[0]])
        above = min([c for c in candidates if c >= high * (1 - 1e-9)] or [candidates[-1]])
        ticks = [c for c in candidates if below <= c <= above]
        if len(ticks) <= 7:
            break
    return ticks if len(ticks) > 1 else [ticks[0], ticks[0] * 10]


class _Frame:
    """Maps data to the drawing's units: x linear, y linear or logarithmic."""

    def __init__(self, xs: list[float], ys: list[float], *, y_log: bool, y_zero: bool, width: int, height: int):
        self.width, self.height, self.y_log = width, height, y_log
        self.x_ticks = linear_ticks(min(0.0, min(xs)), max(xs))
        if y_log:
            self.y_ticks = log_ticks(min(ys), max(ys))
        else:
            self.y_ticks = linear_ticks(min(0.0, min(ys)) if y_zero else min(ys), max(ys))
        self.x0, self.x1 = self.x_ticks[0], self.x_ticks[-1]
        self.y0, self.y1 = self.y_ticks[0], self.y_ticks[-1]

    def _y_unit(self, y: float) -> float:
        return math.log10(y) if self.y_log else y

    def x(self, x: float) -> float:
        return LEFT + (x - self.x0) / (self.x1 - self.x0) * (self.width - LEFT - RIGHT)

    def y(self, y: float) -> float:
        lo, hi = self._y_unit(self.y0), self._y_unit(self.y1)
        return self.height - BOTTOM - (self._y_unit(y) - lo) / (hi - lo) * (self.height - TOP - BOTTOM)

    def axes(self, x_title: str, y_title: str, *, x_labels=None) -> list[str]:
        bottom, right = self.height - BOTTOM, self.width - RIGHT
        parts = ['<g class="axes">']
        y_step = None if self.y_log else self.y_ticks[1] - self.y_ticks[0]
        for tick in self.y_ticks:
            y = self.y(tick)
            parts.append(f'<line class="gridline" x1="{LEFT}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>')
            parts.append(f'<text class="tick" x="{LEFT - 5}" y="{y + 4:.1f}" text-anchor="end">{escape(number(tick, y_step))}</text>')
        if x_labels is None:
            x_step = self.x_ticks[1] - self.x_ticks[0]
            x_labels = [(self.x(t), number(t, x_step)) for t in self.x_ticks]
        for x, label in x_labels:
            parts.append(f'<line class="tick-mark" x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 4}"/>')
            parts.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{escape(label)}</text>')
        parts.append(f'<line class="axis" x1="{LEFT}" x2="{right}" y1="{bottom}" y2="{bottom}"/>')
        parts.append(f'<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{bottom}"/>')
        middle = (LEFT + right) / 2
        parts.append(f'<text class="axis-title" x="{middle:.1f}" y="{self.height - 6}" text-anchor="middle">{escape(x_title)}</text>')
        y_middle = (TOP + bottom) / 2
        parts.append(f'<text class="axis-title" x="0" y="0" text-anchor="middle" '
                     f'transform="translate(13 {y_middle:.1f}) rotate(-90)">{escape(y_title)}</text>')
        parts.append("</g>")
        return parts


def _finite(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _runs(points: list[tuple[float, float | None]], keep) -> list[list[tuple[float, float]]]:
    """The points split where a value is missing (or not drawable), so the line has gaps."""
    runs, current = [], []
    for x, y in points:
        if y is None or not keep(y):
            if current:
                runs.append(current)
            current = []
        else:
            current.append((x, y))
    if current:
        runs.append(current)
    return runs


def _svg(parts: list[str], label: str, width: int, height: int, after: str = "") -> SafeString:
    head = (f'<svg class="plot" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{escape(label)}</title>')
    return mark_safe(head + "".join(parts) + "</svg>" + after)  # every string in ``parts`` was escaped above


def _legend(series: list[dict]) -> str:
    """The series' names beside a key of their colour and style (HTML under the drawing)."""
    items = "".join(
        f'<li><span class="key series-{i % 6} {escape(one.get("style", "line"))}"></span>{escape(one["name"])}</li>'
        for i, one in enumerate(series)
    )
    return f'<ul class="legend">{items}</ul>'


def line_chart(chart: dict, *, label: str, y_log: bool = False, y_zero: bool = True, marks: tuple = (),
               width: int = WIDTH, height: int = HEIGHT) -> SafeString | None:
    """``chart`` (the shape in this module's docstring) as SVG markup, or None when nothing
    can be drawn. ``marks``: vertical dotted lines ``(x, text)``, e.g. the level a buyer holds.
    A series' points get a ``<title>`` each when it is drawn as dots. With more than one series a
    legend (an HTML list) follows the drawing."""
    keep = (lambda y: y > 0) if y_log else (lambda y: True)
    series = []
    for index, one in enumerate(chart["series"]):
        points = [(float(x), _finite(y)) for x, y in zip(one["x"], one["y"])]
        series.append((index, one, _runs(points, keep)))
    drawn = [p for _, _, runs in series for run in runs for p in run]
    if not drawn:
        return None
    xs = [x for x, _ in drawn] + [float(x) for x, _ in marks]
    frame = _Frame(xs, [y for _, y in drawn], y_log=y_log, y_zero=y_zero, width=width, height=height)
    parts = frame.axes(chart["x_title"], chart["y_title"])
    for index, one, runs in series:
        style = one.get("style", "line")
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r}")
        css = f"series series-{index % 6} {style}"
        parts.append(f'<g class="{css}"><title>{escape(one["name"])}</title>')
        for run in runs:
            if style == "dots":
                for x, y in run:
                    parts.append(f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="4">'
                                 f'<title>{escape(one["name"])}: {escape(number(x))}, {escape(number(y))}</title></circle>')
            else:
                path = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in run)
                parts.append(f'<polyline points="{path}"/>')
        parts.append("</g>")
    for x, text in marks:
        sx = frame.x(float(x))
        parts.append(f'<g class="mark"><line x1="{sx:.1f}" x2="{sx:.1f}" y1="{TOP}" y2="{height - BOTTOM}"/>'
                     f'<text x="{sx + 4:.1f}" y="{TOP + 10}">{escape(text)}</text></g>')
    return _svg(parts, label, width, height, _legend(chart["series"]) if len(chart["series"]) > 1 else "")


def bar_chart(labels: list[str], values: list, *, x_title: str, y_title: str, label: str,
              width: int = WIDTH, height: int = HEIGHT) -> SafeString | None:
    """One bar per label (at most about eight labels written under the axis; every bar has a ``<title>``)."""
    if not values:
        return None
    numbers = [float(v) for v in values]
    frame = _Frame([0.0, 1.0], numbers + [0.0], y_log=False, y_zero=True, width=width, height=height)
    slot = (width - LEFT - RIGHT) / len(numbers)
    every = max(1, math.ceil(len(numbers) / 8))
    shown = [(LEFT + slot * (i + 0.5), text) for i, text in enumerate(labels) if i % every == 0]
    parts = frame.axes(x_title, y_title, x_labels=shown)
    parts.append('<g class="series series-0 bars">')
    base, bar = frame.y(0.0), min(slot * 0.7, 40.0)
    for i, (text, value) in enumerate(zip(labels, numbers)):
        top = frame.y(value)
        parts.append(f'<rect x="{LEFT + slot * (i + 0.5) - bar / 2:.1f}" y="{top:.1f}" width="{bar:.1f}" '
                     f'height="{max(0.0, base - top):.1f}"><title>{escape(text)}: {escape(number(value))}</title></rect>')
    parts.append("</g>")
    return _svg(parts, label, width, height)


def meter(value, top, *, text: str, label: str, width: int = WIDTH, height: int = 64) -> SafeString:
    """How much of ``top`` ``value`` is, as a filled bar with ``text`` above it (0 and ``top`` at its ends)."""
    value, top = Decimal(value), Decimal(top)
    share = float(min(max(value / top, Decimal(0)), Decimal(1))) if top > 0 else 0.0
    inner = width - 2 * 8
    parts = [
        f'<text class="meter-text" x="8" y="18">{escape(text)}</text>',
        f'<rect class="meter-track" x="8" y="26" width="{inner}" height="18" rx="4"/>',
        f'<rect class="meter-fill" x="8" y="26" width="{inner * share:.1f}" height="18" rx="4"/>',
        f'<text class="tick" x="8" y="{height - 4}">0</text>',
        f'<text class="tick" x="{width - 8}" y="{height - 4}" text-anchor="end">{escape(number(top))}</text>',
    ]
    return _svg(parts, label, width, height)
