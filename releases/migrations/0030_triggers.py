"""The releases tables' triggers (``releases.triggers``), installed here, in the app that owns the tables.

Each trigger is dropped first if there: on a database where the former ``core`` migrations
(0001-0005) installed them, this leaves exactly one copy. Reversible: the triggers and their
functions are dropped.
"""

from django.db import migrations

from market.core.triggers import InstallTriggers
from releases.triggers import TRIGGERS


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0008_path_mechanism"),
    ]
    operations = [InstallTriggers(TRIGGERS)]
