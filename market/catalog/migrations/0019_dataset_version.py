"""``Dataset.version``: bumped by every change of what a new listing's answer or budget check reads
(the typed file, the columns, the status, the budget), so that listing creation can compute the
answer before taking the dataset's lock and refuse if the dataset moved meanwhile.

Numbered 0030 so the integrator can order it after the other helpers' catalog migrations (0018+).
On SQLite the triggers that name ``catalog_dataset`` are dropped for the table's rebuild and put
back after it (``market.core.migration_helpers``). Reversible: the field goes.
"""

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0018_listing_mechanism"),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_dataset"), reinstall_sqlite_triggers_if_installed),
        migrations.AddField(
            model_name="dataset",
            name="version",
            field=models.PositiveBigIntegerField(
                default=0, editable=False,
                help_text="bumped by every change of what a listing's answer or budget check reads (the typed file, "
                "the columns, the status, the budget): a listing computed outside the dataset's lock is created only "
                "if the version is still the one it read (market.catalog.services.listing_create)",
            ),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("catalog_dataset")),
    ]
