"""Charts drawn on the server (market/web/svg.py) and the listing page's figures (market/web/charts.py):
every statistic readable on its own scale, levels as people write them, markup escaped and CSP-safe."""

import math
import re
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

from market.web import svg
from market.web.charts import listing_charts, table_levels

SVG = "{http://www.w3.org/2000/svg}"


def parse(markup: str) -> ET.Element:
    """The SVG element of a chart's markup (a legend may follow it)."""
    return ET.fromstring(markup[: markup.index("</svg>") + len("</svg>")])


def polylines(markup: str) -> list[list[tuple[float, float]]]:
    return [[tuple(map(float, p.split(","))) for p in line.get("points").split()]
            for line in parse(markup).iter(f"{SVG}polyline")]


def tick_labels(markup: str) -> list[str]:
    return [t.text for t in parse(markup).iter(f"{SVG}text") if t.get("class") == "tick"]


def plot_span(markup: str) -> float:
    """The share of the plotting area's height a chart's curve covers."""
    ys = [y for line in polylines(markup) for _, y in line]
    return (max(ys) - min(ys)) / (svg.HEIGHT - svg.TOP - svg.BOTTOM)


@pytest.mark.parametrize(("value", "step", "text"), [
    (2000, None, "2,000"), (0.5, None, "0.5"), (12.25, None, "12.25"), (1234567.891, None, "1,234,568"),
    (0.000123, None, "0.000123"), (-0.0, None, "0"), (7.5, 2.5, "7.5"), (0.4, 0.2, "0.4"), (25000, 25000, "25,000"),
    (Decimal("5.0000"), None, "5"),
])
def test_numbers_are_written_as_people_write_them(value, step, text):
    assert svg.number(value, step) == text


@pytest.mark.parametrize(("low", "high", "ticks"), [
    (0, 5, [0, 1, 2, 3, 4, 5]), (0, 37.5, [0, 10, 20, 30, 40]), (0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1]),
    (0, 7, [0, 2.5, 5, 7.5]), (0, 0.0003, [0, 0.0001, 0.0002, 0.0003]), (2, 3, [2, 2.2, 2.4, 2.6, 2.8, 3]),
])
def test_linear_ticks_are_round_and_cover_the_range(low, high, ticks):
    assert svg.linear_ticks(low, high) == pytest.approx(ticks)


def test_log_ticks_are_one_two_five_or_powers_of_ten_around_the_range():
    assert svg.log_ticks(3.2, 120) == pytest.approx([2, 5, 10, 20, 50, 100, 200])
    assert svg.log_ticks(0.01, 2000) == pytest.approx([0.01, 0.1, 1, 10, 100, 1000, 10000])  # too many for 1-2-5
    assert svg.log_ticks(5, 5) == pytest.approx([5, 50])


def test_a_line_chart_draws_every_point_where_it_belongs():
    chart = {"x_title": "privacy level ε", "y_title": "credits",
             "series": [{"name": "price", "x": [1, 2, 3, 4], "y": [10, 20, 30, 40]}]}
    markup = svg.line_chart(chart, label="Price")
    (line,) = polylines(markup)
    assert len(line) == 4
    xs, ys = zip(*line)
    assert list(xs) == sorted(xs) and list(ys) == sorted(ys, reverse=True)  # rising: up the page
    assert xs[1] - xs[0] == pytest.approx(xs[3] - xs[2], abs=0.11) and ys[0] - ys[1] == pytest.approx(ys[2] - ys[3], abs=0.11)
    assert tick_labels(markup)[:5] == ["0", "10", "20", "30", "40"]  # y from zero
    root = parse(markup)
    assert root.get("role") == "img" and root.get("aria-label") == "Price" and root.find(f"{SVG}title").text == "Price"
    titles = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "axis-title"]
    assert titles == ["privacy level ε", "credits"]


def test_on_a_log_scale_equal_ratios_are_equal_steps():
    chart = {"x_title": "ε", "y_title": "±", "series": [{"name": "count", "x": [0.5, 1, 2, 4], "y": [80, 40, 20, 10]}]}
    (line,) = polylines(svg.line_chart(chart, label="bound", y_log=True))
    steps = [b[1] - a[1] for a, b in zip(line, line[1:])]
    assert steps[0] == pytest.approx(steps[1], abs=0.11) == pytest.approx(steps[2], abs=0.11) and steps[0] > 0
    assert tick_labels(svg.line_chart(chart, label="bound", y_log=True))[:5] == ["10", "20", "50", "100", "0"]


def test_missing_values_leave_gaps_and_nothing_drawable_draws_nothing():
    chart = {"x_title": "x", "y_title": "y", "series": [{"name": "s", "x": [1, 2, 3, 4, 5], "y": [1, 2, None, 4, math.inf]}]}
    assert [len(line) for line in polylines(svg.line_chart(chart, label="gaps"))] == [2, 1]
    on_log = {"x_title": "x", "y_title": "y", "series": [{"name": "s", "x": [1, 2], "y": [0, -1]}]}
    assert svg.line_chart(on_log, label="nothing", y_log=True) is None
    not_computed = {"x_title": "ε′", "y_title": "δ", "series": [{"name": "s", "x": [1, 2], "y": [None, None]}]}
    assert svg.line_chart(not_computed, label="nothing") is None  # the page then shows no empty figure
    with pytest.raises(ValueError, match="unknown style"):
        svg.line_chart({**chart, "series": [{**chart["series"][0], "style": "wavy"}]}, label="x")


def test_every_string_is_escaped_and_nothing_is_styled_inline():
    evil = '<script>alert("x")</script>'
    chart = {"x_title": evil, "y_title": evil, "series": [
        {"name": evil, "x": [1, 2], "y": [1, 2]}, {"name": "b & c", "x": [1], "y": [2], "style": "dots"}]}
    markup = svg.line_chart(chart, label=evil, marks=((1.5, evil),))
    assert "<script>" not in markup and "&lt;script&gt;" in markup
    assert "style=" not in markup and "b &amp; c" in markup
    parse(markup)  # well-formed
    legend = markup[markup.index("</svg>"):]
    assert legend.startswith('</svg><ul class="legend">') and legend.count("<li>") == 2  # two series: a legend
    for drawn in (svg.bar_chart([evil], [3], x_title=evil, y_title="y", label=evil),
                  svg.meter(1, 2, text=evil, label=evil)):
        assert "<script>" not in drawn and "style=" not in drawn
        parse(drawn)


def test_a_mark_stands_at_its_level_with_its_text():
    chart = {"x_title": "ε", "y_title": "credits", "series": [{"name": "p", "x": [0, 5], "y": [0, 50]}]}
    root = parse(svg.line_chart(chart, label="p", marks=((Decimal("2"), "you hold ε 2"),)))
    mark = next(g for g in root.iter(f"{SVG}g") if g.get("class") == "mark")
    (line,) = polylines(svg.line_chart(chart, label="p"))
    at_two = line[0][0] + (line[1][0] - line[0][0]) * 2 / 5
    assert float(mark.find(f"{SVG}line").get("x1")) == pytest.approx(at_two, abs=0.11)
    assert mark.find(f"{SVG}text").text == "you hold ε 2"


def test_bars_are_as_tall_as_their_values_and_at_most_eight_days_are_written():
    days = [f"{d} Nov" for d in range(1, 21)]
    markup = svg.bar_chart(days, [Decimal(d) for d in range(1, 21)], x_title="day", y_title="credits", label="revenue")
    bars = list(parse(markup).iter(f"{SVG}rect"))
    heights = [float(b.get("height")) for b in bars]
    assert len(bars) == 20 and heights[9] == pytest.approx(heights[19] / 2, abs=0.11)
    assert [b.find(f"{SVG}title").text for b in bars][:2] == ["1 Nov: 1", "2 Nov: 2"]
    written = [t for t in tick_labels(markup) if t.endswith("Nov")]
    assert 1 < len(written) <= 8 and written[0] == "1 Nov"
    assert svg.bar_chart([], [], x_title="day", y_title="credits", label="none") is None


@pytest.mark.parametrize(("value", "top", "share"), [("2", "5", 0.4), ("0", "5", 0), ("7", "5", 1), ("1", "0", 0)])
def test_the_meter_fills_its_share(value, top, share):
    root = parse(svg.meter(value, top, text="spent", label="spent"))
    width = {r.get("class"): float(r.get("width")) for r in root.iter(f"{SVG}rect")}
    assert width["meter-fill"] == pytest.approx(width["meter-track"] * share, abs=0.11)


@pytest.mark.parametrize(("ceiling", "levels"), [
    ("5", ["0.2", "0.5", "1", "2", "5"]),
    ("10", ["0.2", "0.5", "1", "2", "5", "10"]),
    ("1", ["0.02", "0.05", "0.1", "0.2", "0.5", "1"]),
    ("3", ["0.1", "0.2", "0.5", "1", "2", "3"]),
    ("2.5", ["0.1", "0.2", "0.5", "1", "2", "2.5"]),
    ("0.0003", ["0.0001", "0.0002", "0.0003"]),  # never below the smallest level stored
])
def test_the_figures_table_starts_cheap_at_levels_as_people_write_them(ceiling, levels):
    got = table_levels(Decimal(ceiling))
    assert [f"{level.normalize():f}" for level in got] == levels
    assert got[0] <= Decimal(ceiling) / 10 or len(got) <= 3


@pytest.mark.django_db
def test_each_statistic_gets_its_own_readable_chart(make_listing):
    """A sum's bound is a hundred times a count's: on one chart the count would lie flat on zero."""
    listing = make_listing(statistics=[{"kind": "count"}, {"kind": "sum", "column": "age", "lower": 0, "upper": 100}])
    charts = listing_charts(listing, Decimal("1"))
    assert [chart["name"] for chart in charts["errors"]] == charts["curve_names"] == ["count", "sum(age)"]
    count, total = (chart["svg"] for chart in charts["errors"])
    for drawing in (count, total):
        assert plot_span(drawing) > 0.6  # each curve fills most of its own chart's height
        assert "you hold ε 1" in drawing and "privacy level ε" in drawing and "eps" not in drawing
    ratio = charts["rows"][0]["bounds"][1] / charts["rows"][0]["bounds"][0]
    assert ratio == pytest.approx(100, rel=0.01)
    assert max(float(t.replace(",", "")) for t in tick_labels(total)) > 50 * max(float(t.replace(",", "")) for t in tick_labels(count))
    assert [row["eps"] for row in charts["rows"]] == table_levels(listing.ceiling)
    assert charts["rows"][-1]["price"] == Decimal("50.00")  # 10 credits per ε up to the ceiling 5
    assert "you hold" not in listing_charts(listing)["price"]  # nothing held: no mark


@pytest.mark.django_db
def test_the_listing_page_draws_its_charts_without_a_script_and_says_so(client, listing):
    page = client.get(f"/listings/{listing.pk}/").content.decode()
    section = page[page.index('id="curves"'):page.index("</section>", page.index('id="curves"'))]
    named = listing_charts(listing)["curve_names"]  # count and histogram (a mean's needs the public size)
    assert len(named) >= 2 and section.count('<svg class="plot"') == 1 + len(named)  # the price and one each
    for name in named:
        assert f"<figcaption>± {name}</figcaption>" in section
    assert "need no JavaScript" in section and "The same figures" in section
    assert "plotly" not in page and "charts.js" not in page and "<script src" not in section
    rows = re.findall(r'<th scope="row">(ε [\d.]+)</th>', section)
    assert rows == ["ε 0.1", "ε 0.2", "ε 0.5", "ε 1", "ε 2", "ε 4.5"]  # up to the highest level sold
    assert not re.search(r"\beps\b|\d\.\d{4}\b", re.sub(r"<[^>]+>", " ", section))  # ε 0.5, not eps 0.5000


@pytest.mark.django_db
def test_the_owner_page_writes_levels_as_people_do(client, listing, owner):
    client.force_login(owner)
    page = client.get(f"/owner/listings/{listing.pk}/").content.decode()
    assert "Ceiling ε 5</span>" in page and "ε 0.5 spent of ε 5" in page  # the size release is spent at once
    assert "5.0000" not in page and "plotly" not in page
