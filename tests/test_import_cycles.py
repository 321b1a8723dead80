"""No import cycles in ``market`` or ``releases`` (migrations aside), counting the imports made
inside functions: grimp sees those too, so a cycle cannot hide behind a function-level import.

The graph's strongly connected components of more than one module are the cycles; the test names
each. ``KNOWN`` lists the cycles other work owns until it lands (the integrator empties it).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Cycles allowed (none: any cycle fails the test).
KNOWN: set[frozenset[str]] = set()


def _is_migration(module: str) -> bool:
    return ".migrations." in f"{module}."


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    modules = sorted(m for m in graph.modules if not _is_migration(m))
    inside = set(modules)
    edges = {m: sorted(n for n in graph.find_modules_directly_imported_by(m) if n in inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                nxt = edges[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)


def describe(graph, component: list[str]) -> str:
    lines = [" <-> ".join(component)]
    for a in component:
        for b in component:
            for detail in graph.get_import_details(importer=a, imported=b):
                lines.append(f"    {a}:{detail['line_number']}  {detail['line_contents']}")
    return "\n".join(lines)


def unknown_cycles(root: Path) -> list[str]:
    sys.path.insert(0, str(root))
    try:
        graph = grimp.build_graph("market", "releases", cache_dir=None)
    finally:
        sys.path.remove(str(root))
    return [describe(graph, c) for c in cycles(graph) if frozenset(c) not in KNOWN]


def _unknown_cycles_in(root: Path) -> list[str]:
    """Build the graph in a fresh interpreter (grimp finds packages on ``sys.path``; this process has
    already imported the real ones)."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.test_import_cycles import unknown_cycles; " \
           f"from pathlib import Path; print('\\n'.join(unknown_cycles(Path({str(root)!r}))))"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.split("\n") if line.strip()]


def test_the_tarjan_components_are_the_cycles():
    class Graph:
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"f"}, "g": set(),
                 "x.migrations.m": {"a"}, "a2": {"x.migrations.m"}}
        modules = set(edges)

        def find_modules_directly_imported_by(self, m):
            return self.edges[m]

    assert cycles(Graph()) == [["a", "b", "c"], ["d", "e"]]


def test_market_and_releases_have_no_import_cycles():
    found = _unknown_cycles_in(ROOT)
    assert not found, "import cycles (an arrow each way, function-level imports included):\n" + "\n".join(found)


@pytest.mark.parametrize(
    "module, line, cycle",
    [
        # a function-level import back into the module that imports this one
        ("market/trading/services.py", "def _sneak():\n    from market.trading import tasks  # a mutation\n",
         "market.trading.services <-> market.trading.tasks"),
        ("market/accounts/models.py", "from market.accounts import services  # a mutation\n", "market.accounts.models"),
    ],
)
def test_an_injected_cycle_is_caught(tmp_path, module, line, cycle):
    for package in ("market", "releases"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / module
    target.write_text(target.read_text() + "\n\n" + line)
    found = "\n".join(_unknown_cycles_in(tmp_path))
    assert cycle in found, found
