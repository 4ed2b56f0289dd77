"""FISTA over (G, gamma): gradient, backtracking bound, optimality, stopping, bad parameters."""
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from roembed.data import Comparisons
from roembed.estimators.base import edge_objective
from roembed.losses import Squared
from roembed.objective import PairDistances
from roembed.projections import project_psd
from roembed.solvers.fista import fista_gram, smooth_part, soft_threshold


def small_problem(seed=0, n=8, m=60, quadruplets=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    if quadruplets:
        q = np.array([rng.choice(n, 4, replace=False) for _ in range(m)])
    else:
        t = np.array([rng.choice(n, 3, replace=False) for _ in range(m)])
        q = t[:, [0, 1, 0, 2]]
    d_near = ((X[q[:, 0]] - X[q[:, 1]]) ** 2).sum(1)
    d_far = ((X[q[:, 2]] - X[q[:, 3]]) ** 2).sum(1)
    q = np.where((d_near < d_far)[:, None], q, q[:, [2, 3, 0, 1]])
    votes = rng.integers(1, 5, size=m)
    graph = Comparisons(q, n_objects=n, weight=votes).aggregate()
    w = graph.votes / graph.votes.mean()
    return graph, edge_objective(graph, Squared(), w * w), PairDistances(graph.pairs, n), w


def random_sym(rng, n):
    A = rng.standard_normal((n, n))
    return A + A.T


@pytest.mark.parametrize("quadruplets", [False, True])
def test_smooth_part_gradient_matches_finite_differences(quadruplets):
    graph, objective, distances, _ = small_problem(1, quadruplets=quadruplets)
    rng = np.random.default_rng(2)
    n, E = graph.n_objects, len(graph)
    G = project_psd(random_sym(rng, n))
    gamma = rng.standard_normal(E)
    f, grad_G, grad_g = smooth_part(objective, distances, G, gamma)
    assert np.allclose(grad_G, grad_G.T)
    for _ in range(3):
        S, s = random_sym(rng, n), rng.standard_normal(E)
        h = 1e-6
        fd = (smooth_part(objective, distances, G + h * S, gamma + h * s, gradient=False)
              - smooth_part(objective, distances, G - h * S, gamma - h * s, gradient=False)) / (2 * h)
        assert fd == pytest.approx(np.vdot(grad_G, S) + np.dot(grad_g, s), rel=1e-6, abs=1e-6)


def test_smooth_part_is_the_paper_weighted_least_squares():
    graph, objective, distances, w = small_problem(3)
    rng = np.random.default_rng(4)
    G = project_psd(random_sym(rng, graph.n_objects))
    gamma = rng.standard_normal(len(graph))
    d = distances.from_gram(G)
    near, far = objective.pair_indices()
    margin = d[far] - d[near]  # d_lk - d_ij: positive when satisfied
    expected = 0.5 * np.sum(w ** 2 * (1.0 - margin - gamma) ** 2)
    assert smooth_part(objective, distances, G, gamma, gradient=False) == pytest.approx(expected, rel=1e-12)


def test_soft_threshold_known_values():
    z = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    assert np.allclose(soft_threshold(z, 1.0), [-2.0, 0.0, 0.0, 0.0, 2.0])
    assert np.allclose(soft_threshold(z, 1.0, nonneg=True), [0.0, 0.0, 0.0, 0.0, 2.0])
    assert np.allclose(soft_threshold(z, np.array([0, 0, 0, 1, 4.0])), [-3.0, -0.5, 0.0, 0.0, 0.0])


@pytest.mark.parametrize("rank", [None, 2])
def test_accepted_steps_satisfy_F_le_Q(rank):
    graph, objective, distances, w = small_problem(5)
    G0 = np.zeros((graph.n_objects, graph.n_objects))
    with pytest.warns(ConvergenceWarning):
        res = fista_gram(objective, distances, G0, lam=0.3, penalty_weight=w, rank=rank, L0=1e-3, eta=1.5,
                         max_iter=80, tol=0.0)
    F, Q = np.asarray(res.history), np.asarray(res.bounds)
    assert len(F) == len(Q) == res.n_iter == 80
    assert np.all(F <= Q + 1e-10 * np.maximum(1.0, np.abs(Q)))
    assert res.n_backtracks > 0  # L0 far too small: the bound had to be enforced
    assert np.all(np.diff(res.lipschitz) >= 0)
    if rank is not None:
        assert np.linalg.matrix_rank(res.solution, tol=1e-9) <= rank
    assert np.linalg.eigvalsh(res.solution).min() > -1e-9


def test_convex_solution_is_a_fixed_point_and_gamma_is_the_soft_threshold():
    """At the optimum of the convex problem: gamma = soft(1 - m, lam b / a), G = P_psd(G - grad / L)."""
    graph, objective, distances, w = small_problem(6)
    lam = 0.4
    res = fista_gram(objective, distances, np.zeros((graph.n_objects,) * 2), lam=lam, penalty_weight=w,
                     max_iter=10000, tol=1e-8)
    assert res.converged
    G, gamma = res.solution, res.gamma
    d = distances.from_gram(G)
    near, far = objective.pair_indices()
    residual = 1.0 - (d[far] - d[near])
    assert np.allclose(gamma, soft_threshold(residual, lam * w / objective.loss_weight), atol=1e-5)
    _, grad_G, _ = smooth_part(objective, distances, G, gamma)
    L = res.lipschitz[-1]
    assert np.allclose(project_psd(G - grad_G / L), G, atol=1e-5 * max(1.0, np.abs(G).max()))
    assert np.any(gamma != 0) and np.any(gamma == 0)


def test_nonneg_keeps_gamma_nonnegative_and_objective_history():
    graph, objective, distances, w = small_problem(7)
    res = fista_gram(objective, distances, np.zeros((graph.n_objects,) * 2), lam=0.2, penalty_weight=w,
                     nonneg=True, max_iter=5000, tol=1e-6)
    assert res.converged and res.message == "converged"
    assert res.gamma.min() >= 0.0 and res.gamma.max() > 0.0
    assert res.objective == res.history[-1] and len(res.history) == res.n_iter
    assert res.history[-1] < res.history[0]


@pytest.mark.parametrize("kwargs, match", [({"L0": 0.0}, "L0"), ({"L0": -1.0}, "L0"), ({"eta": 1.0}, "eta"),
                                           ({"eta": 0.5}, "eta"), ({"lam": -0.1}, "lam")])
def test_bad_parameters(kwargs, match):
    graph, objective, distances, _ = small_problem(0)
    params = dict(lam=0.1) | kwargs
    with pytest.raises(ValueError, match=match):
        fista_gram(objective, distances, np.zeros((graph.n_objects,) * 2), **params)
