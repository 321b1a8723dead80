"""The docs' table of statistic kinds (docs/owners.md) is the registry's: adding a kind means
regenerating it (python scripts/kinds_table.py), and the check catches a table left behind."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "kinds_table.py"


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "scripts" / "kinds_table.py"), "--check"], cwd=root,
                          capture_output=True, text=True, timeout=120)


def test_the_docs_table_of_kinds_matches_the_registry():
    from market.catalog.spec import OFFERED_KINDS

    done = check(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    text = (ROOT / "docs" / "owners.md").read_text()
    assert all(f"| `{name}` |" in text for name in OFFERED_KINDS)


def test_a_table_that_differs_from_the_registry_is_caught(tmp_path):
    for folder in ("market", "releases", "scripts", "docs"):
        (tmp_path / folder).symlink_to(ROOT / folder) if folder not in ("docs", "scripts") else None
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "kinds_table.py").write_text(SCRIPT.read_text())
    (tmp_path / "docs").mkdir()
    text = (ROOT / "docs" / "owners.md").read_text()
    (tmp_path / "docs" / "owners.md").write_text(text.replace("| `quantile` |", "| `quantiles` |"))
    done = check(tmp_path)
    assert done.returncode == 1 and "differs from the registry" in done.stdout
