"""Reinstall the SQLite triggers of 0001 after later table changes.

SQLite cannot alter a column in place: Django rebuilds the table, and the
rebuild drops that table's triggers (``releases.0002`` did so to
``releases_noisepath``). This migration drops and recreates every SQLite
trigger of 0001; a later migration that rebuilds a table must be followed by
the same step (``tests/marketplace/test_ledger_invariants.py`` checks that every
trigger is installed). PostgreSQL alters tables in place and keeps its
triggers, so nothing is done there.
"""

import importlib
import re

from django.db import migrations

invariants = importlib.import_module("market.core.migrations.0001_database_invariants")


def reinstall(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        for sql in invariants.SQLITE:
            name = re.search(r"CREATE TRIGGER (\w+)", sql).group(1)
            cursor.execute(f"DROP TRIGGER IF EXISTS {name}")
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_database_invariants"),
        ("releases", "0002_l2_paths"),
        ("catalog", "0004_listing_trust_capped"),
    ]
    operations = [migrations.RunPython(reinstall, migrations.RunPython.noop)]
