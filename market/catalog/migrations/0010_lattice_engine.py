"""Listings and paths record their engine: existing ones keep the float Laplace path."""

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0009_dataset_files'),
    ]

    operations = [
        # SQLite rebuilds catalog_listing for the constraints, which it refuses while triggers of other
        # tables name it (trading_holding's ceiling check): dropped first, installed again at the end
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_listing"), reinstall_sqlite_triggers_if_installed),
        migrations.AddField(
            model_name='listing',
            name='engine',
            field=models.CharField(choices=[('laplace', 'Float Laplace path ((eps, delta)-DP, delta below 1e-11 per value)'), ('lattice', 'Exact lattice path (integer noise, exactly eps-DP)')], default='laplace', help_text='how the values are released: the exact lattice path, or the float path of older listings', max_length=10),
        ),
        # rows made before the lattice path run on the float path; new ones default to the lattice
        migrations.AlterField(
            model_name='listing',
            name='engine',
            field=models.CharField(choices=[('laplace', 'Float Laplace path ((eps, delta)-DP, delta below 1e-11 per value)'), ('lattice', 'Exact lattice path (integer noise, exactly eps-DP)')], default='lattice', help_text='how the values are released: the exact lattice path, or the float path of older listings', max_length=10),
        ),
        migrations.AddField(
            model_name='listing',
            name='grids',
            field=models.JSONField(blank=True, help_text="lattice only: each value's grid as a decimal string (1 for counts)", null=True),
        ),
        migrations.AlterField(
            model_name='listing',
            name='lower',
            field=models.JSONField(help_text='declared range of each value, for clamping (lattice: in grid steps)'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('engine__in', ['laplace', 'lattice'])), name='listing_engine_known'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('engine', 'laplace'), ('grids__isnull', False), _connector='OR'), name='listing_lattice_has_grids'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("catalog_listing")),
    ]
