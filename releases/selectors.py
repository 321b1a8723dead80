"""Reads about noise paths that the marketplace needs before it sells a level.

Which levels a path can still give is its mechanism's rule (``releases.engine.mechanisms``,
``Mechanism.refusal``). The float path is retired (docs/mathematics.md, "Floating point"): no
new noise is ever drawn on it, since no δ was established for its steps. A listing made on it
keeps the levels it has released; a level it can still give without a draw is one already
released on an l1 path, or, on an l2 path (sampled from the ceiling down as a jump list), one
between its lowest and its largest level released (read off the stored list; it reveals no
more than the largest).
"""

from __future__ import annotations

from market.core import visibility

from .engine.mechanisms import FLOAT_RETIRED, Refusal
from .models import NoisePath, NoisePoint

__all__ = ["FLOAT_RETIRED", "level_refusal", "path_released"]


def path_released(*, path) -> tuple[list, object]:
    """The levels released on ``path`` (a NoisePath, or its id) and its largest."""
    if not isinstance(path, NoisePath):
        path = visibility.dangerously_unscoped(NoisePath).only("pk", "released_max").get(pk=path)
    return list(visibility.dangerously_unscoped(NoisePoint).filter(path=path).values_list("level", flat=True)), path.released_max


def level_refusal(*, listing, level) -> Refusal | None:
    """None if ``level`` may be sold on ``listing`` by its mechanism (any level on a lattice path;
    a ladder level of a microdata listing; on the retired float path, one it can give without
    drawing new noise), else why."""

    def released():
        path = visibility.dangerously_unscoped(NoisePath).filter(listing_id=listing.pk).only("pk", "released_max").first()
        return path_released(path=path) if path is not None else ([], 0)

    return listing.release_mechanism.refusal(level, released=released, ladder=lambda: listing.microdata().levels)
