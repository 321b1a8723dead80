import numpy as np
import pytest


@pytest.fixture
def rng(request):
    """A generator with a fixed seed derived from the test's name (tests only)."""
    seed = sum(map(ord, request.node.nodeid)) * 7919 + 20261121
    return np.random.default_rng(seed)


@pytest.fixture
def report(capsys):
    """Print a figure into the test output even when pytest captures it."""

    def _report(*lines):
        with capsys.disabled():
            for line in lines:
                print(f"\n    {line}", end="")
            print()

    return _report
