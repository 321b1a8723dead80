"""docs/performance.md is generated from the benches' JSON (docs/perf/*.json) and kept in step with it.

A figure on the page changes only with its JSON: the committed page must be exactly what
``scripts/perf_page.py`` renders from the committed JSON, so a stale page (or a hand-edited figure)
fails here. Each JSON says when and on what it was measured.
"""

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT / "docs" / "perf"
PAGE = ROOT / "docs" / "performance.md"


def perf_page():
    spec = importlib.util.spec_from_file_location("perf_page", ROOT / "scripts" / "perf_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_performance_page_is_what_the_benches_json_renders():
    assert perf_page().main(["--check"]) == 0, "docs/performance.md is stale: run scripts/perf_page.py"


def test_every_bench_json_carries_its_date_and_machine_and_appears_on_the_page():
    files = sorted(PERF.glob("*.json"))
    assert files
    page = PAGE.read_text()
    for path in files:
        data = json.loads(path.read_text())
        assert data["bench"] == path.stem
        assert data["date"].endswith("Z") and data["date"][:4].isdigit()
        assert {"cpu", "cores", "python", "numpy", "load_average"} <= set(data["machine"])
        assert f"Measured {data['date']} on {data['machine']['cpu']}, {data['machine']['cores']} cores" in page
        assert f"bench.{path.stem}" in page


def test_a_changed_figure_makes_the_check_fail(tmp_path):
    perf = tmp_path / "perf"
    shutil.copytree(PERF, perf)
    engine = perf / "engine.json"
    data = json.loads(engine.read_text())
    data["rows"][0]["relax_s"] *= 2  # a re-measured figure not yet on the page
    engine.write_text(json.dumps(data))
    page = tmp_path / "performance.md"
    shutil.copy(PAGE, page)
    module = perf_page()
    assert module.main(["--check", "--perf-dir", str(perf), "--page", str(page)]) == 1
    assert module.main(["--perf-dir", str(perf), "--page", str(page)]) == 0  # regenerated ...
    assert module.main(["--check", "--perf-dir", str(perf), "--page", str(page)]) == 0  # ... it is current
    assert page.read_text() != PAGE.read_text()
