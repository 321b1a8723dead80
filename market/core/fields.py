"""Exact column types shared by the apps: privacy levels and money are NUMERIC."""

from decimal import Decimal

from django.db import models

LEVEL_PLACES = 4
MONEY_PLACES = 2
LEVEL_QUANTUM = Decimal(1).scaleb(-LEVEL_PLACES)
MONEY_QUANTUM = Decimal(1).scaleb(-MONEY_PLACES)


def LevelField(**kwargs):
    """A privacy level eps: NUMERIC(9, 4)."""
    kwargs.setdefault("max_digits", 9)
    kwargs.setdefault("decimal_places", LEVEL_PLACES)
    return models.DecimalField(**kwargs)


def DeltaField(**kwargs):
    """A delta of (eps, delta)-DP: NUMERIC(20, 20), exact down to 1e-20 (datasets and listings allow at most 1e-6)."""
    kwargs.setdefault("max_digits", 20)
    kwargs.setdefault("decimal_places", 20)
    return models.DecimalField(**kwargs)


def MoneyField(**kwargs):
    """An amount of credits: NUMERIC(18, 2)."""
    kwargs.setdefault("max_digits", 18)
    kwargs.setdefault("decimal_places", MONEY_PLACES)
    return models.DecimalField(**kwargs)
