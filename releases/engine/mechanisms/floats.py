"""The retired float paths: Laplace noise per value (l1) and on the whole vector (l2).

No δ was established for floating-point noise (docs/mathematics.md, "Floating point"), so no
new noise is drawn on these paths: a listing made on one sells only the levels it has already
released (l1), or a level between its lowest and its largest released (l2: read off the
stored jump list, it reveals no more than the largest).
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np

from .. import guarantee as _guarantee
from ..mechanism import l2_at, l2_extend, l2_path
from ..path import NoisePath
from ..postprocess import grid_step, snap
from .base import FLOATS, Base, Refusal, level_text

#: Why a float listing sells no new level.
FLOAT_RETIRED = ("this listing's floating-point noise is retired: its noise path had no established δ, so no new "
                 "noise is ever drawn on it")

#: Why a float release's profile is not drawn.
FLOAT_NOT_COMPUTED = ("not computed: floating-point noise is not exactly Laplace and its δ was never established "
                      "for this release, so no δ(ε′) can be stated (the profile of exact Laplace noise would "
                      "understate it: it is 0 at ε, the float release's is not)")


def l2_error_radius(dim: int, scale: float, confidence: float = 0.95) -> float:
    """A radius holding the released point's error with probability ``confidence``:
    the l2 noise's norm is Gamma(dim, scale); rounding each coordinate to the grid
    adds at most half a step per coordinate."""
    from scipy.stats import gamma

    return float(gamma.ppf(confidence, dim, scale=scale)) + math.sqrt(dim) * grid_step(scale) / 2.0


class FloatLaplace(Base):
    """Laplace noise on each value, in floating point (``releases.engine.path``): retired."""

    name = "laplace"
    engine = "laplace"
    label = "Float path (retired: floating-point noise with no established delta; old listings only)"
    source = "floats"
    answer = FLOATS
    noise = FLOATS

    def words(self) -> str:
        return _guarantee.engine_words(self.engine, vector=self.store == "jumps")

    def guarantee(self, values: int) -> str:
        return _guarantee.float_path_statement(values)

    def opens(self, level, released, released_max) -> bool:
        """Whether ``level`` can be given without drawing new noise or going above what was released."""
        return Decimal(level) in set(released)

    def shown(self, released) -> str:
        if not released:
            return "it has released nothing, so none can be bought"
        levels = sorted(released)
        more = f" and {len(levels) - 8} more" if len(levels) > 8 else ""
        return ("only a level it has already released can be bought: " + ", ".join(level_text(x) for x in levels[:8])
                + more)

    def refusal(self, level, *, released, ladder) -> Refusal | None:
        levels, top = released()
        if self.opens(level, levels, top):
            return None
        message = f"{FLOAT_RETIRED}; {self.shown(levels)} (buyers keep what they hold and can still read it)"
        return Refusal(message, message[0].upper() + message[1:] + ".",
                       f"{FLOAT_RETIRED}, and level {level_text(level)} was never released on it")

    def single_count(self, plan) -> bool:
        """The one case whose float δ was enumerated: a plan of one count of weight 1."""
        return len(plan.labels) == 1 and plan.statistics[0]["kind"] == "count" and float(plan.weights[0]) == 1.0

    def profile(self, level, at, *, plan, records, cached, point_method) -> tuple:
        # its δ was never established, so no δ(ε′) is drawn, not even 0 at ε
        line = _guarantee.float_release_statement(level, method=point_method(), single_count=self.single_count(plan()))
        return None, FLOAT_NOT_COMPUTED, line

    def step(self, level, *, dim, weights, rng, below=None, above=None):
        sides = [side for side in (below, above) if side is not None]
        path = NoisePath(dim, [float(at) for at, _ in sides], [noise for _, noise in sides] if sides else None)
        draw = path.draw(float(level), rng)
        return draw.noise, draw.method

    def values(self, answer, noise, *, level, weights, lower, upper, grids) -> list:
        scales = self.scales(level, weights, grids)
        noisy = answer + np.asarray(weights, dtype=np.float64) * noise
        return [float(v) for v in np.atleast_1d(snap(noisy, scales, lower, upper))]


class FloatL2(FloatLaplace):
    """Noise on the whole vector (l2), sampled from the ceiling down as a jump list
    (``releases.engine.mechanism.l2_path``): retired."""

    name = "laplace_l2"
    label = "Float vector path (retired: floating-point noise on the whole vector with no established delta; old listings only)"
    norm = "l2"
    store = "jumps"
    no_risk_reason = "noise on the whole vector, not Laplace noise on each value"
    gamma_applies = False

    def opens(self, level, released, released_max) -> bool:
        level = Decimal(level)
        return level in set(released) or (bool(released) and min(released) <= level <= Decimal(released_max))

    def shown(self, released) -> str:
        if not released:
            return "it has released nothing, so none can be bought"
        return f"a level from {level_text(min(released))} to {level_text(max(released))} can still be bought"

    def single_count(self, plan) -> bool:
        return False

    def accuracy(self, level, *, labels, scales, plan, records) -> list[dict]:
        return [{"label": label, "noise_scale": float(b), "error_bound": l2_error_radius(len(scales), float(b))}
                for label, b in zip(labels, scales)]

    def jump(self, known, level, *, dim: int, ceiling, rng) -> tuple[tuple | None, np.ndarray, str]:
        """The noise at ``level`` off the jump list ``known`` (``(levels, values)`` or None): sampled from
        the ceiling down on the first release, extended below its bottom (the jump process is
        memoryless), else read off. ``(new list or None when unchanged, noise, method)``."""
        eps, top = float(level), float(ceiling)
        if known is None:
            levels, values = l2_path(dim, top, eps, rng)
            method = "l2 initial"
        else:
            levels, values = known
            method = "l2 lookup"
            if eps < levels[-1]:
                levels, values = l2_extend(levels, values, eps, rng)
                method = "l2 extend"
        changed = None if method == "l2 lookup" else (levels, values)
        return changed, l2_at(levels, values, eps), method

    def step(self, level, *, dim, weights, rng, below=None, above=None):
        raise ValueError("an l2 path is read off its jump list (jump), never stepped from its neighbours")
