"""Opaque public ids for existing and new releases (market.core.ids): added nullable,
filled for the rows there are (the append-only trigger lifted for the fill), then made unique and required."""

from django.db import migrations

from market.core import ids
from market.core.migration_helpers import public_id_operations


class Migration(migrations.Migration):
    dependencies = [
        ("releases", "0002_l2_paths"),
    ]
    operations = public_id_operations("releases", "release", ids.new_release_id, append_only_trigger="releases_release_append_only")
