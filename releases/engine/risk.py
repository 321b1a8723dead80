"""Privacy at risk and the compensation cost model (``docs/mathematics.md`` section 7).

Formulas from Dandekar, Basu and Bressan, "Differential Privacy at Risk:
Bridging Randomness and Privacy Budget" (the privacy-at-risk paper):

* :func:`gamma_at_risk`  the risk ``gamma`` with which a Laplace mechanism
  calibrated at ``eps0`` also satisfies ``eps``-DP (Theorem 12, equation 3);
* :func:`eps_at_risk`    its inverse for a scalar query (equation 4);
* :func:`compensation_dp`, :func:`compensation_at_risk`, :func:`optimal_eps`
  the cost model of section 5 (equations 8, 9 and 10);
* :func:`composition_at_risk` composition with privacy at risk (Theorem 9);
* :func:`advanced_composition` the advanced composition of releases at
  different levels, and :func:`composition_at_risk_levels` Theorem 9's bound
  for releases at different levels (``docs/mathematics.md``, "Composing a
  dataset's listings");
* :func:`sampled_sensitivity` the sampled sensitivity of section 4.2
  (Definition 14) with the confidence of Theorem 13.

In the paper's wording ``gamma`` is the "privacy at risk": the probability
(over the Laplace noise) that the privacy loss of the ``eps0`` mechanism stays
within ``eps``; ``1 - gamma`` is the probability that it does not.

Functions taking privacy levels are vectorised over numpy arrays; a scalar
input gives a Python float. This module is plain numpy/scipy and never
imports Django.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
from scipy import optimize, special

__all__ = [
    "gamma_at_risk",
    "eps_at_risk",
    "compensation_dp",
    "compensation_at_risk",
    "optimal_eps",
    "composition_at_risk",
    "advanced_composition",
    "composition_at_risk_levels",
    "sampled_sensitivity",
    "SampledSensitivity",
    "mean_query",
    "ridge_query",
]


# --------------------------------------------------------------------------
# validation


def _as_array(name: str, value, what: str) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {what}, got {value!r}") from None
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be {what} (got NaN or infinity): {value!r}")
    return arr


def _positive(name: str, value) -> np.ndarray:
    arr = _as_array(name, value, "a positive finite number")
    if not (arr > 0).all():
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return arr


def _non_negative(name: str, value) -> np.ndarray:
    arr = _as_array(name, value, "a non-negative finite number")
    if not (arr >= 0).all():
        raise ValueError(f"{name} must be a non-negative finite number, got {value!r}")
    return arr


def _probability(name: str, value) -> np.ndarray:
    arr = _as_array(name, value, "a probability in [0, 1]")
    if not ((arr >= 0) & (arr <= 1)).all():
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return arr


def _positive_int(name: str, value) -> int:
    """A positive integer; integral floats such as ``2.0`` are accepted, bools are not."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not math.isfinite(value) or value != int(value) or int(value) < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _out(arr: np.ndarray):
    """A Python float for 0-d results, the array otherwise."""
    return float(arr) if arr.ndim == 0 else arr


# --------------------------------------------------------------------------
# privacy at risk of the Laplace mechanism (paper section 4.1)


@functools.lru_cache(maxsize=256)
def _log_mixture_weights(k: int) -> np.ndarray:
    """Log weights of the Gamma(k - j, 1) components, ``j = 0 .. k-1``, of ``T``.

    ``K_{k-1/2}(t) = sqrt(pi/(2t)) e^{-t} sum_j (k-1+j)! / (j! (k-1-j)!) (2t)^{-j}``
    (half-integer order, DLMF 10.49.12), so the density of ``T``,
    proportional to ``t^{k-1/2} K_{k-1/2}(t)``, is proportional to
    ``sum_j a_j t^{k-1-j} e^{-t}`` with ``a_j = (k-1+j)! / (j! (k-1-j)!) 2^{-j}``.
    Component ``j`` integrates to ``a_j Gamma(k-j) = (k-1+j)! / j! 2^{-j}``.
    """
    j = np.arange(k, dtype=np.float64)
    logw = special.gammaln(k + j) - special.gammaln(j + 1.0) - j * math.log(2.0)
    out = logw - special.logsumexp(logw)
    out.setflags(write=False)  # kept for every later call with this k (a function of k alone)
    return out


def _t_cdf(t: np.ndarray, k: int) -> np.ndarray:
    """``P(T <= t)``: a mixture of regularised lower incomplete gamma functions."""
    if k == 1:
        return -np.expm1(-t)  # T ~ Exp(1)
    weights = np.exp(_log_mixture_weights(k))
    j = np.flatnonzero(weights > 0.0)  # weights below ~1e-308 underflow and add nothing
    shape = np.shape(t)
    flat = np.asarray(t, dtype=np.float64).reshape(-1)
    out = np.zeros(flat.size)
    # all the components in one call of gammainc, summed in the order j = 0, 1, ... (a cumulative
    # sum, which adds left to right, as the loop over j did: the same float, bit for bit); in
    # slices of t so that the table of terms stays small
    chunk = max(1, _TERMS // max(1, j.size))
    a, w = (k - j).astype(np.float64)[:, None], weights[j][:, None]
    for start in range(0, flat.size, chunk):
        cols = flat[start:start + chunk]
        terms = w * special.gammainc(a, cols[None, :])
        out[start:start + chunk] = np.cumsum(terms, axis=0)[-1] if j.size else 0.0
    return out.reshape(shape)


#: The most terms :func:`_t_cdf` tabulates at once.
_TERMS = 1 << 20


def gamma_at_risk(eps, eps0, k=1):
    """Risk ``gamma`` with which a Laplace mechanism at ``eps0`` is also ``eps``-DP.

    Theorem 12 (equation 3) of the privacy-at-risk paper: for a Laplace
    mechanism calibrated at ``eps0`` for a ``k``-dimensional query (noise
    ``Lap(Delta/eps0)`` on each coordinate),

        gamma = P(T <= eps) / P(T <= eps0),

    where ``T`` has density proportional to ``t^{k-1/2} K_{k-1/2}(t)`` on
    ``t >= 0`` (``K`` the modified Bessel function of the second kind;
    Lemma 22). ``T`` is the law of ``|L_1 + ... + L_k|`` for iid Laplace(1)
    ``L_i`` (equivalently ``|G_1 - G_2|`` for iid Gamma(k, 1)).

    For ``k = 1``, ``T ~ Exp(1)`` and ``gamma = (1 - e^{-eps}) / (1 - e^{-eps0})``.
    For ``k > 1`` the half-integer Bessel function is elementary, so ``T`` is a
    finite mixture of Gamma(k - j, 1) laws, ``j = 0 .. k-1``, with weights
    proportional to ``(k-1+j)! / j! 2^{-j}``; its distribution function is
    exact (no numerical integration) and the weights are computed in log
    space, so large ``k`` (hundreds) works.

    ``eps`` (``>= 0``) and ``eps0`` (``> 0``) broadcast against each other;
    ``gamma = 1`` wherever ``eps >= eps0`` (an ``eps0``-DP mechanism is
    ``eps``-DP for every ``eps >= eps0``).
    """
    e = _non_negative("eps", eps)
    e0 = _positive("eps0", eps0)
    k = _positive_int("k", k)
    try:
        e, e0 = np.broadcast_arrays(e, e0)
    except ValueError:
        raise ValueError(f"eps with shape {e.shape} and eps0 with shape {e0.shape} do not broadcast") from None
    below = e < e0
    ratio = _t_cdf(np.minimum(e, e0), k) / _t_cdf(e0, k)
    out = np.where(below, np.clip(ratio, 0.0, 1.0), 1.0)
    return _out(out)


def eps_at_risk(gamma, eps0):
    """Privacy level ``eps`` reached with risk ``gamma`` by a scalar Laplace mechanism at ``eps0``.

    Equation 4 of the privacy-at-risk paper, the inverse of
    :func:`gamma_at_risk` for ``k = 1``:

        eps = ln(1 / (1 - gamma (1 - e^{-eps0}))).

    ``gamma`` in ``[0, 1]`` (``gamma = 0`` gives 0, ``gamma = 1`` gives ``eps0``).
    """
    g = _probability("gamma", gamma)
    e0 = _positive("eps0", eps0)
    out = -np.log1p(g * np.expm1(-e0))  # 1 - gamma (1 - e^{-eps0})
    return _out(np.minimum(out, e0 + np.zeros_like(out)))


# --------------------------------------------------------------------------
# the compensation cost model (paper section 5)


def compensation_dp(eps, E, c=1.0, E_min=0.0):
    """Compensation per person for data released under ``eps``-DP.

    Equation 8 of the privacy-at-risk paper (section 5.1):

        E_dp(eps) = E_min + E e^{-c/eps},

    with ``E >= 0`` the compensation without any privacy guarantee, ``c > 0``
    the rate and ``E_min >= 0`` the unavoidable cost. It increases from
    ``E_min`` (the limit at ``eps = 0``, returned there) to ``E_min + E`` as
    ``eps -> infinity``. Vectorised over all arguments.
    """
    e = _non_negative("eps", eps)
    big_e = _non_negative("E", E)
    c = _positive("c", c)
    e_min = _non_negative("E_min", E_min)
    with np.errstate(divide="ignore"):
        decay = np.where(e > 0, np.exp(-c / np.where(e > 0, e, 1.0)), 0.0)
    return _out(e_min + big_e * decay)


def compensation_at_risk(eps, eps0, E, c=1.0, E_min=0.0, k=1):
    """Compensation per person for an ``eps0``-DP Laplace release, counted at level ``eps``.

    Equation 9 of the privacy-at-risk paper (section 5.2):

        E_par(eps) = gamma E_dp(eps) + (1 - gamma) E_dp(eps0),
        gamma = gamma_at_risk(eps, eps0, k)        (Theorem 12),

    for ``0 < eps <= eps0``, ``E_dp`` from :func:`compensation_dp`. It equals
    ``E_dp(eps0)`` at ``eps = eps0``, tends to it as ``eps -> 0`` (where
    ``gamma -> 0``) and has a single minimum in between (Lemma 16), found by
    :func:`optimal_eps`.
    """
    e = _positive("eps", eps)
    e0 = _positive("eps0", eps0)
    if not (e <= e0).all():
        raise ValueError(f"compensation_at_risk needs 0 < eps <= eps0, got eps={eps!r}, eps0={eps0!r}")
    gamma = np.asarray(gamma_at_risk(e, e0, k))
    at_eps = np.asarray(compensation_dp(e, E, c, E_min))
    at_eps0 = np.asarray(compensation_dp(e0, E, c, E_min))
    # gamma E_dp(eps) + (1 - gamma) E_dp(eps0), written so that equal costs stay exact
    return _out(at_eps0 + gamma * (at_eps - at_eps0))


def optimal_eps(eps0, E, c=1.0, E_min=0.0, k=1) -> tuple[float, float]:
    """The level ``eps`` in ``(0, eps0]`` that minimises :func:`compensation_at_risk`, and its cost.

    Section 5.2.1 of the privacy-at-risk paper: ``eps_min`` minimises
    equation 9; for ``k = 1`` (and ``c = 1``, ``E_min = 0``) it solves
    equation 10,

        1/eps - ln(1 - (1 - e^{eps}) / eps^2) = 1/eps0.

    Computed for any ``c``, ``E_min`` and ``k`` by bracketing on a coarse
    log-spaced grid over ``(eps0 1e-6, eps0]`` and refining with a bounded
    Brent search on the bracket. ``E_min`` shifts the cost, not the argmin.
    Returns ``(eps, cost)`` as Python floats: ``(eps0, E_dp(eps0))`` when no
    smaller ``eps`` is cheaper (for example when ``E = 0``).
    """
    e0 = float(_positive("eps0", eps0))
    E = float(_non_negative("E", E))
    c = float(_positive("c", c))
    E_min = float(_non_negative("E_min", E_min))
    k = _positive_int("k", k)

    # compensation_at_risk(x, e0, E, c, E_min, k) for 0 < x <= e0, with what does not depend on x
    # computed once and no argument checks: the same floats by the same operations, about 50 calls
    # per release (``tests/engine/test_risk.py`` compares the two)
    cdf0 = _t_cdf(np.float64(e0), k)
    at_eps0 = E_min + E * np.exp(-c / e0)

    def cost(x):
        x = np.asarray(x, dtype=np.float64)
        gamma = np.where(x < e0, np.clip(_t_cdf(np.minimum(x, e0), k) / cdf0, 0.0, 1.0), 1.0)
        return _out(at_eps0 + gamma * ((E_min + E * np.exp(-c / x)) - at_eps0))

    grid = e0 * np.logspace(-6.0, 0.0, 241)
    grid[-1] = e0
    values = np.asarray(cost(grid))
    best_eps, best_cost = e0, float(values[-1])
    i = int(np.argmin(values))
    if values[i] < best_cost:
        best_eps, best_cost = float(grid[i]), float(values[i])
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if hi > lo:
        res = optimize.minimize_scalar(
            lambda x: float(cost(min(max(x, lo), e0))),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-12 * e0, "maxiter": 500},
        )
        x = float(min(max(res.x, lo), e0))
        fx = float(cost(x))
        if fx < best_cost:
            best_eps, best_cost = x, fx
    return best_eps, best_cost


# --------------------------------------------------------------------------
# composition (paper section 3.1)


def composition_at_risk(eps0, eps, gamma, k, delta):
    """Privacy level after ``k`` independent releases with privacy at risk.

    Theorem 9 of the privacy-at-risk paper: ``k`` ``eps0``-DP mechanisms that
    each satisfy ``(eps, gamma)``-privacy at risk are together
    ``(eps', delta)``-DP with

        eps' = eps0 sqrt(2 k ln(1/delta)) + k mu,
        mu   = gamma eps (e^{eps} - 1) + (1 - gamma) eps0 (e^{eps0} - 1).

    With ``gamma = 0`` this is the advanced composition theorem (Dwork and
    Roth 2014, Theorem 3.20) in the form the paper uses. Needs
    ``0 < eps <= eps0``, ``gamma`` in ``[0, 1]``, ``k`` a positive integer and
    ``0 < delta < 1``. Vectorised over ``eps0``, ``eps``, ``gamma`` and ``delta``.
    """
    e0 = _positive("eps0", eps0)
    e = _positive("eps", eps)
    g = _probability("gamma", gamma)
    k = _positive_int("k", k)
    d = _as_array("delta", delta, "a number in (0, 1)")
    if not ((d > 0) & (d < 1)).all():
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if not (e <= e0).all():
        raise ValueError(f"composition_at_risk needs 0 < eps <= eps0, got eps={eps!r}, eps0={eps0!r}")
    mu = g * e * np.expm1(e) + (1.0 - g) * e0 * np.expm1(e0)
    return _out(e0 * np.sqrt(2.0 * k * -np.log(d)) + k * mu)


def _delta(delta) -> float:
    d = _as_array("delta", delta, "a number in (0, 1)")
    if d.ndim != 0 or not 0 < float(d) < 1:
        raise ValueError(f"delta must be one number in (0, 1), got {delta!r}")
    return float(d)


def _levels(name: str, value) -> np.ndarray:
    arr = _positive(name, value)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty list of positive levels, got {value!r}")
    return arr


def advanced_composition(levels, delta) -> float:
    """Level ``eps'`` with which independent releases at ``levels`` (each pure ``eps_i``-DP) are
    together ``(eps', delta)``-DP.

    The heterogeneous advanced composition bound (Dwork, Rothblum and Vadhan 2010; Kairouz,
    Oh and Viswanath 2015, in this form):

        eps' = sqrt(2 ln(1/delta) sum_i eps_i^2) + sum_i eps_i (e^{eps_i} - 1).

    With ``k`` equal levels ``eps0`` it is ``eps0 sqrt(2 k ln(1/delta)) + k eps0 (e^{eps0} - 1)``,
    :func:`composition_at_risk` with ``gamma = 0``. ``levels``: a non-empty 1-d list of positive
    levels; ``0 < delta < 1``. A Python float.
    """
    e = _levels("levels", levels)
    d = _delta(delta)
    return float(math.sqrt(2.0 * -math.log(d) * float(np.sum(e * e))) + float(np.sum(e * np.expm1(e))))


def composition_at_risk_levels(eps0, eps, gamma, delta) -> float:
    """Theorem 9 of the privacy-at-risk paper for releases at different levels.

    Release ``i`` is ``eps0[i]``-DP and satisfies ``(eps[i], gamma[i])``-privacy at risk,
    ``0 < eps[i] <= eps0[i]``. The paper's proof, step by step with release-dependent figures:
    each privacy loss ``C_i`` lies in ``[-eps0_i, eps0_i]`` with mean at most

        mu_i = gamma_i eps_i (e^{eps_i} - 1) + (1 - gamma_i) eps0_i (e^{eps0_i} - 1),

    and Hoeffding's inequality for independent variables of ranges ``2 eps0_i`` gives
    ``P(sum C_i >= sum mu_i + t) <= exp(-t^2 / (2 sum eps0_i^2))``, so the releases are together
    ``(eps', delta)``-DP under the paper's model with

        eps' = sqrt(2 ln(1/delta) sum_i eps0_i^2) + sum_i mu_i.

    With equal figures it is :func:`composition_at_risk`; with every ``gamma_i = 0`` it is
    :func:`advanced_composition`. ``eps0``, ``eps``, ``gamma``: 1-d lists of one length.
    """
    e0 = _levels("eps0", eps0)
    e = _levels("eps", eps)
    g = _probability("gamma", gamma)
    d = _delta(delta)
    if not (e0.shape == e.shape == g.shape):
        raise ValueError(f"eps0, eps and gamma must have one length, got {e0.size}, {e.size} and {g.size}")
    if not (e <= e0).all():
        raise ValueError(f"composition_at_risk_levels needs 0 < eps <= eps0, got eps={eps!r}, eps0={eps0!r}")
    mu = g * e * np.expm1(e) + (1.0 - g) * e0 * np.expm1(e0)
    return float(math.sqrt(2.0 * -math.log(d) * float(np.sum(e0 * e0))) + float(np.sum(mu)))


# --------------------------------------------------------------------------
# sampled sensitivity (paper section 4.2)


class SampledSensitivity(float):
    """A sampled sensitivity (a float) with the sample it was read from.

    Attributes: ``gamma2`` (the specified risk), ``pairs`` (``n``, the number
    of neighbouring pairs drawn), ``rho`` (the DKW accuracy), ``samples`` (the
    sorted sensitivities ``||q(x) - q(y)||_1``), ``confidence``
    (``max(0, 1 - 2 e^{-2 rho^2 n})``, the DKW lower bound on the probability
    that the empirical distribution is within ``rho`` of the true one) and
    ``empirical_risk`` (``gamma2 * confidence``, Theorem 13's lower bound on the
    probability that a fresh neighbouring pair's sensitivity is within this
    value, so that a Laplace mechanism calibrated with it is ``eps``-DP for it).
    Arithmetic on it gives plain floats.
    """

    gamma2: float
    pairs: int
    rho: float
    samples: np.ndarray
    confidence: float
    empirical_risk: float

    def __new__(cls, value, *, gamma2, pairs, rho, samples):
        self = super().__new__(cls, value)
        self.gamma2 = float(gamma2)
        self.pairs = int(pairs)
        self.rho = float(rho)
        self.samples = samples
        self.confidence = max(0.0, 1.0 - 2.0 * math.exp(-2.0 * self.rho**2 * self.pairs))
        self.empirical_risk = self.gamma2 * self.confidence
        return self

    def __reduce__(self):
        return (
            _rebuild_sampled_sensitivity,
            (float(self), self.gamma2, self.pairs, self.rho, self.samples),
        )

    def __repr__(self):
        return (
            f"SampledSensitivity({float(self)!r}, gamma2={self.gamma2!r}, pairs={self.pairs}, "
            f"rho={self.rho!r}, confidence={self.confidence:.6g})"
        )


def _rebuild_sampled_sensitivity(value, gamma2, pairs, rho, samples):
    return SampledSensitivity(value, gamma2=gamma2, pairs=pairs, rho=rho, samples=samples)


def _empirical_quantile(sorted_samples: np.ndarray, p: float) -> float:
    """``F_n^{-1}(p)``: the smallest sample ``s`` with ``F_n(s) >= p`` (``0 < p <= 1``)."""
    n = sorted_samples.size
    i = min(max(math.ceil(p * n), 1), n)  # smallest i with i/n >= p, up to rounding
    while i > 1 and (i - 1) / n >= p:
        i -= 1
    while i < n and i / n < p:
        i += 1
    return float(sorted_samples[i - 1])


def sampled_sensitivity(query, data, pairs, gamma2, rng, *, size=None, rho=0.01):
    """Sampled sensitivity of ``query`` on ``data`` for the risk ``gamma2``.

    Section 4.2 and Definition 14 of the privacy-at-risk paper. Following
    Rubinstein and Alda (2017), each of the ``pairs`` neighbouring pairs is
    drawn from ``data`` (records along the first axis) as ``size + 1``
    distinct records: ``size - 1`` common to both datasets, then one more for
    ``x`` and one more for ``y``, so ``x`` and ``y`` have ``size`` records each
    and differ by one replaced record. Their sensitivity is
    ``S = ||query(x) - query(y)||_1`` (``query`` returns a scalar or a vector);
    the sampled sensitivity is the ``gamma2``-quantile of the empirical
    distribution ``F_n`` of the ``n = pairs`` values,

        Delta_S = F_n^{-1}(gamma2) = min{s in sample : F_n(s) >= gamma2}.

    Theorem 13: a Laplace mechanism calibrated with ``Delta_S`` is ``eps``-DP
    for a fresh neighbouring pair with probability (the empirical risk) at least
    ``gamma2 (1 - 2 e^{-2 rho^2 n})``, the second factor being the DKW
    probability that ``sup |F_n - F| <= rho``.

    ``size`` defaults to ``len(data) - 1`` and needs ``size + 1 <= len(data)``;
    ``rng`` is a :class:`numpy.random.Generator`. Returns a
    :class:`SampledSensitivity`.
    """
    if not callable(query):
        raise ValueError("query must be a callable taking a dataset")
    pairs = _positive_int("pairs", pairs)
    g2 = float(_probability("gamma2", gamma2))
    if not g2 > 0:
        raise ValueError(f"gamma2 must be in (0, 1], got {gamma2!r}")
    rho = float(_positive("rho", rho))
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    arr = np.asarray(data)
    if arr.ndim == 0 or arr.shape[0] < 2:
        raise ValueError("data must hold at least 2 records (along its first axis)")
    n_records = arr.shape[0]
    size = n_records - 1 if size is None else _positive_int("size", size)
    if size + 1 > n_records:
        raise ValueError(f"size + 1 must be at most len(data) = {n_records}, got size = {size}")

    samples = np.empty(pairs)
    for p in range(pairs):
        idx = rng.choice(n_records, size=size + 1, replace=False)
        common = idx[: size - 1]
        x = arr[np.append(common, idx[size - 1])]
        y = arr[np.append(common, idx[size])]
        try:
            qx = np.asarray(query(x), dtype=np.float64)
            qy = np.asarray(query(y), dtype=np.float64)
            diff = float(np.abs(qx - qy).sum())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"query must return a number or a vector of numbers of one shape: {exc}") from None
        if not math.isfinite(diff):
            raise ValueError("query returned a value that is not finite")
        samples[p] = diff
    samples.sort()
    value = _empirical_quantile(samples, g2)
    return SampledSensitivity(value, gamma2=g2, pairs=pairs, rho=rho, samples=samples)


# --------------------------------------------------------------------------
# queries a sampled sensitivity can be asked of (records along the first axis)


def mean_query(data) -> float:
    """The mean of a one-column dataset (an ``(n,)`` or ``(n, 1)`` array)."""
    return float(np.mean(np.asarray(data, dtype=np.float64)))


def ridge_query(lam):
    """The query "ridge regression coefficients" with penalty ``lam > 0``, for :func:`sampled_sensitivity`.

    The returned function takes an ``(n, 1 + d)`` array whose first column is the target ``y``
    and whose other ``d`` columns are the features ``X``, and returns the ``d + 1`` coefficients
    ``(b_0, b)`` minimising ``||y - b_0 - X b||^2 + lam ||b||^2`` (the intercept ``b_0`` is not
    penalised): the solution of ``(Z^T Z + lam P) beta = Z^T y`` with ``Z = [1, X]`` and ``P`` the
    identity with a zero for the intercept. That matrix is positive definite for ``n >= 1``.
    """
    lam = float(_positive("lam", lam))

    def query(data):
        arr = np.asarray(data, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise ValueError("ridge regression needs a target column and at least one feature column")
        y, z = arr[:, 0], np.column_stack([np.ones(arr.shape[0]), arr[:, 1:]])
        penalty = np.eye(z.shape[1]) * lam
        penalty[0, 0] = 0.0
        return np.linalg.solve(z.T @ z + penalty, z.T @ y)

    return query
