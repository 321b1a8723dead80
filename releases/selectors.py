"""Reads about noise paths that the marketplace needs before it sells a level.

The float path is retired (docs/mathematics.md, "Floating point"): no new
noise is ever drawn on it, since no δ was established for its steps. A listing
made on it keeps the levels it has released; a level it can still give without
a draw is one already released on an l1 path, or, on an l2 path (sampled from
the ceiling down as a jump list), one between its lowest and its largest level
released (read off the stored list; it reveals no more than the largest).
"""

from __future__ import annotations

from decimal import Decimal

from market.core import visibility
from market.core.levels import level_text

from .models import NoisePath, NoisePoint

__all__ = ["FLOAT_RETIRED", "float_level_refusal", "float_level_open"]

#: Why a float listing sells no new level.
FLOAT_RETIRED = ("this listing's floating-point noise is retired: its noise path had no established δ, so no new "
                 "noise is ever drawn on it")


def float_level_open(*, norm: str, released: list, released_max, level) -> bool:
    """Whether a float path whose released levels are ``released`` (its maximum ``released_max``)
    can give ``level`` without drawing new noise or going above what it has released."""
    level = Decimal(level)
    if level in set(released):
        return True
    return norm == "l2" and bool(released) and min(released) <= level <= Decimal(released_max)


def _shown(norm: str, released: list) -> str:
    if not released:
        return "it has released nothing, so none can be bought"
    if norm == "l2":
        return f"a level from {level_text(min(released))} to {level_text(max(released))} can still be bought"
    levels = sorted(released)
    more = f" and {len(levels) - 8} more" if len(levels) > 8 else ""
    return "only a level it has already released can be bought: " + ", ".join(level_text(x) for x in levels[:8]) + more


def float_level_refusal(*, listing_id, level) -> str | None:
    """None if ``level`` may be sold on the listing's path (any level on a lattice or bits path;
    on the retired float path, :func:`float_level_open`), else the reason, in a sentence."""
    # a purchase's check on the listing's path (no user's rows: its levels only)
    path = visibility.dangerously_unscoped(NoisePath).filter(listing_id=listing_id).values("pk", "engine", "norm", "released_max").first()
    if path is None or path["engine"] != "laplace":
        return None
    released = list(visibility.dangerously_unscoped(NoisePoint).filter(path_id=path["pk"]).values_list("level", flat=True))
    if float_level_open(norm=path["norm"], released=released, released_max=path["released_max"], level=level):
        return None
    return f"{FLOAT_RETIRED}; {_shown(path['norm'], released)} (buyers keep what they hold and can still read it)"
