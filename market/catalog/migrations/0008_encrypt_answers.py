"""Listings' true answers encrypted at rest (market.core.crypto), under the current key.

Forwards seals every answer still in the clear (a value that already opens is
left alone, so running it twice changes nothing); backwards opens them again.
"""

from django.db import migrations, models

from market.core import crypto

BATCH = 500


def _rewrite(apps, schema_editor, change):
    Listing = apps.get_model("catalog", "Listing")
    pks = list(Listing.objects.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(pks), BATCH):
        rows = []
        for listing in Listing.objects.filter(pk__in=pks[start : start + BATCH]).only("pk", "answer"):
            new = change(bytes(listing.answer), crypto.answer_context(listing.pk))
            if new is not None:
                listing.answer = new
                rows.append(listing)
        Listing.objects.bulk_update(rows, ["answer"])


def _is_sealed(blob: bytes, context: bytes) -> bool:
    if blob[:4] != crypto.SEAL_MAGIC:
        return False
    try:
        crypto.unseal(blob, context=context)
    except crypto.CryptoError:
        return False  # float bytes that happen to start like a header
    return True


def seal_answers(apps, schema_editor):
    _rewrite(apps, schema_editor, lambda blob, ctx: None if _is_sealed(blob, ctx) else crypto.seal(blob, context=ctx))


def open_answers(apps, schema_editor):
    _rewrite(apps, schema_editor, lambda blob, ctx: crypto.unseal(blob, context=ctx) if _is_sealed(blob, ctx) else None)


class Migration(migrations.Migration):
    dependencies = [("catalog", "0007_neighbouring_relation")]
    operations = [
        migrations.AlterField(
            model_name="listing",
            name="answer",
            field=models.BinaryField(
                help_text="the true answer (float64), encrypted for this row (market.core.crypto): secret. "
                "Read and written only through true_answer() and set_true_answer()"
            ),
        ),
        migrations.RunPython(seal_answers, open_answers, elidable=False),
    ]
