"""The releases' invariants, enforced by the database whatever code writes to it
(installed by ``releases/migrations/0030_triggers.py``; see ``market.core.triggers``).

* Noise points, releases and bit reports are append-only (SQLite: UPDATE refused;
  the DELETE guard would stop the test runner from emptying its tables).
* A path's released maximum never exceeds its listing's ceiling.
"""

from market.core.triggers import Triggers, append_only, within_ceiling_postgres

APPEND_ONLY_POSTGRES, APPEND_ONLY_SQLITE = append_only(
    "releases_append_only", ["releases_noisepoint", "releases_release", "releases_bitreport"]
)

TRIGGERS = Triggers(
    postgres=[
        APPEND_ONLY_POSTGRES,
        within_ceiling_postgres("releases_within_ceiling", "releases_noisepath", "released_max"),
    ],
    sqlite=[
        *APPEND_ONLY_SQLITE,
        """CREATE TRIGGER releases_noisepath_within_ceiling BEFORE UPDATE ON releases_noisepath
            WHEN NEW.released_max > (SELECT ceiling FROM catalog_listing WHERE id = NEW.listing_id)
            BEGIN SELECT RAISE(ABORT, 'released level is above the listing ceiling'); END""",
    ],
    retired=["append_only", "within_ceiling"],
)
