"""The trust tests reuse the marketplace's fixtures (users, listings, funding, eager Celery)."""

import pytest

from tests.fixtures.market import (  # noqa: F401 - fixtures
    api,
    buyer,
    eager_celery,
    fund,
    STATISTICS,
    listing,
    owner,
    seeded_noise,
    users,
)


#: a count, a sum and a histogram: no mean over the private size, so no size release (which would take a
#: tenth of each ceiling out of what is sold: tests/marketplace/test_size_release.py); the caps here are
#: maps of the whole ceiling
TRUST_STATISTICS = [STATISTICS[0], {"kind": "sum", "column": "age", "lower": 0, "upper": 100}, STATISTICS[2]]


@pytest.fixture
def make_listing(owner):
    from tests.fixtures.market import make_listing as marketplace

    make = marketplace.__wrapped__(owner)  # the marketplace's factory, with another default

    def made(**kwargs):
        kwargs.setdefault("statistics", TRUST_STATISTICS)
        return make(**kwargs)

    return made


@pytest.fixture
def signed_in(client):
    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in
