"""catalog.0006: what revealed an exact record count or was not eps-DP goes,
without changing any price (market/catalog/migrations/0007_neighbouring_relation.py)."""

import importlib
from decimal import Decimal

import pytest
from django.apps import apps

from market.catalog.models import Listing
from market.catalog.pricing import curve_of

migration = importlib.import_module("market.catalog.migrations.0007_neighbouring_relation")


def _old_listing(dataset, statistics, **extra):
    """A listing as the product stored it before the relation existed (written directly)."""
    return Listing.objects.create(
        dataset=dataset, title="old", statistics=statistics,
        plan=Listing.plan_document(labels=["x", "y"], sensitivity=1.0, weights=[1.0, 1.0], lower=[0, 0], upper=[1, 1]),
        answer=b"\0" * 16, ceiling=Decimal("1"),
        price_per_epsilon=Decimal("1.00"), mechanism=Listing.Mechanism.LAPLACE, **extra,
    )


@pytest.mark.django_db
def test_point_and_centroid_listings_close_with_their_reason_and_people_fold_into_the_totals(make_listing):
    count = make_listing()
    dataset = count.dataset
    point = _old_listing(dataset, [{"kind": "point", "columns": ["age", "visits"], "row": 1, "radius": 25.0}])
    centroid = _old_listing(
        dataset, [{"kind": "centroid", "columns": ["age", "visits"], "center": [0, 0], "radius": 5.0, "min_records": 10}]
    )
    priced = _old_listing(
        dataset, [{"kind": "count"}], price_curve={"kind": "compensation", "margin": "0.1"},
        compensation={"E": "2", "rate": "1", "E_min": "0.5", "people": 2000},
    )
    before = [curve_of(priced).price(Decimal(e)) for e in ("0.1", "0.5", "1")]
    assert "2,000 people" in curve_of(priced).formula()

    migration.close_and_fold(apps, None)

    point.refresh_from_db(), centroid.refresh_from_db(), priced.refresh_from_db(), count.refresh_from_db()
    assert not point.is_open and "not eps-differentially private" in point.closed_reason
    assert not centroid.is_open and "keeps private" in centroid.closed_reason
    assert count.is_open and count.closed_reason == ""
    # the people figure is gone from what buyers read; every price is unchanged
    assert priced.compensation == {"E": "4000", "rate": "1", "E_min": "1000"}
    assert [curve_of(priced).price(Decimal(e)) for e in ("0.1", "0.5", "1")] == before
    assert "people" not in curve_of(priced).formula()
