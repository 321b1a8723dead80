"""API keys in the API: list, create, revoke and rotate your own keys (``/api/v1/keys/``).

A key's secret is in the answer that creates it (create, rotate, ``auth/token/``) and nowhere
else, ever: the server keeps only its hash.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from market.accounts import selectors
from market.accounts.models import KEY_STATUSES
from market.accounts.services import EXPIRY_MAX, ROTATION_GRACE_MAX, api_key_create, api_key_revoke, api_key_rotate

from .errors import documented
from .scoping import ScopedListView
from .serializers import StrictSerializer, TextField


class StrictInteger(serializers.IntegerField):
    """A JSON integer, nothing else (not true, not 2.9, not "4 ")."""

    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class ApiKeySerializer(serializers.Serializer):
    id = serializers.CharField(help_text='opaque, e.g. "key_4fQ…"')
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the first characters of the secret, to recognise it")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True, help_text="updated at most about once a minute")
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True, help_text="in the future while a rotated key's grace period runs")
    status = serializers.ChoiceField(choices=KEY_STATUSES, source="current_status")


class ApiKeyCreatedSerializer(ApiKeySerializer):
    secret = serializers.CharField(help_text="the key: shown in this answer only, never again; send it as 'Authorization: Bearer <secret>'")


class ApiKeyCreateSerializer(StrictSerializer):
    name = TextField(max_length=100, help_text="what the key is for, e.g. \"nightly report\"")
    expires_in_days = StrictInteger(required=False, min_value=1, max_value=EXPIRY_MAX.days, help_text="the key stops working after this many days")
    expires_at = serializers.DateTimeField(required=False, help_text="or: the moment the key stops working (not with expires_in_days)")

    def validate(self, data):
        if "expires_in_days" in data and "expires_at" in data:
            raise serializers.ValidationError({"expires_at": ["Give expires_in_days or expires_at, not both."]})
        return data


class ApiKeyRotateSerializer(StrictSerializer):
    grace_seconds = StrictInteger(
        required=False,
        default=0,
        min_value=0,
        max_value=int(ROTATION_GRACE_MAX.total_seconds()),
        help_text="how long the old key keeps working (0 to 86400 seconds; default 0: revoked at once)",
    )


class SignInSerializer(serializers.Serializer):
    """The answer of ``POST auth/token/``."""

    token = serializers.CharField(help_text="a new API key: shown in this answer only; send it as 'Authorization: Bearer <token>'")
    key = ApiKeySerializer(help_text="the new key's details (revoke or rotate it at /api/v1/keys/{id}/)")


def created(key, secret: str) -> dict:
    return {**ApiKeySerializer(key).data, "secret": secret}


def sign_in_key(user):
    """The key ``POST auth/token/`` hands out: named after the moment, expiring after
    ``API_KEY_SIGN_IN_DAYS`` days (0: never)."""
    now = timezone.now()
    days = int(getattr(settings, "API_KEY_SIGN_IN_DAYS", 90))
    return api_key_create(
        user=user,
        name=f"signed in {now:%Y-%m-%d %H:%M} UTC",
        expires_at=now + timedelta(days=days) if days > 0 else None,
        from_sign_in=True,
    )


class ApiKeyListView(ScopedListView):
    """Your API keys (newest first); create one here."""

    permission_classes = [IsAuthenticated]
    serializer_class = ApiKeySerializer

    def scoped_queryset(self, user):
        return selectors.api_key_list(user=user)

    @extend_schema(operation_id="keys_list", responses={200: ApiKeySerializer(many=True), **documented(400, 404)})
    def get(self, request):
        page = self.scoped_page()
        return self.get_paginated_response(ApiKeySerializer(page, many=True).data)

    @extend_schema(
        operation_id="keys_create",
        request={"application/json": ApiKeyCreateSerializer},
        responses={201: ApiKeyCreatedSerializer, **documented(400, 409, 413, 415)},
        examples=[OpenApiExample("a key for 90 days", request_only=True, value={"name": "nightly report", "expires_in_days": 90})],
    )
    def post(self, request):
        form = ApiKeyCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        expires_at = d.get("expires_at")
        if "expires_in_days" in d:
            expires_at = timezone.now() + timedelta(days=d["expires_in_days"])
        key, secret = api_key_create(user=request.user, name=d["name"], expires_at=expires_at)
        return Response(created(key, secret), status=status.HTTP_201_CREATED)


class ApiKeyDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="keys_retrieve", responses={200: ApiKeySerializer, **documented(404)})
    def get(self, request, key_id: str):
        return Response(ApiKeySerializer(selectors.api_key_get(user=request.user, key_id=key_id)).data)

    @extend_schema(operation_id="keys_revoke", request=None, responses={204: None, **documented(404)})
    def delete(self, request, key_id: str):
        """Revoke the key at once (also a rotated key in its grace period). Revoking a revoked key is a 204 too."""
        api_key_revoke(user=request.user, key_id=key_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ApiKeyRotateView(APIView):
    """A new secret for the key: a new key with the same name and expiry. The old key stops
    working after ``grace_seconds`` (at most 24 hours; default at once)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        operation_id="keys_rotate",
        request={"application/json": ApiKeyRotateSerializer},
        responses={201: ApiKeyCreatedSerializer, **documented(400, 404, 409, 413, 415)},
    )
    def post(self, request, key_id: str):
        form = ApiKeyRotateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        key, secret = api_key_rotate(
            user=request.user, key_id=key_id, grace=timedelta(seconds=form.validated_data["grace_seconds"])
        )
        return Response(created(key, secret), status=status.HTTP_201_CREATED)
