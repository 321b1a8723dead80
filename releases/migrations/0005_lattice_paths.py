"""Noise paths record their engine (existing ones: the float path); lattice points hold int64 noise."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0010_lattice_engine'),
        ('releases', '0004_encrypt_noise'),
    ]

    operations = [
        migrations.AddField(
            model_name='noisepath',
            name='engine',
            field=models.CharField(default='laplace', help_text='lattice: the exact integer path (releases.engine.lattice); laplace: the float path (releases.engine.path, and every l2 path). Fixed when the path is made', max_length=10),
        ),
        # rows made before the lattice path run on the float path; new ones default to the lattice
        migrations.AlterField(
            model_name='noisepath',
            name='engine',
            field=models.CharField(default='lattice', help_text='lattice: the exact integer path (releases.engine.lattice); laplace: the float path (releases.engine.path, and every l2 path). Fixed when the path is made', max_length=10),
        ),
        migrations.AlterField(
            model_name='noisepoint',
            name='noise',
            field=models.BinaryField(help_text='float64 (int64 on a lattice path), little-endian, one per released value, encrypted for this path and level; read and written only through vector() / set_vector() or integers() / set_integers()'),
        ),
        migrations.AlterField(
            model_name='release',
            name='values',
            field=models.JSONField(help_text='the released vector: rounded and clamped (lattice: whole steps times grid)'),
        ),
        migrations.AddConstraint(
            model_name='noisepath',
            constraint=models.CheckConstraint(condition=models.Q(('engine__in', ['laplace', 'lattice'])), name='path_engine_known'),
        ),
        migrations.AddConstraint(
            model_name='noisepath',
            constraint=models.CheckConstraint(condition=models.Q(('engine', 'laplace'), ('norm', 'l1'), _connector='OR'), name='path_lattice_is_l1'),
        ),
    ]
