"""What the float path guarantees, in figures (docs/mathematics.md, "Floating point").

numpy's Laplace sampler turns one uniform ``k 2^-53`` into a value, so its
output takes finitely many values and has a hard edge near ``36 * scale``:
some outputs for an answer ``u`` are impossible for the neighbour ``u + 1``.
The float path is therefore ``(eps, delta)``-DP, not pure ``eps``-DP.

``bench/float_delta.py`` computes that delta exactly for a count's first
draw (numpy's sampler replicated bit for bit, every output's probability
counted by bisection over the 2^53 - 1 uniforms, then the grid rounding of
``releases/postprocess.snap``), for answers 0, 1, 1000 and 10^6:

========  ===========
level     largest delta
========  ===========
0.1       5.97e-14
1         9.69e-14
5         6.32e-12
========  ===========

:data:`FLOAT_PATH_DELTA` rounds the largest up. It covers one released value
drawn directly; the relax, tighten and bridge steps have the same kind of
edge but their joint law over several levels was not enumerated, and a
release of ``n`` values adds up to ``n`` such deltas. This module never
imports Django.
"""

from __future__ import annotations

__all__ = ["FLOAT_PATH_DELTA", "MEASURED_DELTAS", "MEASURED_LEVELS", "engine_words", "float_path_statement",
           "lattice_statement", "guarantee_statement"]

#: Exact deltas from ``python -m bench.float_delta`` (largest over the answers tried).
MEASURED_DELTAS = {0.1: 5.97e-14, 1.0: 9.69e-14, 5.0: 6.32e-12}

#: The levels the measurement spans.
MEASURED_LEVELS = (0.1, 5.0)

#: An upper bound on the float path's delta per released value, for levels in
#: :data:`MEASURED_LEVELS` (first draw of a count; see the module docstring).
FLOAT_PATH_DELTA = 1e-11


def float_path_statement(values: int = 1) -> str:
    """One line for people: what the float path guarantees for a release of ``values`` numbers."""
    if isinstance(values, bool) or not isinstance(values, int) or values < 1:
        raise ValueError(f"values must be a positive integer, got {values!r}")
    bound = FLOAT_PATH_DELTA * values
    lo, hi = MEASURED_LEVELS
    return (
        f"Floating-point noise: this release is (eps, delta)-DP with delta below {bound:.0e} "
        f"(measured exactly for a directly drawn count at levels {lo:g} to {hi:g}; "
        f"not measured for values reached by relaxing, tightening or bridging)."
    )


def lattice_statement() -> str:
    """One line for people: what the exact lattice path guarantees."""
    return (
        "Exact integer noise: this release is exactly eps-DP (pure, no delta). Its noise is discrete Laplace, "
        "drawn with exact integer arithmetic from the operating system's random bits; no floating-point "
        "number enters any step."
    )


def guarantee_statement(engine: str, values: int = 1) -> str:
    """The guarantee line for a listing's engine: ``lattice`` or ``laplace`` (the float path)."""
    if engine == "lattice":
        return lattice_statement()
    if engine != "laplace":
        raise ValueError(f"engine must be 'lattice' or 'laplace', got {engine!r}")
    return float_path_statement(values)


def engine_words(engine: str, vector: bool = False) -> str:
    """The noise a listing's releases carry, in plain words for its pages: ``lattice`` (the
    exact integer path of every new count, histogram, table and sum) or ``laplace`` (floats:
    listings made before the lattice path, and vector statistics, which have no lattice path)."""
    if engine == "lattice":
        return ("Exact integer noise, exactly ε-DP: counts and bins are released as whole numbers, "
                "each sum as a whole number of steps of its rounding grid.")
    if engine != "laplace":
        raise ValueError(f"engine must be 'lattice' or 'laplace', got {engine!r}")
    if vector:
        return "Floating-point noise on the whole vector, (ε, δ)-DP with a tiny δ (stated below)."
    return ("Floating-point Laplace noise, (ε, δ)-DP with a tiny δ (stated below): this listing was made "
            "before exact integer noise, and keeps the noise path its buyers already read.")
