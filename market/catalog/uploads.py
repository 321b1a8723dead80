"""The limits of uploads: handlers that stop a file at ``UPLOAD_MAX_BYTES`` while it streams in,
the bounds of reading one (:func:`ingest_limits`), and how many one owner may have being read at
once (:func:`processing_check`).

Django hands a multipart file to its handlers chunk by chunk: small files stay
in memory, larger ones go to a temporary file (``FILE_UPLOAD_TEMP_DIR``,
mode 0600). Past the limit the file is dropped (``StopUpload``: the rest of the body is read
and discarded) and the request is marked ``upload_too_large = limit``, whatever its
declared length (a chunked body has none): the API answers 413
(``market.api.parsers``), the owner's page shows the limit at the file input.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import MemoryFileUploadHandler, StopUpload, TemporaryFileUploadHandler

from market.accounts.locks import user_lock
from market.core import visibility
from market.core.errors import TooManyAttempts

from .bounded import Limits, MiB
from .models import Dataset

#: seconds an owner refused for having too many datasets being read is told to wait
PROCESSING_RETRY_AFTER = 30


class _Limited:
    def new_file(self, *args, **kwargs):
        self._received = 0
        return super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        self._received = getattr(self, "_received", 0) + len(raw_data)
        limit = settings.UPLOAD_MAX_BYTES
        if self._received > limit:
            if self.request is not None:
                self.request.upload_too_large = limit
            raise StopUpload(connection_reset=False)
        return super().receive_data_chunk(raw_data, start)


class LimitedMemoryFileUploadHandler(_Limited, MemoryFileUploadHandler):
    """Files up to ``FILE_UPLOAD_MAX_MEMORY_SIZE`` in memory (then the next handler takes over)."""


class LimitedTemporaryFileUploadHandler(_Limited, TemporaryFileUploadHandler):
    """Larger files to a temporary file, chunk by chunk, up to ``UPLOAD_MAX_BYTES``."""


def too_large_message(limit: int) -> str:
    return f"The file is larger than the limit of {limit:,} bytes."


def ingest_limits() -> Limits:
    """The bounds of reading a dataset, from the settings (``INGEST_*``, ``UPLOAD_MAX_UNCOMPRESSED_BYTES``)."""
    return Limits(
        memory=settings.INGEST_MEMORY_BUDGET_MB * MiB, row_group=settings.INGEST_MAX_ROW_GROUP_BYTES,
        uncompressed=settings.UPLOAD_MAX_UNCOMPRESSED_BYTES, threads=settings.INGEST_THREADS,
    )


def processing_check(*, owner, lock: bool = False) -> None:
    """Refuse (429, ``Retry-After``) an upload from an owner who already has
    ``INGEST_MAX_PROCESSING_PER_OWNER`` datasets being read: one owner cannot fill the ingest
    queue for everyone. With ``lock`` (inside the transaction that creates the dataset) the
    owner's row is locked first, so two uploads at once count each other."""

    if lock:
        user_lock(user=owner)
    most = settings.INGEST_MAX_PROCESSING_PER_OWNER
    busy = visibility.owned_datasets(owner).filter(status=Dataset.Status.PROCESSING).count()
    if busy >= most:
        raise TooManyAttempts(
            f"you already have {busy} datasets being read, the most at once; upload this one when one of them "
            "is ready or has failed",
            retry_after=PROCESSING_RETRY_AFTER, code="too_many_processing",
        )
