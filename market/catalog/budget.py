"""What counts against a dataset's budget, and how to tell two uploads are the same people.

Listings on one dataset have independent noise paths, so they compose
basically: a dataset has spent the *sum* over its listings of each listing's
largest released level, and its listings' ceilings add up to the most it can
ever spend. The budget (``Dataset.total_budget``) bounds that sum; the
database checks it (``catalog/migrations/0006_dataset_budget.py``), and so do
the services (``listing_create``, ``dataset_budget_set``).

Point listings (kind ``point``) release one entity's location under
geo-indistinguishability, which is not eps-DP: they are never counted in an
eps-DP budget sum. A listing says whether it counts in its column
``counted_in_budget``, set when it is made from its kinds (:func:`counts`: every
kind's ``Kind.eps_dp``). This module is the one place that reads it, for the ORM
(:func:`counted`) and for SQL, triggers included (:func:`counted_sql`).
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

from django.conf import settings
from django.db.models import Q

from market.catalog.spec import KINDS

def counts(kinds) -> bool:
    """Whether a listing offering these kinds (names) counts in its dataset's eps budget: every
    one of them is eps-DP. A name no kind has counts (fail closed)."""
    return all(KINDS[name].eps_dp if name in KINDS else True for name in kinds)


def counted_sql(row: str = "") -> str:
    """The SQL condition that a ``catalog_listing`` row counts in the budget; ``row`` qualifies
    its column (``"NEW."`` in a trigger, ``""`` inside a query on the table). A boolean column:
    true on PostgreSQL, 1 on SQLite."""
    return f"{row}counted_in_budget"


def counted(prefix: str = "") -> Q:
    """The listings that count in an eps-DP budget sum; ``prefix`` is the path to the listing
    (``"listings__"`` from a dataset)."""
    return Q(**{f"{prefix}counted_in_budget": True})


def default_budget() -> Decimal:
    """The budget suggested at upload (the setting ``DATASET_DEFAULT_BUDGET``)."""
    return Decimal(str(settings.DATASET_DEFAULT_BUDGET))


def content_hash(columns, data: bytes) -> str:
    """sha256 of a dataset's canonical content: its column names (JSON) and its float64 matrix
    (little-endian, row-major) - equal for two uploads of the same parsed table, whatever
    their spacing, number formats or line endings."""
    digest = hashlib.sha256(json.dumps(list(columns), separators=(",", ":")).encode())
    digest.update(b"\n")
    digest.update(bytes(data))
    return digest.hexdigest()
