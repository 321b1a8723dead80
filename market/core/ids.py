"""Opaque public identifiers: what URLs and API answers call a dataset, a release or a transfer.

A public id is a short prefix naming the kind of thing ("ds_", "rel_", "tr_"),
as Stripe does, then 22 characters drawn from 62 with :mod:`secrets` (about 131
random bits): unguessable, and unrelated from one object to the next, so ids
reveal neither how many objects exist nor in which order they were made.
Internal foreign keys keep the integer primary key; only the edges (URLs,
answers, forms, file names) speak in public ids.
"""

from __future__ import annotations

import secrets
import string

ALPHABET = string.digits + string.ascii_letters  # base62
LENGTH = 22
#: the column's width: the longest prefix and the random part, with room to spare
MAX_LENGTH = 32

PREFIXES = {"dataset": "ds_", "release": "rel_", "transfer": "tr_", "api_key": "key_", "upload": "up_"}


def random_base62(n: int) -> str:
    """``n`` characters drawn uniformly from the 62 letters and digits by :mod:`secrets`."""
    return "".join(secrets.choice(ALPHABET) for _ in range(n))


def public_id(prefix: str) -> str:
    return prefix + random_base62(LENGTH)


# one function per kind: model fields and migrations name them as their default
def new_dataset_id() -> str:
    return public_id(PREFIXES["dataset"])


def new_upload_id() -> str:
    return public_id(PREFIXES["upload"])


def new_release_id() -> str:
    return public_id(PREFIXES["release"])


def new_transfer_id() -> str:
    return public_id(PREFIXES["transfer"])
