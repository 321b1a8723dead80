"""The trust tests reuse the marketplace's fixtures (users, listings, funding, eager Celery)."""

import pytest

from tests.marketplace.conftest import (  # noqa: F401 - fixtures
    api,
    buyer,
    eager_celery,
    fund,
    listing,
    make_listing,
    owner,
    seeded_noise,
    users,
)


@pytest.fixture
def signed_in(client):
    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in
