"""Nothing (kept so that applied migration histories stay consistent).

Used to reinstall 0001's SQLite triggers after the public-id migrations.
Where every trigger went: ``0001_database_invariants``.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("core", "0002_reinstall_sqlite_triggers")]
    operations = []
