"""Fixtures of the other suites, reused: a real Celery worker (tests/browser) and the marketplace's people and listings."""

from tests.browser.conftest import worker  # noqa: F401
from tests.marketplace.conftest import fund, listing, make_listing, owner, seeded_noise, users  # noqa: F401
