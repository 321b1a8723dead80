"""Owners' writes: datasets and listings."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db import transaction

from market.accounts.roles import require_role
from market.core.errors import InvalidInput, NotFound
from market.core.levels import parse_level
from market.ledger.models import Account
from market.ledger.services import MAX_MONEY, account_get, money

from .csvdata import CsvError, parse_csv
from .locks import dataset_lock
from .models import Dataset, Listing
from .pricing import CompensationModel, PriceCurve
from .statistics import SpecError, build_plan, compute


def _require_owner(user) -> None:
    require_role(user, "owner")


def _text(value, name: str, *, max_length: int, required: bool = True) -> str:
    text = (value or "").strip()
    if required and not text:
        raise InvalidInput(f"{name} is required", fields={name: ["This field is required."]})
    if len(text) > max_length:
        raise InvalidInput(f"{name} is too long", fields={name: [f"At most {max_length} characters."]})
    return text


def rounded_size(rows: int) -> int:
    """A record count rounded to two significant figures (what owners may publish)."""
    if rows < 100:
        return rows
    digits = len(str(rows)) - 2
    return int(round(rows, -digits))


def dataset_create(
    *, owner, name: str, data: bytes, description: str = "", total_budget=None, publish_size: bool = False
) -> Dataset:
    """Validate an uploaded CSV of numeric columns and store it for its owner.

    Nothing is stored unless the whole file is valid; a ``CsvError``'s
    problems (line and column) come back as the ``file`` field's messages.
    """
    _require_owner(owner)
    name = _text(name, "name", max_length=200)
    description = _text(description, "description", max_length=5000, required=False)
    budget = None if total_budget in (None, "") else parse_level(total_budget, field="total_budget")
    try:
        parsed = parse_csv(
            data,
            max_bytes=settings.UPLOAD_MAX_BYTES,
            max_rows=settings.UPLOAD_MAX_ROWS,
            max_columns=settings.UPLOAD_MAX_COLUMNS,
        )
    except CsvError as exc:
        messages = [
            (f"line {e.row}, " if e.row else "") + (f"column '{e.column}': " if e.column else "") + e.message
            for e in exc.errors
        ]
        raise InvalidInput(f"the file was not accepted: {messages[0]}", fields={"file": messages}) from None
    return Dataset.objects.create(
        owner=owner,
        name=name,
        description=description,
        columns=list(parsed.columns),
        row_count=parsed.values.shape[0],
        data=np.ascontiguousarray(parsed.values, dtype="<f8").tobytes(),
        total_budget=budget,
        published_size=rounded_size(parsed.values.shape[0]) if publish_size else None,
    )


def listing_create(
    *,
    owner,
    dataset_id: str,
    title: str,
    statistics,
    ceiling,
    price_per_epsilon=None,
    description: str = "",
    price_curve: dict | None = None,
    compensation: dict | None = None,
) -> Listing:
    """Offer statistics over one of the owner's datasets, named by its public id (``dataset.public_id``).

    The price is ``price_curve`` (see ``market.catalog.pricing``), or the
    linear curve ``price_per_epsilon * eps``. ``compensation`` (E, rate, E_min,
    people) is the owner's cost model: required by a compensation-derived
    price, optional otherwise (it adds budgets to the owner's dashboard).
    The statistics' true answer and sensitivity are computed once, here; the
    listing's noise path is created with it.
    """
    from releases.models import NoisePath

    _require_owner(owner)
    title = _text(title, "title", max_length=200)
    description = _text(description, "description", max_length=5000, required=False)
    ceiling = parse_level(ceiling, field="ceiling")
    if price_curve is None:
        if price_per_epsilon is None:
            raise InvalidInput("a price is required", fields={"price_per_epsilon": ["Enter a price per ε."]})
        price = money(price_per_epsilon)
        if price < 0:
            raise InvalidInput("the price cannot be negative", fields={"price_per_epsilon": ["Enter 0 or more."]})
        price_curve = {"kind": "linear", "c": str(price)}
    model = CompensationModel.parse(compensation) if compensation not in (None, {}) else None
    curve = PriceCurve.parse(price_curve, model.as_dict() if model else None)
    if curve.price(ceiling) <= 0:
        raise InvalidInput(
            "this price gives every level away for 0.00 credits; releases are always paid for and recorded",
            fields={"price_curve" if price_per_epsilon is None else "price_per_epsilon": ["Charge at least 0.01 at the ceiling."]},
        )
    if curve.price(ceiling) >= MAX_MONEY:
        raise InvalidInput(
            f"this curve prices the ceiling at {curve.price(ceiling):,} credits; prices must stay below {MAX_MONEY:,}",
            fields={"price_curve": ["The price at the ceiling is too large."]},
        )
    with transaction.atomic():
        # locking the dataset serialises listings on it, so the budget check holds
        dataset = dataset_lock(owner=owner, dataset_id=dataset_id)
        if dataset is None:
            raise NotFound("no such dataset among yours", fields={"dataset": ["Choose one of your datasets."]})
        try:
            plan = build_plan(statistics, dataset.columns, max_rows=settings.UPLOAD_MAX_ROWS)
        except SpecError as exc:
            raise InvalidInput(str(exc), fields={"statistics": [str(exc)]}) from None
        if dataset.total_budget is not None:
            used = sum((l.ceiling for l in dataset.listings.all()), Decimal(0))
            if used + ceiling > dataset.total_budget:
                left = dataset.total_budget - used
                raise InvalidInput(
                    f"the dataset's budget is {dataset.total_budget}; {used} is taken by its listings, "
                    f"so this ceiling can be at most {left}",
                    fields={"ceiling": [f"At most {left}."]},
                )
        try:
            answer = compute(plan, dataset.columns, dataset.matrix())
        except ValueError as exc:
            raise InvalidInput(str(exc), fields={"statistics": [str(exc)]}) from None
        listing = Listing.objects.create(
            dataset=dataset,
            title=title,
            description=description,
            statistics=list(plan.statistics),
            labels=list(plan.labels),
            kinds="," + ",".join(sorted({stat["kind"] for stat in plan.statistics})) + ",",
            sensitivity=float(plan.sensitivity),
            weights=[float(w) for w in plan.weights],
            lower=[float(v) for v in plan.lower],
            upper=[float(v) for v in plan.upper],
            answer=np.asarray(answer, dtype="<f8").tobytes(),
            ceiling=ceiling,
            price_curve=curve.as_dict(),
            compensation=model.as_dict() if model else None,
            price_per_epsilon=(curve.price(ceiling) / ceiling).quantize(Decimal("0.01")),
        )
        NoisePath.objects.create(listing=listing, dim=len(plan.labels), norm=plan.norm)
        account_get(user=owner, kind=Account.Kind.EARNINGS)
    return listing
