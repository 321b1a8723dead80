"""The database invariants survive every migration, on both databases; each app's
trigger migration installs its triggers, drops them going back, and leaves one copy
where the former ``core`` migrations had installed them."""

import pytest
from django.core.management import call_command
from django.db import connection

from market.catalog.triggers import TRIGGERS as CATALOG
from market.core.migration_helpers import applied_triggers
from market.core.triggers import trigger_names
from market.ledger.triggers import TRIGGERS as LEDGER
from market.trading.triggers import TRIGGERS as TRADING
from releases.triggers import TRIGGERS as RELEASES

#: app -> (its triggers, the migration before its trigger migration)
APPS = {
    "ledger": (LEDGER, "0004_payouts"),
    "catalog": (CATALOG, "0020_listing_plan_document"),
    "trading": (TRADING, "0002_purchase_unsent"),
    "releases": (RELEASES, "0008_path_mechanism"),
}
#: the functions the former core migrations shared between apps, and the per-app ones that replace them
SHARED = {
    "ledger_append_only": "append_only",
    "catalog_append_only": "append_only",
    "releases_append_only": "append_only",
    "trading_within_ceiling": "within_ceiling",
    "releases_within_ceiling": "within_ceiling",
}


def names(triggers) -> set[str]:
    if connection.vendor == "postgresql":
        return {name for name, _ in triggers.postgres_triggers()}
    return set(trigger_names(triggers.sqlite))


def installed() -> list[str]:
    """Every trigger name in the database, once per copy."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        return [row[0] for row in cursor.fetchall()]


def functions() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace")
        return {row[0] for row in cursor.fetchall()}


def assert_applied_triggers_installed() -> None:
    """Every trigger of every applied trigger migration is there (none, where a test went back before them)."""
    expected = set().union(*(names(t) for t in applied_triggers(connection)))
    assert expected <= set(installed()), expected - set(installed())


@pytest.mark.django_db
def test_every_database_trigger_is_installed():
    """Later migrations must not lose the invariants' triggers (SQLite drops a
    table's triggers when Django rebuilds it)."""
    # all four apps' (compared by what they install: a test that migrated back and forth has its own copies)
    assert sorted(sorted(names(t)) for t in applied_triggers(connection)) == sorted(sorted(names(t)) for t, _ in APPS.values())
    assert_applied_triggers_installed()
    expected = set().union(*(names(t) for t, _ in APPS.values()))
    assert {"ledger_leg_apply", "catalog_dataset_budget_floor", "releases_bitreport_append_only"} <= expected


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("app", sorted(APPS))
def test_going_back_past_an_apps_trigger_migration_drops_its_triggers_and_forwards_puts_them_back(app):
    triggers, before = APPS[app]
    others = set().union(*(names(t) for label, (t, _) in APPS.items() if label != app))
    try:
        call_command("migrate", app, before, verbosity=0)
        assert not names(triggers) & set(installed())
        assert others <= set(installed())  # the other apps keep theirs
        if connection.vendor == "postgresql":
            assert not set(triggers.postgres_functions()) & functions()
    finally:
        call_command("migrate", verbosity=0)
    assert names(triggers) <= set(installed())
    assert_applied_triggers_installed()


def _as_core_installed_them(sql: str) -> str:
    """An app's PostgreSQL triggers as the former core migrations made them: same trigger names,
    functions shared between apps (``append_only()``, ``within_ceiling()``)."""
    for own, shared in SHARED.items():
        sql = sql.replace(f"FUNCTION {own}()", f"FUNCTION {shared}()")
    return sql


@pytest.mark.django_db(transaction=True)
def test_a_database_with_the_former_core_triggers_keeps_exactly_one_copy_of_each():
    try:
        for app, (_, before) in APPS.items():
            call_command("migrate", app, before, verbosity=0)
        assert not set().union(*(names(t) for t, _ in APPS.values())) & set(installed())
        with connection.cursor() as cursor:  # the triggers as core installed them, before the apps' migrations
            for triggers, _ in APPS.values():
                for sql in triggers.postgres if connection.vendor == "postgresql" else triggers.sqlite:
                    cursor.execute(_as_core_installed_them(sql))
        if connection.vendor == "postgresql":
            assert {"append_only", "within_ceiling"} <= functions()
    finally:
        call_command("migrate", verbosity=0)
    everything = set().union(*(names(t) for t, _ in APPS.values()))
    copies = [name for name in installed() if name in everything]
    assert sorted(copies) == sorted(everything)  # each once
    if connection.vendor == "postgresql":
        assert not {"append_only", "within_ceiling"} & functions()  # the shared functions went with their last trigger
        assert set(SHARED) <= functions()
