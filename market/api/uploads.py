"""Resumable uploads in the API (``/api/v1/uploads/``): a large file in parts, each a short request.

``POST uploads/`` opens a session (the file's ``size``), ``PUT uploads/{id}/``
sends a part (raw bytes with ``Content-Range: bytes START-END/TOTAL``, START
the session's ``received``), ``GET`` says where it stands (to resume after a
crash), ``DELETE`` abandons it. ``POST uploads/{id}/dataset/`` (JSON: the fields of
the multipart ``POST datasets/`` but the file) makes a dataset of a complete
one (``market.catalog.chunks``). Its own operation, not a second content type
of ``POST datasets/``: every operation takes one content type (generated
clients, e.g. openapi-python-client, break on an operation that takes two).
"""

from __future__ import annotations

import re

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from market.catalog import chunks
from market.catalog import selectors as catalog
from market.catalog.services import dataset_create
from market.core.errors import InvalidInput

from . import serializers as s
from .errors import MEANINGS, documented
from .keys import StrictInteger
from .parsers import StrictJSONParser, UploadPartParser
from .serializers import (
    DatasetCreateSerializer,
    ErrorSerializer,
    StrictSerializer,
    text_field,
)

#: ``bytes START-END/TOTAL`` (RFC 9110 §14.4), END inclusive; ASCII digits only
CONTENT_RANGE = r"^bytes [0-9]{1,15}-[0-9]{1,15}/[0-9]{1,15}$"
_RANGE = re.compile(r"bytes ([0-9]{1,15})-([0-9]{1,15})/([0-9]{1,15})", re.ASCII)

OFFSET_MISMATCH_MEANING = (
    "Conflict. `offset_mismatch`: the part does not start where the upload stands; nothing was kept, and the "
    "error's `received` (an integer) is the byte the next part must start at."
)


class UploadOpenSerializer(StrictSerializer):
    size = StrictInteger(min_value=1, max_value=settings.UPLOAD_MAX_BYTES, help_text="the whole file's bytes")
    filename = text_field(max_length=255, required=False, help_text="the file's name, for your records")


class UploadSerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text='opaque, e.g. "up_4fQ…"')
    filename = serializers.CharField()
    size = serializers.IntegerField(help_text="the whole file's bytes")
    received = serializers.IntegerField(help_text="bytes received so far: the next part starts here")
    part_max_bytes = serializers.SerializerMethodField(help_text="the most one part may carry")
    expires_at = serializers.DateTimeField(help_text="the session and its parts are deleted after this")

    def get_part_max_bytes(self, session) -> int:
        return settings.UPLOAD_PART_MAX_BYTES


class DatasetFromUploadSerializer(DatasetCreateSerializer):
    # POST uploads/{id}/dataset/: the same fields as the multipart form of POST datasets/, but the file
    file = None


def content_range(request) -> chunks.Range:
    """The part's ``Content-Range`` (400 if missing or not ``bytes START-END/TOTAL`` with START <= END < TOTAL)."""
    text = request.headers.get("Content-Range", "")
    match = _RANGE.fullmatch(text)
    start, end, total = (int(g) for g in match.groups()) if match else (0, -1, 0)
    if not match or not start <= end < total:
        raise InvalidInput(
            "give the part's place as Content-Range: bytes START-END/TOTAL (END inclusive, below TOTAL)",
            fields={"Content-Range": ["Like bytes 0-8388607/20000000."]},
        )
    return chunks.Range(start=start, end=end, total=total)


class UploadListView(APIView):
    """Open a resumable upload (owners): then PUT its parts, then POST uploads/{id}/dataset/."""

    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]

    @extend_schema(
        operation_id="uploads_create",
        request=UploadOpenSerializer,
        responses={201: UploadSerializer, **documented(400, 403, 413, 415)},
        description="A session for a file of `size` bytes (at most UPLOAD_MAX_BYTES), open until `expires_at`. "
        "An owner with UPLOAD_SESSIONS_PER_OWNER sessions open already gets 429 too_many_uploads.",
    )
    def post(self, request):
        form = UploadOpenSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        session = chunks.upload_open(owner=request.user, **form.validated_data)
        return Response(UploadSerializer(session).data, status=status.HTTP_201_CREATED)


class UploadDetailView(APIView):
    """One of your resumable uploads: where it stands (GET), its next part (PUT), abandon it (DELETE)."""

    permission_classes = [IsAuthenticated]
    parser_classes = [UploadPartParser]

    @extend_schema(operation_id="uploads_retrieve", responses={200: UploadSerializer, **documented(404)})
    def get(self, request, upload_id: str):
        return Response(UploadSerializer(chunks.upload_get(user=request.user, upload_id=upload_id)).data)

    @extend_schema(
        operation_id="uploads_part",
        request={"application/octet-stream": OpenApiTypes.BINARY},
        parameters=[OpenApiParameter(
            "Content-Range", {"type": "string", "pattern": CONTENT_RANGE}, OpenApiParameter.HEADER, required=True,
            description="the part's place: `bytes START-END/TOTAL`, END inclusive, START the upload's `received`, "
            "TOTAL its size",
        )],
        responses={200: UploadSerializer, **documented(400, 403, 404, 413, 415),
                   409: OpenApiResponse(ErrorSerializer, description=OFFSET_MISMATCH_MEANING)},
        description="Send the next part (at most `part_max_bytes`) as the raw body. The last part sent again, byte "
        "for byte, is answered with the state as it is (a retry is safe). " + MEANINGS[413],
    )
    def put(self, request, upload_id: str):
        data = request.data  # read (at most part_max_bytes + 1) before anything else is judged
        where = content_range(request)
        session = chunks.upload_part(owner=request.user, upload_id=upload_id, where=where,
                                     data=data if isinstance(data, bytes) else b"")
        return Response(UploadSerializer(session).data)

    @extend_schema(operation_id="uploads_abandon", request=None, responses={204: None, **documented(404)})
    def delete(self, request, upload_id: str):
        """Abandon the upload: the session and its parts are deleted."""
        chunks.upload_abandon(owner=request.user, upload_id=upload_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class UploadDatasetView(APIView):
    """Make a dataset of your complete resumable upload, read in the background as any upload."""

    permission_classes = [IsAuthenticated]
    parser_classes = [StrictJSONParser]

    @extend_schema(
        operation_id="uploads_dataset",
        request=DatasetFromUploadSerializer,
        responses={202: s.DatasetCreatedSerializer, **documented(400, 403, 404, 413, 415)},
        description="Accepted (202) as POST datasets/ (the same fields, but the file, and the same limits, e.g. "
        "429 too_many_processing): 404 if the upload is not one of your open ones, 400 if not all its bytes have "
        "arrived. Its parts are joined and hashed in the background, so `same_content_as` is empty in this answer "
        "and shown by GET datasets/{id}/ once the dataset is processed.",
    )
    def post(self, request, upload_id: str):
        form = DatasetFromUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        d = form.validated_data
        dataset = dataset_create(
            owner=request.user, name=d["name"], description=d.get("description", ""), upload_id=upload_id,
            total_budget=d["total_budget"], relation=d["relation"], source=d.get("source", ""),
            licence=d.get("licence", ""), record_name=d.get("record_name", ""),
            record_name_plural=d.get("record_name_plural", ""),
        )
        created = catalog.dataset_get(user=request.user, dataset_id=dataset.public_id)  # with its budget figures
        return Response(s.dataset_answer(created, []), status=status.HTTP_202_ACCEPTED)
