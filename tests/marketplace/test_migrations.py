"""The database invariants survive every migration, on both databases."""

import pytest


@pytest.mark.django_db
def test_every_database_trigger_is_installed():
    """Later migrations must not lose the invariants' triggers (SQLite drops a
    table's triggers when Django rebuilds it)."""
    import importlib
    import re

    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    invariants = importlib.import_module("market.core.migrations.0001_database_invariants")

    budget = importlib.import_module("market.core.migrations.0004_dataset_budget_triggers")
    # the dataset budget's triggers, unless a test migrated back before them
    applied = ("core", "0004_dataset_budget_triggers") in MigrationRecorder(connection).applied_migrations()
    budget_sqlite, budget_postgres = (budget.SQLITE, budget.POSTGRES) if applied else ([], [])
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            expected = {re.search(r"CREATE TRIGGER (\w+)", sql).group(1) for sql in invariants.SQLITE + budget_sqlite}
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        else:
            expected = set(re.findall(r"CREATE (?:CONSTRAINT )?TRIGGER (\w+)", " ".join(invariants.POSTGRES + budget_postgres)))
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        installed = {row[0] for row in cursor.fetchall()}
    assert expected and expected <= installed, expected - installed
