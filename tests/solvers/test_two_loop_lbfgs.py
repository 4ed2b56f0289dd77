"""The lean two-loop L-BFGS behind minimize_embedding(method="two-loop")."""
import numpy as np
import pytest

from roembed.data import Comparisons
from roembed.estimators.base import edge_objective
from roembed.losses import Logistic
from roembed.objective import PairDistances
from roembed.solvers import minimize_embedding
from roembed.solvers.lbfgs import two_loop_lbfgs


def test_minimises_rosenbrock_to_the_known_optimum():
    def rosen(x):
        f = 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2
        g = np.array([-400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0]), 200 * (x[1] - x[0] ** 2)])
        return f, g
    x, f, n_iter, converged, _ = two_loop_lbfgs(rosen, np.array([-1.2, 1.0]), max_iter=500, tol=0, gtol=1e-9)
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-6)
    assert converged and f < 1e-12


def test_ill_conditioned_quadratic_and_iteration_cap():
    a = np.logspace(0, 3, 50)
    x, f, n_iter, converged, _ = two_loop_lbfgs(lambda x: (0.5 * np.dot(a * x, x), a * x), np.ones(50),
                                                max_iter=1000, tol=0, gtol=1e-8)
    assert converged and np.max(np.abs(a * x)) <= 1e-8
    *_, n_iter, converged, message = two_loop_lbfgs(lambda x: (0.5 * np.dot(a * x, x), a * x), np.ones(50),
                                                    max_iter=3, tol=0, gtol=0)
    assert n_iter == 3 and not converged and "maximum" in message


def test_two_loop_and_scipy_reach_the_same_objective():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    q = np.array([(i, j, k) for i in range(20) for j in range(20) for k in range(20) if len({i, j, k}) == 3])
    q = q[rng.permutation(len(q))[:800]]
    closer = ((X[q[:, 0]] - X[q[:, 1]]) ** 2).sum(1) < ((X[q[:, 0]] - X[q[:, 2]]) ** 2).sum(1)
    q = np.where(closer[:, None], q, q[:, [0, 2, 1]])
    graph = Comparisons(q).aggregate()
    objective = edge_objective(graph, Logistic(), graph.votes / graph.votes.sum())
    distances = PairDistances(graph.pairs, 20)
    X0 = 0.1 * rng.standard_normal((20, 2))
    seen = []
    a = minimize_embedding(objective, distances, X0, alpha=1e-2, tol=1e-12, method="two-loop",
                           callback=lambda i, v: seen.append((i, v)))
    b = minimize_embedding(objective, distances, X0, alpha=1e-2, tol=1e-12, method="scipy")
    assert a.objective == pytest.approx(b.objective, rel=1e-6)
    assert [i for i, _ in seen] == list(range(1, a.n_iter + 1)) and seen[-1][1] == pytest.approx(a.objective)
    assert np.all(np.diff(a.history) <= 0)
    with pytest.raises(ValueError, match="method"):
        minimize_embedding(objective, distances, X0, method="newton")


def _textbook_direction(g, pairs, scale):
    """Nocedal & Wright's Alg. 7.4 over ``pairs`` (oldest first), in plain Python."""
    q, coefs = g.astype(np.float64).copy(), []
    for s, y in reversed(pairs):
        a = np.dot(s, q) / np.dot(s, y)
        coefs.append(a)
        q -= a * y
    q *= scale
    for (s, y), a in zip(pairs, reversed(coefs)):
        q += (a - np.dot(y, q) / np.dot(s, y)) * s
    return q


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_compiled_recursion_is_the_textbook_one_over_a_wrapped_ring_buffer(dtype):
    """Six pairs written into a ring of four rows: the four newest, read from the oldest row on."""
    from roembed._kernels import two_loop_direction

    rng = np.random.default_rng(0)
    n, memory = 30, 4
    pairs = []
    for _ in range(6):
        s = rng.standard_normal(n)
        pairs.append((s, s * rng.uniform(0.5, 2.0, n)))  # s.y > 0, as L-BFGS keeps them
    steps, changes, rhos = np.zeros((memory, n), dtype), np.zeros((memory, n), dtype), np.zeros(memory)
    for k, (s, y) in enumerate(pairs):
        row = k % memory
        steps[row], changes[row] = s, y
        rhos[row] = 1.0 / np.dot(steps[row].astype(np.float64), changes[row].astype(np.float64))
    stored = [(steps[r].astype(np.float64), changes[r].astype(np.float64)) for r in (2, 3, 0, 1)]
    g = rng.standard_normal(n)
    got = two_loop_direction(g, steps, changes, rhos, 6 % memory, memory, 0.7)
    np.testing.assert_allclose(got, _textbook_direction(g, stored, 0.7), rtol=1e-10)
    fewer = two_loop_direction(g, steps, changes, rhos, 2, 2, 0.7)  # rows 2, 3 only
    np.testing.assert_allclose(fewer, _textbook_direction(g, stored[:2], 0.7), rtol=1e-10)
    assert not np.array_equal(got, fewer)


def test_a_long_solve_keeps_only_the_newest_pairs():
    """With memory 3 on a 40-dimensional quadratic the solve still converges (the ring buffer wraps
    many times) and, on a quadratic, L-BFGS with full memory meets the known minimum too."""
    a = np.logspace(0, 2, 40)
    fun = lambda x: (0.5 * np.dot(a * x, x) - x.sum(), a * x - 1.0)  # noqa: E731
    for memory in (3, 50):
        x, f, n_iter, converged, _ = two_loop_lbfgs(fun, np.zeros(40), max_iter=2000, tol=0, gtol=1e-9,
                                                    memory=memory)
        np.testing.assert_allclose(x, 1.0 / a, rtol=1e-6)
        assert converged and n_iter > 3
