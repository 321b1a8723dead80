"""``{{ value|level }}``: a privacy level or budget for people, exactly as stored but without
trailing zeros or an exponent (``10.0000`` -> ``10``, not ``1E+1``; ``0.5000`` -> ``0.5``)."""

from decimal import Decimal, InvalidOperation

from django import template

register = template.Library()


@register.filter
def level(value) -> str:
    if value is None or value == "":
        return ""
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    return f"{number.normalize():f}" if number else "0"
