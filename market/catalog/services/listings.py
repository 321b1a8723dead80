"""Owners' new listings: checked, compared and made (the answer computed before the dataset's lock, the
lock re-checking the dataset's version; over a large table, reserved and prepared by a task:
:mod:`.preparation`). Changes to listings are in :mod:`.managing`."""

from __future__ import annotations

import dataclasses
import re
from decimal import Decimal
from fractions import Fraction

from django.db import transaction

from market.core import visibility
from market.core.errors import InvalidInput, NotFound
from market.core.levels import level_text, parse_delta, parse_level
from market.ledger.models import Account
from market.ledger.services import MAX_MONEY, account_get, money
from releases.models import NoisePath

from .. import backends, microdata, sizes
from ..budget import counts
from ..compute import DuckDBBackend, compute
from ..locks import dataset_lock
from ..models import Dataset, Listing
from ..pricing import CompensationModel, PriceCurve
from .. import composition
from ..selectors import ceilings_needed, counted_listings
from releases.engine.mechanisms import mechanism as mechanism_named
from releases.engine.mechanisms.skellam import DEFAULT_DELTA, shift_cases
from releases.engine.skellam_privacy import TooMuchNoise, calibrate

from ..spec import (
    LATTICE,
    SKELLAM,
    VECTOR_PATH,
    SpecError,
    build_plan,
    plan_layout,
    without_confirmation,
)
from ..spec.columns import columns_from
from . import preparation
from .common import _changed, _checkpoint, _computed, _require_owner, _require_owner_still, _text


def _price_curve(price_curve: dict, compensation, ceiling: Decimal | None, dataset: Dataset, *, linear: bool):
    """The listing's price curve and compensation model, checked (at the ceiling too, unless it is
    None); a compensation model counts the dataset's people only when their number is public."""
    model = CompensationModel.parse(compensation) if compensation not in (None, {}) else None
    if model is not None and dataset.size_is_public:
        model = dataclasses.replace(model, people=dataset.row_count)
    curve = PriceCurve.parse(price_curve, model.as_dict() if model else None)
    if ceiling is None:
        return curve, model
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


class _Problems:
    """What is wrong with a listing's inputs, gathered: each reason's message, and each input at
    fault with its messages (``InvalidInput.fields``), so that one 400 names them all."""

    def __init__(self):
        self.messages: list[str] = []
        self.fields: dict[str, list[str]] = {}

    def add(self, message: str, fields: dict[str, list[str]] | None = None) -> None:
        if message not in self.messages:
            self.messages.append(message)
        for name, texts in (fields or {}).items():
            known = self.fields.setdefault(name, [])
            known.extend(t for t in texts if t not in known)

    def collect(self, check):
        """``check()``, or None with its InvalidInput added."""
        try:
            return check()
        except InvalidInput as exc:
            self.add(exc.message, exc.fields)
            return None

    def error(self) -> InvalidInput:
        return InvalidInput("; ".join(self.messages), fields=self.fields)

    def merge(self, other: _Problems) -> None:
        for message in other.messages:
            self.add(message)
        for name, texts in other.fields.items():
            self.fields.setdefault(name, []).extend(t for t in texts if t not in self.fields.get(name, []))


def _statistics_plan(statistics, dataset: Dataset, problems: _Problems, mechanism: str = LATTICE):
    """The statistics laid out for the dataset (as ``listing_create`` lays them out), or None with
    every reason it can find in ``problems``: each statistic is tried alone as well, so that an
    owner sees what is wrong with every one of them at once, not one per attempt."""
    columns, neighbours = columns_from(dataset.columns), dataset.neighbours()
    try:
        return build_plan(statistics, columns, neighbours=neighbours, mechanism=mechanism)
    except SpecError as whole:
        reasons = []
        if isinstance(statistics, list) and len(statistics) > 1:
            for number, spec in enumerate(statistics, start=1):
                try:
                    build_plan([spec], columns, neighbours=neighbours, mechanism=mechanism)
                except SpecError as alone:  # numbered 1 alone: numbered as given
                    reasons.append(re.sub(r"^statistic 1\b", f"statistic {number}", str(alone)))
        if str(whole) not in reasons:
            reasons.append(str(whole))
        for reason in reasons:
            problems.add(reason, {"statistics": [reason]})
        return None


def _listing_problems(dataset: Dataset, problems: _Problems, *, statistics, ceiling, price_curve, compensation,
                      linear: bool, mechanism: str = LATTICE) -> tuple:
    """Judge a new listing's statistics, ceiling and price on ``dataset`` all at once (a part given
    as None is not judged), adding what is wrong to ``problems``: ``(plan, curve, model)``."""
    plan = curve = model = None
    if price_curve is not None:
        found = problems.collect(
            lambda: _price_curve(price_curve, compensation, ceiling, dataset, linear=linear)
        )
        curve, model = found or (None, None)
    if statistics is not None:
        statistics, unconfirmed = without_confirmation(statistics)
        for reason in unconfirmed:
            problems.add(reason, {"statistics": [reason]})
        plan = _statistics_plan(statistics, dataset, problems, mechanism)
        if unconfirmed:
            plan = None
    if not mechanism_named(mechanism).states_delta:  # its share is known once it is calibrated (listing_create)
        _budget_problems(dataset, problems, ceiling=ceiling, kinds=_kinds(plan) if plan else ())
    return plan, curve, model


def _kinds(plan) -> tuple[str, ...]:
    return tuple(sorted({stat["kind"] for stat in plan.statistics}))


def _budget_problems(dataset: Dataset, problems: _Problems, *, ceiling, kinds, candidate=None) -> None:
    """A ceiling the dataset's budget has no room for, added to ``problems`` (listings whose kinds
    are not all eps-DP take none: ``market.catalog.budget``). A dataset without a delta sums its
    listings' totals; one with a delta composes them by privacy-loss distributions with
    ``candidate`` (the new listing's PLD; pure at ``ceiling`` when None: ``market.catalog.composition``)."""
    if ceiling is None or not counts(kinds):
        return
    if dataset.delta_budget is None:
        used = ceilings_needed(dataset_pk=dataset.pk)
        if used + ceiling > dataset.total_budget:
            left = dataset.total_budget - used
            problems.add(
                f"the dataset's budget is {level_text(dataset.total_budget)}; {level_text(used)} is taken by its listings, "
                f"so this ceiling can be at most {level_text(left)}",
                {"ceiling": [f"At most {level_text(left)}."]},
            )
        return
    if ceiling > dataset.total_budget:
        problems.add(f"the dataset's budget is {level_text(dataset.total_budget)}: no listing's ceiling can be above it",
                     {"ceiling": [f"At most {level_text(dataset.total_budget)}."]})
        return
    plds = composition.dataset_plds(counted_listings(dataset_pk=dataset.pk))
    new = candidate if candidate is not None else composition.pld.pure(Fraction(ceiling))
    together = composition.composed([*plds, new], eps=dataset.total_budget, delta=dataset.delta_budget)
    if not together.fits:
        problems.add(
            f"the dataset's budget is (ε {level_text(dataset.total_budget)}, δ {composition.delta_text(dataset.delta_budget)}); "
            f"its listings "
            f"with this one would spend δ {together.delta_text} at ε {level_text(dataset.total_budget)}: lower the "
            "ceiling, or close a listing",
            {"ceiling": ["Too high for the dataset's budget with its other listings."]},
        )


#: The mechanisms a new listing of statistics may run on (their stored names).
NEW_MECHANISMS = (LATTICE, SKELLAM)


def _mechanism(name, problems: _Problems) -> str | None:
    if name in NEW_MECHANISMS:
        return name
    reason = f"the mechanism must be one of {', '.join(NEW_MECHANISMS)}; got {name!r}"
    problems.add(reason, {"mechanism": [f"Choose {' or '.join(NEW_MECHANISMS)}."]})
    return None


def _delta(value, mechanism: str | None, dataset: Dataset, problems: _Problems) -> Decimal | None:
    """The listing's delta: none off the Skellam path; on it, the owner's (default 1e-9, at most
    the dataset's delta), and only on a dataset with a delta."""
    if mechanism is None or not mechanism_named(mechanism).states_delta:
        if value is not None:
            problems.add("a delta is given only to a listing on the Skellam path",
                         {"delta": ["Leave it out, or choose the Skellam path."]})
        return None
    if dataset.delta_budget is None:
        problems.add("the dataset has no δ, so its listings are pure ε-DP: give the dataset a δ (at most 1e-6) to list "
                     "on the Skellam path", {"mechanism": ["The dataset has no δ."]})
        return None
    if value is None:
        return min(DEFAULT_DELTA, dataset.delta_budget)
    return problems.collect(lambda: parse_delta(value, at_most=dataset.delta_budget, what="the delta (at most the dataset's δ)"))


def _linear_curve(price_per_epsilon, problems: _Problems) -> dict | None:
    """The linear curve ``price_per_epsilon * eps`` as a curve spec, or None (the reason in ``problems``)."""
    if price_per_epsilon is None:
        problems.add("a price is required", {"price_per_epsilon": ["Enter a price per ε."]})
        return None
    price = problems.collect(lambda: money(price_per_epsilon))
    if price is not None and price < 0:
        problems.add("the price cannot be negative", {"price_per_epsilon": ["Enter 0 or more."]})
        return None
    return None if price is None else {"kind": "linear", "c": str(price)}


def listing_check(*, owner, dataset_id: str, statistics=None, ceiling=None, price_curve=None, compensation=None) -> dict:
    """What ``listing_create`` would say about these parts of a new listing on one of the owner's
    datasets, all at once, creating nothing: ``{input: [messages]}`` (empty: nothing to say).
    Parts left None are not judged (the page has already named what is wrong with them)."""
    _require_owner(owner)
    dataset = visibility.owned_datasets(owner).filter(public_id=str(dataset_id)).first()
    if dataset is None or not dataset.is_ready:
        return {}
    problems = _Problems()
    if ceiling is not None:
        ceiling = problems.collect(lambda: parse_level(ceiling, field="ceiling"))
    _listing_problems(
        dataset, problems, statistics=statistics, ceiling=ceiling, price_curve=price_curve, compensation=compensation,
        linear=False,
    )
    return problems.fields


def listing_compare(*, owner, dataset_id: str, statistics, ceiling, delta=None) -> dict:
    """The error bounds a new listing of ``statistics`` with ``ceiling`` would state at its ceiling
    on each mechanism a new listing may use on this dataset, and the one proposed: the one whose
    bounds are smaller (the mean over values of the squared ratio of its bound to the lattice's
    below 1), or the only one that can sell the statistics (a centroid: the Skellam path). Creates
    nothing; 400 with every reason when the statistics or ceiling are wrong on every mechanism.

    ``{"proposed", "mechanisms": [{"mechanism", "label", "delta", "available", "reason",
    "values": [{"label", "error_bound"}]}], "ratio"}``: ``ratio`` is that mean squared ratio
    (None unless both paths are available). The Skellam path is calibrated at the ceiling here,
    once (about a second for a wide listing)."""
    _require_owner(owner)
    problems = _Problems()
    ceiling = problems.collect(lambda: parse_level(ceiling, field="ceiling"))
    dataset = _listable_dataset(owner, dataset_id, locked=False)
    statistics, unconfirmed = without_confirmation(statistics) if statistics is not None else (None, [])
    for reason in unconfirmed:
        problems.add(reason, {"statistics": [reason]})
    skellam_open = dataset.delta_budget is not None
    chosen_delta = _delta(delta, SKELLAM, dataset, problems) if skellam_open else None
    refused = {name: _Problems() for name in NEW_MECHANISMS}
    plans = {name: _statistics_plan(statistics, dataset, refused[name], name) for name in NEW_MECHANISMS
             if skellam_open or not mechanism_named(name).states_delta}
    if not any(plan is not None for plan in plans.values()):
        problems.merge(refused[LATTICE])
    if problems.messages:
        raise problems.error()
    out, bounds = [], {}
    for name in NEW_MECHANISMS:
        chosen = mechanism_named(name)
        entry = {"mechanism": name, "label": chosen.label, "delta": chosen_delta if chosen.states_delta else None,
                 "available": False, "reason": "", "values": []}
        plan = plans.get(name)
        if name not in plans:
            entry["reason"] = "the dataset has no δ: give it one (at most 1e-6) to list on the Skellam path"
        elif plan is None:
            entry["reason"] = "; ".join(refused[name].messages)
        else:
            bounds[name] = _bounds_at_ceiling(chosen, plan, ceiling, chosen_delta)
            entry.update(available=True, values=[{"label": label, "error_bound": b}
                                                 for label, b in zip(plan.labels, bounds[name])])
        out.append(entry)
    ratio = None
    if LATTICE in bounds and SKELLAM in bounds:
        ratio = sum((b / a) ** 2 for a, b in zip(bounds[LATTICE], bounds[SKELLAM])) / len(bounds[SKELLAM])
        proposed = SKELLAM if ratio < 1 else LATTICE
    else:
        proposed = next(iter(bounds))
    return {"proposed": proposed, "ratio": ratio, "mechanisms": out}


def _bounds_at_ceiling(chosen, plan, ceiling, delta) -> list[float]:
    """Each value's 95% error bound at ``ceiling`` on ``chosen`` (a calibrated mechanism calibrated
    there, once)."""
    if not chosen.states_delta:
        return [plan.bound(i, ceiling) for i in range(len(plan.labels))]
    layout = plan.lattice
    try:
        top = calibrate(float(ceiling), float(delta), shift_cases(layout.unit_cases, layout.unit_weights))
    except TooMuchNoise as exc:
        raise _too_low(exc) from None
    bound = chosen.bound({"calibration": {"delta": str(delta), "levels": [str(ceiling)], "times": [str(top)]}})
    return [bound.value_bound(layout, i, ceiling, 0.95) for i in range(len(plan.labels))]


def _too_low(exc: Exception) -> InvalidInput:
    """A ceiling too low for the Skellam path's largest time (``TooMuchNoise``), as the ceiling's 400."""
    text = str(exc)
    return InvalidInput(f"ceiling: {text}", fields={"ceiling": [text[0].upper() + text[1:] + "."]})


def _listable_dataset(owner, dataset_id, *, locked: bool) -> Dataset:
    """The owner's dataset (``locked``: locked for update, which serialises listings on it, so the
    budget check holds), ready to be listed: else 404 (not among theirs) or 400 (still processing,
    or failed)."""
    if locked:
        dataset = dataset_lock(owner=owner, dataset_id=dataset_id)
    else:
        dataset = visibility.owned_datasets(owner).filter(public_id=str(dataset_id)).first()
    if dataset is None:
        raise NotFound("no such dataset among yours", fields={"dataset": ["Choose one of your datasets."]})
    if not dataset.is_ready:
        raise InvalidInput(
            f"the dataset is {dataset.status}; only a ready dataset can be listed",
            fields={"dataset": ["The dataset is not ready (still processing, or failed)."]},
        )
    _require_owner_still(owner)
    return dataset


def _still_as_computed(owner, dataset_id, computed_on: Dataset) -> Dataset:
    """The dataset locked for update, refused (409 ``dataset_changed``) if its version moved since
    the listing's answer was computed on ``computed_on``."""
    dataset = _listable_dataset(owner, dataset_id, locked=True)
    if dataset.version != computed_on.version:
        raise _changed()
    return dataset


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
    size_level=None,
    mechanism: str = LATTICE,
    delta=None,
) -> Listing:
    """Offer statistics over one of the owner's datasets, named by its public id (``dataset.public_id``).

    ``mechanism``: ``"lattice"`` (the exact lattice path, pure eps-DP: the default) or ``"skellam"``
    (the exact Skellam path, ``(eps, delta)``-DP with the listing's ``delta``, default 1e-9 and at
    most the dataset's: only on a dataset with a delta). A Skellam listing sells a ladder of levels
    up to its ceiling, each calibrated here, before the dataset's lock (``releases.engine.mechanisms.skellam``).

    ``ceiling`` is the most the listing can ever cost its dataset. When its means divide by a
    released count (a private size; a filter, group-by or column with missing values), the listing
    publishes its size release once, with its answer (``market.catalog.sizes``): a noisy count per mean
    cell at ``size_level`` (eps_p; default a tenth of the ceiling), carved out of the ceiling, so buyers
    may buy up to ``ceiling - size_level`` (the stored ``Listing.ceiling``) and the dataset is charged
    eps_p in the transaction that stores it. A ``size_level`` that leaves nothing to sell is refused.

    The price is ``price_curve`` (see ``market.catalog.pricing``), or the
    linear curve ``price_per_epsilon * eps``. ``compensation`` (E, rate, E_min)
    is the owner's cost model: required by a compensation-derived price,
    optional otherwise (it adds budgets to the owner's dashboard); with a
    public size it is per person and counts the dataset's public size, else
    it is for everyone in the data together. Statistics the dataset's relation
    does not allow (a count whose number is public) are refused with the reason, and so is a
    vector statistic (a centroid) off the Skellam path (``spec.VECTOR_PATH``). A new listing never runs
    on the float path.
    Every input at fault is named in one 400 (the title, the ceiling, the price,
    each statistic, the budget), not one per attempt.
    The statistics' true answer is computed once, outside the dataset's lock. On a small table
    (DuckDB, at most ``LISTING_PREPARE_INLINE_ROWS`` records) it is computed here, in the request,
    and the listing is created ready to sell, or nothing is created. On a larger one, or on Spark
    (``backends.prepared_later``), the listing is created ``preparing``: everything is judged here,
    its budget reserved under the dataset's lock, and a task on the ingest queue computes its answer
    (``listing_prepare``); buyers see it once it is ready, and its owner hears ``listing.ready`` or
    ``listing.failed``. Either way the listing's noise path is created with it.
    """

    _require_owner(owner)
    problems = _Problems()
    title = problems.collect(lambda: _text(title, "title", max_length=200))
    description = problems.collect(lambda: _text(description, "description", max_length=5000, required=False))
    ceiling = problems.collect(lambda: parse_level(ceiling, field="ceiling"))
    linear = price_curve is None
    if linear:
        price_curve = _linear_curve(price_per_epsilon, problems)
    # judged and computed on the dataset as read now, without its lock (decrypting the file and
    # running the statistics take a while); created under the lock if the dataset has not moved
    seen = _listable_dataset(owner, dataset_id, locked=False)
    mechanism = _mechanism(mechanism, problems)
    delta = _delta(delta, mechanism, seen, problems)
    plan, curve, model = _listing_problems(
        seen, problems, statistics=statistics, ceiling=ceiling, price_curve=price_curve,
        compensation=compensation, linear=linear, mechanism=mechanism or LATTICE,
    )
    eps_p = None
    if plan is not None and ceiling is not None and sizes.needed(plan):
        eps_p = problems.collect(lambda: sizes.chosen_level(size_level, ceiling))
    if problems.messages:
        raise problems.error()
    layout = plan.lattice  # every new listing runs on an exact integer path, never on the retired float path
    if layout is None:  # pragma: no cover - build_plan lays a new listing out on its mechanism's grid
        raise InvalidInput(VECTOR_PATH, fields={"statistics": [VECTOR_PATH]})
    owners_ceiling = ceiling
    if eps_p is not None:
        ceiling -= eps_p  # what buyers may buy: the size release is carved out of the owner's ceiling
        if curve.price(ceiling) <= 0:
            raise InvalidInput(
                "this price gives every level buyers may buy away for 0.00 credits",
                fields={"price_per_epsilon" if linear else "price_curve": ["Charge at least 0.01 at the ceiling."]},
            )
    document = Listing.plan_document(
        labels=plan.labels, sensitivity=float(plan.sensitivity), grids=[str(g) for g in layout.grids],
        weights=layout.unit_weights, lower=layout.unit_lower, upper=layout.unit_upper, layout=plan_layout(plan),
    )
    # a calibrated mechanism's calibration (public inputs only), before the lock
    try:
        calibrated = mechanism_named(mechanism).calibration_for(ceiling=ceiling, delta=delta,
                                                                 unit_cases=layout.unit_cases,
                                                                 unit_weights=layout.unit_weights)
    except TooMuchNoise as exc:
        raise _too_low(exc) from None
    if calibrated is not None:
        document["calibration"] = calibrated
    new = _NewListing(
        title=title, description=description, plan=plan, kinds=_kinds(plan), mechanism=mechanism, delta=delta,
        document=document, ceiling=ceiling, size_level=eps_p or Decimal(0), curve=curve, model=model,
        candidate=composition.listing_pld(mechanism=mechanism, plan=document, total=owners_ceiling,
                                          size_level=eps_p or 0),
    )
    if backends.prepared_later(seen):
        return _listing_reserve(owner=owner, dataset_id=dataset_id, seen=seen, new=new, problems=problems)
    answer = _computed(seen, "statistics", lambda table, backend: compute(plan, table, backend=backend))
    size_release = sizes.draw(plan, answer, eps_p) if eps_p is not None else None
    _checkpoint("computed")
    with transaction.atomic():
        dataset = _still_as_computed(owner, dataset_id, seen)
        listing = _listing_insert(dataset, new, problems, status=Listing.Status.READY, size_release=size_release)
        listing.set_true_answer(answer)
        listing.save(update_fields=["answer"])
    return listing


@dataclasses.dataclass(frozen=True)
class _NewListing:
    """A new listing of statistics as ``listing_create`` judged it, before its answer is computed:
    everything its row holds but the answer and the size release (``size_level`` 0: none)."""

    title: str
    description: str
    plan: object
    kinds: tuple[str, ...]
    mechanism: str
    delta: Decimal | None
    document: dict
    ceiling: Decimal
    size_level: Decimal
    curve: PriceCurve
    model: CompensationModel | None
    candidate: object  # its privacy-loss distribution at its total (the budget check's)


def _listing_insert(dataset: Dataset, new: _NewListing, problems: _Problems, *, status, size_release) -> Listing:
    """``new`` inserted on ``dataset`` (locked by the caller, at the version it was judged on) with
    its noise path and its earnings account, once the dataset's budget has room for it beside its
    other listings (checked here, under the lock). ``status`` preparing: closed until its answer is stored."""
    _budget_problems(dataset, problems, ceiling=new.ceiling + new.size_level, kinds=new.kinds, candidate=new.candidate)
    if problems.messages:
        raise problems.error()
    listing = Listing.objects.create(
        dataset=dataset,
        title=new.title,
        description=new.description,
        statistics=list(new.plan.statistics),
        counted_in_budget=counts(new.kinds),
        mechanism=new.mechanism,
        delta=new.delta,
        plan=new.document,
        answer=b"",  # sealed for the row once it has its id (preparing: once it is computed)
        ceiling=new.ceiling,
        size_level=new.size_level,
        size_release=size_release,
        price_curve=new.curve.as_dict(),
        compensation=new.model.as_dict() if new.model else None,
        price_per_epsilon=(new.curve.price(new.ceiling) / new.ceiling).quantize(Decimal("0.01")),
        **({} if status == Listing.Status.READY else preparation.preparing(dataset)),
    )
    listing.kinds_record(new.kinds)
    NoisePath.objects.create(listing=listing, dim=len(new.plan.labels), mechanism=listing.mechanism)
    account_get(user=dataset.owner, kind=Account.Kind.EARNINGS, listing_id=listing.pk)
    return listing


def _listing_reserve(*, owner, dataset_id, seen: Dataset, new: _NewListing, problems: _Problems) -> Listing:
    """``new`` created ``preparing`` (its budget reserved, hidden from buyers) and its answer queued
    for a task on the ingest queue, once this transaction commits: the request never reads the data."""
    with transaction.atomic():
        dataset = _still_as_computed(owner, dataset_id, seen)
        listing = _listing_insert(dataset, new, problems, status=Listing.Status.PREPARING, size_release=None)
        transaction.on_commit(lambda pk=listing.pk: preparation.queue(listing_pk=pk))
    return listing


def _microdata_spec(spec, dataset: Dataset, problems: _Problems):
    """The microdata spec checked against the dataset (``market.catalog.microdata.build``), or None
    with the reason in ``problems``."""
    unconfirmed = []
    if isinstance(spec, dict) and "columns" in spec:
        columns, unconfirmed = without_confirmation(spec["columns"], "column")
        spec = {**spec, "columns": columns}
    for reason in unconfirmed:
        problems.add(reason, {"microdata": [reason]})
    try:
        md = microdata.build(spec, dataset.columns, records=dataset.public_size, public=dataset.size_is_public)
    except SpecError as exc:
        problems.add(str(exc), {"microdata": [str(exc)]})
        return None
    return None if unconfirmed else md


def listing_create_microdata(
    *,
    owner,
    dataset_id: str,
    title: str,
    microdata_spec,
    price_per_epsilon=None,
    description: str = "",
    price_curve: dict | None = None,
    compensation: dict | None = None,
    shuffle=None,
) -> Listing:
    """Offer the records of one of the owner's datasets as bit-report microdata
    (``market.catalog.microdata``): ``microdata_spec`` is ``{"columns": [...], "levels": [...]}``,
    the ladder's top level is the ceiling (counted in the dataset's budget like any listing's).

    Needs a dataset whose number of records is public (one row per record is sold). The records'
    true bits are read once, here, shuffled by a secret permutation (``shuffle``: a test's
    generator) and sealed into the listing; its bit-report noise path is created with it. Every input
    at fault is named in one 400."""

    _require_owner(owner)
    problems = _Problems()
    title = problems.collect(lambda: _text(title, "title", max_length=200))
    description = problems.collect(lambda: _text(description, "description", max_length=5000, required=False))
    linear = price_curve is None
    if linear:
        price_curve = _linear_curve(price_per_epsilon, problems)
    seen = _listable_dataset(owner, dataset_id, locked=False)  # read and computed without the lock, as listing_create
    md = _microdata_spec(microdata_spec, seen, problems)
    _, curve, model = _listing_problems(
        seen, problems, statistics=None, ceiling=md.ceiling if md else None, price_curve=price_curve,
        compensation=compensation, linear=linear,
    )
    if problems.messages:
        raise problems.error()
    later = backends.prepared_later(seen, backend=backends.DUCKDB)
    truth = None if later else _computed(seen, "microdata", lambda table, _: microdata.truth(md, table, shuffle=shuffle),
                                         backend=DuckDBBackend())
    bits = md.bits
    _checkpoint("computed")
    with transaction.atomic():
        dataset = _still_as_computed(owner, dataset_id, seen)
        _budget_problems(dataset, problems, ceiling=md.ceiling, kinds=(microdata.KIND,))
        if problems.messages:
            raise problems.error()
        listing = Listing.objects.create(
            dataset=dataset,
            title=title,
            description=description,
            statistics=md.as_statistics(),
            counted_in_budget=counts((microdata.KIND,)),
            mechanism=Listing.Mechanism.BITS,
            plan=Listing.plan_document(labels=md.labels, sensitivity=float(md.weight), weights=[md.weight] * bits,
                                       lower=[0] * bits, upper=[md.records] * bits),
            answer=b"",  # sealed for the row once it has its id, just below
            ceiling=md.ceiling,
            price_curve=curve.as_dict(),
            compensation=model.as_dict() if model else None,
            price_per_epsilon=(curve.price(md.ceiling) / md.ceiling).quantize(Decimal("0.01")),
            **preparation.preparing(dataset) if later else {},
        )
        if later:  # a large table: a task reads its records (listing_prepare)
            transaction.on_commit(lambda pk=listing.pk: preparation.queue(listing_pk=pk))
        else:
            listing.set_truth_bits(truth)
            listing.save(update_fields=["answer"])
        listing.kinds_record((microdata.KIND,))
        NoisePath.objects.create(listing=listing, dim=bits, mechanism=listing.mechanism)
        account_get(user=owner, kind=Account.Kind.EARNINGS, listing_id=listing.pk)
    return listing


