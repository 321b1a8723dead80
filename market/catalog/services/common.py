"""What the owners' writes share: the owner role, read again under a lock, text inputs, and a
dataset's records read by its compute backend outside every lock."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from market.accounts.roles import require_role
from market.core.errors import Conflict, InvalidInput

from .. import backends


def _require_owner(user) -> None:
    require_role(user, "owner")


def _require_owner_still(user) -> None:
    """The owner role read again, under a lock on one of the user's datasets: dropping the role
    (``market.catalog.roles``) locks them all first, so a listing cannot open meanwhile."""
    if not get_user_model().objects.filter(pk=user.pk, is_owner=True).exists():
        require_role(None, "owner")


def _text(value, name: str, *, max_length: int, required: bool = True) -> str:
    text = (value or "").strip()
    if required and not text:
        raise InvalidInput(f"{name} is required", fields={name: ["This field is required."]})
    if len(text) > max_length:
        raise InvalidInput(f"{name} is too long", fields={name: [f"At most {max_length} characters."]})
    return text


#: the longest record name, singular or plural (``Dataset.record_name``)


def _checkpoint(name: str) -> None:
    """A named point in listing creation where race tests act (``"computed"``: the answer is
    computed, the dataset's lock not taken yet; ``"prepared"``: the same in a listing's preparation)."""


def _computed(dataset, what: str, run, *, backend=None):
    """``run(table, backend)`` on the dataset's records as its compute backend reads them
    (``market.catalog.backends``: a decrypted copy of the typed file for DuckDB, the sealed file for
    Spark), outside any lock (the file is not read under the dataset's lock: ``_still_as_computed``
    checks, under it, that nothing moved). A ``ValueError`` is the owner's input (400, on ``what``);
    a file gone meanwhile (replaced by a new processing run, re-sealed) is the dataset having changed (409).
    ``backend``: a given one (microdata is read by DuckDB on any deployment)."""
    backend = backend or backends.backend_for(dataset)
    try:
        with backends.dataset_source(dataset, backend) as table:
            return run(table, backend)
    except ValueError as exc:
        raise InvalidInput(str(exc), fields={what: [str(exc)]}) from None
    except OSError:
        raise _changed() from None


def _changed() -> Conflict:
    return Conflict(
        "the dataset changed while the listing was being computed (a new file, other columns or another budget); "
        "nothing was created: try again", code="dataset_changed",
    )
