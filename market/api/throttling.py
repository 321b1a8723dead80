"""DRF's throttles, keyed on the client's address from ``market.core.clients``
(never on a header the client may write itself)."""

from rest_framework import throttling

from market.core.clients import client_address


class _ByClientAddress:
    def get_ident(self, request):
        return client_address(request)


class AnonRateThrottle(_ByClientAddress, throttling.AnonRateThrottle):
    pass


class UserRateThrottle(_ByClientAddress, throttling.UserRateThrottle):
    pass


class ScopedRateThrottle(_ByClientAddress, throttling.ScopedRateThrottle):
    pass
