"""Webhooks in the API (``/api/v1/webhooks/``): your endpoints (a secret shown once, rolled on
request), their deliveries with every attempt, a replay and a test event. Everything here is
the asking user's own: anyone else's endpoint or delivery is 404."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from market.webhooks import selectors
from market.webhooks.events import EVENT_TYPES, PING
from market.webhooks.models import Delivery
from market.webhooks.services import (
    DESCRIPTION_MAX,
    URL_MAX,
    delivery_replay,
    endpoint_create,
    endpoint_delete,
    endpoint_ping,
    endpoint_roll_secret,
    endpoint_update,
)

from .errors import documented
from .scoping import ScopedListView
from .serializers import QuerySerializer, StrictSerializer, TextField

EVENT_CHOICES = list(EVENT_TYPES)


class StrictBoolean(serializers.BooleanField):
    """A JSON true or false, nothing else (not 1, not "yes")."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class EndpointSerializer(serializers.Serializer):
    id = serializers.CharField(help_text='opaque, e.g. "we_4fQ…"')
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=EVENT_CHOICES))
    description = serializers.CharField()
    is_active = serializers.BooleanField(help_text="false: nothing is sent to it")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class EndpointCreatedSerializer(EndpointSerializer):
    secret = serializers.CharField(
        help_text="the signing secret (whsec_...): shown in this answer only, never again; roll it for a new one"
    )


class EndpointCreateSerializer(StrictSerializer):
    url = TextField(max_length=URL_MAX, help_text="an https:// (or http://) address that accepts POST")
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_CHOICES), allow_empty=False, min_length=1, max_length=len(EVENT_CHOICES),
        help_text="buyers: purchase.released, purchase.failed; owners: listing.sold, listing.ready, listing.failed, "
        "dataset.ready",
    )
    description = TextField(max_length=DESCRIPTION_MAX, required=False, allow_blank=True)


class EndpointUpdateSerializer(StrictSerializer):
    url = TextField(max_length=URL_MAX, required=False)
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENT_CHOICES), allow_empty=False, min_length=1, max_length=len(EVENT_CHOICES),
        required=False,
    )
    description = TextField(max_length=DESCRIPTION_MAX, required=False, allow_blank=True)
    is_active = StrictBoolean(required=False)


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    at = serializers.DateTimeField()
    succeeded = serializers.BooleanField()
    status_code = serializers.IntegerField(allow_null=True, help_text="the receiver's HTTP status; null if it did not answer")
    response = serializers.CharField(help_text="the start of the receiver's answer")
    duration_ms = serializers.IntegerField()
    error = serializers.CharField()


class DeliverySerializer(serializers.Serializer):
    id = serializers.CharField(help_text='opaque, e.g. "whd_8Kd…" (sent as Gradual-Delivery-Id)')
    endpoint = serializers.CharField(source="endpoint_id")
    event = serializers.CharField(source="event_id", help_text="sent as Gradual-Event-Id")
    event_type = serializers.CharField(source="event.type")
    status = serializers.ChoiceField(choices=Delivery.Status.choices)
    attempts = serializers.IntegerField()
    next_attempt_at = serializers.DateTimeField(allow_null=True, help_text="when pending: the next try")
    last_status_code = serializers.IntegerField(allow_null=True)
    last_response = serializers.CharField()
    last_duration_ms = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DeliveryDetailSerializer(DeliverySerializer):
    payload = serializers.JSONField(source="event.payload", help_text="the body sent")
    attempt_log = AttemptSerializer(many=True, help_text="every attempt, first to last")


class DeliveryQuerySerializer(QuerySerializer):
    endpoint = serializers.CharField(required=False, max_length=32)
    event = serializers.ChoiceField(choices=[*EVENT_CHOICES, PING], required=False)
    status = serializers.ChoiceField(choices=Delivery.Status.choices, required=False)


def _created(endpoint, secret: str) -> dict:
    return {**EndpointSerializer(endpoint).data, "secret": secret}


class EndpointListView(ScopedListView):
    """Your webhook endpoints (newest first); register one here."""

    permission_classes = [IsAuthenticated]
    serializer_class = EndpointSerializer

    def scoped_queryset(self, user):
        return selectors.endpoint_list(user=user)

    @extend_schema(operation_id="webhooks_endpoints_list", responses={200: EndpointSerializer(many=True), **documented(400, 404)})
    def get(self, request):
        page = self.scoped_page()
        return self.get_paginated_response(EndpointSerializer(page, many=True).data)

    @extend_schema(
        operation_id="webhooks_endpoints_create",
        request={"application/json": EndpointCreateSerializer},
        responses={201: EndpointCreatedSerializer, **documented(400, 413, 415)},
        examples=[OpenApiExample("releases to a script", request_only=True,
                                 value={"url": "https://example.com/hooks/gradual", "events": ["purchase.released"]})],
    )
    def post(self, request):
        form = EndpointCreateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        endpoint, secret = endpoint_create(user=request.user, url=d["url"], events=d["events"], description=d.get("description", ""))
        return Response(_created(endpoint, secret), status=status.HTTP_201_CREATED)


class EndpointDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhooks_endpoints_retrieve", responses={200: EndpointSerializer, **documented(404)})
    def get(self, request, endpoint_id: str):
        return Response(EndpointSerializer(selectors.endpoint_get(user=request.user, endpoint_id=endpoint_id)).data)

    @extend_schema(
        operation_id="webhooks_endpoints_update",
        request={"application/json": EndpointUpdateSerializer},
        responses={200: EndpointSerializer, **documented(400, 404, 413, 415)},
    )
    def patch(self, request, endpoint_id: str):
        form = EndpointUpdateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        endpoint = endpoint_update(user=request.user, endpoint_id=endpoint_id, **form.validated_data)
        return Response(EndpointSerializer(endpoint).data)

    @extend_schema(operation_id="webhooks_endpoints_destroy", request=None, responses={204: None, **documented(404)})
    def delete(self, request, endpoint_id: str):
        """Delete the endpoint and its deliveries: nothing more is sent to it."""
        endpoint_delete(user=request.user, endpoint_id=endpoint_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class EndpointRollSecretView(APIView):
    """A new signing secret, shown in this answer only; the old one stops signing at once."""

    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhooks_endpoints_roll_secret", request=None,
                   responses={200: EndpointCreatedSerializer, **documented(404)})
    def post(self, request, endpoint_id: str):
        endpoint, secret = endpoint_roll_secret(user=request.user, endpoint_id=endpoint_id)
        return Response(_created(endpoint, secret))


class EndpointTestView(APIView):
    """Send a ``ping`` event to the endpoint now (answered 202: the delivery follows)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhooks_endpoints_test", request=None, responses={202: DeliverySerializer, **documented(404)})
    def post(self, request, endpoint_id: str):
        delivery = endpoint_ping(user=request.user, endpoint_id=endpoint_id)
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)


class DeliveryListView(ScopedListView):
    """Deliveries to your endpoints, newest first; filter by endpoint, event type or status."""

    permission_classes = [IsAuthenticated]
    serializer_class = DeliverySerializer
    filters: dict = {}  # this request's filters (checked in get)

    def scoped_queryset(self, user):
        return selectors.delivery_list(user=user, **self.filters)

    @extend_schema(
        operation_id="webhooks_deliveries_list", parameters=[DeliveryQuerySerializer],
        responses={200: DeliverySerializer(many=True), **documented(400, 404)},
    )
    def get(self, request):
        query = DeliveryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        self.filters = query.validated_data
        page = self.scoped_page()
        return self.get_paginated_response(DeliverySerializer(page, many=True).data)


class DeliveryDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhooks_deliveries_retrieve", responses={200: DeliveryDetailSerializer, **documented(404)})
    def get(self, request, delivery_id: str):
        return Response(DeliveryDetailSerializer(selectors.delivery_get(user=request.user, delivery_id=delivery_id)).data)


class DeliveryReplayView(APIView):
    """Send the delivery again now, whatever its status (answered 202: the attempt follows)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="webhooks_deliveries_replay", request=None, responses={202: DeliverySerializer, **documented(404)})
    def post(self, request, delivery_id: str):
        delivery = delivery_replay(user=request.user, delivery_id=delivery_id)
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
