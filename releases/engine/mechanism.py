"""The gradual-release noise process (``docs/mathematics.md`` sections 1-6).

Everything here is for unit sensitivity: a query answer ``u`` with
l1-sensitivity ``Delta`` is released at level ``eps`` as ``u + Delta * V_eps``.

Steps on the l1 (per-coordinate Laplace) process:

* :func:`relax`   ``V_e1 -> V_e2`` with ``e2 >= e1`` (section 2, Algorithm 1 of
  the gradual-release paper);
* :func:`tighten` ``V_e2 -> V_e1`` with ``e1 <= e2`` (section 3);
* :func:`bridge`  ``(V_a, V_b) -> V_c`` with ``a < c < b`` (section 4).

The l2 process for vectors (sections 5 and 6) is sampled from a top level
downwards as a list of jumps: :func:`l2_path`, :func:`l2_extend`, :func:`l2_at`.

All functions are vectorised over noise arrays of any shape; levels may be
scalars or arrays that broadcast to the noise's shape. Randomness always comes
from an explicit ``rng``: in the product :func:`new_rng`, the operating system's
random bits (``releases.engine.osrandom``); in tests, a seeded
:class:`numpy.random.Generator` (it has the same methods). This module never
imports Django.
"""

from __future__ import annotations

import numpy as np

from .osrandom import OSRandom, new_source

__all__ = [
    "relax",
    "tighten",
    "bridge",
    "l2_path",
    "l2_extend",
    "l2_at",
    "new_rng",
]

# Elements processed per pass. The steps are a dozen elementwise passes; on
# chunks that stay in the CPU cache they cost far less than on whole arrays.
_CHUNK = 1 << 14


def new_rng() -> OSRandom:
    """The source of the float path's noise: the operating system's cryptographically secure
    random bits (:class:`releases.engine.osrandom.OSRandom`), never a seeded generator.
    A fixed seed belongs in tests only (they pass a seeded numpy Generator instead)."""
    return new_source()


# --------------------------------------------------------------------------
# validation


def _as_noise(name: str, noise) -> np.ndarray:
    try:
        arr = np.asarray(noise, dtype=np.float64)  # read only: never written to
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (got NaN or infinity)")
    return arr


def _as_level(name: str, eps, shape: tuple[int, ...]):
    """A privacy level: a positive finite float, or an array broadcastable to ``shape``."""
    try:
        arr = np.asarray(eps, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {eps!r}") from None
    if not np.isfinite(arr).all() or not (arr > 0).all():
        raise ValueError(f"{name} must be a positive finite number, got {eps!r}")
    if arr.ndim == 0:
        return float(arr)
    try:
        target = np.broadcast_shapes(arr.shape, shape)
    except ValueError:
        target = None
    if target != shape:
        raise ValueError(
            f"{name} has shape {arr.shape}, which does not broadcast to the noise shape {shape}"
        )
    return np.broadcast_to(arr, shape).ravel()


def _check_order(ok, message: str) -> None:
    if not np.all(ok):
        raise ValueError(message)


def _slice(value, i: int, j: int):
    return value if isinstance(value, float) else value[i:j]


def _reshape(flat: np.ndarray, shape: tuple[int, ...]):
    out = flat.reshape(shape)
    return out[()] if out.ndim == 0 else out


# --------------------------------------------------------------------------
# relaxation (docs/mathematics.md section 2)


def _relax_chunk(x, e1, e2, u1, u2, out):
    """One chunk of Algorithm 1.

    ``u1`` picks one of the four cases; ``u2`` gives the magnitude of the
    exponential (cases 1 and 3) or truncated exponential (case 2) by inverting
    its distribution function, so one ``log1p`` pass serves all cases.
    """
    a = e2 - e1
    half_gap = a / (2.0 * e2)  # P(case 1); also P(case 3) / e^{-a m}
    m = np.abs(x)
    t = np.exp(-a * m)  # e^{-a m}
    c0 = (e1 / e2) * t  # case 0 (no jump): u1 < c0
    case0 = u1 < c0
    case1 = (u1 < c0 + half_gap) & ~case0  # other side of 0
    case3 = u1 >= 1.0 - half_gap * t  # beyond |x|
    case2 = ~(case0 | case1 | case3)  # between 0 and |x|
    # Inverse CDF: Exp(rate) is -log1p(-u)/rate; Exp(rate) truncated to
    # [0, m] is -log1p(-u (1 - e^{-rate m}))/rate.
    arg = np.where(case2, u2 * (t - 1.0), -u2)
    mag = np.log1p(arg, out=arg)
    mag *= np.where(case2, -1.0 / a, -1.0 / (e1 + e2))
    r = np.where(case1, -mag, mag)
    r += np.where(case3, m, 0.0)
    r = np.where(case0, m, r)
    np.copyto(out, np.where(x < 0, -r, r))


def relax(noise, eps_from, eps_to, rng: np.random.Generator):
    """Noise at the looser level ``eps_to`` given the noise at ``eps_from``.

    ``V_{eps_to}`` is Laplace(1/eps_to), correlated with the input as the path
    demands: ``corr = eps_from/eps_to`` and ``P(no change) = (eps_from/eps_to)^2``.
    """
    x = _as_noise("noise", noise)
    shape = x.shape
    e1 = _as_level("eps_from", eps_from, shape)
    e2 = _as_level("eps_to", eps_to, shape)
    _check_order(np.greater_equal(e2, e1), "relax needs eps_to >= eps_from")
    flat = x.ravel()
    out = np.empty_like(flat)
    if isinstance(e1, float) and isinstance(e2, float) and e1 == e2:
        np.copyto(out, flat)
        return _reshape(out, shape)
    u1 = np.empty(min(_CHUNK, flat.size))
    u2 = np.empty_like(u1)
    for i in range(0, flat.size, _CHUNK):
        j = min(i + _CHUNK, flat.size)
        k = j - i
        rng.random(out=u1[:k])
        rng.random(out=u2[:k])
        # Where eps_from == eps_to, case 0 has probability 1 (the identity);
        # the unused 1/0 of case 2 is harmless there.
        with np.errstate(divide="ignore", invalid="ignore"):
            _relax_chunk(flat[i:j], _slice(e1, i, j), _slice(e2, i, j), u1[:k], u2[:k], out[i:j])
    return _reshape(out, shape)


# --------------------------------------------------------------------------
# tightening (docs/mathematics.md section 3)


def tighten(noise, eps_from, eps_to, rng: np.random.Generator):
    """Noise at the stricter level ``eps_to`` given the noise at ``eps_from``.

    With probability ``(eps_to/eps_from)^2`` nothing changes; otherwise an
    independent Laplace(1/eps_to) is added. No raw data is needed.
    """
    y = _as_noise("noise", noise)
    shape = y.shape
    e2 = _as_level("eps_from", eps_from, shape)
    e1 = _as_level("eps_to", eps_to, shape)
    _check_order(np.less_equal(e1, e2), "tighten needs eps_to <= eps_from")
    flat = y.ravel()
    out = np.empty_like(flat)
    u = np.empty(min(_CHUNK, flat.size))
    for i in range(0, flat.size, _CHUNK):
        j = min(i + _CHUNK, flat.size)
        k = j - i
        a1, a2 = _slice(e1, i, j), _slice(e2, i, j)
        rng.random(out=u[:k])
        lap = rng.laplace(0.0, 1.0, k)
        lap /= a1
        keep = u[:k] < (np.asarray(a1) / a2) ** 2
        lap[keep] = 0.0
        np.add(flat[i:j], lap, out=out[i:j])
    return _reshape(out, shape)


# --------------------------------------------------------------------------
# bridge (docs/mathematics.md section 4)


def _bridge_chunk(xa, xb, ea, ec, eb, u1, u2, out):
    """Draw ``V_c`` given ``V_a = xa`` and ``V_b = xb`` (five components).

    The weights of docs/mathematics.md section 4 are all divided by ``e^{-ea d}`` so that
    they depend on ``(ec - ea) d`` only and never underflow together.
    """
    p = (ec / eb) ** 2
    q = (ea / ec) ** 2
    gap = ec - ea
    k = (1.0 - p) * (1.0 - q) * ea * ec / 4.0
    diff = xb - xa
    d = np.abs(diff)
    direction = np.where(diff < 0, -1.0, 1.0)
    g = np.exp(-gap * d)  # e^{-(ec-ea) d}
    one_minus_g = -np.expm1(-gap * d)
    w_at_b = p * (1.0 - q) * ea / 2.0 + 0.0 * d
    w_at_a = (1.0 - p) * q * ec / 2.0 * g
    w_beyond_b = k / (ea + ec) + 0.0 * d
    w_beyond_a = k / (ea + ec) * g
    w_between = k * one_minus_g / gap
    c1 = w_at_b
    c2 = c1 + w_at_a
    c3 = c2 + w_beyond_b
    c4 = c3 + w_beyond_a
    total = c4 + w_between
    pick = u1 * total
    at_b = pick < c1
    at_a = (pick < c2) & ~at_b
    beyond_b = (pick >= c2) & (pick < c3)
    beyond_a = (pick >= c3) & (pick < c4)
    between = pick >= c4
    # One inverse-CDF pass: Exp(ea+ec) for the outer pieces, and for the piece
    # between, T = d - t ~ Exp(ec-ea) truncated to [0, d].
    arg = np.where(between, -u2 * one_minus_g, -u2)
    mag = np.log1p(arg, out=arg)
    mag *= np.where(between, -1.0 / gap, -1.0 / (ea + ec))
    step = direction * mag
    v = np.where(beyond_a, xa - step, xb + np.where(between, -step, step))
    v = np.where(at_b, xb, v)
    v = np.where(at_a | (d == 0), xa, v)
    np.copyto(out, v)


def bridge(noise_lo, eps_lo, noise_hi, eps_hi, eps_mid, rng: np.random.Generator):
    """Noise at ``eps_mid`` strictly between two known levels of the same path.

    Samples ``V_mid`` from its exact law given both neighbours (the path is
    Markov), so levels released in any order keep the joint law of the path.
    """
    xa = _as_noise("noise_lo", noise_lo)
    xb = _as_noise("noise_hi", noise_hi)
    if xa.shape != xb.shape:
        raise ValueError(
            f"noise_lo and noise_hi must have the same shape, got {xa.shape} and {xb.shape}"
        )
    shape = xa.shape
    ea = _as_level("eps_lo", eps_lo, shape)
    eb = _as_level("eps_hi", eps_hi, shape)
    ec = _as_level("eps_mid", eps_mid, shape)
    _check_order(
        np.less(ea, ec) & np.less(ec, eb),
        "bridge needs eps_lo < eps_mid < eps_hi",
    )
    fa, fb = xa.ravel(), xb.ravel()
    out = np.empty_like(fa)
    u1 = np.empty(min(_CHUNK, fa.size))
    u2 = np.empty_like(u1)
    for i in range(0, fa.size, _CHUNK):
        j = min(i + _CHUNK, fa.size)
        k = j - i
        rng.random(out=u1[:k])
        rng.random(out=u2[:k])
        _bridge_chunk(
            fa[i:j], fb[i:j],
            _slice(ea, i, j), _slice(ec, i, j), _slice(eb, i, j),
            u1[:k], u2[:k], out[i:j],
        )
    return _reshape(out, shape)


# --------------------------------------------------------------------------
# the l2 process (docs/mathematics.md sections 5 and 6)


def _check_dim(dim) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    return int(dim)


def _scalar_level(name: str, eps) -> float:
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {eps!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {eps!r}")
    return value


def _l2_jumps(start, eps_hi: float, eps_lo: float, rng: np.random.Generator):
    """Jumps of the l2 path walking down from ``eps_hi`` (value ``start``) to ``eps_lo``.

    Jumps are a Poisson process in ``log eps`` with rate ``dim + 1``; a jump at
    level ``e`` adds ``sqrt(W) Z`` with ``W ~ Exp(mean 2/e^2)``, ``Z ~ N(0, I)``.
    Returns the jump levels (descending, in ``[eps_lo, eps_hi)``) and the value
    of the path just below each jump.
    """
    dim = start.shape[0]
    span = np.log(eps_hi / eps_lo)
    count = rng.poisson((dim + 1) * span)
    # 1 - U lies in (0, 1], so the jumps lie in [eps_lo, eps_hi).
    depth = np.sort(span * (1.0 - rng.random(count)))
    levels = eps_hi * np.exp(-depth)
    scale = np.sqrt(2.0 * rng.standard_exponential(count)) / levels
    steps = rng.standard_normal((count, dim)) * scale[:, None]
    values = start + np.cumsum(steps, axis=0)
    return levels, values


def l2_path(dim, eps_top, eps_bottom, rng: np.random.Generator):
    """Sample the l2 noise path of dimension ``dim`` on ``[eps_bottom, eps_top]``.

    At every level the density is proportional to ``exp(-eps ||v||_2)``.
    Returns ``(levels, values)``: ``levels`` descending from ``eps_top`` to
    ``eps_bottom``, ``values`` of shape ``(len(levels), dim)``; the noise at
    ``eps`` is ``values[i]`` for the largest ``i`` with ``levels[i] >= eps``
    (see :func:`l2_at`). Inner levels are the jumps; the last entry marks how
    far down the path is known.
    """
    dim = _check_dim(dim)
    top = _scalar_level("eps_top", eps_top)
    bottom = _scalar_level("eps_bottom", eps_bottom)
    if bottom > top:
        raise ValueError(f"l2_path needs eps_bottom <= eps_top, got {bottom} > {top}")
    radius = rng.gamma(dim, 1.0 / top)
    direction = rng.standard_normal(dim)
    while not np.any(direction):  # probability zero; never divide by 0
        direction = rng.standard_normal(dim)
    start = radius * direction / np.linalg.norm(direction)
    levels, values = np.array([top]), start[None, :]
    if bottom < top:
        jl, jv = _l2_jumps(start, top, bottom, rng)
        last = jv[-1] if len(jv) else start
        levels = np.concatenate([levels, jl, [bottom]])
        values = np.concatenate([values, jv, last[None, :]])
    return levels, values


def _check_l2(levels, values):
    lv = np.array(levels, dtype=np.float64, copy=True)
    vv = np.array(values, dtype=np.float64, copy=True)
    if lv.ndim != 1 or lv.size == 0:
        raise ValueError("levels must be a non-empty 1-d array")
    if vv.ndim != 2 or vv.shape[0] != lv.size or vv.shape[1] < 1:
        raise ValueError(
            f"values must have shape (len(levels), dim) = ({lv.size}, dim), got {vv.shape}"
        )
    if not np.isfinite(lv).all() or not (lv > 0).all():
        raise ValueError("levels must be positive and finite")
    if np.any(np.diff(lv) > 0):
        raise ValueError("levels must be in descending order")
    if not np.isfinite(vv).all():
        raise ValueError("values must be finite (got NaN or infinity)")
    return lv, vv


def l2_extend(levels, values, eps_bottom, rng: np.random.Generator):
    """Extend an l2 path further down to ``eps_bottom``.

    The known part is returned unchanged as a prefix. The jump process is
    memoryless, so sampling continues from the lowest level already known (the
    last entry), not from the last jump. A bottom at or above the known one
    returns the path as it is.
    """
    lv, vv = _check_l2(levels, values)
    bottom = _scalar_level("eps_bottom", eps_bottom)
    if bottom >= lv[-1]:
        return lv, vv
    jl, jv = _l2_jumps(vv[-1], lv[-1], bottom, rng)
    last = jv[-1] if len(jv) else vv[-1]
    return (
        np.concatenate([lv, jl, [bottom]]),
        np.concatenate([vv, jv, last[None, :]]),
    )


def l2_at(levels, values, eps):
    """The noise of an l2 path at ``eps`` (a scalar, or an array of levels).

    Returns shape ``(dim,)`` for a scalar ``eps``, ``eps.shape + (dim,)`` otherwise.
    """
    lv, vv = _check_l2(levels, values)
    try:
        e = np.asarray(eps, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"eps must be a positive number, got {eps!r}") from None
    if not np.isfinite(e).all() or not (e > 0).all():
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    if np.any(e < lv[-1]) or np.any(e > lv[0]):
        raise ValueError(
            f"eps must lie in the known range [{lv[-1]}, {lv[0]}] of the path"
        )
    # levels are descending: the number of levels >= eps, minus one.
    idx = np.searchsorted(-lv, -e, side="right") - 1
    return vv[idx]
