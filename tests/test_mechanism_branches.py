"""No code outside the mechanisms branches on a mechanism (docs/architecture.md, "Mechanisms").

A listing's and a noise path's mechanism is an object (``releases.engine.mechanisms``); code
outside ``releases/engine/`` (and the migrations, which read the old columns) asks it instead of
comparing names: no ``is_microdata``, no ``engine ==`` / ``engine !=``, no ``norm ==`` /
``norm !=``, no ``on_lattice`` flag, no ``Engine.LATTICE``-style comparison. The check scans
``market/`` and ``releases/`` as CI does, and a copy with one branch put back must fail it.
"""

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The branches on a mechanism's name (the CI grep, and the flag helpers and name comparisons).
BRANCH = re.compile(r"\bis_microdata\b|\bengine\s*[!=]=|\bnorm\s*[!=]=|\bon_lattice\b|\bEngine\.(LAPLACE|LATTICE|BITS)\b")

def branches(root: Path) -> list[str]:
    """``path:line: text`` of every branch on a mechanism under ``root``'s ``market/`` and ``releases/``,
    outside ``releases/engine/`` and the migrations."""
    found = []
    for package in ("market", "releases"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("releases/engine/") or "/migrations/" in rel:
                continue
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if BRANCH.search(line):
                    found.append(f"{rel}:{number}: {line.strip()}")
    return found


def test_nothing_outside_the_mechanisms_branches_on_a_mechanism():
    assert branches(ROOT) == []


@pytest.mark.parametrize(
    "module, line",
    [
        ("market/trading/services.py", "    if listing.engine == 'laplace':  # a mutation"),
        ("releases/services.py", "    known = path.norm != 'l2'  # a mutation"),
        ("market/web/views.py", "    shown = listing.is_microdata  # a mutation"),
        ("market/catalog/models.py", "    on_lattice = True  # a mutation"),
        ("market/catalog/spec/plan.py", "    plain = engine == LATTICE  # a mutation"),
    ],
)
def test_a_branch_put_back_is_caught(tmp_path, module, line):
    for package in ("market", "releases"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n\ndef _mutant(listing, path, engine):\n{line}\n")
    found = branches(tmp_path)
    assert len(found) == 1 and found[0].startswith(f"{module}:") and "a mutation" in found[0]


def test_the_engine_and_the_migrations_may_name_mechanisms(tmp_path):
    """The mechanisms themselves and the migrations (which read the old columns) are outside the check."""
    for package in ("market", "releases"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for module in ("releases/engine/mechanisms/floats.py", "market/catalog/migrations/0018_listing_mechanism.py"):
        target = tmp_path / module
        target.write_text(target.read_text() + "\n\ndef _named(norm):\n    return norm == 'l2'\n")
    assert branches(tmp_path) == []
