"""The float path's delta, measured exactly for a count's first draw.

Run: ``.venv/bin/python -m bench.float_delta`` (about a minute).

What is measured. A count (sensitivity 1, weight 1) released at level
``eps`` by the first draw of its path: ``releases/path.NoisePath.draw``
calls ``rng.laplace(0.0, 1/eps)``, the release adds it to the answer ``u``
(``u + 1.0 * noise``) and ``releases/postprocess.snap`` rounds the sum to its
power-of-two grid. numpy draws the Laplace value from one uniform
``U = k 2^-53`` (``k`` in ``1 .. 2^53 - 1``; ``U = 0`` is redrawn) as

    noise = 0 - scale * log(2 - U - U)    if U >= 1/2,
    noise = 0 + scale * log(U + U)        otherwise

(:func:`check_replica` confirms this, bit for bit, against numpy). So the
released value is a function of ``k`` alone, and it is non-decreasing in
``k`` (every operation is monotone, given a monotone ``log``; the script
checks this around every jump it finds). Splitting ``1 .. 2^53 - 1`` into
runs that land on one grid point therefore takes a few thousand bisections,
not 2^53 evaluations, and gives the exact probability of every output, for
the answer ``u`` and for its neighbour ``u + 1``. The hockey-stick sum

    delta = sum_y max(0, P_u(y) - e^eps P_{u+1}(y))

(and the same with ``u`` and ``u + 1`` swapped; the larger is reported) is
then the exact delta of this release: nothing about the tails is estimated,
and the bulk's rounding is counted, not bounded. Clamping to the declared
range is post-processing and can only lower it.

What it does not cover: steps after the first draw (relax, tighten, bridge:
docs/mathematics.md explains why they have the same kind of edge, but their
joint law over several levels is not enumerated here), statistics whose
weight is not 1 (one more rounding in ``w * noise``), and answers so large
that ``u + noise`` rounds coarser than the grid (above about 2^40).
"""

from __future__ import annotations

import itertools
import math
import sys

import mpmath
import numpy as np

from releases.engine.postprocess import grid_step

LEVELS = (0.1, 1.0, 5.0, 8.0, 10.0)
ANSWERS = (0.0, 1.0, 1000.0, 1_000_000.0)


def output_index(k: int, u: float, scale: float, step: float, ubits: int = 53) -> int:
    """The grid index ``round((u + noise)/step)`` of the release made from uniform ``k 2^-ubits``."""
    U = k * 2.0**-ubits
    if U >= 0.5:
        noise = 0.0 - scale * math.log(2.0 - U - U)
    else:
        noise = 0.0 + scale * math.log(U + U)
    y = u + 1.0 * noise
    return round(y / step)  # Python's round is half-to-even, like numpy's


def cell_counts(u: float, scale: float, step: float, ubits: int = 53, check: int = 8) -> dict[int, int]:
    """How many ``k`` in ``1 .. 2^ubits - 1`` give each grid index (exact, by bisection).

    Relies on the output being non-decreasing in ``k``; ``check`` neighbours
    on each side of every jump are evaluated to confirm it locally.
    """
    lo, hi = 1, 2**ubits - 1
    counts: dict[int, int] = {}
    jumps = []
    stack = [(lo, hi, output_index(lo, u, scale, step, ubits), output_index(hi, u, scale, step, ubits))]
    while stack:
        a, b, ia, ib = stack.pop()
        if ia == ib:
            counts[ia] = counts.get(ia, 0) + (b - a + 1)
            continue
        if ia > ib:
            raise AssertionError(f"output decreases between k={a} and k={b}")
        if b == a + 1:
            counts[ia] = counts.get(ia, 0) + 1
            counts[ib] = counts.get(ib, 0) + 1
            jumps.append(a)
            continue
        m = (a + b) // 2
        im = output_index(m, u, scale, step, ubits)
        stack.append((a, m, ia, im))
        stack.append((m + 1, b, output_index(m + 1, u, scale, step, ubits), ib))
    for j in jumps:
        ks = range(max(lo, j - check), min(hi, j + check) + 1)
        seq = [output_index(k, u, scale, step, ubits) for k in ks]
        if any(x > y for x, y in itertools.pairwise(seq)):
            raise AssertionError(f"output is not monotone near k={j}")
    return counts


def brute_counts(u: float, scale: float, step: float, ubits: int) -> dict[int, int]:
    """The same as :func:`cell_counts` by evaluating every ``k`` (small ``ubits`` only)."""
    counts: dict[int, int] = {}
    for k in range(1, 2**ubits):
        i = output_index(k, u, scale, step, ubits)
        counts[i] = counts.get(i, 0) + 1
    return counts


def hockey_stick(p: dict[int, int], q: dict[int, int], eps: float, total: int) -> float:
    """``sum_y max(0, P(y) - e^eps Q(y))`` for count tables over ``total`` equally likely uniforms."""
    with mpmath.workdps(60):
        e = mpmath.exp(mpmath.mpf(eps))
        acc = mpmath.mpf(0)
        for y, n in p.items():
            d = n - e * q.get(y, 0)
            if d > 0:
                acc += d
        return float(acc / total)


def float_delta(eps: float, u: float = 0.0, ubits: int = 53, counts=cell_counts) -> float:
    """The exact delta of a count's first-draw release at level ``eps``, answers ``u`` and ``u + 1``."""
    scale = 1.0 / eps
    step = grid_step(scale)
    total = 2**ubits - 1
    p = counts(u, scale, step, ubits)
    q = counts(u + 1.0, scale, step, ubits)
    return max(hockey_stick(p, q, eps, total), hockey_stick(q, p, eps, total))


def check_replica(samples: int = 200_000) -> None:
    """:func:`output_index`'s noise formula is numpy's Laplace sampler, bit for bit."""
    seq = np.random.SeedSequence(20240611)  # a fixed seed: this is a check, not noise
    g1 = np.random.Generator(np.random.PCG64DXSM(seq))
    g2 = np.random.Generator(np.random.PCG64DXSM(seq))
    lap = g1.laplace(0.0, 1.0, samples)
    uni = g2.random(samples)
    for x, U in zip(lap, uni):
        mine = 0.0 - math.log(2.0 - U - U) if U >= 0.5 else 0.0 + math.log(U + U)
        if mine != x:
            raise AssertionError(f"numpy's Laplace sampler differs from the replica at U={U!r}")


def rounded_up(x: float, digits: int = 3) -> str:
    """``x > 0`` as text with ``digits`` significant digits, rounded up (never below ``x``)."""
    from decimal import ROUND_CEILING, Decimal

    d = Decimal(repr(x))
    q = d.quantize(Decimal(1).scaleb(d.adjusted() - digits + 1), rounding=ROUND_CEILING)
    return f"{q:.{digits - 1}e}"


def main() -> int:
    check_replica()
    print("numpy's Laplace sampler matches the replica bit for bit")
    worst = {}
    for eps in LEVELS:
        for u in ANSWERS:
            d = float_delta(eps, u)
            worst[eps] = max(worst.get(eps, 0.0), d)
            print(f"eps={eps:<4} u={u:<10g} grid={grid_step(1.0 / eps):<10g} delta={d:.3e}")
    print("largest delta per level, rounded up to 3 significant digits:",
          {k: rounded_up(v) for k, v in worst.items()})
    print(f"overall: {rounded_up(max(worst.values()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
