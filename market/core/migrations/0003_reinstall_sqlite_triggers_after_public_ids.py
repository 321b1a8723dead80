"""Reinstall the SQLite triggers of 0001 after the public-id migrations rebuilt
``catalog_dataset``, ``releases_release`` and ``ledger_transfer`` (and dropped the
append-only triggers of the last two for the fill). PostgreSQL: nothing to do."""

from django.db import migrations

from market.core.migration_helpers import reinstall_sqlite_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0002_reinstall_sqlite_triggers"),
        ("catalog", "0005_dataset_public_id"),
        ("releases", "0003_release_public_id"),
        ("ledger", "0002_transfer_public_id"),
    ]
    operations = [migrations.RunPython(reinstall_sqlite_triggers, migrations.RunPython.noop)]
