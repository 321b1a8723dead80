"""Microdata listings: a third engine, ``bits`` (bit reports, market.catalog.microdata), with no grids."""

from django.db import migrations, models

from market.core.migration_helpers import drop_sqlite_triggers_naming, reinstall_sqlite_triggers_if_installed


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0011_listing_plan'),
    ]

    operations = [
        # SQLite rebuilds catalog_listing for the constraints: the triggers naming it are dropped first
        # and installed again at the end, both ways (as in 0010)
        migrations.RunPython(drop_sqlite_triggers_naming("catalog_listing"), reinstall_sqlite_triggers_if_installed),
        migrations.RemoveConstraint(
            model_name='listing',
            name='listing_engine_known',
        ),
        migrations.RemoveConstraint(
            model_name='listing',
            name='listing_lattice_has_grids',
        ),
        migrations.AlterField(
            model_name='listing',
            name='engine',
            field=models.CharField(choices=[('laplace', 'Float Laplace path ((eps, delta)-DP, delta below 1e-11 per value)'), ('lattice', 'Exact lattice path (integer noise, exactly eps-DP)'), ('bits', 'Bit reports: every record, each bit on its own exact lattice path (eps-DP per record)')], default='lattice', help_text='how the values are released: the exact lattice path, or the float path of older listings', max_length=10),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('engine__in', ['laplace', 'lattice', 'bits'])), name='listing_engine_known'),
        ),
        migrations.AddConstraint(
            model_name='listing',
            constraint=models.CheckConstraint(condition=models.Q(('engine__in', ['laplace', 'bits']), ('grids__isnull', False), _connector='OR'), name='listing_lattice_has_grids'),
        ),
        migrations.RunPython(reinstall_sqlite_triggers_if_installed, drop_sqlite_triggers_naming("catalog_listing")),
    ]
