"""Noise comes from the operating system's entropy, never from a fixed seed.

Every noise draw in ``releases/`` and ``market/``, and every secret order of a
release's rows, must come from the operating system's random bits:
``releases.engine.osrandom`` (``mechanism.new_rng()`` is one of its sources),
``secrets`` itself, or ``releases.engine.keystream`` (ChaCha20 under a key read
from them: the exact paths' ``lattice.new_rng()``). No production module builds a seeded numpy generator. This scans the production modules' syntax trees for the
ways a fixed or weak source could slip in.
"""

import ast
import os
from pathlib import Path

import numpy as np
import pytest

from releases.engine import mechanism

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = [p for d in ("releases", "market") for p in sorted((ROOT / d).rglob("*.py"))]

# No production module builds a numpy generator from a seed (a what-if estimate may use an
# unseeded default_rng: it releases nothing).
SEEDING_ALLOWED: set[str] = set()
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


def test_the_products_sources_consume_the_operating_systems_bits(monkeypatch):
    """new_rng (the float path) and new_source (the microdata shuffle) draw every number from
    os.urandom: replace it with a spy and every draw is seen in it. Fails on the old new_rng
    (PCG64DXSM seeded once from 256 bits: later draws never touch the OS)."""
    from releases.engine import osrandom

    asked, real = [], os.urandom

    def spy(n):
        asked.append(n)
        return real(n)

    monkeypatch.setattr(osrandom.os, "urandom", spy)
    rng = mechanism.new_rng()
    assert not isinstance(rng, np.random.Generator)
    before = len(asked)
    rng.laplace(0.0, 1.0, 1000)
    assert sum(asked[before:]) >= 8 * 1000  # 64 bits per value at least
    before = len(asked)
    rng.random(500)
    mechanism.relax(np.zeros(200), 1.0, 2.0, rng)
    assert sum(asked[before:]) >= 8 * (500 + 2 * 200)
    before = len(asked)
    order = osrandom.new_source().permutation(1000)
    assert sorted(order.tolist()) == list(range(1000))
    assert sum(asked[before:]) >= 8 * 999  # one word per swap at least
    # the microdata shuffle uses it when no test generator is given
    assert "new_source()" in (ROOT / "market" / "catalog" / "microdata.py").read_text()


def test_the_os_source_has_no_seed():
    from releases.engine import osrandom

    a, b = osrandom.new_source(), osrandom.new_source()
    assert a.random(8).tolist() != b.random(8).tolist()
    with pytest.raises(TypeError):
        osrandom.new_source(1)


def test_the_exact_paths_source_is_chacha20_under_a_key_from_the_operating_system(monkeypatch):
    """``lattice.new_rng()`` reads a 256-bit key and a 96-bit nonce from os.urandom and serves
    ChaCha20's keystream under them (block counter from 0), bits in order, never twice; after
    REKEY_BYTES it reads a new key. Fails if the source were seeded otherwise, reused a key, or
    handed out keystream bytes twice."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    from releases.engine import keystream, lattice

    asked, real = [], os.urandom

    def spy(n):
        asked.append(real(n))
        return asked[-1]

    monkeypatch.setattr(keystream.os, "urandom", spy)
    rng = lattice.new_rng()
    assert [len(b) for b in asked] == [12, 32]  # the nonce, then the key
    nonce, key = asked
    expected = Cipher(algorithms.ChaCha20(key, bytes(4) + nonce), mode=None).encryptor().update(bytes(5000))
    got = rng.randbytes(1000) + rng.getrandbits(8 * 3000).to_bytes(3000, "little") + rng.randbytes(1000)
    assert got[:1000] == expected[:1000] and got[4000:] == expected[4000:]
    # getrandbits(k): the next whole bytes, read as a little-endian integer, its top k bits
    assert got[1000:4000] == expected[1000:4000]
    assert 0 <= rng.getrandbits(13) < 2**13 and rng.getrandbits(0) == 0
    assert lattice.new_rng().randbytes(32) != lattice.new_rng().randbytes(32)
    with pytest.raises(TypeError):
        keystream.KeyStream(b"a key")

    monkeypatch.setattr(keystream, "REKEY_BYTES", 64)
    asked.clear()
    short = keystream.KeyStream()
    first_key = asked[1]
    out = short.randbytes(100)  # 64 bytes under the first key, 36 under a second
    assert len(asked) == 4 and asked[3] != first_key
    again = Cipher(algorithms.ChaCha20(asked[3], bytes(4) + asked[2]), mode=None).encryptor().update(bytes(36))
    assert out[64:] == again
