"""The catalog tables' triggers (``market.catalog.triggers``), installed here, in the app that owns the tables.

Each trigger is dropped first if there: on a database where the former ``core`` migrations
(0001-0005) installed them, this leaves exactly one copy. Reversible: the triggers and their
functions are dropped.
"""

from django.db import migrations

from market.core.triggers import InstallTriggers
from market.catalog.triggers import TRIGGERS_BEFORE_DELTA


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0021_listing_kinds"),  # the triggers read counted_in_budget
        ("trading", "0002_purchase_unsent"),  # the guards read trading_holding
    ]
    operations = [InstallTriggers(TRIGGERS_BEFORE_DELTA)]  # as they stood here (0033 replaces them)
