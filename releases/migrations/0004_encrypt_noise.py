"""Stored noise encrypted at rest (market.core.crypto): l2 paths' jump lists and every noise point.

Noise points are append-only (a trigger of ``releases/triggers.py``): the trigger is lifted
for this rewrite only, in the same transaction (``append_only_lifted``); the
noise itself does not change. Forwards seals what is still in the clear (what
already opens is left alone); backwards opens it again.
"""

from django.db import migrations, models

from market.core import crypto
from market.core.migration_helpers import append_only_lifted

BATCH = 500


def _is_sealed(blob: bytes, context: bytes) -> bool:
    if blob[:4] != crypto.SEAL_MAGIC:
        return False
    try:
        crypto.unseal(blob, context=context)
    except crypto.CryptoError:
        return False
    return True


def _seal(blob, ctx):
    return None if _is_sealed(blob, ctx) else crypto.seal(blob, context=ctx)


def _open(blob, ctx):
    return crypto.unseal(blob, context=ctx) if _is_sealed(blob, ctx) else None


def _rewrite(apps, schema_editor, change):
    NoisePath = apps.get_model("releases", "NoisePath")
    NoisePoint = apps.get_model("releases", "NoisePoint")
    paths = []
    for path in NoisePath.objects.exclude(jumps=None).only("pk", "jumps").order_by("pk"):
        new = change(bytes(path.jumps), crypto.jumps_context(path.pk))
        if new is not None:
            path.jumps = new
            paths.append(path)
    NoisePath.objects.bulk_update(paths, ["jumps"], batch_size=BATCH)
    pks = list(NoisePoint.objects.order_by("pk").values_list("pk", flat=True))
    if not pks:
        return
    with append_only_lifted(schema_editor.connection, NoisePoint._meta.db_table):
        for start in range(0, len(pks), BATCH):
            rows = []
            for point in NoisePoint.objects.filter(pk__in=pks[start : start + BATCH]).only("pk", "path_id", "level", "noise"):
                new = change(bytes(point.noise), crypto.noise_context(point.path_id, point.level))
                if new is not None:
                    point.noise = new
                    rows.append(point)
            NoisePoint.objects.bulk_update(rows, ["noise"])


def seal_noise(apps, schema_editor):
    _rewrite(apps, schema_editor, _seal)


def open_noise(apps, schema_editor):
    _rewrite(apps, schema_editor, _open)


class Migration(migrations.Migration):
    dependencies = [("releases", "0003_release_public_id")]
    operations = [
        migrations.AlterField(
            model_name="noisepath",
            name="jumps",
            field=models.BinaryField(
                blank=True, null=True,
                help_text="l2 only: the path's jump list from the ceiling down (releases.engine.path.l2_to_bytes), encrypted "
                "for this row; read and written only through jump_list() and set_jump_list()",
            ),
        ),
        migrations.AlterField(
            model_name="noisepoint",
            name="noise",
            field=models.BinaryField(
                help_text="float64, little-endian, one per released value, encrypted for this path and level; "
                "read and written only through vector() and set_vector()"
            ),
        ),
        migrations.RunPython(seal_noise, open_noise, elidable=False),
    ]
