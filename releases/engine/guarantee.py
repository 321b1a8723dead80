"""What each engine's releases guarantee, in words that are exactly true (docs/mathematics.md,
"Floating point").

numpy's Laplace sampler turns one uniform ``k 2^-53`` into a value, so its
output takes finitely many values and has a hard edge near ``36.04 * scale``:
some outputs for an answer ``u`` are impossible for the neighbour ``u + 1``.
A float release is therefore not ε-DP; at best it is ``(ε, δ)``-DP for some δ.

``bench/float_delta.py`` computes that δ exactly for one case only: a count
(one value, weight 1) released by its path's first draw, for the answers 0,
1, 1000 and 10^6 (numpy's sampler replicated bit for bit, every output's
probability counted, then the grid rounding of ``releases.engine.postprocess.snap``).
The largest over those answers, rounded up to three digits:

========  ===========
level     δ (first draw of one count)
========  ===========
0.1       5.97e-14
1         9.69e-14
5         6.32e-12
8         7.79e-11
10        7.76e-10
========  ===========

δ grows quickly with the level (77 times from 8 to 10) and no bound between
or beyond the measured levels has been proved. For every other case (a level
not in the table, a value reached by relaxing, tightening or bridging from
levels already released, a release of several values or of a value whose
weight is not 1, the l2 sampler of vector statistics) no δ has been
established, and the statements below say so instead of stating a number.
That is why the float path is retired: no new listing uses it, and no new
noise is drawn on an old one. This module never imports Django.
"""

from __future__ import annotations

__all__ = ["MEASURED_DELTAS", "MEASURED_ANSWERS", "engine_words", "float_delta", "float_path_statement",
           "float_release_statement", "lattice_statement", "guarantee_statement"]

#: Exact deltas from ``python -m bench.float_delta``: one count (weight 1) drawn directly at each
#: level, the largest over :data:`MEASURED_ANSWERS`, rounded up to three significant digits.
MEASURED_DELTAS = {0.1: 5.97e-14, 1.0: 9.69e-14, 5.0: 6.32e-12, 8.0: 7.79e-11, 10.0: 7.76e-10}

#: The true answers the enumeration was run for (and their neighbours, one more).
MEASURED_ANSWERS = (0, 1, 1000, 10**6)

_LEVELS_TEXT = ", ".join(f"{level:g}" for level in MEASURED_DELTAS)
_ANSWERS_TEXT = "0, 1, 1000 and 10⁶"


def float_delta(level, *, method: str, single_count: bool) -> float | None:
    """The δ established for one float release, or None when none has been: only for a single
    count (one value of weight 1) drawn directly (``method == "initial"``) at a measured level."""
    if not single_count or method != "initial":
        return None
    return MEASURED_DELTAS.get(float(level))


def float_release_statement(level, *, method: str | None, single_count: bool) -> str:
    """One line for people: what a float release at ``level`` is known to guarantee. ``method``:
    how its noise was made ("initial" for a first draw; "relax", "tighten", "bridge", or an l2
    method), None if not known; ``single_count``: the listing releases one count of weight 1."""
    delta = float_delta(level, method=method or "", single_count=single_count)
    if delta is not None:
        return (f"Floating-point noise: this release (one count drawn directly at ε {float(level):g}) is "
                f"(ε, δ)-differentially private with δ at most {delta:.2e}, enumerated exactly for the answers "
                f"{_ANSWERS_TEXT} (not for other answers).")
    if not single_count:
        why = "a release of several values, or of a value with noise weight other than 1"
    elif method is None:
        why = "how its noise was made is not known"
    elif method != "initial":
        why = "its noise was reached from levels already released, a step never enumerated"
    else:
        why = f"δ was enumerated only at ε {_LEVELS_TEXT}"
    return (f"Floating-point noise: no δ has been established for this release ({why}): it is not known to be "
            f"ε-differentially private, nor (ε, δ)-private for any stated δ.")


def float_path_statement(values: int = 1) -> str:
    """One line for people: what the float path guarantees for a listing of ``values`` numbers."""
    if isinstance(values, bool) or not isinstance(values, int) or values < 1:
        raise ValueError(f"values must be a positive integer, got {values!r}")
    return (
        "Floating-point noise, retired: no δ has been established for this listing's releases in general, so none "
        "is stated. δ was enumerated exactly only for one count drawn directly at ε "
        f"{_LEVELS_TEXT} (largest {max(MEASURED_DELTAS.values()):.2e}, at ε 10); steps from released levels, "
        "several values and vectors were never measured. No new noise is drawn on this listing: buyers keep and "
        "read what they hold."
    )


def lattice_statement() -> str:
    """One line for people: what the exact lattice path guarantees."""
    return (
        "Exact integer noise: each release is exactly ε-differentially private, with no exception (δ = 0). "
        "Its noise is drawn with whole-number arithmetic from the operating system's random bits; no rounded "
        "(floating-point) number enters any step."
    )


def guarantee_statement(engine: str, values: int = 1) -> str:
    """The guarantee line for a listing's engine: ``lattice``, ``bits`` or ``laplace`` (the float path)."""
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
    exact integer path of every new listing) or ``laplace`` (floats: listings made before the
    lattice path, and old vector listings; retired, no new noise is drawn on them)."""
    if engine == "lattice":
        return ("Exact integer noise, exactly ε-differentially private: counts and bins are released as whole "
                "numbers, each sum as a whole number of steps of its rounding grid.")
    if engine == "bits":
        return ("Every record, each of its bits randomised (randomised response on an exact integer noise path): "
                "a higher level gives less-randomised bits of the same records.")
    if engine != "laplace":
        raise ValueError(f"engine must be 'lattice' or 'laplace', got {engine!r}")
    what = "on the whole vector" if vector else "on each value"
    return (f"Floating-point noise {what}, retired: this listing's noise path had no established δ, so no new "
            "noise is drawn on it and only levels it has already released can be bought; buyers keep what they "
            "hold and can still read it.")
