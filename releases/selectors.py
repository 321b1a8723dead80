"""Reading releases as buyers see them: values, labels, noise scale, error bounds."""

import numpy as np
from django.db.models import QuerySet

from market.catalog.selectors import listing_plan
from market.catalog.statistics import present
from market.core import visibility
from market.core.errors import NotFound


def release_list(*, user) -> QuerySet:
    return visibility.releases(user).select_related("listing__dataset").order_by("-created_at", "-id")


def release_get(*, user, release_id: str) -> "Release":  # noqa: F821
    """One of the user's releases by its public id ("rel_..."); anything else is 404."""
    release = release_list(user=user).filter(public_id=str(release_id)).first()
    if release is None:
        raise NotFound("no such release")
    return release


def release_readings(release) -> list[dict]:
    """One reading per statistic (histograms: per bin), with its noise scale and 95% error bound."""
    plan = listing_plan(release.listing)
    return present(plan, np.asarray(release.values, dtype=np.float64), np.asarray(release.noise_scales),
                   level=release.level)
