"""The accounts' tests reuse the marketplace's fixtures (users, an API client) and the security
tests' check of the one error shape."""

import pytest

from tests.fixtures.market import api, buyer, owner, users  # noqa: F401 - fixtures
from tests.security.conftest import PASSWORD  # noqa: F401


@pytest.fixture
def bearer(api):
    """An API client that sends ``secret`` as its key."""

    def client(secret, scheme="Bearer"):
        c = api()
        c.credentials(HTTP_AUTHORIZATION=f"{scheme} {secret}")
        return c

    return client
