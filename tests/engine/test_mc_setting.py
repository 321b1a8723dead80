"""The one setting for Monte Carlo sizes (tests/mc.py): GRADUAL_MC is quick unless CI says full."""

import pytest

from tests import mc


def test_quick_is_the_default_and_full_takes_the_full_size(monkeypatch):
    monkeypatch.delenv("GRADUAL_MC", raising=False)
    assert mc.mode() == "quick" and mc.size(full=400_000, quick=40_000) == 40_000
    assert mc.size(full=1000) == 100  # a tenth when no quick size is given
    monkeypatch.setenv("GRADUAL_MC", "full")
    assert mc.full() and mc.size(full=400_000, quick=40_000) == 400_000


def test_a_bad_setting_or_a_quick_size_above_the_full_one_is_refused(monkeypatch):
    monkeypatch.setenv("GRADUAL_MC", "fast")
    with pytest.raises(ValueError, match="GRADUAL_MC must be one of quick, full"):
        mc.size(full=10)
    monkeypatch.setenv("GRADUAL_MC", "quick")
    with pytest.raises(ValueError):
        mc.size(full=10, quick=20)


def test_a_widened_tolerance_stays_as_many_standard_deviations_wide():
    assert mc.widen(0.012, full=400_000, n=400_000) == pytest.approx(0.012)
    assert mc.widen(0.012, full=400_000, n=100_000) == pytest.approx(0.024)
