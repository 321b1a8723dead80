"""The ledger tables' triggers (``market.ledger.triggers``), installed here, in the app that owns the tables.

Each trigger is dropped first if there: on a database where the former ``core`` migrations
(0001-0005) installed them, this leaves exactly one copy. Reversible: the triggers and their
functions are dropped.
"""

from django.db import migrations

from market.core.triggers import InstallTriggers
from market.ledger.triggers import TRIGGERS


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0004_payouts"),
    ]
    operations = [InstallTriggers(TRIGGERS)]
