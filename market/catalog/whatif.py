"""What-if figures for a dataset's owner: how its listings compose under other accountings, and a
sampled sensitivity of a query on its records (``docs/mathematics.md``, "Composing a dataset's
listings" and "Sampled sensitivity"; ``releases.engine.risk`` has the mathematics).

All are reads: nothing here writes to the database, and nothing here is used to price, check
or release anything. The budget the product enforces is the sum of the listings' ceilings on a
dataset without a δ (``market.catalog.budget``) and their composition by privacy-loss distributions
on a dataset with one (``market.catalog.composition``); :func:`dataset_fits` says how many more
listings of a given shape that leaves room for.
"""

from __future__ import annotations

import math
import secrets
from decimal import Decimal

import numpy as np

from market.core import visibility
from market.core.errors import InvalidInput
from market.core.levels import parse_level
from releases.engine.risk import (
    advanced_composition,
    composition_at_risk_levels,
    gamma_at_risk,
    mean_query,
    ridge_query,
    sampled_sensitivity,
)

from .budget import counted
from .spec.columns import NUMERIC
from .selectors import dataset_get
from .spec import VECTOR_KINDS

DEFAULT_DELTA = 1e-6
DEFAULT_EPS = 0.1
#: bounds of the sampled-sensitivity what-if: it answers in well under a second on any dataset
MAX_PAIRS = 500
MAX_SUBSAMPLE = 5000
MIN_SUBSAMPLE = 3
MAX_FEATURES = 10
MAX_LAMBDA = 1e9
QUERY_KINDS = ("mean", "ridge")
#: the DKW accuracy: with at most 500 pairs, 0.01 would make the confidence (and the empirical risk) 0
ACCURACY = 0.1

#: The accountings, one plain sentence each, as the page and the API state them.
DEFINITIONS = {
    "basic": "The sum of the listings' levels: independent releases about the same people add up their privacy. "
    "This is what the marketplace enforces on a dataset without a δ: the dataset's budget bounds this sum (with a δ, "
    "it enforces the listings' composition by privacy-loss distributions instead).",
    "advanced": "An accounting that grows with the square root of the number of releases (smaller than the sum for many releases at small levels): together they are (ε′, δ)-differentially private, "
    "which allows the guarantee at ε′ to fail with probability at most δ.",
    "at_risk": "The same accounting, crediting each listing with the chance (under the privacy-at-risk paper's "
    "model of the Laplace noise) that its noise is large enough to protect at the finer level chosen; a figure "
    "under that model, not a guarantee the marketplace makes.",
}
WHAT_IF = ("A what-if only: the marketplace enforces the basic sum against the budget (or, on a dataset with a δ, the "
           "composition of the listings' ceilings); these other figures change nothing and are never used to price or "
           "release anything.")
#: The most listings the fit what-if counts.
MAX_FITS = 200
MAX_FIT_VALUES = 1000


def dataset_fits(*, user, dataset_id: str, mechanism="lattice", ceiling=None, values=None) -> dict:
    """How many more listings of one shape fit one of the owner's datasets beside its listings, at
    most :data:`MAX_FITS`: a listing at ``ceiling`` on the lattice path (pure), or on the Skellam path
    (``values`` counts that one record moves by one each, at the default δ). Without a δ, the sum rule;
    with one, the composition (``market.catalog.composition``). 400 for a wrong input; nothing changes.

    ``{"fits", "mechanism", "ceiling", "values", "rule", "composed"}``."""
    from releases.engine import pld
    from releases.engine.mechanisms.skellam import DEFAULT_DELTA as LISTING_DELTA
    from releases.engine.skellam_privacy import TooMuchNoise, calibrate, case_law

    from . import composition
    from .selectors import ceilings_needed, counted_listings

    dataset = dataset_get(user=user, dataset_id=dataset_id)
    if mechanism not in ("lattice", "skellam"):
        raise InvalidInput("mechanism: lattice or skellam", fields={"mechanism": ["Choose lattice or skellam."]})
    level = parse_level(ceiling if ceiling not in (None, "") else "1", field="ceiling")
    count = 1 if mechanism == "lattice" else _int("values", values if values not in (None, "") else 1, 1, MAX_FIT_VALUES,
                                                  f"values: a whole number from 1 to {MAX_FIT_VALUES}")
    if dataset.delta_budget is None:
        if mechanism == "skellam":
            raise InvalidInput("mechanism: the dataset has no δ, so it takes pure ε-DP listings only (the lattice path)",
                               fields={"mechanism": ["The dataset has no δ."]})
        left = dataset.total_budget - ceilings_needed(dataset_pk=dataset.pk)
        return {"fits": max(0, min(MAX_FITS, int(left // level))), "mechanism": mechanism, "ceiling": level,
                "values": count, "rule": "sum", "composed": None}
    if level > dataset.total_budget:
        fits = 0
        plds = []
    else:
        plds = composition.dataset_plds(counted_listings(dataset_pk=dataset.pk))
        if mechanism == "lattice":
            candidate = pld.pure(float(level))
        else:
            case = ((1, 1, count),)
            try:
                mu = calibrate(float(level), float(min(LISTING_DELTA, dataset.delta_budget)), [case])
            except TooMuchNoise as exc:
                raise InvalidInput(f"ceiling: {exc}", fields={"ceiling": [str(exc)]}) from None
            candidate = pld.Pld(*case_law(mu, case))
        fits = composition.fits_how_many(plds, candidate, eps=dataset.total_budget, delta=dataset.delta_budget,
                                         limit=MAX_FITS)
    return {"fits": fits, "mechanism": mechanism, "ceiling": level, "values": count, "rule": "composition",
            "composed": composition.composed(plds, eps=dataset.total_budget, delta=dataset.delta_budget) if plds else None}


def _number(name: str, value, *, default: float, low: float, high: float | None, message: str) -> float:
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(message, fields={name: [message]}) from None
    if isinstance(value, bool) or not math.isfinite(number) or not number > low or (high is not None and not number < high):
        raise InvalidInput(message, fields={name: [message]})
    return number


def parse_delta(value) -> float:
    return _number("delta", value, default=DEFAULT_DELTA, low=0.0, high=1.0,
                   message="δ must be a number strictly between 0 and 1, e.g. 1e-6.")


def parse_eps(value) -> float:
    return _number("eps", value, default=DEFAULT_EPS, low=0.0, high=None,
                   message="The finer level must be a number above 0, e.g. 0.1.")


def _no_risk_reason(listing) -> str | None:
    """Why the paper's privacy-at-risk formula does not describe ``listing``'s noise (None: it does)."""
    reason = listing.release_mechanism.no_risk_reason  # lattice, bit reports and l2 vectors
    if reason is not None:
        return reason
    if listing.statistics and listing.statistics[0].get("kind") in VECTOR_KINDS:
        return "noise on the whole vector, not Laplace noise on each value"
    if len({float(w) for w in listing.weights or []}) > 1:
        return "its values carry different noise scales; the paper's formula assumes a single one"
    return None


def dataset_composition(*, user, dataset_id: str, delta=None, eps=None) -> dict:
    """How the owner's dataset's released listings compose: the enforced sum, advanced composition
    at ``delta`` and composition with privacy at risk at ``delta`` and the finer level ``eps``.

    A listing counts when it is eps-DP (``budget.counted``) and has released something; its level
    is its noise path's largest released level. A listing whose noise the paper's formula does not
    describe (``_no_risk_reason``) is credited nothing: it enters the at-risk figure as in advanced
    composition. Listings with floating-point noise (the retired float path) have no established delta:
    ``float_delta`` is then None (no figure holds for them with any stated delta), else 0."""
    delta, eps = parse_delta(delta), parse_eps(eps)
    dataset = dataset_get(user=user, dataset_id=dataset_id)
    listings = list(
        visibility.owned_listings(user).filter(dataset=dataset).filter(counted())
        .filter(noise_path__released_max__gt=0).select_related("noise_path").order_by("pk")
    )
    rows = []
    for listing in listings:
        level = Decimal(listing.noise_path.released_max)
        reason = _no_risk_reason(listing)
        finer = min(eps, float(level))
        gamma = None if reason else float(gamma_at_risk(finer, float(level), max(1, len(listing.labels))))
        rows.append({"id": listing.pk, "title": listing.title, "level": level, "values": len(listing.labels),
                     "engine": listing.engine, "finer": finer, "risk": gamma, "excluded": reason,
                     "float_noise": listing.release_mechanism.source == "floats"})
    levels = [float(row["level"]) for row in rows]
    float_listings = sum(1 for row in rows if row["float_noise"])
    figures = {
        "dataset": dataset, "delta": delta, "eps": eps, "listings": rows, "count": len(rows),
        "basic": sum((row["level"] for row in rows), Decimal(0)), "advanced": None, "at_risk": None,
        "credited": sum(1 for row in rows if row["risk"] is not None),
        "float_listings": float_listings, "float_delta": None if float_listings else 0.0, "definitions": DEFINITIONS, "what_if": WHAT_IF,
        "budget": dataset.total_budget,
        "listings_delta": float(sum((listing.delta or Decimal(0) for listing in listings), Decimal(0))),
    }
    if rows:
        figures["advanced"] = advanced_composition(levels, delta)
        figures["at_risk"] = composition_at_risk_levels(
            levels, [row["finer"] for row in rows], [row["risk"] or 0.0 for row in rows], delta)
    return figures


# --------------------------------------------------------------------------
# sampled sensitivity


def _int(name: str, value, low: int, high: int, message: str) -> int:
    if isinstance(value, bool):
        raise InvalidInput(message, fields={name: [message]})
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        raise InvalidInput(message, fields={name: [message]}) from None
    if not low <= number <= high:
        raise InvalidInput(message, fields={name: [message]})
    return number


def _check_query(dataset, *, kind, column, target, features, lam) -> tuple[list[str], object, str]:
    """(the columns read, the query, its description); InvalidInput naming every input at fault."""
    numeric = [c["name"] for c in dataset.columns if isinstance(c, dict) and c.get("type") in NUMERIC]
    problems: dict[str, list[str]] = {}

    def numeric_column(name, value):
        if value not in numeric:
            problems.setdefault(name, []).append("Choose a numeric column of the dataset.")

    if kind not in QUERY_KINDS:
        raise InvalidInput("Choose the query: the mean of a column, or a ridge regression.",
                           fields={"kind": ["Choose “mean” or “ridge”."]})
    if kind == "mean":
        numeric_column("column", column)
        if problems:
            raise InvalidInput("Check the query's inputs.", fields=problems)
        return [column], mean_query, f"the mean of “{column}”"
    numeric_column("target", target)
    features = list(features or [])
    if not features or len(features) > MAX_FEATURES or len(set(features)) != len(features):
        problems.setdefault("features", []).append(f"Choose between 1 and {MAX_FEATURES} different numeric columns.")
    for feature in features:
        if feature not in numeric:
            problems.setdefault("features", []).append(f"“{feature}” is not a numeric column of the dataset.")
        if feature == target:
            problems.setdefault("features", []).append("The target cannot also be a feature.")
    penalty = None
    try:
        penalty = _number("lam", lam, default=math.nan, low=0.0, high=MAX_LAMBDA,
                          message=f"The regularisation must be a number above 0 and below {MAX_LAMBDA:g}.")
        if math.isnan(penalty):
            raise InvalidInput("", fields={"lam": ["Give the regularisation, a number above 0."]})
    except InvalidInput as exc:
        problems.update(exc.fields)
    if problems:
        raise InvalidInput("Check the query's inputs.", fields=problems)
    return ([target, *features], ridge_query(penalty),
            f"the ridge regression coefficients of “{target}” on {', '.join(f'“{f}”' for f in features)} "
            f"(regularisation {penalty:g}, with an intercept)")


def dataset_sampled_sensitivity(*, user, dataset_id: str, kind, column=None, target=None, features=None, lam=None,
                                gamma2, pairs, subsample) -> dict:
    """The sampled sensitivity of a query on a random subsample of the owner's dataset (a what-if).

    ``subsample`` records complete in the query's columns are drawn at random (DuckDB's reservoir
    sample, seeded from ``secrets``); ``pairs`` neighbouring pairs (one record replaced) are drawn
    from them; the sampled sensitivity is the ``gamma2``-quantile of the pairs' sensitivities.
    Reads only: it writes nothing, anywhere."""
    from . import files
    from .compute import ParquetTable, sample_complete_rows

    problems: dict[str, list[str]] = {}
    values = {}
    for name, check in (
        ("gamma2", lambda: _number("gamma2", gamma2, default=math.nan, low=0.0, high=1.0 + 1e-15,
                                   message="The risk must be a number above 0 and at most 1, e.g. 0.9.")),
        ("pairs", lambda: _int("pairs", pairs, 1, MAX_PAIRS, f"Give a whole number of pairs from 1 to {MAX_PAIRS}.")),
        ("subsample", lambda: _int("subsample", subsample, MIN_SUBSAMPLE, MAX_SUBSAMPLE,
                                   f"Give a whole number of records from {MIN_SUBSAMPLE} to {MAX_SUBSAMPLE}.")),
    ):
        try:
            values[name] = check()
        except InvalidInput as exc:
            problems.update(exc.fields)
    if "gamma2" in values and math.isnan(values["gamma2"]):
        problems["gamma2"] = ["Give the risk, a number above 0 and at most 1, e.g. 0.9."]
    dataset = dataset_get(user=user, dataset_id=dataset_id)
    if dataset.status != dataset.Status.READY or not dataset.typed_file:
        raise InvalidInput("The dataset is not ready: wait until it is processed.", fields={})
    try:
        columns, query, described = _check_query(dataset, kind=kind, column=column, target=target,
                                                 features=features, lam=lam)
    except InvalidInput as exc:
        problems.update(exc.fields)
    if problems:
        raise InvalidInput("Check the inputs of the sampled sensitivity.", fields=problems)

    seed = secrets.randbits(63)  # a what-if estimate, not noise for a release
    with files.dataset_table_path(dataset) as path:
        sample, total, complete = sample_complete_rows(ParquetTable(path), columns, values["subsample"],
                                                       seed % (2**31))
    if sample.shape[0] < MIN_SUBSAMPLE:
        raise InvalidInput(f"Only {sample.shape[0]} records have a value in every chosen column: too few to draw "
                           f"neighbouring pairs from.", fields={})
    try:
        result = sampled_sensitivity(query if kind == "ridge" else (lambda x: mean_query(x[:, 0])), sample,
                                     values["pairs"], values["gamma2"],
                                     np.random.default_rng(),  # a what-if estimate: no release, no order of one
                                     rho=ACCURACY)
    except (ValueError, np.linalg.LinAlgError) as exc:
        raise InvalidInput(f"The query could not be computed on this data: {exc}", fields={}) from None
    return {
        "query": described, "kind": kind, "columns": columns, "records": total, "dropped": total - complete,
        "sampled_records": int(sample.shape[0]), "pairs": result.pairs, "gamma2": result.gamma2,
        "sampled_sensitivity": float(result), "largest_seen": float(result.samples[-1]), "accuracy": result.rho,
        "confidence": result.confidence, "empirical_risk": result.empirical_risk,
        "share_covered": max(0.0, result.gamma2 - result.rho),
        "replace_pairs_note": None if dataset.size_is_public else (
            "This dataset protects any one record, whether or not it is in the data (a neighbour has one record "
            "more or fewer); the what-if draws pairs that differ by one replaced record instead."),
    }
