"""The statistics plan is stored with the listing (issue #14): a read restores it from the listing's
row (``Listing.plan`` beside its statistics, labels, weights, ranges and grids) without reading the
dataset or laying the statistics out again, and the restored plan is the one the layout makes."""

import numpy as np
import pytest

from market.catalog.spec.columns import columns_from
from market.catalog.compute import compute
from market.catalog.models import Listing
from market.catalog.selectors import listing_plan
from market.catalog.services import listing_create
from market.catalog.spec import SpecError, build_plan, describe, plan_layout
from tests.datasets import ready_dataset

from tests.fixtures.market import make_csv, old_float_listing
from .real_tables import ISLANDS, MASS, PENGUIN_STATISTICS, PENGUINS_PATH, SPECIES

pytestmark = pytest.mark.django_db

DATES = "day,place,amount\n" + "".join(
    f"2024-{m:02d}-{d:02d},{'north' if (m + d) % 3 else 'south'},{(m * 37 + d * 11) % 500 / 10}\n"
    for m in range(1, 13) for d in (3, 14, 27)
)

#: name: (relation, data, statistics): every kind, filters, group-bys, a date binning, both relations;
#: under a public size a grouped sum whose range holds 0 has two incomparable worst cases
CASES = {
    "penguins, private size": ("private_size", PENGUINS_PATH.read_bytes(), PENGUIN_STATISTICS),
    "penguins, public size": ("public_size", PENGUINS_PATH.read_bytes(), [
        {"kind": "mean", "column": "body_mass_g", "lower": MASS[0], "upper": MASS[1], "by": "island", "categories": ISLANDS,
         "categories_public": True},
        {"kind": "sum", "column": "flipper_length_mm", "lower": -100, "upper": 250, "by": "island", "categories": ISLANDS,
         "categories_public": True},
        {"kind": "table", "rows": "species", "columns": "island", "row_categories": SPECIES, "column_categories": ISLANDS,
         "categories_public": True},
        {"kind": "histogram", "column": "flipper_length_mm", "bins": [150, 190, 210, 250]},
    ]),
    "dates, private size": ("private_size", DATES.encode(), [
        {"kind": "histogram", "column": "day", "bin": "month", "from": "2024-01", "to": "2024-12"},
        {"kind": "sum", "column": "amount", "lower": 0, "upper": 50, "grid": "0.1",
         "where": [{"column": "place", "op": "=", "value": "north"}]},
        {"kind": "count", "by": "place", "categories": ["north", "south"], "categories_public": True},
    ]),
    "centroid, public size": ("public_size", make_csv(200), [
        {"kind": "centroid", "columns": ["age", "income"], "center": [50, 40000], "radius": 100},
    ]),
}


@pytest.fixture(params=list(CASES))
def made(request, owner):
    relation, data, statistics = CASES[request.param]
    dataset = ready_dataset(owner=owner, name=request.param, data=data, relation=relation, total_budget="10")
    if statistics[0]["kind"] == "centroid":  # an old listing: no new one offers a vector statistic
        return old_float_listing(dataset, statistics, ceiling="2", price="5.00", title=request.param)
    return listing_create(owner=owner, dataset_id=dataset.public_id, title=request.param, statistics=statistics,
                          ceiling="2", price_per_epsilon="5")


def laid_out(listing):
    """The plan as every read made it before it was stored: laid out again from the dataset."""
    dataset = listing.dataset
    return build_plan(listing.statistics, columns_from(dataset.columns), neighbours=dataset.neighbours(), offer=False,
                      mechanism=listing.release_mechanism)


def assert_same_plan(restored, built):
    assert restored.statistics == built.statistics and restored.labels == built.labels
    assert restored.sensitivity == built.sensitivity and restored.norm == built.norm
    for name in ("lower", "upper", "weights"):
        assert np.array_equal(getattr(restored, name), getattr(built, name)), name
        assert getattr(restored, name).dtype == np.float64 and not getattr(restored, name).flags.writeable
    assert restored.indices == built.indices and restored.loss_cases == built.loss_cases
    assert restored.neighbours == built.neighbours
    assert (restored.lattice is None) == (built.lattice is None)
    if built.lattice is not None:
        for name in ("grids", "unit_weights", "unit_lower", "unit_upper", "unit_cases"):
            assert getattr(restored.lattice, name) == getattr(built.lattice, name), name
    assert plan_layout(restored) == plan_layout(built)
    assert describe(restored) == describe(built)


def test_a_listing_reads_its_stored_plan_without_its_dataset(made, django_assert_num_queries):
    row = Listing.objects.get(pk=made.pk)  # no dataset loaded
    assert row.layout is not None
    with django_assert_num_queries(0):
        restored = listing_plan(row)
    assert_same_plan(restored, laid_out(row))
    if made.title == "penguins, public size":
        assert len(restored.loss_cases) == 2  # the grouped sum's two worst cases, kept exactly


def test_a_restored_plan_reads_releases_but_does_not_compute(made):
    with pytest.raises(ValueError, match="read back from a listing"):
        compute(listing_plan(made), table=None)


def test_a_listing_whose_document_has_no_layout_is_laid_out_on_each_read(owner, make_listing):
    """A listing ``catalog.0011`` could not lay out has a plan document without ``layout``
    (``catalog.0020``): it is laid out from its dataset on each read, which says what is wrong."""
    listing = make_listing()
    broken = make_listing()
    for row in (listing, broken):
        document = dict(Listing.objects.get(pk=row.pk).plan)
        del document["layout"]
        Listing.objects.filter(pk=row.pk).update(plan=document)
    Listing.objects.filter(pk=broken.pk).update(statistics=[{"kind": "sum", "column": "gone", "lower": 0, "upper": 1}])

    listing.refresh_from_db(), broken.refresh_from_db()
    assert listing.layout is None and broken.layout is None
    assert_same_plan(listing_plan(listing), laid_out(listing))
    with pytest.raises(SpecError, match="gone"):
        listing_plan(broken)
