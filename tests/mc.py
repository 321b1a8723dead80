"""Monte Carlo sizes from one setting (pure Python: no Django, no numpy).

``GRADUAL_MC`` chooses the size of every statistical test (Monte Carlo draws, G-tests,
coverage checks, privacy audits):

* ``quick`` (the default): the smaller size, for the default test tier on a laptop;
* ``full``: the size CI runs, at which every statistical test must still catch its
  deliberate mutation.

Seeds stay fixed at either size, so a run is reproducible whichever size it uses.

    from tests import mc
    N = mc.size(full=400_000, quick=40_000)
"""

import os

MODES = ("quick", "full")


def mode() -> str:
    """The size chosen by ``GRADUAL_MC`` (``quick`` unless set); anything else is an error."""
    value = os.environ.get("GRADUAL_MC", "quick").strip().lower() or "quick"
    if value not in MODES:
        raise ValueError(f"GRADUAL_MC must be one of {', '.join(MODES)}, not {value!r}.")
    return value


def full() -> bool:
    """True when the CI size runs."""
    return mode() == "full"


def size(*, full: int, quick: int | None = None):
    """``full`` under ``GRADUAL_MC=full``; otherwise ``quick`` (a tenth of ``full`` if not given)."""
    if quick is None:
        quick = max(1, full // 10)
    if quick > full:
        raise ValueError("The quick size must not exceed the full size.")
    return full if mode() == "full" else quick


def widen(tolerance, *, full: int, n: int):
    """A tolerance tuned at ``full`` draws, widened for ``n`` draws so that it stays the same number
    of standard deviations (a mean's sd falls as 1/sqrt(n)): the false-alarm rate is the same at either
    size; the power against a mutation is lower at the quick size, which is why CI runs the full one."""
    return tolerance * (full / n) ** 0.5
