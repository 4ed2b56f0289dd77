"""The pair-distance operator and the edge objective: adjoints, finite differences, invariants."""
import numpy as np
import pytest

from roembed.data import Comparisons
from roembed.losses import Sigmoid, get_loss
from roembed.objective import EdgeObjective, PairDistances, quadruplet_distances
from roembed.projections import (center_gram, embedding_from_gram, project_psd, project_psd_rank,
                                 top_eigenpairs)


@pytest.fixture
def graph():
    rng = np.random.default_rng(0)
    quads = []
    while len(quads) < 60:
        q = rng.choice(8, size=4, replace=False)
        quads.append(q)
    quads += [[0, 1, 0, 2], [0, 2, 0, 1], [3, 4, 3, 5]]  # triplets, incl. an opposite pair
    return Comparisons(np.array(quads), n_objects=8, weight=rng.uniform(0.5, 3, len(quads))).aggregate()


def objective_for(graph, loss, cap=None, two_sided=False):
    return EdgeObjective(get_loss(loss), graph.edge_pairs[:, 0], graph.edge_pairs[:, 1], graph.votes,
                         len(graph.pairs), cap, two_sided)


def test_pair_distances_match_direct_computation(graph):
    X = np.random.default_rng(1).standard_normal((8, 3))
    dist = PairDistances(graph.pairs, 8)
    d = dist.from_embedding(X)
    np.testing.assert_allclose(d, ((X[graph.pairs[:, 0]] - X[graph.pairs[:, 1]]) ** 2).sum(1))
    np.testing.assert_allclose(dist.from_gram(X @ X.T), d, atol=1e-12)
    near, far = quadruplet_distances(X, graph.edges)
    np.testing.assert_allclose(near, d[graph.edge_pairs[:, 0]])
    np.testing.assert_allclose(far, d[graph.edge_pairs[:, 1]])


def test_embedding_grad_matches_dense_formula_with_shared_objects():
    """The compiled scatter adds up every pair touching an object (repeated rows, both ends)."""
    rng = np.random.default_rng(7)
    pairs = np.array([[0, 1], [1, 2], [0, 2], [3, 0], [1, 3], [2, 3], [0, 1]])  # object 0 in 4 pairs, one twice
    X = rng.standard_normal((4, 3)).astype(np.float32)  # non-float64 input is accepted
    g = rng.standard_normal(len(pairs))
    dist = PairDistances(pairs, 4)
    expected = np.zeros((4, 3))
    for (a, b), gp in zip(pairs, g):
        expected[a] += 2 * gp * (X[a] - X[b])
        expected[b] -= 2 * gp * (X[a] - X[b])
    np.testing.assert_allclose(dist.embedding_grad(g, X), expected, rtol=1e-6)
    np.testing.assert_allclose(dist.from_embedding(X), ((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2).sum(1), rtol=1e-6)


def test_pair_distances_reject_indices_and_shapes_the_loops_cannot_check():
    with pytest.raises(ValueError, match=r"pair indices must lie in \[0, 4\), got 0..4"):
        PairDistances(np.array([[0, 1], [2, 4]]), 4)
    with pytest.raises(ValueError, match="pair indices"):
        PairDistances(np.array([[-1, 1]]), 4)
    dist = PairDistances(np.array([[0, 1], [2, 3]]), 4)
    with pytest.raises(ValueError, match=r"embedding has shape \(3, 2\), expected \(4, p\)"):
        dist.from_embedding(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="g_pair has shape"):
        dist.embedding_grad(np.zeros(3), np.zeros((4, 2)))
    assert len(PairDistances(np.zeros((0, 2), dtype=int), 4).from_embedding(np.zeros((4, 2)))) == 0


def test_gram_grad_is_adjoint_of_from_gram(graph):
    rng = np.random.default_rng(2)
    dist = PairDistances(graph.pairs, 8)
    H = rng.standard_normal((8, 8))
    H = H + H.T
    g = rng.standard_normal(len(graph.pairs))
    assert np.isclose(np.vdot(dist.from_gram(H), g), np.vdot(H, dist.gram_grad(g)))
    np.testing.assert_allclose(dist.gram_grad(g), dist.gram_grad(g).T)


@pytest.mark.parametrize("loss, robust", [(name, robust) for name in ["squared", "hinge", "soe", "ste", "tste", "ckl"]
                                          for robust in (False, True)] + [(Sigmoid(slope=2.0), False)], ids=str)
def test_embedding_gradient_matches_finite_differences(graph, loss, robust):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 2))
    cap = np.full(len(graph), 0.3) if robust else None
    obj = objective_for(graph, loss, cap)
    dist = PairDistances(graph.pairs, 8)

    def f(flat):
        d = dist.from_embedding(flat.reshape(X.shape))
        return obj.evaluate(d)[0]

    d = dist.from_embedding(X)
    grad = dist.embedding_grad(obj.evaluate(d)[1], X).ravel()
    eps = 1e-6
    fd = np.array([(f(X.ravel() + eps * e) - f(X.ravel() - eps * e)) / (2 * eps) for e in np.eye(X.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss", ["tste", "ckl", "soe"])
def test_reverse_weight_counts_each_edge_reversed(graph, loss, monkeypatch):
    """``a_c phi(s_c) + b_c phi(-s_c)`` in one pass equals the edges listed again with near and far swapped
    (value and gradient): through the pairs, and edge by edge on two threads."""
    import roembed.objective as objective_module

    rng = np.random.default_rng(5)
    X = rng.standard_normal((8, 2))
    a, b = rng.uniform(0, 1, len(graph)), rng.uniform(0, 1, len(graph))
    near, far = graph.edge_pairs[:, 0], graph.edge_pairs[:, 1]
    dist = PairDistances(graph.pairs, 8)
    both = EdgeObjective(get_loss(loss), near, far, a, len(graph.pairs), reverse_weight=b)
    listed = EdgeObjective(get_loss(loss), np.concatenate([near, far]), np.concatenate([far, near]),
                           np.concatenate([a, b]), len(graph.pairs))
    d = dist.from_embedding(X)
    value, g_pair, _ = listed.evaluate(d)
    assert value > EdgeObjective(get_loss(loss), near, far, a, len(graph.pairs)).evaluate(d)[0]  # b counts
    np.testing.assert_allclose(both.evaluate(d)[0], value, rtol=1e-12)
    np.testing.assert_allclose(both.evaluate(d)[1], g_pair, rtol=1e-10, atol=1e-12)
    monkeypatch.setattr(objective_module, "THREAD_EDGES", 1)  # two threads even on this small graph
    v, grad = both.embedding_value_and_grad(X, dist, threads=2)
    np.testing.assert_allclose(v, value, rtol=1e-12)
    np.testing.assert_allclose(grad, dist.embedding_grad(g_pair, X), rtol=1e-10, atol=1e-12)


def test_reverse_weight_refuses_fista(graph):
    from roembed.solvers.fista import fista_gram

    near, far = graph.edge_pairs[:, 0], graph.edge_pairs[:, 1]
    obj = EdgeObjective(get_loss("tste"), near, far, graph.votes, len(graph.pairs), reverse_weight=graph.votes)
    with pytest.raises(ValueError, match="FISTA does not support reverse_weight"):
        fista_gram(obj, PairDistances(graph.pairs, 8), np.eye(8), lam=0.1)


@pytest.mark.parametrize("loss", ["tste", "ckl", "soe"])
def test_reverse_weight_with_caps_shifts_the_forward_term_only(graph, loss):
    """With outlier caps: ``a_c psi_c(s_c) + b_c phi(-s_c)``, the envelope on the answer and the plain loss on
    its reverse; value, gradient (finite differences) and shifts."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((8, 2))
    a, b = rng.uniform(0, 1, len(graph)), rng.uniform(0, 1, len(graph))
    near, far = graph.edge_pairs[:, 0], graph.edge_pairs[:, 1]
    dist = PairDistances(graph.pairs, 8)
    capped = EdgeObjective(get_loss(loss), near, far, a, len(graph.pairs), cap=0.3, reverse_weight=b)
    forward = EdgeObjective(get_loss(loss), near, far, a, len(graph.pairs), cap=0.3)
    d = dist.from_embedding(X)
    s = forward.margins(d)
    value, g_pair, shifts = capped.evaluate(d)
    v_forward, _, shifts_forward = forward.evaluate(d)
    assert np.any(shifts > 0)  # some edges are shifted
    np.testing.assert_array_equal(shifts, shifts_forward)
    np.testing.assert_allclose(value, v_forward + np.dot(b, get_loss(loss).penalty(-s)[0]), rtol=1e-12)
    step = 1e-6
    for k in rng.choice(len(d), 5, replace=False):
        e = np.zeros_like(d)
        e[k] = step
        numeric = (capped.evaluate(d + e)[0] - capped.evaluate(d - e)[0]) / (2 * step)
        assert numeric == pytest.approx(g_pair[k], rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("cap", [None, 0.3])
def test_local_curvature_with_reverse_weight_is_the_edges_listed_reversed(graph, cap):
    from roembed.sandwich import local_curvature

    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 2))
    a, b = rng.uniform(0, 1, len(graph)), rng.uniform(0, 1, len(graph))
    near, far = graph.edge_pairs[:, 0], graph.edge_pairs[:, 1]
    dist = PairDistances(graph.pairs, 8)
    both = EdgeObjective(get_loss("tste"), near, far, a, len(graph.pairs), reverse_weight=b, cap=cap)
    both.objects = both.objects_of(dist)
    caps = None if cap is None else np.concatenate([np.full(len(graph), cap), np.full(len(graph), np.inf)])
    listed = EdgeObjective(get_loss("tste"), np.concatenate([near, far]), np.concatenate([far, near]),
                           np.concatenate([a, b]), len(graph.pairs), cap=caps)
    listed.objects = listed.objects_of(dist)
    query = np.arange(len(graph))
    for got, want in zip(local_curvature(both, X, 1e-3, query),
                         local_curvature(listed, X, 1e-3, np.concatenate([query, query]))):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_votes_act_as_repeated_rows():
    base = Comparisons([[0, 1, 2], [1, 2, 3], [3, 0, 1]], weight=[3.0, 1.0, 1.0]).aggregate()
    rep = Comparisons([[0, 1, 2]] * 3 + [[1, 2, 3], [3, 0, 1]]).aggregate()
    X = np.random.default_rng(4).standard_normal((4, 2))
    np.testing.assert_array_equal(base.edges, rep.edges)
    np.testing.assert_allclose(base.votes, rep.votes)
    assert sorted(rep.votes) == [1.0, 1.0, 3.0]
    values = []
    for g in (base, rep):
        d = PairDistances(g.pairs, 4).from_embedding(X)
        values.append(objective_for(g, "soe").evaluate(d)[0])
    assert np.isclose(values[0], values[1])


def test_top_eigenpairs_keep_the_largest():
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    G = (Q * np.array([-3.0, 0.5, 1.0, 2.0, 7.0, 4.0])) @ Q.T
    vals, _ = top_eigenpairs(G, 2)
    np.testing.assert_allclose(vals, [7.0, 4.0])
    P = project_psd_rank(G, 2)
    assert np.linalg.matrix_rank(P, tol=1e-8) == 2
    np.testing.assert_allclose(np.linalg.eigvalsh(project_psd(G)).min(), 0.0, atol=1e-10)
    X = embedding_from_gram(P, 2)
    np.testing.assert_allclose(X @ X.T, P, atol=1e-10)


def test_center_gram_keeps_distances():
    X = np.random.default_rng(6).standard_normal((5, 3)) + 4.0
    G, C = X @ X.T, center_gram(X @ X.T)
    pairs = np.array([[0, 1], [2, 4], [1, 3]])
    dist = PairDistances(pairs, 5)
    np.testing.assert_allclose(dist.from_gram(G), dist.from_gram(C))
    np.testing.assert_allclose(C.sum(axis=0), 0.0, atol=1e-10)


@pytest.mark.parametrize("p", [1, 3, 8, 10, 17, 130, 300])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_quadruplet_distances_equal_numpys_formula_bit_for_bit(p, dtype):
    """The compiled loop sums each distance in NumPy's order (pairwise: under 8 terms, 8 running sums, halves
    past 128), so it equals the one-pass NumPy formula bit for bit, on rows of very different scales, in
    blocks on 2 threads and with no rows at all."""
    from roembed._threads import limit_threads

    rng = np.random.default_rng(p)
    X = (rng.standard_normal((50, p)) * rng.choice([1e-3, 1.0, 1e3], size=(50, p))).astype(dtype)
    quads = rng.integers(0, 50, size=(1 << 17, 4))
    with limit_threads(2):
        near, far = quadruplet_distances(X, quads)
    assert near.dtype == far.dtype == dtype
    assert np.array_equal(near, ((X[quads[:, 0]] - X[quads[:, 1]]) ** 2).sum(axis=1))
    assert np.array_equal(far, ((X[quads[:, 2]] - X[quads[:, 3]]) ** 2).sum(axis=1))
    empty = quadruplet_distances(X, np.empty((0, 4), dtype=np.int64))
    assert empty[0].shape == empty[1].shape == (0,)
