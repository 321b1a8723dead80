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

from decimal import ROUND_CEILING, Decimal

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
    # rounded up to one digit: 53 values make 5.3e-10, stated as below 6e-10 (never below 5e-10)
    exact = Decimal(repr(FLOAT_PATH_DELTA)) * values
    bound = float(exact.quantize(Decimal(1).scaleb(exact.adjusted()), rounding=ROUND_CEILING))
    lo, hi = MEASURED_LEVELS
    return (
        f"Floating-point noise: each release is (ε, δ)-differentially private with δ below {bound:.0e}: "
        f"the probability of any outcome may exceed what the guarantee at ε allows by at most δ "
        f"(measured exactly for one count drawn directly, at levels {lo:g} to {hi:g}; not measured for levels "
        f"reached by going up from, down from or between levels already released)."
    )


def lattice_statement() -> str:
    """One line for people: what the exact lattice path guarantees."""
    return (
        "Exact integer noise: each release is exactly ε-differentially private, with no exception (δ = 0). "
        "Its noise is drawn with whole-number arithmetic from the operating system's random bits; no rounded "
        "(floating-point) number enters any step."
    )


def guarantee_statement(engine: str, values: int = 1) -> str:
    """The guarantee line for a listing's engine: ``lattice`` or ``laplace`` (the float path)."""
    if engine == "lattice":
        return lattice_statement()
    if engine == "bits":
        return bits_statement()
    if engine != "laplace":
        raise ValueError(f"engine must be 'lattice', 'bits' or 'laplace', got {engine!r}")
    return float_path_statement(values)


def bits_statement() -> str:
    """One line for people: what bit-report microdata guarantees."""
    return (
        "Randomised records: each record's report is exactly ε-differentially private for that record (δ = 0), "
        "even for someone who sees every other record's report. Each bit is randomised on its own integer "
        "noise path, drawn with whole-number arithmetic from the operating system's random bits."
    )


def engine_words(engine: str, vector: bool = False) -> str:
    """The noise a listing's releases carry, in plain words for its pages: ``lattice`` (the
    exact integer path of every new count, histogram, table and sum) or ``laplace`` (floats:
    listings made before the lattice path, and vector statistics, which have no lattice path)."""
    if engine == "lattice":
        return ("Exact integer noise, exactly ε-differentially private: counts and bins are released as whole "
                "numbers, each sum as a whole number of steps of its rounding grid.")
    if engine == "bits":
        return ("Every record, each of its bits randomised (randomised response on an exact integer noise path): "
                "a higher level gives less-randomised bits of the same records.")
    if engine != "laplace":
        raise ValueError(f"engine must be 'lattice' or 'laplace', got {engine!r}")
    if vector:
        return "Floating-point noise on the whole vector: ε-differentially private up to a tiny δ (stated below)."
    return ("Floating-point noise: ε-differentially private up to a tiny δ (stated below). This listing was made "
            "before exact integer noise, and keeps the noise its buyers have already read.")
