"""API keys on requests: ``Authorization: Bearer <key>`` (or ``Token <key>``, as older clients send)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from market.accounts import keys
from market.accounts.keycache import entry_add
from market.accounts.selectors import api_key_for_secret
from market.accounts.services import api_key_touch

from .throttling import key_and_counts

SCHEMES = (b"bearer", b"token")


class ApiKeyAuthentication(BaseAuthentication):
    """Signs a request in as the owner of the API key it carries. A request with no
    ``Authorization`` header (or another scheme) is left to the other classes; a key that is
    malformed, unknown, revoked or expired is a 401 with ``WWW-Authenticate: Bearer``."""

    www_authenticate_realm = "api"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in SCHEMES:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header: send 'Bearer <API key>'.", code="invalid_key")
        try:
            secret = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid API key.", code="invalid_key") from None
        key = self._remembered(request, secret)
        if key is None:  # not remembered (or changed since): the database, then remember it
            key = api_key_for_secret(secret)
            if key is None:
                raise exceptions.AuthenticationFailed("Invalid API key: unknown, revoked or expired.", code="invalid_key")
            api_key_touch(key=key)
            entry_add(key)
        return key.user, key

    @staticmethod
    def _remembered(request, secret: str):
        """The key from Redis (``market.accounts.keycache``), with the request's rate limits counted in
        the same round trip; None if it is not remembered or no longer signs anyone in."""
        if not keys.well_formed(secret):
            return None
        key = key_and_counts(request, keys.digest(secret))
        if key is None or key.status() not in ("active", "rotating") or not key.user.is_active:
            return None
        return key

    def authenticate_header(self, request):
        return f'Bearer realm="{self.www_authenticate_realm}"'


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """The schema's security scheme for API keys."""

    target_class = "market.api.authentication.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "gradual_ API key",
            "description": "An API key (gradual_…) from POST /api/v1/keys/ or /api/v1/auth/token/, "
            "sent as 'Authorization: Bearer <key>' ('Token <key>' is accepted too).",
        }
