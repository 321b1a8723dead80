# Owners' payouts (issue 15): a payouts system account, payout transfers, and the payout requests.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming_accounts, reinstall_sqlite_triggers_if_installed


#: a payout changes only from requested to paid (with its time); it is never deleted (PostgreSQL: at all;
#: SQLite: no DELETE guard, as for the ledger, so that the test runner can empty its tables)
_CHANGED = (
    "NEW.amount <> OLD.amount OR NEW.user_id <> OLD.user_id OR NEW.transfer_id <> OLD.transfer_id"
    " OR NEW.created_at <> OLD.created_at OR NEW.idempotency_key IS NOT OLD.idempotency_key"
    " OR (OLD.status = 'paid' AND (NEW.status <> 'paid' OR NEW.paid_at IS NOT OLD.paid_at))"
)
POSTGRES = f"""
    CREATE FUNCTION ledger_payout_guard() RETURNS trigger AS $$
    BEGIN
        IF TG_OP = 'DELETE' OR {_CHANGED.replace(" IS NOT ", " IS DISTINCT FROM ")} THEN
            RAISE EXCEPTION 'a payout only goes from requested to paid (% refused)', TG_OP
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END $$ LANGUAGE plpgsql;
    CREATE TRIGGER ledger_payout_guard BEFORE UPDATE OR DELETE ON ledger_payout
        FOR EACH ROW EXECUTE FUNCTION ledger_payout_guard();
"""
SQLITE = f"""CREATE TRIGGER ledger_payout_guard BEFORE UPDATE ON ledger_payout WHEN {_CHANGED}
    BEGIN SELECT RAISE(ABORT, 'a payout only goes from requested to paid (UPDATE refused)'); END"""


def install_guard(apps, schema_editor):
    sql = {"postgresql": POSTGRES, "sqlite": SQLITE}.get(schema_editor.connection.vendor)
    if sql:
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(sql)


def drop_guard(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        if vendor in ("postgresql", "sqlite"):
            cursor.execute("DROP TRIGGER IF EXISTS ledger_payout_guard" + (" ON ledger_payout" if vendor == "postgresql" else ""))
        if vendor == "postgresql":
            cursor.execute("DROP FUNCTION IF EXISTS ledger_payout_guard()")


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0011_listing_plan'),
        ('ledger', '0003_earnings_per_listing'),
        ('core', '0004_dataset_budget_triggers'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    # SQLite rebuilds ledger_account to change its CHECK: the ledger's triggers are dropped first and
    # installed again after the change, whichever way it runs (as in 0003)
    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming_accounts, reinstall_sqlite_triggers_if_installed),
        migrations.CreateModel(
            name='Payout',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('amount', models.DecimalField(decimal_places=2, max_digits=18)),
                ('status', models.CharField(choices=[('requested', 'requested (staff pay it)'), ('paid', 'paid')], default='requested', max_length=16)),
                ('idempotency_key', models.CharField(blank=True, max_length=255, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('paid_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='account',
            name='only_funding_is_a_system_account',
        ),
        migrations.AlterField(
            model_name='account',
            name='kind',
            field=models.CharField(choices=[('wallet', 'buyer wallet'), ('earnings', 'owner earnings'), ('funding', 'funding (money entering the marketplace)'), ('payouts', 'payouts (money leaving the marketplace to owners)')], max_length=16),
        ),
        migrations.AlterField(
            model_name='transfer',
            name='kind',
            field=models.CharField(choices=[('top_up', 'top-up'), ('purchase', 'purchase'), ('refund', 'refund'), ('payout', 'payout')], max_length=16),
        ),
        migrations.AddConstraint(
            model_name='account',
            constraint=models.CheckConstraint(condition=models.Q(('user__isnull', False), ('kind__in', ['funding', 'payouts']), _connector='OR'), name='only_funding_and_payouts_are_system_accounts'),
        ),
        migrations.AddField(
            model_name='payout',
            name='transfer',
            field=models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='payout', to='ledger.transfer'),
        ),
        migrations.AddField(
            model_name='payout',
            name='user',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='payouts', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddConstraint(
            model_name='payout',
            constraint=models.CheckConstraint(condition=models.Q(('amount__gt', 0)), name='payout_amount_positive'),
        ),
        migrations.AddConstraint(
            model_name='payout',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('paid_at__isnull', True), ('status', 'requested')), models.Q(('paid_at__isnull', False), ('status', 'paid')), _connector='OR'), name='payout_paid_when_and_only_when_paid_at'),
        ),
        migrations.AddConstraint(
            model_name='payout',
            constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key__isnull', False)), fields=('user', 'idempotency_key'), name='payout_idempotency_key_unique'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming_accounts),
        migrations.RunPython(install_guard, drop_guard),
]
