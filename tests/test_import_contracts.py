"""The import direction (``.ci/importlinter.ini``) holds, and the check catches an import against it.

The contracts: the release engine (``releases.engine``) imports no Django and nothing of the
marketplace; the statistics package (``market.catalog.spec``) imports no Django, no DuckDB and
nothing else of the marketplace; the apps import one way only (pages and API, trading, trust, catalog, releases,
ledger, accounts, core). The mutation tests copy the packages, add one import against the
direction, and expect ``lint-imports`` to refuse the copy.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".ci" / "importlinter.ini"
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--config", str(CONFIG), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )


def test_the_code_base_keeps_its_import_contracts():
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    "module, line, broken",
    [
        # the release side reaching back into trading (purchases and their status are trading's)
        ("releases/services.py", "from market.trading.models import Purchase", "market.trading"),
        # the catalog reading purchases
        ("market/catalog/selectors.py", "from market.trading import selectors", "market.trading"),
        # the engine importing Django
        ("releases/engine/lattice.py", "from django.db import transaction", "django"),
        # the statistics package running SQL, reading models, or importing Django
        ("market/catalog/spec/kinds/histogram.py", "import duckdb", "duckdb"),
        ("market/catalog/spec/plan.py", "from market.catalog.compute import compute", "market.catalog.compute"),
        ("market/catalog/spec/grammar.py", "from django.conf import settings", "django"),
    ],
)
def test_an_import_against_the_direction_is_refused(tmp_path, module, line, broken):
    for package in ("market", "releases"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{line}  # a mutation\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    # the engine's mutation breaks the statistics package's contract too (it imports the engine)
    assert re.search(r"\b[1-9] broken", done.stdout) and broken in done.stdout, done.stdout
