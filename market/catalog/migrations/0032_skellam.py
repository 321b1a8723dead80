
from decimal import Decimal
from django.conf import settings
from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0031_dataset_removed_at'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # SQLite rebuilds the tables: triggers naming them go first and come back at the end
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_dataset", "catalog_listing", "catalog_datasetbudgetchange"), reinstall_sqlite_triggers_if_installed),
        migrations.RemoveConstraint(
            model_name='listing',
            name='listing_mechanism_known',
        ),
        migrations.AddField(
            model_name='dataset',
            name='delta_budget',
            field=models.DecimalField(blank=True, decimal_places=20, help_text="The dataset's delta (none: every listing is pure eps-DP and their ceilings add up to at most total_budget). With a delta, its listings compose by privacy-loss distributions: together, at their ceilings, they must be (total_budget, delta_budget)-DP (market.catalog.composition). At most 1e-6", max_digits=20, null=True),
        ),
        migrations.AddField(
            model_name='datasetbudgetchange',
            name='new_delta',
            field=models.DecimalField(blank=True, decimal_places=20, help_text="the dataset's delta after (null: none)", max_digits=20, null=True),
        ),
        migrations.AddField(
            model_name='datasetbudgetchange',
            name='old_delta',
            field=models.DecimalField(blank=True, decimal_places=20, help_text="the dataset's delta before (null: none)", max_digits=20, null=True),
        ),
        migrations.AddField(
            model_name='listing',
            name='delta',
            field=models.DecimalField(blank=True, decimal_places=20, help_text='the delta of every level the listing sells ((eps, delta)-DP): set on the Skellam path only, whose plan holds the calibration that meets it (plan.calibration)', max_digits=20, null=True),
        ),
        migrations.AlterField(
            model_name='listing',
            name='mechanism',
            field=models.CharField(choices=[('laplace', 'Float path (retired: floating-point noise with no established delta; old listings only)'), ('laplace_l2', 'Float vector path (retired: floating-point noise on the whole vector with no established delta; old listings only)'), ('lattice', 'Exact lattice path (integer noise, exactly eps-DP)'), ('skellam', 'Skellam path (Gaussian-like integer noise, (eps, delta)-DP)'), ('bits', 'Bit reports: every record, each bit on its own exact lattice path (eps-DP per record)')], default='lattice', help_text='how the values are released (releases.engine.mechanisms): the exact lattice path, bit reports, or the float paths of older listings. Fixed when the listing is made', max_length=12),
        ),
        migrations.AddConstraint(
            model_name='dataset',
            constraint=models.CheckConstraint(condition=models.Q(('delta_budget__isnull', True), models.Q(('delta_budget__gt', 0), ('delta_budget__lte', Decimal('0.000001'))), _connector='OR'), name='dataset_delta_at_most_1e-6'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('mechanism__in', ['laplace', 'laplace_l2', 'lattice', 'skellam', 'bits'])), name='listing_mechanism_known'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('delta__gt', 0), ('delta__lte', Decimal('0.000001')), ('mechanism', 'skellam'), ('plan__calibration__isnull', False)), models.Q(models.Q(('mechanism', 'skellam'), _negated=True), ('delta__isnull', True)), _connector='OR'), name='listing_delta_on_skellam'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("catalog_dataset", "catalog_listing", "catalog_datasetbudgetchange")),
    ]
