"""``{{ value|level }}``: a privacy level or budget for people, exactly as stored but without
trailing zeros or an exponent (``10.0000`` -> ``10``, not ``1E+1``; ``0.5000`` -> ``0.5``)."""

from django import template

from market.core.levels import level_text

register = template.Library()


@register.filter
def level(value) -> str:
    return level_text(value)
