"""Upload handlers that stop a file at ``UPLOAD_MAX_BYTES`` while it streams in.

Django hands a multipart file to its handlers chunk by chunk: small files stay
in memory, larger ones go to a temporary file (``FILE_UPLOAD_TEMP_DIR``,
mode 0600). Past the limit the upload stops with ``RequestDataTooBig`` (the
API answers 413, ``market.api.parsers``), whatever the request's declared
length (a chunked body has none).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import MemoryFileUploadHandler, TemporaryFileUploadHandler


class _Limited:
    def new_file(self, *args, **kwargs):
        self._received = 0
        return super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        self._received = getattr(self, "_received", 0) + len(raw_data)
        limit = settings.UPLOAD_MAX_BYTES
        if self._received > limit:
            raise RequestDataTooBig(f"The file is larger than the limit of {limit:,} bytes.")
        return super().receive_data_chunk(raw_data, start)


class LimitedMemoryFileUploadHandler(_Limited, MemoryFileUploadHandler):
    """Files up to ``FILE_UPLOAD_MAX_MEMORY_SIZE`` in memory (then the next handler takes over)."""


class LimitedTemporaryFileUploadHandler(_Limited, TemporaryFileUploadHandler):
    """Larger files to a temporary file, chunk by chunk, up to ``UPLOAD_MAX_BYTES``."""
