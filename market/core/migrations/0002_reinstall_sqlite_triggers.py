"""Nothing (kept so that applied migration histories stay consistent).

Used to reinstall 0001's SQLite triggers after ``releases.0002`` rebuilt a table.
Where every trigger went: ``0001_database_invariants``.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("core", "0001_database_invariants")]
    operations = []
