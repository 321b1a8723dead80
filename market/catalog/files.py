"""Datasets' files: sealed (``market.core.crypto``) in Django's storage, opened only as private
temporary copies.

Every file of a dataset (the upload as sent, the raw text Parquet, the typed
Parquet the statistics read) lives in the ``default`` storage (the media
folder, or an S3-compatible store by configuration: ``STORAGES``), sealed
with the encryption key; the encryption context binds it to its storage name,
so a file swapped for another does not open. It is streamed in chunks both
ways: never whole in memory, never in a database row. A decrypted copy exists
only inside :func:`private_dir` (a 0700 temporary folder, always removed).

* :func:`dataset_table_path` - a context manager yielding the path of a
  decrypted copy of a dataset's typed Parquet file (for DuckDB);
* :func:`files_reseal` - re-seal every dataset file with the current key (key rotation).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages

from market.core import crypto

from .locks import dataset_lock_pk
from .models import Dataset

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


def storage():
    return storages["default"]


def file_context(name: str) -> bytes:
    return b"gradual/dataset-file/" + name.encode()


@contextlib.contextmanager
def private_dir() -> Iterator[str]:
    """A temporary folder only this process's user can enter (0700), removed on exit whatever happens."""
    base = getattr(settings, "DATASET_TEMP_DIR", None) or None
    path = tempfile.mkdtemp(prefix="gradual-", dir=base)
    os.chmod(path, 0o700)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def new_name(dataset_public_id: str, kind: str, suffix: str = ".parquet") -> str:
    """A fresh storage name for one of a dataset's files (never reused: a re-run writes a new one)."""
    return f"datasets/{dataset_public_id}/{kind}-{uuid.uuid4().hex}{suffix}.sealed"


class _Hashing:
    """Reads from ``f``, hashing and counting what passes, stopping with ``TooLarge`` past ``limit``."""

    def __init__(self, f, limit: int | None):
        self.f, self.limit, self.size = f, limit, 0
        self.sha = hashlib.sha256()

    def read(self, n=-1):
        chunk = self.f.read(n if n and n > 0 else _CHUNK)
        self.size += len(chunk)
        if self.limit is not None and self.size > self.limit:
            raise TooLarge(self.limit)
        self.sha.update(chunk)
        return chunk


class TooLarge(ValueError):
    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(f"the file is larger than the limit of {limit:,} bytes")


def seal_into_storage(src, name: str, *, limit: int | None = None) -> tuple[str, str, int]:
    """Seal the readable binary file ``src`` into storage under ``name`` (streamed).
    Returns (the name actually saved, the sha256 of the plain bytes, their size).
    Raises ``TooLarge`` past ``limit`` bytes (nothing is kept)."""
    hashing = _Hashing(src, limit)
    with private_dir() as tmp:
        sealed_path = os.path.join(tmp, "sealed")
        with open(sealed_path, "wb") as dst:
            crypto.seal_stream(hashing, dst, context=file_context(name))
        with open(sealed_path, "rb") as f:
            saved = storage().save(name, File(f, name=os.path.basename(name)))
    if saved != name:  # the storage renamed it: the context names the original; seal again under the new name
        storage().delete(saved)
        raise RuntimeError(f"storage name {name!r} was taken")
    return saved, hashing.sha.hexdigest(), hashing.size


def seal_path(path: str, name: str) -> str:
    """Seal the local file ``path`` into storage under ``name``."""
    with open(path, "rb") as src:
        return seal_into_storage(src, name)[0]


def unseal_to(name: str, path: str) -> int:
    """Decrypt the stored file ``name`` into the local file ``path`` (inside a private folder)."""
    with storage().open(name, "rb") as src, open(path, "wb") as dst:
        os.chmod(path, 0o600)
        return crypto.unseal_stream(src, dst, context=file_context(name))


def unseal_into(name: str, dst) -> int:
    """Decrypt the stored file ``name`` onto the end of the open binary file ``dst`` (the parts of a
    resumable upload, joined in order); returns the bytes written."""
    with storage().open(name, "rb") as src:
        return crypto.unseal_stream(src, dst, context=file_context(name))


def delete(*names: str) -> None:
    for name in names:
        if name:
            try:
                storage().delete(name)
            except Exception:  # a missing file is already gone
                log.warning("could not delete the stored file %s", name)


@contextlib.contextmanager
def decrypted(name: str, suffix: str = ".parquet") -> Iterator[str]:
    """The path of a decrypted copy of the stored file ``name``, removed on exit."""
    with private_dir() as tmp:
        path = os.path.join(tmp, "plain" + suffix)
        unseal_to(name, path)
        yield path


@contextlib.contextmanager
def dataset_table_path(dataset) -> Iterator[str]:
    """The path of a decrypted copy of ``dataset``'s typed Parquet file (the layout of
    ``market.catalog.spec.columns``), for the time of the ``with`` block only."""
    if not dataset.typed_file:
        raise ValueError(f"dataset {dataset.public_id} has no typed file (status {dataset.status})")
    with decrypted(dataset.typed_file) as path:
        yield path


def _sealed_key_id(name: str) -> str | None:
    """The id of the key that sealed the stored file ``name`` (its first bytes); None if unreadable."""
    try:
        with storage().open(name, "rb") as f:
            return crypto.key_id_of(f.read(64))
    except (crypto.CryptoError, OSError):
        return None


@crypto.register_rotator("dataset files")
def files_reseal() -> crypto.Rotated:
    """Re-seal every dataset file not under the current key (``manage.py rotate_encryption_keys``):
    each is decrypted and sealed again under a new name; the dataset row then points at the new
    file (under its row lock, only if it still names the old one) and the old file is deleted,
    so a crash half-way loses nothing. Idempotent: a file already under the current key is left
    alone. A file that does not open is counted as damaged and left as it is."""
    from django.db import transaction

    done = crypto.Rotated()
    current = crypto.current_key_id()
    for pk in Dataset.objects.order_by("pk").values_list("pk", flat=True).iterator():
        dataset = Dataset.objects.only("pk", "public_id", "upload_file", "raw_file", "typed_file").get(pk=pk)
        for field in ("upload_file", "raw_file", "typed_file"):
            old = getattr(dataset, field)
            if not old or not storage().exists(old):
                continue
            key_id = _sealed_key_id(old)
            if key_id is None:
                done.damaged += 1
                continue
            if key_id == current:
                done.unchanged += 1
                continue
            try:
                with decrypted(old, suffix="") as plain:
                    new = seal_path(plain, new_name(dataset.public_id, field.split("_")[0]))
            except crypto.CryptoError:
                done.damaged += 1
                continue
            with transaction.atomic():
                locked = dataset_lock_pk(pk=pk)
                moved = locked is not None and getattr(locked, field) == old
                if moved:
                    Dataset.objects.filter(pk=pk).update(**{field: new})
            if moved:
                delete(old)
                done.resealed += 1
            else:  # the dataset moved on meanwhile (reprocessed): the new copy is not needed
                delete(new)
                done.unchanged += 1
    return done
