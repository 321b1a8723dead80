"""Noise comes from the operating system's entropy, never from a fixed seed.

Every noise draw in ``releases/`` and ``market/`` must use a generator made by
``releases.engine.mechanism.new_rng()`` (256 fresh bits from ``secrets`` per step) or
``secrets`` itself. This scans the production modules' syntax trees for the
ways a fixed or weak source could slip in.
"""

import ast
import secrets
from pathlib import Path

import numpy as np

from releases.engine import mechanism

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = [p for d in ("releases", "market") for p in sorted((ROOT / d).rglob("*.py"))]

# The one place a generator is built from a seed: new_rng, from secrets.
SEEDING_ALLOWED = {"releases/engine/mechanism.py"}
# The stdlib random module is not for noise. locks.py uses random.uniform for the
# jitter between lock retries: timing, not noise.
STDLIB_RANDOM_ALLOWED = {"market/core/locks.py": {"uniform"}}


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _problems(rel: str, tree: ast.AST) -> list[str]:
    out = []
    random_names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "random":
                    random_names.add(alias.asname or "random")
                    if rel not in STDLIB_RANDOM_ALLOWED:
                        out.append(f"{rel}:{node.lineno} imports the random module")
        elif isinstance(node, ast.ImportFrom) and node.module == "random":
            out.append(f"{rel}:{node.lineno} imports from the random module")
        elif isinstance(node, ast.ImportFrom) and node.module == "numpy.random":
            out.append(f"{rel}:{node.lineno} imports from numpy.random (use releases.engine.mechanism.new_rng)")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        if last in {"seed", "RandomState"} and ".random." in f".{name}":
            out.append(f"{rel}:{node.lineno} calls {name}")
        if last == "default_rng" and (node.args or node.keywords):
            out.append(f"{rel}:{node.lineno} seeds default_rng")
        if last in {"SeedSequence", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "Generator"} and (
            rel not in SEEDING_ALLOWED
        ):
            out.append(f"{rel}:{node.lineno} builds a generator ({name}) outside new_rng")
        head = name.split(".", 1)[0]
        if head in random_names and "." in name:
            allowed = STDLIB_RANDOM_ALLOWED.get(rel, set())
            if last not in allowed:
                out.append(f"{rel}:{node.lineno} uses random.{last}")
    return out


def test_no_fixed_seed_or_weak_randomness_in_production_code():
    assert PRODUCTION, "no production modules found"
    problems = []
    for path in PRODUCTION:
        rel = path.relative_to(ROOT).as_posix()
        problems += _problems(rel, ast.parse(path.read_text(), filename=rel))
    assert problems == []


def test_the_scan_catches_what_it_is_for():
    bad = {
        "import numpy as np\nrng = np.random.default_rng(42)\n": "seeds default_rng",
        "import numpy as np\nnp.random.seed(1)\n": "calls np.random.seed",
        "import random\nx = random.gauss(0, 1)\n": "imports the random module",
        "from random import random\n": "imports from the random module",
        "import numpy as np\ng = np.random.Generator(np.random.PCG64(7))\n": "outside new_rng",
    }
    for source, message in bad.items():
        found = _problems("market/x.py", ast.parse(source))
        assert any(message in p for p in found), (source, found)
    # the retry jitter in locks.py is allowed, but only random.uniform there
    assert _problems("market/core/locks.py", ast.parse("import random\nrandom.uniform(0, 1)\n")) == []
    assert _problems("market/core/locks.py", ast.parse("import random\nrandom.gauss(0, 1)\n"))


def test_new_rng_draws_256_fresh_bits(monkeypatch):
    asked = []
    real = secrets.randbits

    def spy(k):
        asked.append(k)
        return real(k)

    monkeypatch.setattr(mechanism.secrets, "randbits", spy)
    a, b = mechanism.new_rng(), mechanism.new_rng()
    assert asked.count(256) == 2  # one 256-bit seed per generator
    assert isinstance(a, np.random.Generator)
    assert a.integers(0, 2**63, 4).tolist() != b.integers(0, 2**63, 4).tolist()
