"""Lemon-So-Ye rank reduction and the final top-p truncation."""
import numpy as np
import pytest

from roembed.data import Comparisons
from roembed.objective import PairDistances
from roembed.projections import project_psd_rank, top_eigenpairs
from roembed.solvers.rank_reduction import psd_factor, reduce_rank, truncate_rank


def graph_and_gram(n, rank, m, seed):
    rng = np.random.default_rng(seed)
    q = np.array([rng.choice(n, 4, replace=False) for _ in range(m)])
    graph = Comparisons(q, n_objects=n).aggregate()
    Y = rng.standard_normal((n, rank))
    return graph, PairDistances(graph.pairs, n), Y @ Y.T


def margins(G, graph, distances):
    d = distances.from_gram(G)
    return d[graph.edge_pairs[:, 1]] - d[graph.edge_pairs[:, 0]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reduction_lowers_rank_and_keeps_every_margin(seed):
    n, r, m = 9, 6, 10
    graph, distances, G = graph_and_gram(n, r, m, seed)
    E = len(graph)
    assert E < r * (r + 1) // 2  # the null space of A_U is nontrivial
    gamma = np.random.default_rng(seed).standard_normal(E)
    out = reduce_rank(G, distances, graph.edge_pairs[:, 0], graph.edge_pairs[:, 1])
    new_rank = np.linalg.matrix_rank(out.gram, tol=1e-8 * np.abs(G).max())
    assert out.rank_before == r and out.n_steps >= 1
    assert out.rank_after == new_rank < r
    assert new_rank * (new_rank + 1) // 2 <= E + 1  # stopped at (about) the Barvinok-Pataki count
    assert out.null_dim >= r * (r + 1) // 2 - E
    assert np.linalg.eigvalsh(out.gram).min() > -1e-9  # still PSD
    before = margins(G, graph, distances) + gamma
    after = margins(out.gram, graph, distances) + gamma
    assert np.max(np.abs(after - before)) <= 1e-8
    assert out.max_margin_change == pytest.approx(np.max(np.abs(after - before)), abs=1e-12)


def test_trivial_null_space_means_no_step():
    n = 7
    graph, distances, G = graph_and_gram(n, 2, 200, 3)  # many edges, rank 2: K = 3 << E
    out = reduce_rank(G, distances, graph.edge_pairs[:, 0], graph.edge_pairs[:, 1])
    assert out.n_steps == 0 and out.null_dim == 0 and out.rank_after == out.rank_before == 2
    assert np.allclose(out.gram, G, atol=1e-10)


def test_zero_matrix():
    graph, distances, _ = graph_and_gram(5, 1, 5, 0)
    out = reduce_rank(np.zeros((5, 5)), distances, graph.edge_pairs[:, 0], graph.edge_pairs[:, 1])
    assert out.rank_before == 0 and out.n_steps == 0 and not out.gram.any()


def test_psd_factor():
    rng = np.random.default_rng(0)
    Y = rng.standard_normal((6, 3))
    U = psd_factor(Y @ Y.T)
    assert U.shape == (6, 3) and np.allclose(U @ U.T, Y @ Y.T)


def known_spectrum(values, seed=0):
    n = len(values)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return (Q * values) @ Q.T, Q


def test_truncation_keeps_the_largest_eigenvalues():
    """Regression: the MATLAB reference kept the p SMALLEST positive eigenvalues (ascending eig order)."""
    values = np.array([0.01, 5.0, -2.0, 0.3, 4.0, 0.0])
    G, Q = known_spectrum(values)
    G2, share = truncate_rank(G, 2)
    assert np.allclose(np.sort(np.linalg.eigvalsh(G2))[::-1][:2], [5.0, 4.0])
    assert np.allclose(G2, (Q[:, [1, 4]] * [5.0, 4.0]) @ Q[:, [1, 4]].T)
    assert share == pytest.approx(0.31 / 9.31)
    vals, _ = top_eigenpairs(G, 2)
    assert np.allclose(vals, [5.0, 4.0])
    assert np.allclose(project_psd_rank(G, 2), G2)  # the prox of rank_method="truncate"


def test_truncation_clips_negative_top_eigenvalues():
    G, _ = known_spectrum(np.array([2.0, -1.0, -3.0]))
    G2, share = truncate_rank(G, 2)
    assert np.allclose(np.linalg.eigvalsh(G2), [0.0, 0.0, 2.0], atol=1e-12) and share == pytest.approx(0.0)
