"""Signing in with a password, limited per account: the one path that every
password sign-in takes (the API's token exchange, the web's login page, the
admin's login page).

After ``LOGIN_FAILURE_LIMIT`` failed sign-ins for one username within
``LOGIN_FAILURE_WINDOW`` seconds, from whatever addresses, the account is
locked for ``LOGIN_LOCKOUT_SECONDS``: every attempt for it is refused without
looking at the password (even the right one) with :class:`TooManyAttempts`,
which says when to try again. A successful sign-in before that clears the
count. The per-address throttles (``market/api/throttling.py``) limit how fast
one client guesses; this limits how many guesses one account gets, however
many addresses the guesser has.

Per client address too (``market.core.clients.client_address``, never a
header the client writes): more than ``LOGIN_ADDRESS_LIMIT`` failed sign-ins
from one address within a window of ``LOGIN_ADDRESS_WINDOW`` seconds (fixed,
whatever the usernames) refuse every further attempt from it until the window
ends, without looking at the password: one address cannot try one password
on many accounts (password spraying) however few tries each account gets.

Trade-off: anyone who knows a username can lock its owner out by failing on
purpose. The lockout is therefore short and ends by itself (it is never
permanent and needs no support ticket), a correct password is not revealed
while locked, and the per-address throttles slow down whoever keeps doing it.

The counters live in Django's cache (Redis when ``REDIS_URL`` is set, shared
by every process), with atomic increments; keys hold a hash of the
normalised username, never the name itself.
"""

from __future__ import annotations

import hashlib
import math
import time
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache

from market.core.clients import client_address
from market.core.errors import TooManyAttempts


def _account_key(username: str, kind: str) -> str:
    # NFKC like Django's own normalisation, and case-folded: "Bob" and "bob" share one count
    name = AbstractBaseUser.normalize_username(username or "").casefold()
    return f"signin:{kind}:{hashlib.sha256(name.encode()).hexdigest()}"


def _locked_until(username: str) -> float | None:
    until = cache.get(_account_key(username, "locked"))
    return until if until is not None and until > time.time() else None


def _refusal(until: float) -> TooManyAttempts:
    wait = max(1, math.ceil(until - time.time()))
    at = datetime.fromtimestamp(until, tz=UTC).strftime("%H:%M:%S UTC")
    minutes = math.ceil(wait / 60)
    return TooManyAttempts(
        f"Too many failed sign-ins for this account: it is locked until {at} "
        f"(in {minutes} minute{'s' if minutes != 1 else ''}). Try again then.",
        retry_after=wait,
    )


def _count_failure(username: str) -> int:
    """One more failure for ``username``; the count within the current window (atomic)."""
    key, window = _account_key(username, "failures"), settings.LOGIN_FAILURE_WINDOW
    for _ in range(2):
        cache.add(key, 0, timeout=window)  # the window starts at the first failure
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr: start a new window
            continue
        if count == 1:
            # make sure a first failure's counter expires even if another process's
            # expiry raced with our add (an incr on a missing key creates it with no TTL)
            cache.touch(key, window)
        return count
    return 1


def _address_key(request, now: float) -> tuple[str, float] | None:
    """The failure counter of the request's address in the current window, and the seconds left in it."""
    address = client_address(request) if request is not None else ""
    if not address:
        return None
    window = settings.LOGIN_ADDRESS_WINDOW
    digest = hashlib.sha256(address.encode()).hexdigest()
    return f"signin:address:{digest}:{int(now // window)}", window - now % window


def _address_check(request) -> None:
    counter = _address_key(request, time.time())
    if counter is not None and (cache.get(counter[0]) or 0) >= settings.LOGIN_ADDRESS_LIMIT:
        wait = max(1, math.ceil(counter[1]))
        minutes = math.ceil(wait / 60)
        raise TooManyAttempts(
            f"Too many sign-in attempts from your address; try again in {minutes} minute{'s' if minutes != 1 else ''}.",
            retry_after=wait,
        )


def _address_failure(request) -> None:
    counter = _address_key(request, time.time())
    if counter is None:
        return
    key, left = counter
    cache.add(key, 0, timeout=math.ceil(left) + 1)
    try:
        cache.incr(key)
    except ValueError:  # the window ended between add and incr: the next window counts from zero
        pass


def signin_check(*, username: str) -> None:
    """Raise :class:`TooManyAttempts` while ``username`` is locked out."""
    until = _locked_until(username)
    if until is not None:
        raise _refusal(until)


def signin_authenticate(*, request, username: str, password: str):
    """The user these credentials belong to, or None when they are wrong (a failure is
    counted, for the account and for the request's address). Raises :class:`TooManyAttempts` while
    the account is locked out or the address has failed too often."""
    _address_check(request)
    signin_check(username=username)
    user = authenticate(request, username=username, password=password)
    if user is not None:
        cache.delete(_account_key(username, "failures"))
        return user
    _address_failure(request)
    if _count_failure(username) >= settings.LOGIN_FAILURE_LIMIT:
        until = time.time() + settings.LOGIN_LOCKOUT_SECONDS
        # add, not set: concurrent failures do not push the end of a lockout further away
        cache.add(_account_key(username, "locked"), until, timeout=settings.LOGIN_LOCKOUT_SECONDS)
        cache.delete(_account_key(username, "failures"))  # a fresh count once the lockout ends
    return None
