"""The release mechanisms, one class each behind one protocol (:class:`Mechanism`), and their registry.

``mechanism(name)`` is the object for a stored name (``Listing.mechanism``,
``NoisePath.mechanism``); ``MECHANISMS`` holds them all, in the order forms list them.
Adding a mechanism is one class (``base.Base`` has the shared defaults) registered here,
and its tests. Pure: no Django, no database.
"""

from __future__ import annotations

from .base import FLOATS, INTS, Codec, Mechanism, Refusal
from .bits import BitReports
from .exact import Lattice
from .floats import FLOAT_NOT_COMPUTED, FLOAT_RETIRED, FloatL2, FloatLaplace, l2_error_radius
from .skellam import Skellam

__all__ = ["Mechanism", "Refusal", "Codec", "FLOATS", "INTS", "MECHANISMS", "mechanism", "mechanism_for",
           "FLOAT_RETIRED", "FLOAT_NOT_COMPUTED", "l2_error_radius", "FloatLaplace", "FloatL2", "Lattice",
           "BitReports", "Skellam"]

#: Every mechanism by the name stored for it.
MECHANISMS: dict[str, Mechanism] = {m.name: m for m in (FloatLaplace(), FloatL2(), Lattice(), Skellam(), BitReports())}


def mechanism(name: str) -> Mechanism:
    """The mechanism stored as ``name``; ValueError for a name no mechanism has."""
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ValueError(f"no mechanism is named {name!r} (known: {', '.join(MECHANISMS)})") from None


def mechanism_for(engine: str, norm: str = "l1") -> Mechanism:
    """The mechanism of the two older columns ``engine`` and ``norm`` (what the migration reads)."""
    found = [m for m in MECHANISMS.values() if (m.engine, m.norm) == (engine, norm)]
    if not found:
        raise ValueError(f"no mechanism runs engine {engine!r} with norm {norm!r}")
    return found[0]
