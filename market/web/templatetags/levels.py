"""``{{ value|level }}``: a privacy level or budget for people, exactly as stored but without
trailing zeros or an exponent (``10.0000`` -> ``10``, not ``1E+1``; ``0.5000`` -> ``0.5``).

``{{ bound|up:2 }}`` and ``{{ cap|down:2 }}``: a figure rounded in the safe direction
(``market.core.levels.rounded_text``): error bounds and what is spent up, caps, rooms and the
low end of an interval down. Django's ``floatformat`` rounds to the nearest, which can state a
bound smaller than it is: it is not used for such figures."""

from django import template

from market.core.levels import level_text, rounded_text

register = template.Library()


@register.filter
def level(value) -> str:
    return level_text(value)


@register.filter
def up(value, places=2) -> str:
    return rounded_text(value, int(places), up=True)


@register.filter
def down(value, places=2) -> str:
    return rounded_text(value, int(places), up=False)


@register.filter
def delta(value) -> str:
    """A delta of (eps, delta)-DP as stored, for people: ``1e-6``, ``2.5e-9`` (``market.catalog.composition.delta_text``)."""
    from market.catalog.composition import delta_text

    return delta_text(value) or ""
