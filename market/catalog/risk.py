"""Privacy at risk and compensation budgets for a listing's released levels
(Dandekar, Basu and Bressan, "Differential privacy at risk"; ``releases.engine.risk``
has the mathematics).

What gamma is. The paper models a release as a k-dimensional Laplace
mechanism with one scale, and defines the privacy at risk of a finer level
eps < eps0 as ``gamma = P(T <= eps) / P(T <= eps0)`` (Theorem 12), where T is
the norm of the noise measured in units of the sensitivity. It is an
average over the noise, under that model. It is **not** the probability that
this release is eps-DP: for one value at eps0 = 0.5 and eps = 0.2741 the
paper's gamma is 0.609, while the probability that the privacy loss stays
within plus or minus eps for a worst-case neighbour is 0.107. The exact guarantee of the
actual release is its privacy-loss profile (``market.catalog.privacy``).

We keep gamma because the paper's compensation model is built on it: for each
released level, the eps that minimises the compensation budget (equation 9)
and its gamma, and, when the owner stated a compensation model, the budgets
under plain DP and under privacy at risk, and the saving, all "under the
paper's model". A listing's values carry per-group scales, so k (the number
of values) is the model's simplification. The paper's formula is for Laplace
noise; l2 (vector) listings get no gamma at all.
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from releases.engine.risk import compensation_at_risk, compensation_dp, gamma_at_risk, optimal_eps

from .pricing import CompensationModel


@lru_cache(maxsize=4096)
def _optimum(eps0: float, rate: float, k: int) -> tuple[float, float]:
    """(eps, gamma): the budget-minimising finer level and its risk (E does not move it)."""
    eps, _ = optimal_eps(eps0, 1.0, c=rate, k=k)
    return eps, float(gamma_at_risk(eps, eps0, k))


def _model(listing) -> CompensationModel | None:
    return CompensationModel.parse(listing.compensation, stored=True) if listing.compensation else None


#: What gamma (privacy at risk) is, in one sentence and without symbols, wherever it is shown.
DEFINITION = (
    "the paper's “privacy at risk” (Dandekar, Basu and Bressan): a ratio of two probabilities about the size of "
    "the noise, computed under the paper's model, which treats all the released values as one query with a single "
    "noise scale; it is not the probability that the release is ε-private at the finer level (the privacy-loss "
    "profile states that exactly)"
)


def applies(listing) -> bool:
    """The paper's gamma is for Laplace noise: not for l2 (vector) listings, nor for microdata
    (randomised response, whose exact loss the privacy-loss profile states)."""
    from .spec import VECTOR_KINDS

    return listing.statistics[0]["kind"] not in VECTOR_KINDS and listing.release_mechanism.gamma_applies


def level_at_risk(listing, level) -> dict | None:
    """The privacy-at-risk figures of one released level of ``listing`` (None for an l2 listing)."""
    if not applies(listing):
        return None
    model = _model(listing)
    rate = float(model.rate) if model else 1.0
    eps0, k = float(level), max(1, len(listing.labels))
    eps, gamma = _optimum(eps0, rate, k)
    figures = {"epsilon0": Decimal(level), "epsilon": eps, "gamma": gamma, "dimension": k, "rate": rate,
               "definition": DEFINITION}
    if model:
        E, E_min, people = float(model.E), float(model.E_min), model.headcount
        dp = people * float(compensation_dp(eps0, E, c=rate, E_min=E_min))
        at_risk = people * float(compensation_at_risk(eps, eps0, E, c=rate, E_min=E_min, k=k))
        figures.update(people=model.people, budget_dp=dp, budget_at_risk=at_risk, saving=dp - at_risk)
    return figures


def stored_figures(figures: dict | None) -> dict | None:
    """``level_at_risk``'s figures as JSON keeps them (the level as an exact decimal string)."""
    if figures is None:
        return None
    return {**figures, "epsilon0": str(figures["epsilon0"])}


def budget_chart(listing, level) -> dict | None:
    """Budget against the finer eps for a release at ``level`` (the paper's figure 8), as a chart's series
    (market/web/svg.py draws them)."""
    model = _model(listing)
    if model is None or Decimal(level) <= 0 or not applies(listing):
        return None
    import numpy as np

    eps0, k, rate = float(level), max(1, len(listing.labels)), float(model.rate)
    E, E_min, people = float(model.E), float(model.E_min), model.headcount
    xs = np.linspace(eps0 / 100, eps0, 100)
    ys = people * np.asarray(compensation_at_risk(xs, eps0, E, c=rate, E_min=E_min, k=k), dtype=float)
    best = level_at_risk(listing, level)
    dp = best["budget_dp"]
    return {
        "x_title": "finer privacy level ε",
        "y_title": "compensation budget (credits)",
        "series": [
            {"x": xs.tolist(), "y": ys.tolist(), "name": "under privacy at risk"},
            {"x": [float(xs[0]), eps0], "y": [dp, dp], "name": f"under plain ε {eps0:g} DP", "style": "dash"},
            {"x": [best["epsilon"]], "y": [best["budget_at_risk"]], "name": f"optimum ε {best['epsilon']:.3f}",
             "style": "dots"},
        ],
    }
