"""Privacy at risk and compensation budgets for a listing's released levels
(Dandekar, Basu and Bressan; ``releases.risk`` has the mathematics).

A Laplace release calibrated at level eps0 also satisfies the finer eps-DP
with a risk gamma (Theorem 12). For each released level we report the eps
that minimises the compensation budget (equation 9) and its risk, and, when
the owner stated a compensation model, the budgets under plain DP and under
privacy at risk and the saving.

The listing's values form a k-dimensional query, k = the number of released
values. The paper's Theorem 12 is for a k-dimensional Laplace mechanism; our
values carry per-group scales, so k is an approximation; in our computations
a larger k lowers gamma towards eps/eps0 (the paper states the opposite).
"""

from __future__ import annotations

from decimal import Decimal
from functools import lru_cache

from releases.risk import compensation_at_risk, compensation_dp, gamma_at_risk, optimal_eps

from .pricing import CompensationModel


@lru_cache(maxsize=4096)
def _optimum(eps0: float, rate: float, k: int) -> tuple[float, float]:
    """(eps, gamma): the budget-minimising finer level and its risk (E does not move it)."""
    eps, _ = optimal_eps(eps0, 1.0, c=rate, k=k)
    return eps, float(gamma_at_risk(eps, eps0, k))


def _model(listing) -> CompensationModel | None:
    return CompensationModel.parse(listing.compensation, stored=True) if listing.compensation else None


def level_at_risk(listing, level) -> dict:
    """The privacy-at-risk figures of one released level of ``listing``."""
    model = _model(listing)
    rate = float(model.rate) if model else 1.0
    eps0, k = float(level), max(1, len(listing.labels))
    eps, gamma = _optimum(eps0, rate, k)
    figures = {"epsilon0": Decimal(level), "epsilon": eps, "risk": gamma, "dimension": k, "rate": rate}
    if model:
        E, E_min, people = float(model.E), float(model.E_min), model.headcount
        dp = people * float(compensation_dp(eps0, E, c=rate, E_min=E_min))
        at_risk = people * float(compensation_at_risk(eps, eps0, E, c=rate, E_min=E_min, k=k))
        figures.update(people=model.people, budget_dp=dp, budget_at_risk=at_risk, saving=dp - at_risk)
    return figures


def budget_chart(listing, level) -> dict | None:
    """Budget against the finer eps for a release at ``level`` (the paper's figure 8), as a plotly spec."""
    model = _model(listing)
    if model is None or Decimal(level) <= 0:
        return None
    import numpy as np

    eps0, k, rate = float(level), max(1, len(listing.labels)), float(model.rate)
    E, E_min, people = float(model.E), float(model.E_min), model.headcount
    xs = np.linspace(eps0 / 100, eps0, 100)
    ys = people * np.asarray(compensation_at_risk(xs, eps0, E, c=rate, E_min=E_min, k=k), dtype=float)
    best = level_at_risk(listing, level)
    dp = best["budget_dp"]
    return {
        "data": [
            {"x": xs.tolist(), "y": ys.tolist(), "type": "scatter", "mode": "lines", "name": "under privacy at risk"},
            {"x": [xs[0], eps0], "y": [dp, dp], "type": "scatter", "mode": "lines", "name": f"under plain ε = {eps0:g} DP",
             "line": {"dash": "dash"}},
            {"x": [best["epsilon"]], "y": [best["budget_at_risk"]], "type": "scatter", "mode": "markers",
             "name": f"optimum ε = {best['epsilon']:.3f}", "marker": {"size": 11}},
        ],
        "layout": {"xaxis": {"title": {"text": "finer privacy level ε"}},
                   "yaxis": {"title": {"text": "compensation budget (credits)"}, "rangemode": "tozero"}},
    }
