"""Resumable uploads: a large file sent in parts, each a short request, resumed after a failure.

An owner opens a session announcing the file's ``size`` (:func:`upload_open`),
then sends the bytes in order, each part at most ``UPLOAD_PART_MAX_BYTES``
(:func:`upload_part`). Each part is sealed (``market.catalog.files``) into
storage as its own object and the session's row records how far it got
(``received``) and its parts. A part that does not start at ``received`` is
refused (``OffsetMismatch``, 409, carrying ``received``: the client resumes
from there); the last part sent again, byte for byte, is answered with the
state as it is (a retry after a lost answer is safe).

Once ``received == size`` the owner creates the dataset from the session
(``services.dataset_create(upload_id=...)``): no part is read in that request;
the ingest task joins the parts (:func:`upload_join`), stores the joined file
sealed as the dataset's upload, deletes the parts, and reads it as any upload.
Sessions never made into a dataset are swept after ``expires_at``
(:func:`uploads_sweep`, a periodic task on the ingest queue).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from market.accounts.locks import user_lock
from market.accounts.roles import require_role
from market.core import visibility
from market.core.errors import InvalidInput, NotFound, OffsetMismatch, TooManyAttempts

from . import files
from .ingest import IngestError
from .locks import dataset_lock_pk, expired_upload_lock, upload_lock
from .models import Dataset, UploadSession

log = logging.getLogger(__name__)

#: seconds an owner with too many open sessions is told to wait
SESSIONS_RETRY_AFTER = 60


@dataclass(frozen=True)
class Range:
    """A part's place in the file, from ``Content-Range: bytes START-END/TOTAL`` (END inclusive)."""

    start: int
    end: int
    total: int

    @property
    def length(self) -> int:
        return self.end - self.start + 1


def _not_found() -> NotFound:
    return NotFound("no such upload among yours (or it expired)", fields={"upload": ["Open a new upload."]})


def _open_uploads(owner):
    return visibility.owned_uploads(owner).filter(expires_at__gt=timezone.now())


def upload_get(*, user, upload_id: str) -> UploadSession:
    """The state of one of the user's open sessions (404 otherwise: another owner's does not exist)."""
    session = _open_uploads(user).filter(public_id=str(upload_id)).first()
    if session is None:
        raise _not_found()
    return session


def upload_open(*, owner, size: int, filename: str = "") -> UploadSession:
    """Open a session for a file of ``size`` bytes (at most ``UPLOAD_MAX_BYTES``); at most
    ``UPLOAD_SESSIONS_PER_OWNER`` open at once per owner (429 beyond, under the owner's lock)."""
    require_role(owner, "owner")
    limit = settings.UPLOAD_MAX_BYTES
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= limit:
        raise InvalidInput(f"the size must be between 1 and {limit:,} bytes",
                           fields={"size": [f"Between 1 and {limit:,} bytes."]})
    with transaction.atomic():
        user_lock(user=owner)
        most = settings.UPLOAD_SESSIONS_PER_OWNER
        if _open_uploads(owner).count() >= most:
            raise TooManyAttempts(
                f"you already have {most} uploads open, the most at once: finish one (make a dataset of it) "
                "or abandon it (DELETE), then try again",
                retry_after=SESSIONS_RETRY_AFTER, code="too_many_uploads",
            )
        return UploadSession.objects.create(
            owner=owner, size=size, filename=(filename or "").strip()[:255],
            expires_at=timezone.now() + timedelta(seconds=settings.UPLOAD_SESSION_TTL),
        )


def _repeat_of_last(session: UploadSession, where: Range, digest: str) -> bool:
    """The part is the session's last one sent again, byte for byte (its answer was lost)."""
    if not session.parts:
        return False
    last = session.parts[-1]
    return (where.start == session.received - last["size"] and where.end == session.received - 1
            and digest == last["sha256"])


def _check(session: UploadSession, where: Range, data: bytes, digest: str) -> bool:
    """Whether the part is new (True) or a repeat of the last (False); refuses any other."""
    if where.total != session.size:
        raise InvalidInput(
            f"the Content-Range's total ({where.total:,}) is not the upload's size ({session.size:,})",
            fields={"Content-Range": [f"The total must be {session.size}."]},
        )
    if where.length != len(data):
        raise InvalidInput(
            f"the Content-Range says {where.length:,} bytes but the body has {len(data):,}",
            fields={"Content-Range": ["The range must match the body's length."]},
        )
    if _repeat_of_last(session, where, digest):
        return False
    if where.start != session.received:
        raise OffsetMismatch(
            f"the part starts at byte {where.start:,} but the upload has received {session.received:,} bytes: "
            f"send the part that starts at {session.received:,}",
            received=session.received,
        )
    return True


def upload_part(*, owner, upload_id: str, where: Range, data: bytes) -> UploadSession:
    """Add one part (``data``, at ``where``) to the owner's session; see the module's docstring."""
    require_role(owner, "owner")
    if not data:
        raise InvalidInput("the part is empty", fields={"body": ["Send at least one byte."]})
    digest = hashlib.sha256(data).hexdigest()
    session = upload_get(user=owner, upload_id=upload_id)
    if not _check(session, where, data, digest):  # checked before sealing, and again under the lock
        return session
    name = f"uploads/{session.public_id}/part-{where.start:012d}-{uuid.uuid4().hex}.sealed"
    stored = files.seal_into_storage(io.BytesIO(data), name)[0]
    try:
        with transaction.atomic():
            session = upload_lock(owner=owner, upload_id=upload_id)
            if session is None:
                raise _not_found()
            if not _check(session, where, data, digest):  # a retry that raced its own first try
                transaction.on_commit(lambda: files.delete(stored))
                return session
            session.parts = [*session.parts, {"name": stored, "size": len(data), "sha256": digest}]
            session.received += len(data)
            session.save(update_fields=["parts", "received"])
    except BaseException:
        files.delete(stored)
        raise
    return session


def _delete_with_parts(session: UploadSession) -> None:
    names = [part["name"] for part in session.parts]
    UploadSession.objects.filter(pk=session.pk).delete()
    transaction.on_commit(lambda: files.delete(*names))


def upload_abandon(*, owner, upload_id: str) -> None:
    """Delete the owner's open session and its parts (404 if there is none)."""
    with transaction.atomic():
        session = upload_lock(owner=owner, upload_id=upload_id)
        if session is None:
            raise _not_found()
        _delete_with_parts(session)


def upload_take(*, owner, upload_id: str) -> UploadSession:
    """Inside the transaction creating a dataset (after the owner's lock): the complete session
    ``upload_id``, locked; 404 if there is none, 400 if not all of its bytes have arrived. The
    caller binds it to the dataset (``session.dataset``), which closes it to parts."""
    session = upload_lock(owner=owner, upload_id=upload_id)
    if session is None:
        raise _not_found()
    if session.received != session.size:
        raise InvalidInput(
            f"the upload is incomplete: {session.received:,} of {session.size:,} bytes received; send the rest "
            "first (GET the upload to see where it stands)",
            fields={"upload": [f"Only {session.received:,} of {session.size:,} bytes received."]},
        )
    return session


class _Hashing:
    """A writable file that hashes what passes on to ``out`` (a file, or another ``_Hashing``)."""

    def __init__(self, out):
        self.out, self.sha = out, hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        return self.out.write(data)


def upload_join(*, dataset: Dataset, path: str) -> None:
    """In the ingest task of a dataset made from a session: join its parts in order into the local
    file ``path`` (in a private folder), store the joined file sealed as the dataset's upload (a
    task run again after a crash then reads that), set its size and content hash, and delete the
    session and its parts. Raises ``IngestError`` if the parts are missing or do not add up."""
    session = UploadSession.objects.filter(dataset=dataset).first()
    if session is None:
        raise IngestError(["the uploaded parts are gone (the upload was abandoned); upload the file again"])
    whole = _Hashing(None)
    with open(path, "wb") as out:
        os.chmod(path, 0o600)
        whole.out = out
        for part in session.parts:
            piece = _Hashing(whole)
            files.unseal_into(part["name"], piece)
            if piece.sha.hexdigest() != part["sha256"]:
                raise IngestError(["a part of the upload does not match what was received; upload the file again"])
        size = out.tell()
    sha = whole.sha
    if size != session.size:
        raise IngestError([f"the upload's parts add up to {size:,} bytes, not {session.size:,}; upload it again"])
    stored = files.seal_path(path, files.new_name(dataset.public_id, "upload", ""))
    with transaction.atomic():
        current = dataset_lock_pk(pk=dataset.pk)
        if current is None or current.upload_file or current.status != Dataset.Status.PROCESSING:
            transaction.on_commit(lambda: files.delete(stored))  # another run joined it first
            return
        current.upload_file, current.upload_size, current.content_hash = stored, size, sha.hexdigest()
        current.save(update_fields=["upload_file", "upload_size", "content_hash"])
        _delete_with_parts(session)
    dataset.upload_file, dataset.upload_size, dataset.content_hash = stored, size, sha.hexdigest()


def upload_discard_for(*, dataset_pk: int) -> None:
    """A dataset made from a session failed before its parts were joined: delete them."""
    session = UploadSession.objects.filter(dataset_id=dataset_pk).first()
    if session is not None:
        _delete_with_parts(session)


def uploads_sweep(*, now=None) -> int:
    """Delete the sessions past ``expires_at`` never made into a dataset, and their parts (the
    periodic task; idempotent). Returns how many were deleted."""
    now = now or timezone.now()
    swept = 0
    expired = UploadSession.objects.filter(dataset__isnull=True, expires_at__lte=now)
    for pk in expired.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            session = expired_upload_lock(pk=pk, now=now)
            if session is not None:
                _delete_with_parts(session)
                swept += 1
    if swept:
        log.info("swept %d expired uploads", swept)
    return swept
