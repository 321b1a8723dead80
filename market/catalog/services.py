"""Owners' writes: datasets and listings."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import numpy as np
from django.conf import settings
from django.db import transaction

from market.accounts.roles import require_role
from market.core import crypto, visibility
from market.core.errors import InvalidInput, NotFound
from market.core.locks import retrying
from market.core.levels import parse_level
from market.ledger.models import Account
from market.ledger.services import MAX_MONEY, account_get, money

from .budget import NOT_EPS_DP, content_hash
from .csvdata import CsvError, parse_csv
from .locks import dataset_lock, dataset_lock_any, listing_answer_lock
from .models import Dataset, DatasetBudgetChange, Listing
from .pricing import CompensationModel, PriceCurve
from .selectors import ceilings_needed
from .compute import Table
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


def _relation(value) -> str:
    if value in (None, ""):
        return Dataset.Relation.PRIVATE_SIZE
    if value not in Dataset.Relation.values:
        raise InvalidInput(
            f"relation must be one of {', '.join(Dataset.Relation.values)}, got {value!r}",
            fields={"relation": ["Choose private_size or public_size."]},
        )
    return value


def dataset_create(
    *,
    owner,
    name: str,
    data: bytes,
    total_budget,
    description: str = "",
    relation: str = Dataset.Relation.PRIVATE_SIZE,
    record_name: str = "",
    record_name_plural: str = "",
) -> Dataset:
    """Validate an uploaded CSV of numeric columns and store it for its owner, with its privacy
    budget (required: the most its listings' ceilings may add up to, ``market.catalog.budget``).

    ``relation`` is whom its releases protect (``Dataset.Relation``): with
    ``private_size`` (the default) any one record, whether or not it is in the
    data, and the number of records is never shown; with ``public_size`` any
    one record's values, and the number of records is published exactly.
    ``record_name`` / ``record_name_plural`` name what one record is about
    ("patient", "patients") in the sentence that says so.

    Nothing is stored unless the whole file is valid; a ``CsvError``'s
    problems (line and column) come back as the ``file`` field's messages.
    The returned dataset's ``same_content_as`` lists the owner's earlier
    datasets with the same content hash (the same people: budgets add up).
    """
    _require_owner(owner)
    name = _text(name, "name", max_length=200)
    description = _text(description, "description", max_length=5000, required=False)
    relation = _relation(relation)
    one = _text(record_name, "record_name", max_length=60, required=False) or "record"
    many = _text(record_name_plural, "record_name_plural", max_length=60, required=False) or (
        "records" if one == "record" else f"{one}s"
    )
    budget = parse_level(total_budget, field="total_budget")
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
    matrix = np.ascontiguousarray(parsed.values, dtype="<f8").tobytes()
    digest = content_hash(parsed.columns, matrix)
    same = list(
        visibility.owned_datasets(owner).filter(content_hash=digest).order_by("created_at", "id").only("public_id", "name")
    )
    dataset = Dataset.objects.create(
        owner=owner,
        name=name,
        description=description,
        columns=list(parsed.columns),
        row_count=parsed.values.shape[0],
        data=matrix,
        total_budget=budget,
        relation=relation,
        record_name=one,
        record_name_plural=many,
        content_hash=digest,
    )
    dataset.same_content_as = same
    return dataset


def same_content_notice(earlier) -> str:
    """What an owner is told when an upload has the same content as their ``earlier`` datasets."""
    names = ", ".join(f"“{d.name}” ({d.public_id})" for d in earlier)
    return (
        f"This file has the same content as your dataset{'s' if len(earlier) > 1 else ''} {names}. "
        "It was uploaded all the same, but the records are the same people: listings on both are independent "
        "releases about them, so what they reveal adds up - the people's privacy loss is the sum of both datasets' "
        "budgets, not either one."
    )


def dataset_budget_set(*, actor, dataset_id: str, budget, reason: str) -> Dataset:
    """Change a dataset's budget (staff, or the dataset's owner) and record who, what and why.

    Refused (400, naming the figure) below what its listings' ceilings need
    (point listings aside, ``market.catalog.budget``); the dataset's row lock
    keeps a listing from being created meanwhile. Writes one append-only
    ``DatasetBudgetChange`` row. The database refuses a budget below the
    ceilings by itself as well (``catalog/migrations/0006``).
    """
    budget = parse_level(budget, field="total_budget")
    reason = _text(reason, "reason", max_length=500)
    with transaction.atomic():
        dataset = dataset_lock_any(dataset_id=dataset_id)
        if dataset is None or not (actor.is_staff or dataset.owner_id == actor.pk):
            raise NotFound("no such dataset", fields={"dataset": ["No dataset has this id."]})
        need = ceilings_needed(dataset_pk=dataset.pk)
        if budget < need:
            raise InvalidInput(
                f"the listings on this dataset have ceilings adding up to {need}; its budget cannot be below that",
                fields={"total_budget": [f"At least {need} (the listings' ceilings)."]},
            )
        old = dataset.total_budget
        if budget != old:
            Dataset.objects.filter(pk=dataset.pk).update(total_budget=budget)
            DatasetBudgetChange.objects.create(dataset=dataset, old=old, new=budget, actor=actor, reason=reason)
            dataset.total_budget = budget
    return dataset


def _price_curve(price_curve: dict, compensation, ceiling: Decimal, dataset: Dataset, *, linear: bool):
    """The listing's price curve and compensation model, checked; a compensation
    model counts the dataset's people only when their number is public."""
    model = CompensationModel.parse(compensation) if compensation not in (None, {}) else None
    if model is not None and dataset.size_is_public:
        model = dataclasses.replace(model, people=dataset.row_count)
    curve = PriceCurve.parse(price_curve, model.as_dict() if model else None)
    if curve.price(ceiling) <= 0:
        raise InvalidInput(
            "this price gives every level away for 0.00 credits; releases are always paid for and recorded",
            fields={"price_per_epsilon" if linear else "price_curve": ["Charge at least 0.01 at the ceiling."]},
        )
    if curve.price(ceiling) >= MAX_MONEY:
        raise InvalidInput(
            f"this curve prices the ceiling at {curve.price(ceiling):,} credits; prices must stay below {MAX_MONEY:,}",
            fields={"price_curve": ["The price at the ceiling is too large."]},
        )
    return curve, model


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
    linear curve ``price_per_epsilon * eps``. ``compensation`` (E, rate, E_min)
    is the owner's cost model: required by a compensation-derived price,
    optional otherwise (it adds budgets to the owner's dashboard); with a
    public size it is per person and counts the dataset's public size, else
    it is for everyone in the data together. Statistics the dataset's relation
    does not allow (a count whose number is public, a centroid over a private
    number of records) are refused with the reason.
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
    with transaction.atomic():
        # locking the dataset serialises listings on it, so the budget check holds
        dataset = dataset_lock(owner=owner, dataset_id=dataset_id)
        if dataset is None:
            raise NotFound("no such dataset among yours", fields={"dataset": ["Choose one of your datasets."]})
        curve, model = _price_curve(price_curve, compensation, ceiling, dataset, linear=price_per_epsilon is not None)
        try:
            plan = build_plan(statistics, dataset.columns, neighbours=dataset.neighbours())
        except SpecError as exc:
            raise InvalidInput(str(exc), fields={"statistics": [str(exc)]}) from None
        kinds = "," + ",".join(sorted({stat["kind"] for stat in plan.statistics})) + ","
        if NOT_EPS_DP not in kinds:  # point listings are not eps-DP: not in the budget (market.catalog.budget)
            used = ceilings_needed(dataset_pk=dataset.pk)
            if used + ceiling > dataset.total_budget:
                left = dataset.total_budget - used
                raise InvalidInput(
                    f"the dataset's budget is {dataset.total_budget}; {used} is taken by its listings, "
                    f"so this ceiling can be at most {left}",
                    fields={"ceiling": [f"At most {left}."]},
                )
        try:
            # until the typed file is wired in: the dataset's float matrix, one column per name
            names = [c if isinstance(c, str) else c["name"] for c in dataset.columns]
            answer = compute(plan, Table.from_matrix(names, dataset.matrix()))
        except ValueError as exc:
            raise InvalidInput(str(exc), fields={"statistics": [str(exc)]}) from None
        listing = Listing.objects.create(
            dataset=dataset,
            title=title,
            description=description,
            statistics=list(plan.statistics),
            labels=list(plan.labels),
            kinds=kinds,
            sensitivity=float(plan.sensitivity),
            weights=[float(w) for w in plan.weights],
            lower=[float(v) for v in plan.lower],
            upper=[float(v) for v in plan.upper],
            answer=b"",  # sealed for the row once it has its id, just below
            ceiling=ceiling,
            price_curve=curve.as_dict(),
            compensation=model.as_dict() if model else None,
            price_per_epsilon=(curve.price(ceiling) / ceiling).quantize(Decimal("0.01")),
        )
        listing.set_true_answer(answer)
        listing.save(update_fields=["answer"])
        NoisePath.objects.create(listing=listing, dim=len(plan.labels), norm=plan.norm)
        account_get(user=owner, kind=Account.Kind.EARNINGS)
    return listing


@crypto.register_rotator("listing answers")
def listing_answers_rotate() -> crypto.Rotated:
    """Re-encrypt every listing's true answer under the current key (``manage.py rotate_encryption_keys``).

    One listing at a time, under its row lock (its purchases wait a moment); an answer
    already under the current key is only checked to open, so a second run changes nothing.
    An answer that does not open is counted as damaged and left as it is.
    """
    done = crypto.Rotated()
    for pk, blob in Listing.objects.order_by("pk").values_list("pk", "answer").iterator():
        try:
            stale = crypto.reseal(blob, context=crypto.answer_context(pk)) is not None
        except crypto.CryptoError:
            done.damaged += 1
            continue
        if not stale:
            done.unchanged += 1
            continue
        outcome = retrying(lambda pk=pk: _listing_answer_reseal(listing_id=pk), what="key rotation")
        setattr(done, outcome, getattr(done, outcome) + 1)
    return done


def _listing_answer_reseal(*, listing_id: int) -> str:
    with transaction.atomic():
        listing = listing_answer_lock(listing_id=listing_id)
        if listing is None:
            return "unchanged"  # deleted meanwhile
        try:
            new = crypto.reseal(listing.answer, context=listing.answer_context())
        except crypto.CryptoError:
            return "damaged"
        if new is None:
            return "unchanged"  # another run got here first
        listing.answer = new
        listing.save(update_fields=["answer"])
        return "resealed"
