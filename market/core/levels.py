"""Reading a privacy level eps from user input, exactly, and writing one for people."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext

from .errors import InvalidInput
from .fields import LEVEL_PLACES, LEVEL_QUANTUM

MAX_LEVEL = Decimal("10000")


def parse_level(value, *, field: str = "epsilon") -> Decimal:
    """A positive, finite eps with at most four decimal places, as a Decimal.

    Floats are read through their shortest decimal form (0.1 -> 0.1).
    """

    def bad(message: str):
        return InvalidInput(f"{field}: {message}", fields={field: [message]})

    if value is None or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
        raise bad("This field is required: give a number such as 0.5.")
    if isinstance(value, str) and not value.isascii():
        raise bad(f"{value[:30]!r} is not a number: use the digits 0-9.")
    try:
        level = Decimal(value.strip() if isinstance(value, str) else str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise bad(f"{str(value)[:30]!r} is not a number.") from None
    if not level.is_finite():
        raise bad("must be a finite number.")
    if level <= 0:
        raise bad("must be greater than 0.")
    if level > MAX_LEVEL:
        raise bad(f"must be at most {MAX_LEVEL}.")
    if level != level.quantize(LEVEL_QUANTUM):
        raise bad(f"use at most {LEVEL_PLACES} decimal places.")
    return level.quantize(LEVEL_QUANTUM)


def level_text(value) -> str:
    """A level for people, exactly as stored but without trailing zeros or an exponent
    (``10.0000`` -> ``10``, not ``1E+1``; ``0.5000`` -> ``0.5``); text that is not a number stays as it is."""
    if value is None or value == "":
        return ""
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    return f"{number.normalize():f}" if number else "0"


def rounded_text(value, places: int, *, up: bool) -> str:
    """A figure for people, rounded in the safe direction: ``up`` for what must not be understated
    (an error bound, a level or share spent), else down (a cap, the room left, the low end of an
    interval). ``places`` decimals; a negative ``places`` keeps ``-places`` decimals only when the
    rounded figure is not a whole number (as Django's ``floatformat:"-2"``). A float is read
    through its shortest decimal form (``0.12`` is 0.12, not the binary number just above it), so a
    figure that sits exactly on a step of the display is shown as it is, never one step further;
    anything that is not a finite number is shown as it is."""
    if value is None or value == "":
        return ""
    try:  # float(...) first: numpy's float64 is a float whose repr is not a number
        number = Decimal(repr(float(value))) if isinstance(value, float) else Decimal(str(value))
    except InvalidOperation:
        return str(value)
    if not number.is_finite():
        return str(value)
    step = Decimal(1).scaleb(-abs(places))
    with localcontext() as context:  # digits enough for any figure, however large
        context.prec = max(28, number.adjusted() + abs(places) + 2)
        shown = number.quantize(step, rounding=ROUND_CEILING if up else ROUND_FLOOR)
        if places < 0 and shown == shown.to_integral_value():
            shown = shown.to_integral_value()
        return f"{shown + 0:f}"  # + 0: no "-0.00"


def _exact(value) -> Decimal | None:
    """A finite number as a Decimal (a float through its shortest decimal form), else None."""
    try:
        number = Decimal(repr(float(value))) if isinstance(value, float) else Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        return None
    return number if number.is_finite() else None


def reading_places(bound, grid=None) -> int | None:
    """The decimal places at which a released value means something: on the lattice path its grid's
    (a grid of 0.01: 2; of 1 or 5: 0), otherwise two significant digits of its error bound (± 9.04:
    1 place; ± 0.0123: 3; ± 1234: -2, hundreds). None when there is nothing to go by (no grid, a bound
    that is 0 or not a number)."""
    if grid is not None and (step := _exact(grid)) is not None and step > 0:
        return max(0, -step.normalize().as_tuple().exponent)
    bound = _exact(bound)
    if bound is None or bound <= 0:
        return None
    return 1 - bound.adjusted()


def reading_figures(value, bound, *, grid=None) -> dict:
    """A released value and its error bound as people read them, the one rounding every page and the
    API use (``market.trading.selectors.release_readings``): both at :func:`reading_places`, the value
    to the nearest, the bound UP (never understated). ``{"value", "error_bound"}`` as JSON numbers (an
    int at 0 places or fewer), ``{"value_text", "bound_text"}`` as shown (trailing zeros kept: "68.0",
    "9.1"), ``places``; with nothing to round by, the figures are the exact ones."""
    places = reading_places(bound, grid)
    exact_value, exact_bound = _exact(value), _exact(bound)
    if places is None or exact_value is None or exact_bound is None:
        return {"value": value, "error_bound": bound, "value_text": str(value), "bound_text": str(bound),
                "places": None}
    step = Decimal(1).scaleb(-places)
    with localcontext() as context:  # digits enough for any figure, however large
        context.prec = max(28, max(exact_value.adjusted(), exact_bound.adjusted()) + abs(places) + 2)
        shown_value = exact_value.quantize(step, rounding=ROUND_HALF_EVEN) + 0  # + 0: no "-0"
        shown_bound = exact_bound.quantize(step, rounding=ROUND_CEILING) + 0
    as_number = int if places <= 0 else float
    return {"value": as_number(shown_value), "error_bound": as_number(shown_bound),
            "value_text": f"{shown_value:f}", "bound_text": f"{shown_bound:f}", "places": places}


def parse_delta(value, *, at_most: Decimal, field: str = "delta", what: str = "the delta") -> Decimal:
    """A delta of (eps, delta)-DP as a Decimal: above 0, at most ``at_most``, at most 20 decimal
    places (a ``DeltaField``); 400 on ``field`` otherwise, naming ``what`` and the limit."""
    try:
        delta = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        delta = None
    limit = f"{at_most.normalize():E}".replace("E", "e").replace("e+", "e")
    if delta is None or not delta.is_finite() or not 0 < delta <= at_most:
        raise InvalidInput(f"{what} must be a number above 0 and at most {limit}; got {value!r}",
                           fields={field: [f"Above 0, at most {limit}."]})
    if delta != delta.quantize(Decimal("1e-20")):
        raise InvalidInput(f"{what} has more than 20 decimal places", fields={field: ["At most 20 decimal places."]})
    return delta
