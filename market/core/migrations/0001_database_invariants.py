"""Nothing (kept so that applied migration histories stay consistent).

The database invariants' triggers used to be installed here, on the tables of four apps.
Each app now installs the triggers of the tables it owns, in its own migration, from
its own module (PostgreSQL and SQLite):

* ``market/ledger/triggers.py`` (``ledger.0030_triggers``): balances follow legs, legs and
  transfers append-only, transfers balance at commit;
* ``market/catalog/triggers.py`` (``catalog.0030_triggers``): a ceiling never below a level
  sold, the dataset budget, budget changes append-only;
* ``market/trading/triggers.py`` (``trading.0030_triggers``): a holding within its ceiling;
* ``releases/triggers.py`` (``releases.0030_triggers``): noise points, releases and bit
  reports append-only, a path's released maximum within its ceiling.

Those migrations drop each trigger before creating it, so on a database where this
migration ran before it was emptied they leave exactly one copy.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = []
    operations = []
