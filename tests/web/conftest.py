"""The pages' tests reuse the marketplace's fixtures (users, listings, funding, eager Celery)."""

from tests.marketplace.conftest import (  # noqa: F401 - fixtures
    STATISTICS,
    api,
    before_float_retirement,
    buyer,
    eager_celery,
    fund,
    listing,
    make_csv,
    make_listing,
    owner,
    seeded_noise,
    users,
)
