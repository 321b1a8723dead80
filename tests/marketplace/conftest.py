from tests.datasets import ready_dataset
import itertools
import random
from decimal import Decimal

import numpy as np
import pytest
from django.db import connection
from rest_framework.test import APIClient

from market.accounts.models import User
from market.catalog.services import listing_create
from market.ledger.payments import ManualFunding

HIST_BINS = list(range(0, 101, 2))  # 50 bins: many coordinates, so averages are tight


def make_csv(rows: int = 500, seed: int = 1) -> bytes:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, rows)
    income = np.round(rng.gamma(2.0, 20_000.0, rows), 2)
    visits = rng.poisson(3.0, rows)
    lines = ["age,income,visits"] + [f"{a},{i},{v}" for a, i, v in zip(age, income, visits)]
    return ("\n".join(lines) + "\n").encode()


STATISTICS = [
    {"kind": "count"},
    {"kind": "mean", "column": "age", "lower": 0, "upper": 100},
    {"kind": "histogram", "column": "age", "bins": HIST_BINS},
]


@pytest.fixture
def users(db):
    def make(name, *, owner=False):
        return User.objects.create_user(name, f"{name}@example.com", "a-long-password-1", is_owner=owner)

    return make


@pytest.fixture
def owner(users):
    return users("olivia", owner=True)


@pytest.fixture
def buyer(users):
    return users("bob")


@pytest.fixture
def make_listing(owner):
    def make(*, who=None, ceiling="5", price="10.00", statistics=STATISTICS, rows=500, budget="100"):
        who = who or owner
        dataset = ready_dataset(owner=who, name="visits", data=make_csv(rows), total_budget=budget)
        return listing_create(
            owner=who,
            dataset_id=dataset.public_id,
            title="Clinic visits",
            statistics=statistics,
            ceiling=ceiling,
            price_per_epsilon=price,
        )

    return make


@pytest.fixture
def listing(make_listing):
    return make_listing()


@pytest.fixture
def fund():
    def fund(user, amount):
        ManualFunding().fund(user=user, amount=Decimal(str(amount)))

    return fund


@pytest.fixture
def api():
    def client(user=None):
        c = APIClient()
        if user is not None:
            c.force_authenticate(user)
        return c

    return client


@pytest.fixture
def eager_celery():
    """Tasks run where they are queued (the purchase's commit), not on a worker."""
    from market.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield app
    app.conf.task_always_eager = before


@pytest.fixture
def seeded_noise(monkeypatch):
    """Release steps draw from fixed seeds (tests only) instead of the OS's entropy."""
    import releases.services

    seeds = itertools.count(1000)
    monkeypatch.setattr(releases.services, "new_rng", lambda: np.random.default_rng(next(seeds)))
    monkeypatch.setattr(releases.services, "new_bit_source", lambda: random.Random(next(seeds)))


needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="needs PostgreSQL (set DATABASE_URL): row locks and deferred triggers"
)


def old_float_listing(dataset, statistics, *, ceiling="5", price="10.00", title="An old float listing"):
    """An old listing: made on the float path (engine "laplace") before it was retired, its rows
    built as listing creation built them then (the plan without grids, float weights and ranges, a
    float64 answer, a Laplace or l2 noise path). New listings can no longer be made so."""
    from market.catalog import files
    from market.catalog.columns import columns_from
    from market.catalog.compute import ParquetTable, compute
    from market.catalog.models import Listing
    from market.catalog.statistics import build_plan, plan_layout
    from releases.models import NoisePath

    plan = build_plan(statistics, columns_from(dataset.columns), neighbours=dataset.neighbours(), engine="laplace",
                      offer=False)
    with files.dataset_table_path(dataset) as path:
        answer = compute(plan, ParquetTable(path))
    listing = Listing.objects.create(
        dataset=dataset, title=title, statistics=list(plan.statistics), labels=list(plan.labels),
        kinds="," + ",".join(sorted({stat["kind"] for stat in plan.statistics})) + ",",
        sensitivity=float(plan.sensitivity), engine=Listing.Engine.LAPLACE,
        weights=[float(w) for w in plan.weights], lower=[float(v) for v in plan.lower],
        upper=[float(v) for v in plan.upper], plan=plan_layout(plan), answer=b"", ceiling=Decimal(ceiling),
        price_curve={"kind": "linear", "c": price}, price_per_epsilon=Decimal(price),
    )
    listing.set_true_answer(answer)
    listing.save(update_fields=["answer"])
    NoisePath.objects.create(listing=listing, dim=len(plan.labels), norm=plan.norm, engine="laplace")
    return listing


@pytest.fixture
def before_float_retirement(monkeypatch):
    """The release and purchase steps as they were before the float path was retired (they drew new
    float noise): for tests of the laws of the levels old float listings released then."""
    import market.trading.services
    import releases.services

    monkeypatch.setattr(releases.services, "_float_levels_check", lambda path, levels: None)
    monkeypatch.setattr(market.trading.services, "float_level_refusal", lambda **kwargs: None)
