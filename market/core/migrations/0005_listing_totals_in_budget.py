"""Nothing (kept so that applied migration histories stay consistent).

Used to make the dataset budget's triggers sum listing totals (ceiling + size_level): now
``market/catalog/triggers.py``, installed by ``catalog.0030_triggers``.
Where every trigger went: ``0001_database_invariants``.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("core", "0004_dataset_budget_triggers")]
    operations = []
