"""True answers and stored noise are encrypted at rest (issue 12, section 1).

The raw database columns never hold the float bytes of a listing's answer or of
its noise; a blob copied to another row does not open; ``rotate_encryption_keys``
moves everything to a new key (idempotently, the append-only guard back in force
after it) so that the old key can be removed; the data migrations seal rows
written in the clear and their reverses open them again.
"""

from __future__ import annotations

import base64
import importlib
import io
import types
from decimal import Decimal

import numpy as np
import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import DatabaseError, IntegrityError, connection, transaction

from market.catalog.models import Listing
from market.core import crypto
from market.core.migration_helpers import append_only_lifted
from market.trading.services import purchase_create
from releases.models import NoisePath, NoisePoint, Release
from tests.marketplace.test_vector import centroid_listing, places  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db
DB_ERRORS = (IntegrityError, DatabaseError)
answers_migration = importlib.import_module("market.catalog.migrations.0008_encrypt_answers")
noise_migration = importlib.import_module("releases.migrations.0004_encrypt_noise")


def entry(key_id: str, byte: int) -> str:
    return f"{key_id}:{base64.b64encode(bytes([byte]) * 32).decode()}"


OLD, NEW = entry("old", 1), entry("new", 2)


def raw(table: str, column: str, pk: int) -> bytes:
    """The column's bytes as the database holds them (no model code in between)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {table} WHERE id = %s", [pk])
        return bytes(cursor.fetchone()[0])


def buy(buyer, listing, eps, capture):
    with capture(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon=eps)
    purchase.refresh_from_db()
    assert purchase.status == "released", purchase.failure_reason
    return purchase


def float_windows(values: np.ndarray) -> list[bytes]:
    """Every value's 8 bytes (float64, or int64 for the lattice path's integers): none may appear
    anywhere in a stored blob."""
    values = np.asarray(values)
    dtype = "<i8" if values.dtype.kind in "iu" else "<f8"
    return [v.tobytes() for v in values.astype(dtype)]


def stored_noise(point) -> np.ndarray:
    """A point's noise as its path stores it: int64 on the lattice path, float64 on the float path."""
    return point.noise_of(point.path.release_mechanism.noise)


def test_the_database_never_holds_a_true_answer_in_the_clear(listing):
    stored = raw("catalog_listing", "answer", listing.pk)
    truth = listing.true_answer()
    assert truth[0] == 500  # the count of make_csv's 500 rows: the answer is the real one
    assert crypto.key_id_of(stored) == crypto.current_key_id()
    assert stored[:4] == crypto.SEAL_MAGIC
    for window in float_windows(truth):
        assert window not in stored
    assert truth.tobytes() not in stored


def test_noise_points_and_jump_lists_are_encrypted(
    owner, places, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks,  # noqa: F811
    before_float_retirement,  # an old centroid listing's levels, drawn as before the retirement
):
    fund(buyer, 1000)
    buy(buyer, listing, "1", django_capture_on_commit_callbacks)
    vector = centroid_listing(owner, places, row=1)
    buy(buyer, vector, "1", django_capture_on_commit_callbacks)
    for point in NoisePoint.objects.filter(path__listing__in=[listing, vector]):
        stored = raw("releases_noisepoint", "noise", point.pk)
        assert crypto.key_id_of(stored) == crypto.current_key_id()
        noise = stored_noise(point)
        assert noise.shape == (point.path.dim,) and np.isfinite(noise).all() and noise.any()
        for window in float_windows(noise):
            assert window not in stored
    path = NoisePath.objects.get(listing=vector)
    stored = raw("releases_noisepath", "jumps", path.pk)
    levels, values = path.jump_list()
    assert crypto.key_id_of(stored) == crypto.current_key_id()
    for window in float_windows(np.concatenate([levels, values.ravel()])):
        assert window not in stored


def test_an_answer_moved_to_another_listing_does_not_open(make_listing):
    first, second = make_listing(), make_listing()
    Listing.objects.filter(pk=second.pk).update(answer=raw("catalog_listing", "answer", first.pk))
    second.refresh_from_db()
    with pytest.raises(crypto.CryptoError, match="wrong context"):
        second.true_answer()


def test_noise_moved_to_another_level_does_not_open_and_the_release_is_refunded(
    listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    fund(buyer, 1000)
    buy(buyer, listing, "1", django_capture_on_commit_callbacks)
    point = NoisePoint.objects.get(path__listing=listing)
    moved = NoisePoint(path=point.path, level=Decimal("2"), noise=point.noise, method=point.method)
    with pytest.raises(crypto.CryptoError):
        moved.vector()
    # a point whose noise does not open is damage: a release that needs it is refunded, not made
    tampered = bytearray(point.noise)
    tampered[-1] ^= 1
    with transaction.atomic():
        with append_only_lifted(connection, "releases_noisepoint"):
            NoisePoint.objects.filter(pk=point.pk).update(noise=bytes(tampered))
    with django_capture_on_commit_callbacks(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="2")
    purchase.refresh_from_db()
    assert purchase.status == "failed"
    assert "damaged" in purchase.failure_reason and "refunded" in purchase.failure_reason


@pytest.fixture
def old_key_first(settings):
    """The old key set before any fixture seals a thing (datasets' files are sealed at upload)."""
    settings.GRADUAL_ENCRYPTION_KEYS = OLD


def test_rotation_moves_everything_to_the_new_key_and_the_old_one_can_go(
    old_key_first, settings, owner, places, make_listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks,  # noqa: F811
    before_float_retirement,  # an old centroid listing's levels, drawn as before the retirement
):
    settings.GRADUAL_ENCRYPTION_KEYS = OLD
    scalar, vector = make_listing(), centroid_listing(owner, places, row=1)
    fund(buyer, 1000)
    for lst in (scalar, vector):
        buy(buyer, lst, "0.5", django_capture_on_commit_callbacks)
        buy(buyer, lst, "1", django_capture_on_commit_callbacks)
    truths = {lst.pk: lst.true_answer() for lst in (scalar, vector)}
    noise = {p.pk: stored_noise(p) for p in NoisePoint.objects.all()}
    jumps = NoisePath.objects.get(listing=vector).jump_list()
    assert len(noise) == 4

    settings.GRADUAL_ENCRYPTION_KEYS = f"{NEW},{OLD}"  # a new key first, the old one still opens
    out = io.StringIO()
    call_command("rotate_encryption_keys", stdout=out)
    report = out.getvalue()
    assert "listing answers: 2 re-encrypted, 0 already under 'new'" in report
    assert "stored noise: 5 re-encrypted, 0 already under 'new'" in report  # 4 points and one jump list
    assert "everything is under 'new'" in report
    assert "dataset files:" in report  # the datasets' sealed Parquet files too (market.catalog.files)

    settings.GRADUAL_ENCRYPTION_KEYS = NEW  # the old key removed
    for lst in (scalar, vector):
        assert crypto.key_id_of(raw("catalog_listing", "answer", lst.pk)) == "new"
        assert np.array_equal(Listing.objects.get(pk=lst.pk).true_answer(), truths[lst.pk])
    for point in NoisePoint.objects.all():
        assert crypto.key_id_of(raw("releases_noisepoint", "noise", point.pk)) == "new"
        assert np.array_equal(stored_noise(point), noise[point.pk])  # the noise itself never changes
    after = NoisePath.objects.get(listing=vector).jump_list()
    assert all(np.array_equal(a, b) for a, b in zip(after, jumps))
    # the product goes on under the new key alone: a new level is a step from the stored ones
    for lst in (scalar, vector):
        buy(buyer, lst, "2", django_capture_on_commit_callbacks)
    assert Release.objects.count() == 6

    # idempotent: a second run changes nothing
    out = io.StringIO()
    call_command("rotate_encryption_keys", stdout=out)
    assert "listing answers: 0 re-encrypted, 2 already under 'new'" in out.getvalue()
    assert "stored noise: 0 re-encrypted, 7 already under 'new'" in out.getvalue()

    # and noise points are append-only again once rotation is over
    point = NoisePoint.objects.first()
    with pytest.raises(DB_ERRORS, match="append-only"):
        with transaction.atomic():
            NoisePoint.objects.filter(pk=point.pk).update(noise=b"x")


def test_rotation_reports_what_does_not_open_and_fails(settings, make_listing):
    settings.GRADUAL_ENCRYPTION_KEYS = OLD
    good, bad = make_listing(), make_listing()
    Listing.objects.filter(pk=bad.pk).update(answer=raw("catalog_listing", "answer", good.pk))  # wrong row
    settings.GRADUAL_ENCRYPTION_KEYS = f"{NEW},{OLD}"
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 stored values did not open"):
        call_command("rotate_encryption_keys", stdout=out)
    assert "listing answers: 1 re-encrypted, 0 already under 'new', 1 DAMAGED" in out.getvalue()
    assert crypto.key_id_of(raw("catalog_listing", "answer", bad.pk)) == "old"  # left as it was


def test_an_unknown_key_is_retried_with_a_clear_error_for_the_operator(
    settings, caplog, listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks
):
    """Data sealed with a key since removed from the configuration: the release task is retried
    (the key may come back) with the reason in the log, not refunded at once as damage would be;
    the buyer never sees key names."""
    settings.GRADUAL_ENCRYPTION_KEYS = NEW
    fund(buyer, 100)
    with django_capture_on_commit_callbacks(execute=True):
        purchase, *_ = purchase_create(buyer=buyer, listing_id=listing.pk, epsilon="1")
    retries = [r.getMessage() for r in caplog.records if "Retry in" in r.getMessage()]
    assert retries and all("encrypted with key 'dev', which is not in GRADUAL_ENCRYPTION_KEYS" in m for m in retries)
    purchase.refresh_from_db()
    assert "dev" not in purchase.failure_reason and "key" not in purchase.failure_reason


def test_the_migrations_seal_rows_in_the_clear_and_their_reverses_open_them(
    listing, buyer, fund, eager_celery, django_capture_on_commit_callbacks, owner, places,  # noqa: F811
    before_float_retirement,  # an old centroid listing's levels, drawn as before the retirement
):
    vector = centroid_listing(owner, places, row=1)
    fund(buyer, 1000)
    buy(buyer, listing, "1", django_capture_on_commit_callbacks)
    buy(buyer, vector, "1", django_capture_on_commit_callbacks)
    truth = listing.true_answer()
    noise = {p.pk: stored_noise(p) for p in NoisePoint.objects.all()}
    path = NoisePath.objects.get(listing=vector)
    levels, values = path.jump_list()
    editor = types.SimpleNamespace(connection=connection)

    answers_migration.open_answers(apps, editor)
    noise_migration.open_noise(apps, editor)
    assert raw("catalog_listing", "answer", listing.pk) == truth.tobytes()  # as before this issue (int64 on the lattice)
    for pk, v in noise.items():
        assert raw("releases_noisepoint", "noise", pk) == v.tobytes()
    assert raw("releases_noisepath", "jumps", path.pk)[:4] != crypto.SEAL_MAGIC

    for _ in range(2):  # running forwards twice seals once
        answers_migration.seal_answers(apps, editor)
        noise_migration.seal_noise(apps, editor)
    assert np.array_equal(Listing.objects.get(pk=listing.pk).true_answer(), truth)
    for point in NoisePoint.objects.all():
        assert np.array_equal(stored_noise(point), noise[point.pk])
    after = NoisePath.objects.get(pk=path.pk).jump_list()
    assert np.array_equal(after[0], levels) and np.array_equal(after[1], values)
    # the append-only guard is back after the migration's rewrite
    with pytest.raises(DB_ERRORS, match="append-only"):
        with transaction.atomic():
            NoisePoint.objects.filter(pk=next(iter(noise))).update(noise=b"x")


def test_the_command_prints_a_fresh_key_entry(settings):
    out = io.StringIO()
    call_command("rotate_encryption_keys", "--new-key", "k2026", stdout=out)
    line = out.getvalue().strip()
    ring = crypto.Keyring.from_config(line)
    assert ring.ids == ["k2026"]
    with pytest.raises(CommandError, match="bad key id"):
        call_command("rotate_encryption_keys", "--new-key", "dev", stdout=io.StringIO())


def test_rotation_checks_that_what_is_under_the_current_key_opens(settings, make_listing):
    """A key id reused for other key bytes: nothing would open; rotation says so instead of
    reporting everything as already done."""
    settings.GRADUAL_ENCRYPTION_KEYS = NEW
    make_listing()
    settings.GRADUAL_ENCRYPTION_KEYS = entry("new", 3)
    out = io.StringIO()
    with pytest.raises(CommandError, match="did not open"):
        call_command("rotate_encryption_keys", stdout=out)
    assert "listing answers: 0 re-encrypted, 0 already under 'new', 1 DAMAGED" in out.getvalue()
