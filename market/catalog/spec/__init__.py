"""The statistics a listing offers, released together as one vector: a pure package (plain Python,
numpy and ``releases.engine``; no Django, no DuckDB, no database: .ci/importlinter.ini).

A listing's *spec* is a JSON-able list of statistics over the dataset's
typed columns (:mod:`.columns`)::

    [{"kind": "count"},
     {"kind": "sum", "column": "age", "lower": 0, "upper": 100},
     {"kind": "mean", "column": "age", "lower": 0, "upper": 100,
      "by": "island", "categories": ["Biscoe", "Dream"]},
     {"kind": "count", "where": [{"column": "sex", "op": "=", "value": "female"}]},
     {"kind": "histogram", "column": "age", "bins": [0, 18, 30, 50, 100]},
     {"kind": "histogram", "column": "joined", "bin": "month", "from": "2024-01", "to": "2024-12"},
     {"kind": "table", "rows": "species", "columns": "island",
      "row_categories": ["Adelie"], "column_categories": ["Biscoe", "Dream"]},
     {"kind": "quantile", "column": "age", "bins": [0, 18, 30, 50, 100], "quantiles": [0.5]}]

or one vector statistic on its own (a centroid). The package:

* :mod:`.grammar`: limits and the checks of fields, filters (``where``) and group-bys (``by``);
* :mod:`.schema`: JSON-schema fragments the kinds' schemas are built from;
* :mod:`.stability`: the dataset's neighbouring relation (:class:`Neighbours`,
  docs/mathematics.md section 12) and the groups of coordinates with their sensitivities;
* :mod:`.kinds`: one module per kind of statistic, registered in :data:`KINDS`; each owns its
  fields and validation, its JSON schema, its groups of coordinates (what each is on the data, as
  :class:`.coordinates.Aggregate`), its description, and how its released value and accuracy are read;
* :mod:`.plan`: :func:`build_plan` lays a spec out as the coordinates of one answer vector,
  :func:`present` reads the released vector back, one reading per statistic;
* :mod:`.coordinates`: what a coordinate is on the data (``market.catalog.compute`` renders it as
  SQL and runs it with DuckDB);
* :mod:`.microdata`: the layout of a microdata listing (bit reports).
"""

from .columns import (
    CATEGORICAL,
    MISSING,
    NUMERIC,
    TEMPORAL,
    TYPES,
    Column,
    columns_from,
)
from .grammar import (
    CONFIRM_PUBLIC,
    DECLARED_CATEGORIES,
    MAX_BINS,
    MAX_BOUND,
    MAX_CASES,
    MAX_CATEGORIES,
    MAX_COORDINATES,
    MAX_STATISTICS,
    SpecError,
    default_grid,
    without_confirmation,
)
from .kinds import KINDS, OFFERED_KINDS, VECTOR_KINDS, statistic_schema
from .kinds.base import Kind, Reading
from .kinds.mean import (
    EMPTY_OTHER,
    OTHER_NOTE,
    TOO_FEW,
    SizeRelease,
    cell_note,
    mean_error_bound,
    mean_estimate,
    size_layout,
)
from .kinds.microdata import MICRODATA_CURVE_NAME
from .kinds.vector import l2_error_radius
from .plan import (
    LAPLACE,
    LATTICE,
    SKELLAM,
    VECTOR_PATH,
    Lattice,
    Plan,
    build_plan,
    describe,
    expected_kinds,
    plan_layout,
    plan_restore,
    present,
)
from .schema import MICRODATA_COLUMN, S_CONFIRM
from .stability import PRIVATE_SIZE, PUBLIC_SIZE, RELATIONS, Neighbours

__all__ = [
    "CATEGORICAL", "CONFIRM_PUBLIC", "DECLARED_CATEGORIES", "EMPTY_OTHER", "KINDS", "LAPLACE", "LATTICE",
    "SKELLAM", "MAX_BINS", "MAX_BOUND", "MAX_CASES", "MAX_CATEGORIES", "MAX_COORDINATES", "MAX_STATISTICS", "MICRODATA_COLUMN",
    "MICRODATA_CURVE_NAME", "MISSING", "NUMERIC", "OFFERED_KINDS", "OTHER_NOTE", "PRIVATE_SIZE", "PUBLIC_SIZE",
    "RELATIONS", "S_CONFIRM", "TEMPORAL", "TOO_FEW", "TYPES", "VECTOR_KINDS", "VECTOR_PATH", "Column", "Kind",
    "Lattice", "Neighbours", "Plan", "Reading", "SizeRelease", "SpecError", "build_plan", "cell_note", "columns_from",
    "default_grid", "describe", "expected_kinds", "l2_error_radius", "mean_error_bound", "mean_estimate",
    "plan_layout", "plan_restore", "present", "size_layout", "statistic_schema", "without_confirmation",
]
