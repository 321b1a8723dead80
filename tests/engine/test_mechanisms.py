"""The release mechanisms as objects (``releases.engine.mechanisms``): one protocol, one registry, and
each mechanism a thin object over the engine's mathematics (the figures are the modules' own)."""

import random
from decimal import Decimal
from types import SimpleNamespace

import numpy as np
import pytest

from releases.engine import guarantee, lattice
from releases.engine.mechanism import l2_at, l2_path
from releases.engine.mechanisms import (
    FLOAT_RETIRED,
    FLOATS,
    INTS,
    MECHANISMS,
    Mechanism,
    l2_error_radius,
    mechanism,
    mechanism_for,
)
from releases.engine.path import NoisePath
from releases.engine.postprocess import snap

D = Decimal
NOTHING = lambda: pytest.fail("not asked for")  # noqa: E731 (a lazy read a mechanism must not make)


def test_every_mechanism_follows_the_protocol_and_is_registered_under_its_name():
    assert list(MECHANISMS) == ["laplace", "laplace_l2", "lattice", "skellam", "bits"]
    for name, found in MECHANISMS.items():
        assert isinstance(found, Mechanism) and found.name == name and mechanism(name) is found
    with pytest.raises(ValueError, match="no mechanism is named 'gauss'"):
        mechanism("gauss")


@pytest.mark.parametrize("engine, norm, name", [("laplace", "l1", "laplace"), ("laplace", "l2", "laplace_l2"),
                                                ("lattice", "l1", "lattice"), ("bits", "l1", "bits")])
def test_the_older_columns_name_one_mechanism_each(engine, norm, name):
    found = mechanism_for(engine, norm)
    assert found.name == name and (found.engine, found.norm) == (engine, norm)


def test_no_mechanism_runs_the_lattice_on_a_vector():
    with pytest.raises(ValueError, match="no mechanism runs engine 'lattice' with norm 'l2'"):
        mechanism_for("lattice", "l2")


def test_their_words_are_the_words_shown_before():
    assert mechanism("lattice").words() == guarantee.engine_words("lattice")
    assert mechanism("bits").words() == guarantee.engine_words("bits")
    assert mechanism("laplace").words() == guarantee.engine_words("laplace")
    assert mechanism("laplace_l2").words() == guarantee.engine_words("laplace", vector=True)
    for name in ("lattice", "bits", "laplace"):
        assert mechanism(name).guarantee(3) == guarantee.guarantee_statement(name, 3)
    assert mechanism("laplace_l2").guarantee(2) == guarantee.float_path_statement(2)


@pytest.mark.parametrize("codec, values", [(INTS, [3, -7, 2**40]), (FLOATS, [0.5, -1e300, 3.0])])
def test_a_vector_codec_round_trips_and_refuses_bytes_that_are_not_its_vector(codec, values):
    raw = codec.encode(values)
    assert raw == np.asarray(values, dtype=codec.dtype).tobytes()
    assert codec.decode(raw).tolist() == values
    with pytest.raises(ValueError, match="stored value is not"):
        codec.decode(raw[:-1])


def test_the_bit_codecs_pack_and_unpack_by_shape():
    bits = mechanism("bits")
    truth = np.random.default_rng(1).random((13, 5)) < 0.5
    assert np.array_equal(bits.answer.decode(bits.answer.encode(truth), (13, 5)), truth)
    noise = np.random.default_rng(2).integers(-300, 300, size=(13, 5))
    assert np.array_equal(bits.noise.decode(bits.noise.encode(noise), (13, 5)), noise)


def test_the_lattice_and_bits_paths_sell_any_level_of_their_ladder_without_reading_released_levels():
    assert mechanism("lattice").refusal(D("0.37"), released=NOTHING, ladder=NOTHING) is None
    ladder = lambda: [D(1), D(2), D(4)]  # noqa: E731
    assert mechanism("bits").refusal(D(2), released=NOTHING, ladder=ladder) is None
    refused = mechanism("bits").refusal(D("3"), released=NOTHING, ladder=ladder)
    assert refused.message == "this microdata listing sells the levels 1, 2, 4; 3 is not one of them"
    assert refused.hint == "One of 1, 2, 4."


def test_the_retired_l1_path_sells_only_the_levels_it_released():
    laplace = mechanism("laplace")
    released = lambda: ([D(1), D(3)], D(3))  # noqa: E731
    assert laplace.refusal(D(3), released=released, ladder=NOTHING) is None
    refused = laplace.refusal(D(2), released=released, ladder=NOTHING)
    assert refused.message.startswith(FLOAT_RETIRED + "; only a level it has already released can be bought: 1, 3")
    assert refused.hint == refused.message[0].upper() + refused.message[1:] + "."
    assert refused.impossible == f"{FLOAT_RETIRED}, and level 2 was never released on it"
    nothing = laplace.refusal(D(1), released=lambda: ([], D(0)), ladder=NOTHING)
    assert "it has released nothing, so none can be bought" in nothing.message


def test_the_retired_l2_path_sells_between_its_lowest_and_largest_released_level():
    l2 = mechanism("laplace_l2")
    released = lambda: ([D(1), D(4)], D(4))  # noqa: E731
    assert l2.refusal(D("2.5"), released=released, ladder=NOTHING) is None
    refused = l2.refusal(D(5), released=released, ladder=NOTHING)
    assert "a level from 1 to 4 can still be bought" in refused.message


def test_the_levels_sold_and_offered_next():
    ladder = lambda: [D(1), D(2), D(4)]  # noqa: E731
    bits, exact = mechanism("bits"), mechanism("lattice")
    assert bits.level_sold(D("1.5"), ladder=ladder, ceiling=D(4)) == D(2)
    assert bits.level_sold(D(5), ladder=ladder, ceiling=D(4)) == D(4)
    assert exact.level_sold(D("1.5"), ladder=NOTHING, ceiling=D(4)) == D("1.5")
    assert bits.next_level(D(1), D(3), ladder=ladder) == D(2)
    assert bits.next_level(D(2), D(3), ladder=ladder) is None
    assert exact.next_level(D(1), D(3), ladder=NOTHING) == D(2) and exact.next_level(D(2), D(3), ladder=NOTHING) == D(3)
    assert exact.gain(D(1), D(2), 8.0, 3.0) == 2.0 and bits.gain(D(1), D(2), 8.0, 2.0) == 4.0


def test_noise_scales_are_weight_over_level_and_on_the_lattice_times_the_grid():
    assert mechanism("laplace").scales(D(2), [1.0, 4.0], None).tolist() == [0.5, 2.0]
    assert mechanism("lattice").scales(D(2), [1, 4], ["0.5", "1"]).tolist() == [0.25, 2.0]
    assert mechanism("bits").scales(D(2), [3], None).tolist() == [1.5]


def test_accuracy_before_purchase_is_each_mechanisms_bound():
    plan = SimpleNamespace(bound=lambda i, eps: 10.0 * i + float(eps))
    got = mechanism("lattice").accuracy(D(2), labels=["a", "b"], scales=np.array([1.0, 3.0]), plan=lambda: plan,
                                         records=NOTHING)
    assert got == [{"label": "a", "noise_scale": 1.0, "error_bound": 2.0},
                   {"label": "b", "noise_scale": 3.0, "error_bound": 12.0}]
    l2 = mechanism("laplace_l2").accuracy(D(1), labels=["x", "y"], scales=np.array([2.0, 2.0]), plan=NOTHING,
                                          records=NOTHING)
    assert [row["error_bound"] for row in l2] == [l2_error_radius(2, 2.0)] * 2
    md = SimpleNamespace(weight=3, labels=["p", "q"], bound=lambda eps: 7.5)
    assert mechanism("bits").accuracy(D(3), labels=["ignored"], scales=None, plan=NOTHING, records=lambda: md) == [
        {"label": "p", "noise_scale": 1.0, "error_bound": 7.5}, {"label": "q", "noise_scale": 1.0, "error_bound": 7.5}]


def test_a_lattice_release_is_clamped_whole_steps_times_the_grid():
    values = mechanism("lattice").values(np.array([5, 10, 3]), np.array([-9, 2, 1]), level=D(1), weights=[1, 1, 1],
                                         lower=[0, 0, 0], upper=[100, 11, 100], grids=["1", "0.5", "0.25"])
    assert values == [0, 5.5, 1] and isinstance(values[0], int) and isinstance(values[2], int)


def test_a_float_release_is_snapped_and_clamped():
    answer, noise = np.array([10.0, 20.0]), np.array([0.3, -50.0])
    got = mechanism("laplace").values(answer, noise, level=D(2), weights=[1.0, 1.0], lower=[0, 0], upper=[100, 100],
                                      grids=None)
    assert got == snap(answer + noise, np.array([0.5, 0.5]), [0, 0], [100, 100]).tolist()


def test_a_lattice_step_is_the_lattice_modules_step():
    weights = [1, 3]
    got = mechanism("lattice").step(D(2), dim=2, weights=weights, rng=random.Random(7))
    assert np.array_equal(got[0], lattice.step(D(2), weights, random.Random(7))[0]) and got[1] == "initial"
    below = (D(1), got[0])
    up = mechanism("lattice").step(D(3), dim=2, weights=weights, rng=random.Random(8), below=below)
    assert np.array_equal(up[0], lattice.step(D(3), weights, random.Random(8), below=below)[0])


def test_a_float_step_is_the_float_paths_draw():
    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    noise, method = mechanism("laplace").step(D(2), dim=3, weights=[1, 1, 1], rng=rng_a,
                                              below=(D(1), np.array([0.1, 0.2, 0.3])))
    want = NoisePath(3, [1.0], [np.array([0.1, 0.2, 0.3])]).draw(2.0, rng_b)
    assert np.array_equal(noise, want.noise) and method == want.method == "relax"


def test_an_l2_path_is_sampled_from_the_ceiling_down_extended_below_and_read_off_between():
    l2 = mechanism("laplace_l2")
    changed, noise, method = l2.jump(None, D(2), dim=2, ceiling=D(8), rng=np.random.default_rng(5))
    levels, values = l2_path(2, 8.0, 2.0, np.random.default_rng(5))
    assert method == "l2 initial" and np.array_equal(noise, l2_at(levels, values, 2.0))
    again, read, how = l2.jump(changed, D(4), dim=2, ceiling=D(8), rng=np.random.default_rng(6))
    assert again is None and how == "l2 lookup" and np.array_equal(read, l2_at(*changed, 4.0))
    longer, _, how = l2.jump(changed, D(1), dim=2, ceiling=D(8), rng=np.random.default_rng(6))
    assert how == "l2 extend" and longer[0][-1] <= 1.0


def test_the_lattice_profile_is_kept_through_the_callers_cache_under_a_public_key():
    layout = SimpleNamespace(unit_weights=(1,), unit_cases=(((0, 1),),))
    plan = SimpleNamespace(lattice=layout, labels=("count",))
    kept = {}

    def cached(parts, compute):
        kept[parts] = compute()
        return kept[parts]

    deltas, method, line = mechanism("lattice").profile(D(1), (0.0, 0.5, 1.0), plan=lambda: plan, records=NOTHING,
                                                        cached=cached, point_method=NOTHING)
    (parts,) = kept
    assert parts[:4] == ("lattice", (1,), (((0, 1),),), "1") and parts[4] == (0.0, 0.5, 1.0)
    assert deltas[-1] == 0.0 and deltas[0] > 0 and method.startswith("exact law") and line == guarantee.lattice_statement()


def test_the_float_profile_is_never_computed():
    plan = SimpleNamespace(labels=("count",), statistics=({"kind": "count"},), weights=(1.0,))
    deltas, method, line = mechanism("laplace").profile(D(1), (0.5,), plan=lambda: plan, records=NOTHING,
                                                        cached=NOTHING, point_method=lambda: "initial")
    assert deltas is None and method.startswith("not computed")
    assert line == guarantee.float_release_statement(D(1), method="initial", single_count=True)
    _, _, vector = mechanism("laplace_l2").profile(D(1), (0.5,), plan=lambda: plan, records=NOTHING, cached=NOTHING,
                                                   point_method=lambda: "initial")
    assert vector == guarantee.float_release_statement(D(1), method="initial", single_count=False)


def test_lattice_values_in_int64_are_the_decimal_loops_values_bit_for_bit():
    from releases.engine.mechanisms.exact import _decimal_amounts, grid_amounts

    rng = random.Random(32)
    grids = ["1", "0.01", "0.5", "0.25", "2.5", "1E+2", "0.001", "3", "0.1", "0.3", "7.77"]
    for trial in range(300):
        n = rng.randint(0, 40)
        bound = 10 ** rng.choice([2, 6, 12, 15, 17, 20]) if trial % 2 else 1000  # beyond 2^53: the Decimal loop
        answer = [rng.randint(-bound, bound) for _ in range(n)]
        noise = [rng.randint(-bound, bound) for _ in range(n)]
        lower, upper = [rng.randint(-bound, 0) for _ in range(n)], [rng.randint(0, bound) for _ in range(n)]
        grid = [rng.choice(grids) for _ in range(n)]
        try:
            a, b = np.array(answer, dtype=np.int64), np.array(noise, dtype=np.int64)
        except OverflowError:
            a, b = np.array(answer, dtype=object), np.array(noise, dtype=object)
        got, want = grid_amounts(a, b, lower, upper, grid), _decimal_amounts(answer, noise, lower, upper, grid)
        assert got == want and [type(v) for v in got] == [type(v) for v in want], trial
