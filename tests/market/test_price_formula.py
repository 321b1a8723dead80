"""The price formula in words (``market.catalog.pricing.price_formula``): numbers written plainly
(no exponent, thousands grouped), money always with two places, an ``E_min`` of 0 left out."""

from decimal import Decimal

import pytest

from market.catalog.pricing import PriceCurve, money_text, number_text


@pytest.mark.parametrize("value, text", [
    (Decimal("4E+3"), "4,000"), (Decimal("0.10"), "0.1"), (Decimal("2.50"), "2.5"), (Decimal("1"), "1"),
    (Decimal("0"), "0"), (Decimal("0E-8"), "0"), (Decimal("1234567.125"), "1,234,567.125"), ("550000", "550,000"),
])
def test_numbers_are_written_plainly(value, text):
    assert number_text(value) == text


@pytest.mark.parametrize("value, text", [
    (Decimal("10"), "10.00"), (Decimal("10.00"), "10.00"), (Decimal("0.1"), "0.10"), (Decimal("1E+4"), "10,000.00"),
    (Decimal("0"), "0.00"),
])
def test_money_has_two_places(value, text):
    assert money_text(value) == text


@pytest.mark.parametrize("curve, compensation, text", [
    ({"kind": "linear", "c": "10"}, None, "P(ε) = 10.00 × ε credits"),
    ({"kind": "linear", "c": "10.00"}, None, "P(ε) = 10.00 × ε credits"),
    ({"kind": "power", "c": "2.5", "p": "1.50"}, None, "P(ε) = 2.50 × ε^1.5 credits"),
    ({"kind": "compensation", "margin": "0.1"}, {"E": "4E+3", "rate": "1", "E_min": "0"},
     "P(ε) = 0.1 × 4,000 × e^(−1/ε) credits"),
    ({"kind": "compensation", "margin": "0.10"}, {"E": "40", "rate": "2.0", "E_min": "5", "people": 344},
     "P(ε) = 0.1 × 344 people × (5 + 40 × e^(−2/ε)) credits"),
    ({"kind": "compensation", "margin": "1"}, {"E": "40", "rate": "2", "E_min": "0", "people": 1},
     "P(ε) = 1 × 1 person × 40 × e^(−2/ε) credits"),
])
def test_the_formula_in_words(curve, compensation, text):
    assert PriceCurve.parse(curve, compensation).formula() == text
