"""The web edge: a concurrency slot for every upload, taken before its body is read.

An upload (a multipart POST, to the API or to a page, or a part of a resumable
upload: an ``application/octet-stream`` PUT) holds a web thread while
its body arrives. At most ``UPLOAD_MAX_CONCURRENT_PER_OWNER`` bodies are
received at once per owner (the signed-in user: session or API key; someone
not signed in counts by client address) and ``UPLOAD_MAX_CONCURRENT`` in the
whole deployment (``market.core.slots``: Redis, or per process without it).
One more is refused at once with 429 and ``Retry-After``, in the API's error
shape under ``/api/``, as a page that says why elsewhere, before anything
reads its body: :class:`UploadSlotMiddleware` stands before Django's
``CsrfViewMiddleware`` (whose ``process_view`` reads a form's body) and runs
before any view (DRF parses ``request.data`` in the view). The slot is given
back when the answer is made; if the process dies it expires after the body's
time limit (``market.core.bodies``) and a minute. A refused upload's connection
closes after the answer: its body is never read, nor drained.
"""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render

from market.accounts.selectors import api_key_for_secret
from market.core.bodies import body_refused, timeout_for
from market.core.clients import client_address
from market.core.errors import error_body
from market.core.slots import Limit, SlotsFull, slot_give, slot_take

#: seconds a refused upload is told to wait
RETRY_AFTER = 10
SCHEMES = ("bearer", "token")
#: bodies that are uploads: a multipart form, a part of a resumable upload (``PUT api/v1/uploads/{id}/``)
UPLOAD_TYPES = ("multipart/", "application/octet-stream")


def uploader(request) -> str:
    """Whose upload this is, before the view signs anyone in: the session's user, the API key's
    user, or else the client's address."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    parts = request.headers.get("Authorization", "").split()
    if len(parts) == 2 and parts[0].lower() in SCHEMES:
        key = api_key_for_secret(parts[1])
        if key is not None:
            return f"user:{key.user_id}"
    return f"addr:{client_address(request)}"


def _refusal(request, full: Limit):
    if full.key == "upload:all":
        message = (f"The marketplace is receiving {full.allowed} uploads already, its most at once. "
                   f"Try again in a minute.")
    else:
        message = (f"You already have {full.allowed} uploads in progress, the most at once. "
                   f"Wait until one has finished, then try again.")
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body(429, "too_many_uploads", message), status=429)
    else:
        response = render(request, "web/upload_busy.html", {"message": message, "back": request.path}, status=429)
    response["Retry-After"] = str(RETRY_AFTER)
    body_refused(request.META)  # its body is never read: nothing waits for it (market.core.bodies)
    return response


class UploadSlotMiddleware:
    """Stands before ``CsrfViewMiddleware`` in ``MIDDLEWARE`` (see the module's docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            return self.get_response(request)
        finally:
            slot_give(getattr(request, "gradual_upload_slot", None))

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method not in ("POST", "PUT", "PATCH") or not request.content_type.startswith(UPLOAD_TYPES):
            return None
        limits = [
            Limit(f"upload:{uploader(request)}", settings.UPLOAD_MAX_CONCURRENT_PER_OWNER),
            Limit("upload:all", settings.UPLOAD_MAX_CONCURRENT),
        ]
        try:
            request.gradual_upload_slot = slot_take(limits=limits, ttl=timeout_for(request.META) + 60)
        except SlotsFull as full:
            return _refusal(request, full.limit)
        return None
