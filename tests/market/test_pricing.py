"""Price curves: non-decreasing, arbitrage-free, and p > 2 refused."""

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from market.catalog.pricing import CompensationModel, PriceCurve
from market.core.errors import InvalidInput

LEVELS = st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("20"), places=4)
MONEY = st.decimals(min_value=Decimal("0"), max_value=Decimal("1000"), places=2)

curves = st.one_of(
    st.builds(lambda c: PriceCurve.parse({"kind": "linear", "c": str(c)}), MONEY),
    st.builds(
        lambda c, p: PriceCurve.parse({"kind": "power", "c": str(c), "p": str(p)}),
        MONEY,
        st.decimals(min_value=Decimal("0.1"), max_value=Decimal("2"), places=2),
    ),
    st.builds(
        lambda E, rate, E_min, people, margin: PriceCurve.parse(
            {"kind": "compensation", "margin": str(margin)},
            {"E": str(E), "rate": str(rate), "E_min": str(E_min), "people": people},
        ),
        st.decimals(min_value=Decimal("1"), max_value=Decimal("100000"), places=2),
        st.decimals(min_value=Decimal("0.1"), max_value=Decimal("5"), places=2),
        st.decimals(min_value=Decimal("0"), max_value=Decimal("50"), places=2),
        st.integers(1, 100_000),
        st.decimals(min_value=Decimal("0.01"), max_value=Decimal("3"), places=2),
    ),
)


@settings(max_examples=300, deadline=None)
@given(curve=curves, steps=st.lists(LEVELS, min_size=1, max_size=12))
def test_no_sequence_of_increments_costs_less_than_buying_at_once(curve, steps):
    path = sorted(set(steps))
    paid, held = Decimal(0), Decimal(0)
    for level in path:
        increment = curve.price(level) - curve.price(held)
        assert increment >= 0  # the curve never decreases
        paid += increment
        held = level
    assert paid == curve.price(path[-1])  # exactly the direct price, to the cent


@settings(max_examples=200, deadline=None)
@given(curve=curves, a=LEVELS, b=LEVELS)
def test_curves_are_non_decreasing_and_start_at_zero(curve, a, b):
    lo, hi = min(a, b), max(a, b)
    assert Decimal(0) <= curve.price(lo) <= curve.price(hi)
    assert curve.price(Decimal(0)) == 0


def test_the_three_kinds():
    assert PriceCurve.parse({"kind": "linear", "c": "10"}).price(Decimal("1.25")) == Decimal("12.50")
    power = PriceCurve.parse({"kind": "power", "c": "8", "p": "1.5"})
    assert power.price(Decimal("4")) == Decimal("64.00")  # 8 * 4^1.5
    assert power.price(Decimal("0.5")) == Decimal("2.83")  # 8 * 0.3536, to the cent
    # the paper's illustration (section 5.3): E = 5500, 100 people, eps = 0.5: a budget of
    # 550000 e^-2 = 74434.4058..., which the paper prints truncated as 74434.40
    paper = PriceCurve.parse({"kind": "compensation", "margin": "1"}, {"E": "5500", "rate": "1", "E_min": "0", "people": 100})
    assert paper.price(Decimal("0.5")) == Decimal("74434.41")
    assert "100 people" in paper.formula()


@pytest.mark.parametrize("p", ["2.01", "3", "10"])
def test_powers_above_two_are_refused_with_the_reason(p):
    with pytest.raises(InvalidInput, match="invites arbitrage") as caught:
        PriceCurve.parse({"kind": "power", "c": "1", "p": p})
    assert "p" in caught.value.fields


@pytest.mark.parametrize(
    "curve,compensation,field",
    [
        ({"kind": "cubic"}, None, "price_curve"),
        ({"kind": "linear", "c": "-1"}, None, "c"),
        ({"kind": "linear", "c": "1.001"}, None, "c"),
        ({"kind": "power", "c": "1", "p": "0"}, None, "p"),
        ({"kind": "power", "c": "1", "p": "abc"}, None, "p"),
        ({"kind": "compensation", "margin": "1"}, None, "compensation"),
        ({"kind": "compensation", "margin": "0"}, {"E": "1", "people": 1}, "margin"),
        ({"kind": "compensation", "margin": "1"}, {"E": "0", "people": 1}, "E"),
        ({"kind": "compensation", "margin": "1"}, {"E": "10", "people": "2.5"}, "people"),
        ({"kind": "compensation", "margin": "1"}, {"E": "10", "people": 3, "rate": "0"}, "rate"),
    ],
)
def test_bad_curves_are_refused_at_their_field(curve, compensation, field):
    with pytest.raises(InvalidInput) as caught:
        PriceCurve.parse(curve, compensation)
    assert field in caught.value.fields


def test_an_owner_never_types_the_people_figure():
    """The number of people in a price follows from the dataset (its public size), never from input:
    a typed figure could reveal a private record count (docs/mathematics.md section 12)."""
    with pytest.raises(InvalidInput) as caught:
        CompensationModel.parse({"E": "10", "people": 2000})
    assert "people" in caught.value.fields
    total = CompensationModel.parse({"E": "10"})
    assert total.people is None and total.headcount == 1
    curve = PriceCurve.parse({"kind": "compensation", "margin": "1"}, total.as_dict())
    assert "people" not in curve.formula() and curve.price(Decimal(1)) == Decimal("3.68")
