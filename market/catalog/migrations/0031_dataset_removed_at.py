"""A dataset can be removed by its owner (``Dataset.removed_at``, ``market.catalog.services.dataset_remove``):
a soft state, so that what the ledger, the releases and the budget's history refer to stays. Nothing
else changes; reversible. SQLite rebuilds ``catalog_dataset``: the triggers naming it (and its
listings) are dropped first and installed again at the end, both ways (as in 0021)."""

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0030_triggers"),
    ]

    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_dataset", "catalog_listing"), reinstall_sqlite_triggers),
        migrations.AddField(
            model_name="dataset",
            name="removed_at",
            field=models.DateTimeField(
                blank=True, null=True,
                help_text="when its owner removed it (market.catalog.services.dataset_remove): hidden from the owner's "
                "pages, its listings closed, its stored files deleted; kept as a row for what the ledger, the releases "
                "and the budget's history refer to",
            ),
        ),
        migrations.RunPython(reinstall_sqlite_triggers, drop_sqlite_triggers_naming("catalog_dataset", "catalog_listing")),
    ]
