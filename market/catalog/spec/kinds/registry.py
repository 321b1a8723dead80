"""The registry of statistic kinds: each kind's module registers its one instance here."""

from __future__ import annotations

__all__ = ["KINDS", "register"]

#: Every kind, by name, in the order their modules are imported (``market.catalog.spec.kinds``).
KINDS: dict = {}


def register(cls):
    """Class decorator: register one instance of the kind ``cls`` under ``cls.name``."""
    if cls.name in KINDS:
        raise ValueError(f"kind {cls.name!r} is registered twice")
    KINDS[cls.name] = cls()
    return cls
