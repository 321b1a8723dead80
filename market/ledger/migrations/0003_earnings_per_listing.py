# An owner's earnings kept per listing (issue 14): sales of different listings no longer wait for one row.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming_accounts, reinstall_sqlite_triggers_if_installed


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0010_lattice_engine'),
        ('ledger', '0002_transfer_public_id'),
        # after every migration that rebuilds a guarded table, so that its last step reinstalls all triggers
        ('core', '0004_dataset_budget_triggers'),
        ('releases', '0005_lattice_paths'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    # SQLite rebuilds ledger_account for these changes, which leaves the ledger's triggers naming a
    # table that is gone: they are installed again after the change, whichever way it runs
    operations = [
        migrations.RunPython(drop_sqlite_triggers_naming_accounts, reinstall_sqlite_triggers_if_installed),
        migrations.RemoveConstraint(
            model_name='account',
            name='one_account_per_user_and_kind',
        ),
        migrations.AddField(
            model_name='account',
            name='listing',
            field=models.ForeignKey(blank=True, help_text='earnings only: the listing whose sales this account collects', null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='catalog.listing'),
        ),
        migrations.AddConstraint(
            model_name='account',
            constraint=models.UniqueConstraint(condition=models.Q(('listing__isnull', True)), fields=('user', 'kind'), name='one_account_per_user_and_kind'),
        ),
        migrations.AddConstraint(
            model_name='account',
            constraint=models.UniqueConstraint(condition=models.Q(('listing__isnull', False)), fields=('user', 'kind', 'listing'), name='one_account_per_user_kind_and_listing'),
        ),
        migrations.AddConstraint(
            model_name='account',
            constraint=models.CheckConstraint(condition=models.Q(('listing__isnull', True), ('kind', 'earnings'), _connector='OR'), name='only_earnings_are_per_listing'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming_accounts),
    ]
