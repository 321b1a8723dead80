"""Nothing (kept so that applied migration histories stay consistent).

Used to install the dataset budget's triggers on the catalog's tables: now
``market/catalog/triggers.py``, installed by ``catalog.0030_triggers``.
Where every trigger went: ``0001_database_invariants``.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("core", "0003_reinstall_sqlite_triggers_after_public_ids")]
    operations = []
