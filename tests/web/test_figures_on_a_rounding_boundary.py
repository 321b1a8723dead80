"""Every figure shown for a listing whose number of records puts its error bounds on (or just
past) a step of the display, checked against the exact value rounded the safe way.

The listing: the mean of ``age`` clamped to [0, 100] on a grid of 1, over a dataset whose size
``n`` is public (bounded relation). Its sensitivity is ``(U − L)/n`` and its 95% bound at ``ε`` is
``t(ε/100)/n``, where ``t(λ)`` is the smallest whole number of steps with ``P(|V| > t) =
2α^{t+1}/(1 + α) <= 5%`` for ``V ~ DLap(α = e^{−λ})`` (docs/mathematics.md §15), computed
here at 50 digits from that law alone. At ``ε = 1``, ``t = 300``:

* ``n = 2500``: the bound is 0.12 exactly, on a step of a two-decimal display: it must show
  as 0.12, not one step further;
* ``n = 2499``: the bound is 0.120048…: rounded to the nearest (Django's ``floatformat``, as
  the pages did) it showed as 0.12, a bound smaller than the truth; it must show as 0.13.

Checked: the quote on the listing page and from the API, the table beside the charts (every
level's bound and price; its figures are the charts' data) against the API's quote at each
level, the "next step" after a purchase, the released readings on the purchase page, in the
library and from the API, and the owner's listing page (privacy spent, its share of the
ceiling rounded up: 1 of 3 is 34%, not 33%). Bounds and what is spent round up; the API gives
the unrounded figure, which must round to what the page shows.
"""

from __future__ import annotations

import html
import re
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from market.catalog.models import Listing
from market.core.levels import rounded_text
from market.trading.models import Purchase
from market.web.templatetags.levels import down
from market.web.templatetags.levels import up as up_filter
from tests.datasets import ready_dataset
from tests.fixtures.market import make_csv

pytestmark = pytest.mark.django_db

MEAN = {"kind": "mean", "column": "age", "lower": 0, "upper": 100, "grid": 1}
WIDTH = 100  # U - L, in steps of 1: the group's sensitivity, and the mean's weight (one group)


def steps(level: Fraction) -> int:
    """The smallest ``t`` with ``2 alpha^{t+1} / (1 + alpha) <= 1/20``, ``alpha = e^{-level}`` (50 digits)."""
    with mpmath.workdps(50):
        alpha = mpmath.exp(-mpmath.mpf(level.numerator) / level.denominator)
        t = 0
        step = 1 << 20
        while step:  # the largest t that fails, by halving steps, then one more
            if 2 * alpha ** (t + step + 1) / (1 + alpha) > mpmath.mpf(1) / 20:
                t += step
            else:
                step >>= 1
        return t + 1 if 2 * alpha ** (t + 1) / (1 + alpha) > mpmath.mpf(1) / 20 else t


def exact_bound(eps: Decimal, n: int) -> Fraction:
    return min(Fraction(WIDTH), Fraction(steps(Fraction(eps) / WIDTH), n))


def up(value: Fraction, places: int = 2) -> str:
    """The exact value rounded up to ``places`` decimals, as the pages write it."""
    shown = (Decimal(value.numerator) / Decimal(value.denominator)).quantize(Decimal(1).scaleb(-places),
                                                                              rounding=ROUND_CEILING)
    return f"{shown:f}"


def up_short(value: Fraction) -> str:
    """As :func:`up`, with no decimals for a whole number (``floatformat:"-2"``'s form)."""
    text = up(value)
    return text[:-3] if text.endswith(".00") else text


def page(client, url) -> str:
    answer = client.get(url)
    assert answer.status_code == 200, answer.status_code
    return html.unescape(answer.content.decode())


@pytest.mark.parametrize("n", [2500, 2499], ids=["on a step", "just past a step"])
def test_every_figure_is_the_exact_one_rounded_the_safe_way(
        n, client, owner, buyer, fund, eager_celery, seeded_noise, django_capture_on_commit_callbacks):
    dataset = ready_dataset(owner=owner, name="ages", data=make_csv(n), relation="public_size", total_budget="5")
    owner_api, buyer_api = APIClient(), APIClient()
    owner_api.force_authenticate(owner)
    buyer_api.force_authenticate(buyer)
    made = owner_api.post("/api/v1/listings/", {"dataset": dataset.public_id, "title": "Ages", "statistics": [MEAN],
                                                "ceiling": "3", "price_per_epsilon": "1.50"}, format="json")
    assert made.status_code == 201, made.content
    listing = Listing.objects.get()
    assert list(listing.weights) == [WIDTH] and listing.engine == "lattice"
    assert steps(Fraction(1, WIDTH)) == 300  # at eps 1: 300/2500 = 0.12 exactly, 300/2499 just above

    # the quote: the page and the API, at eps 1
    quote = buyer_api.get(f"/api/v1/listings/{listing.pk}/quote/?epsilon=1").json()
    [stat] = quote["statistics"]
    exact = exact_bound(Decimal(1), n)
    assert stat["error_bound"] == pytest.approx(float(exact), rel=1e-12) and stat["assumes_records"] is None
    client.force_login(buyer)
    shown = page(client, reverse("web:listing", args=[listing.pk]) + "?epsilon=1")
    row = re.search(r'<table id="quote-bounds">.*?<td class="num">± ([^<]*)</td>', shown, re.S).group(1)
    assert row == up(exact) == {2500: "0.12", 2499: "0.13"}[n]
    assert f'<p class="stat">{quote["price"]} credits</p>' in shown

    # the table beside the charts: each level's bound, and its price as the API quotes it
    table = re.search(r'<table id="figures".*?<tbody>(.*?)</tbody>', shown, re.S).group(1)
    rows = re.findall(r'<th scope="row">ε ([^<]*)</th><td class="num">([^<]*)</td><td class="num">([^<]*)</td>', table)
    assert [eps for eps, _, _ in rows] == ["0.1", "0.2", "0.5", "1", "2", "3"]
    for eps, price, bound in rows:
        assert bound == up(exact_bound(Decimal(eps), n)), (eps, bound)
        at = buyer_api.get(f"/api/v1/listings/{listing.pk}/quote/?epsilon={eps}").json()
        assert at["price"] == price, eps
        assert up(Fraction(repr(at["statistics"][0]["error_bound"]))) == bound, eps

    # buy at eps 1: the release's bound on the purchase page, in the library and from the API
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        bought = client.post(reverse("web:listing-buy", args=[listing.pk]), {"epsilon": "1"})
    purchase = Purchase.objects.get()
    assert purchase.status == "released"
    status = page(client, bought["Location"])
    assert re.findall(r'<td class="num">± ([^<]*)</td></tr>', status) == [up_short(exact)]
    library = page(client, reverse("web:library"))
    held = r'<th scope="row">mean\(age\)</th><td class="num">[^<]*</td><td class="num">([^<]*)</td></tr>'
    assert re.findall(held, library) == [up_short(exact)]
    release = buyer_api.get(f"/api/v1/releases/{purchase.release.public_id}/").json()
    [value] = release["values"]
    assert value["error_bound_exact"] == pytest.approx(float(exact), rel=1e-12)
    assert up_short(Fraction(repr(value["error_bound_exact"]))) == up_short(exact)
    assert value["error_bound"] == float(up_short(exact))  # rounded up, at two significant digits, as the pages

    # the next step, 1 -> 2, on the listing page
    shown = page(client, reverse("web:listing", args=[listing.pk]))
    now, then = re.search(r"mean\(age\): ±([0-9.]+) → ±([0-9.]+)\)", shown).groups()
    assert (now, then) == (up(exact), up(exact_bound(Decimal(2), n)))

    # the owner's page: eps 1 spent of the ceiling 3, a third, shown as 34%
    client.force_login(owner)
    mine = page(client, reverse("web:owner-listing", args=[listing.pk]))
    assert "<strong>ε 1</strong> spent of your ceiling <strong>ε 3</strong> (34%)" in mine


@pytest.mark.parametrize("value, places, up_text, down_text", [
    (0.12, 2, "0.12", "0.12"),          # on a step: shown as it is, either way
    (300 / 2500, 2, "0.12", "0.12"),    # the float of 0.12 exactly
    (300 / 2499, 2, "0.13", "0.12"),    # just past a step
    (0.1225, 2, "0.13", "0.12"),        # floatformat's nearest: 0.12, a bound understated
    (Decimal("100") / 3, 0, "34", "33"),
    (3.0, -2, "3", "3"),                # floatformat:"-2"'s form: no decimals for a whole number
    (3.001, -2, "3.01", "3"),
    (-0.001, 2, "0.00", "-0.01"),
    (np.float64(300) / 2499, 2, "0.13", "0.12"),  # numpy's floats too
    (1e40 / 3, 2, "3333333333333333600000000000000000000000.00", "3333333333333333600000000000000000000000.00"),
    (float("inf"), 2, "inf", "inf"),
    (None, 2, "", ""),
])
def test_figures_round_the_safe_way(value, places, up_text, down_text):
    assert rounded_text(value, places, up=True) == up_filter(value, places) == up_text
    assert rounded_text(value, places, up=False) == down(value, places) == down_text
