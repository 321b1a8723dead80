"""The plain maths of trust networks: distances against hand-computed values,
the maps from distance to cap, and the edge-list reader. No Django."""

import math
from decimal import Decimal

import numpy as np
import pytest

from market.trust.edgelist import MAX_BYTES, MAX_EDGES, MAX_REPORTED, EdgeListError, parse_edge_list
from market.trust.graph import cap_for, cap_formula, plain, resistance_distances, shortest_distances

INF = math.inf

# --- distances, computed by hand
#
# Shortest path: the weights are lengths, a path's length is the sum of its
# edges' lengths, the distance the smallest over paths.
# Effective resistance: the weights are conductances (an edge of weight w is
# a resistor of 1/w); resistors in series add, in parallel their conductances
# add (R = R1·R2 / (R1 + R2) for two).

PATH = [("a", "b", 1), ("b", "c", 1)]
TRIANGLE = [("a", "b", 1), ("b", "c", 1), ("a", "c", 1)]
TWO_PATHS = [("a", "b", 1), ("b", "d", 1), ("a", "c", 1), ("c", "d", 1)]
SQUARE = [("a", "b", 1), ("b", "c", 1), ("c", "d", 1), ("d", "a", 1)]


def test_a_path_of_unit_edges():
    # a - b - c: shortest a->c = 1 + 1 = 2; resistance: two 1-ohm resistors in series, 1 + 1 = 2
    assert shortest_distances(PATH, "a") == {"a": 0, "b": 1, "c": 2}
    assert resistance_distances(PATH, "a") == pytest.approx({"a": 0, "b": 1, "c": 2})
    # from the middle, both ends are one edge away
    assert shortest_distances(PATH, "b") == {"a": 1, "b": 0, "c": 1}
    assert resistance_distances(PATH, "b") == pytest.approx({"a": 1, "b": 0, "c": 1})


def test_a_triangle_of_unit_edges():
    # shortest a->c: the direct edge, 1.
    # resistance a->c: the direct edge (1) in parallel with the path a-b-c (1 + 1 = 2): 1·2 / (1 + 2) = 2/3
    assert shortest_distances(TRIANGLE, "a") == {"a": 0, "b": 1, "c": 1}
    assert resistance_distances(TRIANGLE, "a") == pytest.approx({"a": 0, "b": 0.6666666667, "c": 0.6666666667})


def test_two_parallel_paths_halve_the_resistance():
    # a-b-d and a-c-d, unit edges: each path alone is 1 + 1 = 2 (shortest and resistance alike);
    # both together: resistance 2·2 / (2 + 2) = 1, half of one path, while the shortest path stays 2
    assert shortest_distances(TWO_PATHS, "a")["d"] == 2
    assert resistance_distances(TWO_PATHS, "a")["d"] == pytest.approx(1.0)
    assert resistance_distances(TWO_PATHS[:2], "a")["d"] == pytest.approx(2.0)
    # a neighbour: its edge (1) in parallel with the three edges round the other way (3): 1·3 / (1 + 3) = 3/4
    assert resistance_distances(TWO_PATHS, "a")["b"] == pytest.approx(0.75)
    assert resistance_distances(SQUARE, "a") == pytest.approx({"a": 0, "b": 0.75, "c": 1.0, "d": 0.75})


def test_a_weighted_edge_is_a_length_for_one_and_a_conductance_for_the_other():
    # a -(2)- b: shortest a->b = length 2; resistance = 1 / conductance 2 = 1/2
    assert shortest_distances([("a", "b", 2)], "a") == {"a": 0, "b": 2}
    assert resistance_distances([("a", "b", 2)], "a") == pytest.approx({"a": 0, "b": 0.5})
    # a-b (1), b-c (1), a-c (5): shortest a->c goes round by b, 1 + 1 = 2 < 5;
    # resistance: conductance 5 in parallel with the path's 1/2 -> 1 / (5 + 1/2) = 2/11
    mixed = [("a", "b", 1), ("b", "c", 1), ("a", "c", 5)]
    assert shortest_distances(mixed, "a")["c"] == 2
    assert resistance_distances(mixed, "a")["c"] == pytest.approx(2 / 11)


def test_a_node_not_connected_is_at_infinity():
    # a-b and c-d: from a, c and d cannot be reached (the caller counts them as unknown)
    edges = [("a", "b", 1), ("c", "d", 1)]
    assert shortest_distances(edges, "a") == {"a": 0, "b": 1, "c": INF, "d": INF}
    assert resistance_distances(edges, "a") == {"a": 0, "b": 1, "c": INF, "d": INF}
    # a source outside every edge is a component of its own
    assert shortest_distances(edges, "home") == {"home": 0, "a": INF, "b": INF, "c": INF, "d": INF}
    assert resistance_distances(edges, "home") == {"home": 0, "a": INF, "b": INF, "c": INF, "d": INF}
    assert resistance_distances([], "home") == {"home": 0}


def test_parallel_edges_take_the_shorter_length_and_add_conductances():
    # two a-b edges of weights 1 and 3: shortest = min(1, 3) = 1; resistance = 1 / (1 + 3) = 1/4
    edges = [("a", "b", 1), ("b", "a", 3)]
    assert shortest_distances(edges, "a")["b"] == 1
    assert resistance_distances(edges, "a")["b"] == pytest.approx(0.25)


def test_exact_distances_read_exactly():
    # floating-point noise (0.1 + 0.2, the pseudo-inverse's rounding) is rounded away
    assert shortest_distances([("a", "b", 0.1), ("b", "c", 0.2)], "a")["c"] == 0.3
    assert resistance_distances(PATH, "a") == {"a": 0.0, "b": 1.0, "c": 2.0}


def test_resistance_is_a_metric_below_the_shortest_path(rng):
    # on a random connected graph: R <= shortest path (more paths only help), symmetric, triangle inequality
    nodes = [f"n{i}" for i in range(30)]
    edges = [(nodes[i], nodes[rng.integers(0, i)], float(rng.uniform(0.5, 2))) for i in range(1, 30)]
    edges += [(nodes[i], nodes[j], 1.0) for i, j in rng.integers(0, 30, (20, 2)) if i != j]
    lengths = [(a, b, 1 / w) for a, b, w in edges]  # the resistor of each edge as a length
    for source in ("n0", "n7"):
        resistance = resistance_distances(edges, source)
        shortest = shortest_distances(lengths, source)
        assert all(resistance[n] <= shortest[n] + 1e-9 for n in nodes)
    r0, r7 = resistance_distances(edges, "n0"), resistance_distances(edges, "n7")
    assert r0["n7"] == pytest.approx(r7["n0"])
    assert all(r0["n7"] <= r0[n] + r7[n] + 1e-9 for n in nodes)


def test_weights_too_far_apart_for_a_reliable_pseudo_inverse_are_refused():
    # a long chain of weak edges and a strong star: the chain's smallest Laplacian eigenvalue
    # falls below pinv's cut-off, which would silently drop it
    edges = [(f"c{i}", f"c{i + 1}", 1e-6) for i in range(600)] + [("hub", f"s{i}", 1e9) for i in range(600)]
    edges.append(("c0", "hub", 1.0))
    with pytest.raises(ValueError, match="too far apart"):
        resistance_distances(edges, "hub")


@pytest.mark.parametrize(
    "edges,message",
    [
        ([("a", "a", 1)], "joined to itself"),
        ([("a", "", 1)], "non-empty"),
        ([("a", "b", 0)], "greater than 0"),
        ([("a", "b", -1)], "greater than 0"),
        ([("a", "b", float("nan"))], "finite"),
        ([("a", "b")], "give \\(a, b, weight\\)"),
        ([("a", "b", "heavy")], "must be a number"),
    ],
)
def test_bad_edges_are_refused(edges, message):
    for measure in (shortest_distances, resistance_distances):
        with pytest.raises(ValueError, match=message):
            measure(edges, "a")


# --- from distance to cap


def test_the_exponential_map_rounds_down():
    # 5·e^(-0.5·1) = 3.03265...; 5·e^(-0.5·3) = 1.11565...; 5·e^0 = 5
    assert cap_for(Decimal(5), 1, "exp", Decimal("0.5")) == Decimal("3.0326")
    assert cap_for(Decimal(5), 3.0, "exp", Decimal("0.5")) == Decimal("1.1156")
    assert cap_for(Decimal(5), 0, "exp", Decimal("0.5")) == Decimal("5.0000")
    # 2·e^(-1·ln 2)... with d = 0.6931 (ln 2 ~ 0.693147): 2·e^(-0.6931) = 1.000094... -> 1.0000
    assert cap_for(Decimal(2), Decimal("0.6931"), "exp", 1) == Decimal("1.0000")


def test_the_inverse_map_rounds_down():
    # 5 / (1 + 2) = 1.66666... -> 1.6666 (half-up would give 1.6667, above the map)
    assert cap_for(Decimal(5), 2, "inverse", 1) == Decimal("1.6666")
    assert cap_for(Decimal(5), 1.0, "inverse", 1) == Decimal("2.5000")
    assert cap_for(Decimal(5), 0, "inverse", 1) == Decimal("5.0000")
    # 1 / (1 + 0.25) = 0.8 exactly; a distance a hair above 2/3 (0.666...67) gives a hair below 0.6 -> 0.5999
    assert cap_for(Decimal(1), Decimal("0.25"), "inverse", 1) == Decimal("0.8000")
    assert cap_for(Decimal(1), Decimal(2) / Decimal(3), "inverse", 1) == Decimal("0.5999")


def test_caps_never_exceed_the_map_and_fall_with_distance(rng):
    for kind in ("exp", "inverse"):
        previous = None
        for d in np.sort(rng.uniform(0, 20, 300)):
            exact = float(5 * math.exp(-0.7 * d) if kind == "exp" else 5 / (1 + d))
            cap = cap_for(Decimal(5), float(d), kind, Decimal("0.7"))
            assert cap <= Decimal(repr(exact)) + Decimal("1e-12") and exact - float(cap) < 1e-4
            assert cap == cap.quantize(Decimal("0.0001"))
            assert previous is None or cap <= previous
            previous = cap


@pytest.mark.parametrize(
    "distance,kind,lam,message",
    [
        (None, "exp", 1, "unknown"),
        (INF, "exp", 1, "unknown"),
        (-1, "exp", 1, "at least 0"),
        (float("nan"), "exp", 1, "finite"),
        (1, "exp", 0, "lambda must be greater than 0"),
        (1, "exp", -1, "lambda must be greater than 0"),
        (1, "square", 1, "one of exp, inverse"),
    ],
)
def test_bad_map_inputs_are_refused(distance, kind, lam, message):
    with pytest.raises(ValueError, match=message):
        cap_for(Decimal(5), distance, kind, lam)


def test_the_formula_in_words():
    assert cap_formula(Decimal("5.0000"), 1, "exp", Decimal("0.5000")) == "5 × e^(−0.5·1) = 3.0326"
    assert cap_formula(Decimal("5.0000"), 2 / 3, "inverse", 1) == "5 / (1 + 0.6667) = 3"
    assert [plain(x) for x in (Decimal("10.0000"), 0.66666666, 0, Decimal("2.5000"))] == ["10", "0.6667", "0", "2.5"]


# --- the edge list


def errors_of(data: bytes) -> list[str]:
    with pytest.raises(EdgeListError) as caught:
        parse_edge_list(data)
    return caught.value.errors


def test_an_edge_list_with_weights_quotes_and_blank_lines():
    edges = parse_edge_list(b'\xef\xbb\xbfhome,acme\n\n"Smith, Jones & Co" , acme , 2.5\r\nacme,lab,1e-1\n')
    assert [(e.line, e.a, e.b, e.weight) for e in edges] == [
        (1, "home", "acme", 1.0),
        (3, "Smith, Jones & Co", "acme", 2.5),
        (4, "acme", "lab", 0.1),
    ]


def test_every_bad_line_is_named():
    data = b"\n".join(
        [
            b"home,acme",  # 1: fine
            b"acme,acme",  # 2: a loop
            b",lab",  # 3: empty name
            b"lab",  # 4: one field
            b"a,b,c,d",  # 5: four fields
            b"a,b,heavy",  # 6: not a number
            b"a,b,0",  # 7: not > 0
            b"a,b,-2",  # 8
            b"a,b,nan",  # 9
            b"acme,home,3",  # 10: the edge of line 1 again
        ]
    )
    assert errors_of(data) == [
        "line 2: 'acme' is joined to itself: an edge joins two different organisations",
        "line 3: the first name is empty",
        "line 4: expected two names and an optional weight (a,b or a,b,weight), found 1 fields",
        "line 5: expected two names and an optional weight (a,b or a,b,weight), found 4 fields",
        "line 6: the weight 'heavy' is not a number",
        "line 7: the weight must be a number greater than 0, not '0'",
        "line 8: the weight must be a number greater than 0, not '-2'",
        "line 9: the weight must be a number greater than 0, not 'nan'",
        "line 10: the edge acme–home is already on line 1",
    ]


def test_limits_of_the_edge_list():
    lines = [f"n{i},n{i + 1}" for i in range(MAX_EDGES)]
    assert len(parse_edge_list("\n".join(lines).encode())) == MAX_EDGES
    assert errors_of("\n".join(lines + ["x,y"]).encode()) == [
        f"line {MAX_EDGES + 1}: more than {MAX_EDGES} edges; a network has at most {MAX_EDGES}"
    ]
    assert errors_of(b"\n  \n") == ["the file has no edges: write one edge per line, a,b or a,b,weight"]
    assert errors_of(b"a,b\n" * (MAX_BYTES // 4 + 1)) == ["the file is larger than 1 MB"]
    assert errors_of(b"a,b\nc,\xff\n") == ["line 2: not UTF-8 text: save the file as UTF-8"]
    assert errors_of(("x" * 101 + ",b").encode()) == ["line 1: the first name is longer than 100 characters"]
    many = errors_of(b"\n".join(b"a,a" for _ in range(50)))
    assert len(many) == MAX_REPORTED + 1 and many[-1] == f"checking stopped after {MAX_REPORTED} problems"
