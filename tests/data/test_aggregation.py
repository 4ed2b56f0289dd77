"""Properties of aggregating raw responses into the comparison graph (hypothesis)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roembed.data import Comparisons, InvalidComparisonsError, annotator_index, canonical_quadruplets, distinct_values

N_OBJECTS = 6


def _valid(q):
    i, j, l, k = q
    return i != j and l != k and {i, j} != {l, k}


index = st.integers(0, N_OBJECTS - 1)
triplet = st.tuples(index, index, index).filter(lambda t: len(set(t)) == 3).map(lambda t: (t[0], t[1], t[0], t[2]))
quadruplet = st.tuples(index, index, index, index).filter(_valid)
rows = st.lists(st.one_of(triplet, quadruplet), min_size=1, max_size=40)
weights = st.floats(0, 5, allow_nan=False, allow_infinity=False)


@st.composite
def comparisons(draw):
    quads = np.array(draw(rows), dtype=np.int64)
    w = np.array(draw(st.lists(weights, min_size=len(quads), max_size=len(quads))))
    annotator = np.array(draw(st.lists(st.sampled_from("abc"), min_size=len(quads), max_size=len(quads))))
    return Comparisons(quads, n_objects=N_OBJECTS, weight=w, annotator=annotator)


def _edge_votes(graph):
    return {tuple(e): v for e, v in zip(graph.edges.tolist(), graph.votes.tolist())}


def _assert_same_graph(g1, g2):
    assert np.array_equal(g1.edges, g2.edges)
    np.testing.assert_allclose(g1.votes, g2.votes, rtol=1e-12, atol=1e-12)
    assert np.array_equal(g1.n_responses, g2.n_responses)
    assert np.array_equal(g1.reverse_edge, g2.reverse_edge)


@settings(max_examples=60, deadline=None)
@given(comparisons())
def test_votes_sum_to_responses_and_map_back(c):
    g = c.aggregate()
    assert g.n_responses.sum() == len(c)
    np.testing.assert_allclose(g.votes.sum(), c.weight.sum())
    np.testing.assert_allclose(g.votes, np.bincount(g.response_edge, weights=c.weight, minlength=len(g)))
    unit = c.with_weight(np.ones(len(c))).aggregate()
    assert np.array_equal(unit.votes, unit.n_responses)
    # every response is the edge it was assigned to, and the edge lists it
    assert np.array_equal(canonical_quadruplets(c.quadruplets), g.edges[g.response_edge])
    for e in range(len(g)):
        assert np.all(g.response_edge[g.edge_responses(e)] == e)
        assert set(g.edge_annotators(e)) == set(c.annotator[g.response_edge == e])


@settings(max_examples=60, deadline=None)
@given(comparisons(), st.permutations(range(N_OBJECTS)))
def test_relabelling_objects_permutes_the_graph(c, perm):
    perm = np.array(perm)
    g, h = c.aggregate(), c.relabel(perm).aggregate()
    expected = {}
    for e, v in _edge_votes(g).items():
        key = tuple(canonical_quadruplets(perm[np.array([e])])[0].tolist())
        expected[key] = v
    got = _edge_votes(h)
    assert got.keys() == expected.keys()
    np.testing.assert_allclose([got[k] for k in expected], list(expected.values()))
    assert len(h.pairs) == len(g.pairs)


@settings(max_examples=60, deadline=None)
@given(comparisons(), st.data())
def test_splitting_shuffling_and_concatenating_aggregates_the_same(c, data):
    order = np.array(data.draw(st.permutations(range(len(c)))))
    cut = data.draw(st.integers(0, len(c)))
    parts = [c[part] for part in (order[:cut], order[cut:]) if len(part)]
    _assert_same_graph(Comparisons.concat(parts).aggregate(), c.aggregate())


@settings(max_examples=60, deadline=None)
@given(comparisons())
def test_reverse_edge_is_an_involution_onto_the_flipped_comparison(c):
    g = c.aggregate()
    has = g.reverse_edge >= 0
    assert np.array_equal(g.reverse_edge[g.reverse_edge[has]], np.flatnonzero(has))
    flipped = canonical_quadruplets(g.edges[:, [2, 3, 0, 1]])
    assert np.array_equal(g.edges[g.reverse_edge[has]], flipped[has])
    # an edge without a reverse has no response asserting the opposite
    present = {tuple(e) for e in g.edges.tolist()}
    assert not any(tuple(f) in present for f in flipped[~has].tolist())
    # flipping every response swaps each edge with its reverse
    h = c.flipped().aggregate()
    assert _edge_votes(h) == {tuple(f): v for f, v in zip(flipped.tolist(), g.votes.tolist())}


@settings(max_examples=60, deadline=None)
@given(rows)
def test_canonical_form_is_idempotent_and_ignores_symmetric_rewrites(quads):
    q = np.array(quads)
    canon = canonical_quadruplets(q)
    assert np.array_equal(canonical_quadruplets(canon), canon)
    for rewrite in ([1, 0, 2, 3], [0, 1, 3, 2], [1, 0, 3, 2]):
        assert np.array_equal(canonical_quadruplets(q[:, rewrite]), canon)
    triplets = q[:, 0] == q[:, 2]
    assert np.all(canon[triplets, 0] == canon[triplets, 2])  # triplets stay (anchor, closer, anchor, farther)


def test_graph_of_a_small_known_example():
    c = Comparisons([[0, 1, 2], [0, 1, 2], [0, 2, 1], [1, 0, 2]], weight=[1, 2, 0.5, 1])
    g = c.aggregate()
    table = {tuple(e): v for e, v in zip(g.edges.tolist(), g.votes.tolist())}
    assert table == {(0, 1, 0, 2): 3.0, (0, 2, 0, 1): 0.5, (1, 0, 1, 2): 1.0}
    e = g.edges.tolist().index([0, 1, 0, 2])
    assert g.edges[g.reverse_edge[e]].tolist() == [0, 2, 0, 1]
    assert g.reverse_edge[g.edges.tolist().index([1, 0, 1, 2])] == -1
    assert g.opposing_votes[e] == 0.5


def test_a_scaled_graph_keeps_its_edges_and_says_how_much_of_each_query_is_left():
    # query A: (0,1,2) twice and (0,2,1) once; query B: (1,0,2) once; query C: (2,0,1) once, weight 4
    c = Comparisons([[0, 1, 2], [0, 1, 2], [0, 2, 1], [1, 0, 2], [2, 0, 1]], weight=[1, 1, 1, 1, 4])
    graph = c.aggregate()
    scaled = graph.scaled([0.0, 0.5, 0.0, 0.3, 0.1])
    assert np.array_equal(scaled.edges, graph.edges)
    np.testing.assert_allclose(scaled.votes, np.bincount(graph.response_edge, weights=c.weight * [0, 0.5, 0, 0.3, 0.1]))
    order = {tuple(e): k for k, e in enumerate(graph.edges.tolist())}
    share = {e: scaled.query_share[k] for e, k in order.items()}
    # A: 3 responses keep 0.5 of 3 votes -> half a response's worth, both directions alike; B: 0.3 of its
    # one response; C: one response of weight 4 scaled by 0.1 -> 0.1 (the weight's own scale does not count)
    assert share == pytest.approx({(0, 1, 0, 2): 0.5, (0, 2, 0, 1): 0.5, (1, 0, 1, 2): 0.3, (2, 0, 2, 1): 0.1})
    assert graph.query_share is None and graph.scaled(np.ones(5)).query_share.tolist() == [1.0] * 4
    sub = scaled.subgraph(np.array([True, True, True, False, False]))
    assert sub.query_share.tolist() == pytest.approx([0.5, 0.5])
    # undecided: the weight the factors took off each edge's responses
    undecided = {e: scaled.undecided[k] for e, k in order.items()}
    assert undecided == pytest.approx({(0, 1, 0, 2): 1.5, (0, 2, 0, 1): 1.0, (1, 0, 1, 2): 0.7, (2, 0, 2, 1): 3.6})
    np.testing.assert_allclose(scaled.votes + scaled.undecided, graph.votes)
    assert graph.undecided is None and sub.undecided.tolist() == pytest.approx([1.5, 1.0])
    for bad in ([1.0] * 4, [1.0, 1.0, 1.0, 1.0, 1.5], [1.0, 1.0, 1.0, 1.0, -0.1]):
        with pytest.raises(ValueError, match="factor must be 5 numbers in"):
            graph.scaled(bad)



@settings(max_examples=60, deadline=None)
@given(comparisons(), st.data())
def test_a_scaled_graph_is_what_aggregating_the_scaled_responses_gives(c, data):
    # scaled reuses the graph's edges and cached structure: they must be what aggregating anew builds, bit for bit
    factor = np.array(data.draw(st.lists(st.floats(0, 1), min_size=len(c), max_size=len(c))))
    graph = c.aggregate()
    graph.edge_query  # cached before scaling (with reverse_edge), as the annotator stage has them
    scaled, fresh = graph.scaled(factor), c.with_weight(c.weight * factor).aggregate()
    for name in ("pairs", "edge_pairs", "response_edge", "votes", "n_responses", "reverse_edge", "edge_query",
                 "edges", "copies"):
        a, b = getattr(scaled, name), getattr(fresh, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert scaled.comparisons.annotator is c.annotator and graph.votes is not scaled.votes
    np.testing.assert_array_equal(graph.votes, c.aggregate().votes)  # the graph itself unchanged
    keep = graph.edge_query[graph.response_edge] % 2 == 0  # whole queries
    if keep.any():  # a cut-out graph (its parent's pairs) is aggregated anew: the same edges and votes
        sub = graph.subgraph(keep).scaled(factor[keep])
        ref = c[keep].with_weight(c.weight[keep] * factor[keep]).aggregate()
        assert sub.edges.tolist() == ref.edges.tolist()
        np.testing.assert_array_equal(sub.votes, ref.votes)


def test_with_weight_checks_only_the_new_weights_and_keeps_the_rest():
    c = Comparisons([[0, 1, 2], [1, 2, 0], [2, 0, 1]], annotator=[10, 9, 10], gold=[1.0, np.nan, 0.0],
                    object_names=["x", "y", "z"], extra={"sampler": np.array(["a", "b", "a"])})
    w = c.with_weight([0.5, 1.0, 2.0], copies=[1.0, 2.0, 1.0])
    assert w.weight.tolist() == [0.5, 1.0, 2.0] and w.copies.tolist() == [1.0, 2.0, 1.0]
    assert c.weight.tolist() == [1.0] * 3 and c.copies.tolist() == [1.0] * 3  # the original unchanged
    assert w.annotator.tolist() == [10, 9, 10] and w.object_names == ("x", "y", "z")
    assert w.extra["sampler"].tolist() == ["a", "b", "a"] and np.isnan(w.gold[1]) and not w.weight.flags.writeable
    with pytest.raises(InvalidComparisonsError, match="row 1"):
        c.with_weight([1.0, -1.0, 1.0])
    with pytest.raises(InvalidComparisonsError):
        c.with_weight([1.0, 1.0])
    with pytest.raises(InvalidComparisonsError, match="row 2"):
        c.with_weight([1.0, 1.0, 1.0], copies=[1.0, 1.0, 0.0])


def test_annotator_index_is_kept_read_only_and_follows_the_rows():
    c = Comparisons([[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]], annotator=["b", "a", "b", "c"])
    ids, who = annotator_index(c)
    assert ids.tolist() == ["a", "b", "c"] and who.tolist() == [1, 0, 1, 2]
    assert not who.flags.writeable and annotator_index(c)[1] is who
    assert annotator_index(c.with_weight([2.0] * 4))[1] is who  # the same responses: the same index
    sub_ids, sub_who = annotator_index(c[[1, 3]])
    assert sub_ids.tolist() == ["a", "c"] and sub_who.tolist() == [0, 1]


_IDS = st.one_of(st.lists(st.text(max_size=3), min_size=1, max_size=40),
                 st.lists(st.integers(-(2**62), 2**62), min_size=1, max_size=40),
                 st.lists(st.integers(0, 5), min_size=1, max_size=40).map(lambda v: np.asarray(v, np.uint8)),
                 st.lists(st.sampled_from(["w10", "w9", "", "é", "w1"]), min_size=1, max_size=40)
                 .map(lambda v: np.asarray(v, dtype=str)),
                 st.lists(st.one_of(st.integers(-5, 5), st.sampled_from([0.5, 2.0, -1.5])), min_size=1, max_size=40)
                 .map(lambda v: np.asarray(v, dtype=object)))


@given(_IDS)
@settings(max_examples=200, deadline=None)
def test_distinct_values_are_numpys_unique(values):
    """Hashed, then only the distinct values sorted: the same ids, in the same order, and the same codes."""
    arr = np.asarray(values, dtype=object) if isinstance(values, list) and isinstance(values[0], str) else np.asarray(values)
    distinct, code = distinct_values(arr)
    expected, expected_code = np.unique(arr, return_inverse=True)
    assert distinct.tolist() == expected.tolist() and distinct.dtype == expected.dtype
    assert code.tolist() == expected_code.reshape(-1).tolist()


def test_distinct_values_of_text_beside_numbers_keep_their_order():
    distinct, code = distinct_values(np.array(["b", 3, "a", 3, "b"], dtype=object))
    assert distinct.tolist() == ["b", 3, "a"] and code.tolist() == [0, 1, 2, 1, 0]


def test_one_row_is_a_one_row_subset_and_iteration_walks_the_rows():
    c = Comparisons([[0, 1, 2], [1, 2, 0], [2, 0, 1]], annotator=["b", "a", "b"], object_names=["x", "y", "z"])
    last = c[-1]  # was "expected rows of 3 ... got shape (4,)"
    assert len(last) == 1 and last.triplets.tolist() == [[2, 0, 1]] and last.annotator.tolist() == ["b"]
    assert last.object_names == ("x", "y", "z") and last.n_objects == 3
    rows = list(c)
    assert [r.triplets.tolist() for r in rows] == [[[0, 1, 2]], [[1, 2, 0]], [[2, 0, 1]]]
    with pytest.raises(IndexError):
        c[3]


def test_as_an_array_comparisons_are_their_quadruplets_copied():
    c = Comparisons([[0, 1, 0, 2], [3, 2, 1, 0]], annotator=["b", "a"])
    a = np.asarray(c)  # was numpy's "setting an array element with a sequence" (it walked the rows)
    assert a.tolist() == [[0, 1, 0, 2], [3, 2, 1, 0]] and a.shape == c.shape and a.dtype == np.int64
    a[0, 0] = 5  # a copy: the comparisons' own rows are read-only and unchanged
    assert c.quadruplets[0, 0] == 0
    assert np.asarray(c, dtype=np.float32).dtype == np.float32
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises(ValueError, match="without a copy"):
            np.asarray(c, copy=False)


def test_edge_table_lists_each_edges_distinct_annotators_numbers_by_value():
    # edge (0,1,0,2) has annotators 10, 9, 10: listed once each, 9 before 10 (as text "10" came first)
    c = Comparisons([[0, 1, 2], [0, 1, 2], [0, 1, 2], [1, 2, 0]], annotator=[10, 9, 10, 7],
                    extra={"sampler": np.array(["r", "u", "r", "r"])})
    graph = c.aggregate()
    first = graph.edges.tolist().index([0, 1, 0, 2])
    table = graph.edge_table([1 - first, first])  # in the order asked
    assert table["edge"].tolist() == [1 - first, first]
    assert table["annotators"].tolist() == ["7", "9;10"] and table["sampler"].tolist() == ["r", "r;u"]
    assert graph.edge_annotators(first) == [9, 10]
    text = Comparisons(c.triplets, annotator=["10", "9", "10", "7"]).aggregate()  # ids as text: sorted as text
    assert text.edge_table([first])["annotators"].tolist() == ["10;9"] and text.edge_annotators(first) == ["10", "9"]
    assert table["votes"].tolist() == [1.0, 3.0] and table["n_responses"].tolist() == [1, 3]
    assert graph.edge_table([]).empty and list(graph.edge_table([]).columns) == list(table.columns)


def test_edge_table_orders_an_extra_column_of_mixed_types_as_text():
    # np.unique cannot order numbers beside text: the distinct values are found as they come, then sorted as text
    c = Comparisons([[0, 1, 2], [0, 1, 2], [0, 1, 2], [1, 2, 0]], annotator=["x", "y", "x", "z"],
                    extra={"batch": np.array([2, "a", 10, 2], dtype=object)})
    graph = c.aggregate()
    first = graph.edges.tolist().index([0, 1, 0, 2])
    table = graph.edge_table([first, 1 - first])
    assert table["annotators"].tolist() == ["x;y", "z"] and table["batch"].tolist() == ["10;2;a", "2"]


def _assert_same_edges(sub, ref):
    """Every per-edge and per-response array, bit for bit and of the same dtype, and the objects of each edge's
    pairs (the subgraph's pairs are its parent's, numbered as there)."""
    for name in ("votes", "response_edge", "n_responses", "copies", "edge_objects", "reverse_edge", "edge_query",
                 "edges"):
        a, b = getattr(sub, name), getattr(ref, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert np.array_equal(sub.pairs[sub.edge_pairs], ref.pairs[ref.edge_pairs])
    assert sub.n_objects == ref.n_objects and sub.n_queries == ref.n_queries


@given(comparisons(), st.data())
@settings(max_examples=60, deadline=None)
def test_a_subgraph_of_whole_queries_is_the_graph_of_their_responses(c, data):
    from roembed.model_selection import holdout_mask

    copies = np.array(data.draw(st.lists(st.integers(1, 3), min_size=len(c), max_size=len(c))), dtype=float)
    for comps in (c, c.with_weight(c.weight, copies=copies)):  # bootstrap copies: per-edge means of the subset
        graph = comps.aggregate()
        if graph.n_queries < 2:
            continue
        held = holdout_mask(comps, 0.5, data.draw(st.integers(0, 100)), groups=graph.response_query)
        edges = np.array(data.draw(st.lists(st.booleans(), min_size=len(graph), max_size=len(graph))))
        by_edge = edges[graph.response_edge]  # whole edges, not whole queries: an opposite edge may be left out
        for side in (held, ~held, by_edge):
            if not side.any():
                continue
            sub, ref = graph.subgraph(side), comps[side].aggregate()
            _assert_same_edges(sub, ref)
            assert sub.pairs is graph.pairs and np.array_equal(np.flatnonzero(sub.kept_edges),
                                                               np.unique(graph.response_edge[side]))
            assert sub.comparisons.shape == ref.comparisons.shape
            assert np.array_equal(sub.comparisons.quadruplets, ref.comparisons.quadruplets)
            assert np.array_equal(sub.comparisons.annotator, ref.comparisons.annotator)


def test_a_subgraph_refuses_an_edge_split_between_its_sides():
    import pytest

    c = Comparisons(np.array([[0, 1, 0, 2], [0, 1, 0, 2], [1, 2, 1, 3]]), n_objects=4)
    graph = c.aggregate()
    with pytest.raises(ValueError, match="whole edges"):
        graph.subgraph(np.array([True, False, True]))  # the two votes of one edge on both sides
    with pytest.raises(ValueError, match="boolean mask"):
        graph.subgraph(np.array([0, 2]))
    assert len(graph.subgraph(np.array([True, True, False]))) == 1


@given(comparisons(), st.data())
@settings(max_examples=60, deadline=None)
def test_the_agreement_of_whole_edges_read_through_the_graph_is_that_of_their_responses(c, data):
    from roembed.metrics import agreement, edge_agreement

    X = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=2 * N_OBJECTS, max_size=2 * N_OBJECTS)),
                 dtype=float).reshape(N_OBJECTS, 2)  # integer coordinates: ties d_near == d_far happen
    for comps in (c, c.with_weight(np.round(c.weight))):  # integer weights: every sum exact, so bit for bit
        graph = comps.aggregate()
        edges = np.array(data.draw(st.lists(st.booleans(), min_size=len(graph), max_size=len(graph))))
        side = edges[graph.response_edge]
        if not side.any():
            assert np.isnan(edge_agreement(X, graph, np.flatnonzero(edges)))
            continue
        got, want = edge_agreement(X, graph, np.flatnonzero(edges)), agreement(X, comps[side])
        if np.isnan(want):
            assert np.isnan(got)
        elif comps is c:
            assert abs(got - want) <= 1e-12
        else:
            assert got == want


def test_factorize_keeps_texts_apart_after_a_nul_character():
    """pandas' string hash table reads "a" and "a\\x00b" (and "" and "\\x00") as one value."""
    from roembed._factorize import factorize

    values = np.array(["a", "a\x00b", "", "\x00", None, "a\x00b", "a"], dtype=object)
    codes, distinct = factorize(values)
    assert distinct.tolist() == ["a", "a\x00b", "", "\x00"] and codes.tolist() == [0, 1, 2, 3, -1, 1, 0]
    codes, distinct = factorize(values, missing=False)
    assert distinct[:4].tolist() == ["a", "a\x00b", "", "\x00"] and np.isnan(distinct[4])  # NaN, as pandas gives
    assert codes.tolist() == [0, 1, 2, 3, 4, 1, 0]
    codes, distinct = factorize(np.array(["w2", "w1", "w2"], dtype=object))  # the fast path, unchanged
    assert distinct.tolist() == ["w2", "w1"] and codes.tolist() == [0, 1, 0]
    ids, who = annotator_index(Comparisons([[0, 1, 2]] * 3, annotator=["a\x00b", "a", "a\x00b"]))
    assert ids.tolist() == ["a", "a\x00b"] and who.tolist() == [1, 0, 1]
