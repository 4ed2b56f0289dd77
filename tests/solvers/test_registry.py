"""solve(): one entry point over the registered solvers, and the one place that reports progress."""
import numpy as np
import pytest

from roembed.experiments.synthetic import make_synthetic
from roembed.losses import get_loss
from roembed.objective import PairDistances
from roembed.estimators.base import edge_objective
from roembed.solvers import SOLVERS, observe_iterations, solve


@pytest.fixture(scope="module")
def problem():
    data = make_synthetic(n_objects=20, dim=2, n_train=400, n_validation=10, n_test=100, votes=(1, 2), rate=0.0,
                          random_state=3)
    graph = data.train.aggregate()
    objective = edge_objective(graph, get_loss("ste"), graph.votes / graph.votes.sum())
    X0 = 0.1 * np.random.RandomState(0).randn(graph.n_objects, 2)
    return objective, PairDistances(graph.pairs, graph.n_objects), X0


@pytest.mark.parametrize("solver", ["lbfgs", "gram", "torch"])
def test_every_solver_decreases_the_objective_and_reports_each_iteration(problem, solver):
    if solver == "torch":
        pytest.importorskip("torch")
    objective, distances, X0 = problem
    heard, observed = [], []
    options = dict(device="cpu", dtype="float64") if solver == "torch" else {}
    X0_before = X0.copy()
    with observe_iterations(lambda i, v: observed.append(v)):
        result = solve(objective, distances, X0, solver=solver, alpha=1e-3, max_iter=50, tol=1e-10,
                       callback=lambda i, v: heard.append(v), **options)
    start = objective.evaluate(distances.from_embedding(X0))[0] + 1e-3 * np.vdot(X0, X0)
    np.testing.assert_array_equal(X0, X0_before)  # the start is not overwritten (torch used to share it)
    assert result.solution.shape == X0.shape
    assert result.objective < start
    assert heard and heard == observed  # the callback and the observers hear the same iterations
    assert (result.gram is not None) == (solver == "gram")
    if solver == "gram":
        np.testing.assert_allclose(result.solution @ result.solution.T, result.gram, atol=1e-8)


def test_lbfgs_methods_reach_the_same_minimum(problem):
    objective, distances, X0 = problem
    a = solve(objective, distances, X0, alpha=1e-2, tol=1e-12, method="two-loop")
    b = solve(objective, distances, X0, alpha=1e-2, tol=1e-12, method="scipy")
    assert a.objective == pytest.approx(b.objective, rel=1e-5)


def test_no_observer_outside_the_block(problem):
    objective, distances, X0 = problem
    observed = []
    with observe_iterations(lambda i, v: observed.append(v)):
        pass
    solve(objective, distances, X0, max_iter=5)
    assert observed == []


def test_bad_solver_and_start(problem):
    objective, distances, X0 = problem
    assert {"lbfgs", "gram", "torch"} <= set(SOLVERS)
    with pytest.raises(ValueError, match="solver must be one of"):
        solve(objective, distances, X0, solver="sgd")
    with pytest.raises(ValueError, match="X0 has shape"):
        solve(objective, distances, X0[:-1])


@pytest.mark.parametrize("method", ["two-loop", "scipy"])
def test_stop_ends_the_solve_where_an_iteration_cap_would(problem, method):
    objective, distances, X0 = problem
    seen = []

    def stop(iteration, X):
        seen.append((iteration, X.shape))
        return iteration == 7

    stopped = solve(objective, distances, X0, alpha=1e-3, tol=1e-12, method=method, stop=stop)
    capped = solve(objective, distances, X0, alpha=1e-3, tol=1e-12, method=method, max_iter=7)
    assert stopped.stopped and not capped.stopped and not stopped.converged
    assert stopped.n_iter == 7 and seen == [(i, X0.shape) for i in range(1, 8)]
    np.testing.assert_array_equal(stopped.solution, capped.solution)  # the same iterates up to the stop
    never = solve(objective, distances, X0, alpha=1e-3, tol=1e-12, method=method, stop=lambda i, X: False)
    full = solve(objective, distances, X0, alpha=1e-3, tol=1e-12, method=method)
    assert not never.stopped and never.n_iter == full.n_iter
    np.testing.assert_array_equal(never.solution, full.solution)


def test_solvers_that_cannot_stop_early_say_so(problem):
    objective, distances, X0 = problem
    with pytest.raises(ValueError, match="cannot be stopped early"):
        solve(objective, distances, X0, solver="gram", stop=lambda i, X: True)


@pytest.mark.parametrize("solver", ["lbfgs", "gram"])
def test_solvers_cap_blas_threads_during_the_solve_and_restore_them(problem, solver):
    """``blas_threads=1`` (the default) holds inside the solve, whatever the caller set, and the caller's limit
    is back afterwards; ``blas_threads=None`` leaves the caller's limit alone."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    objective, distances, X0 = problem
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != {2}:
            pytest.skip("this BLAS cannot run two threads here")
        for cap, inside in ((1, {1}), (None, {2})):
            seen = []
            solve(objective, distances, X0, solver=solver, alpha=1e-3, max_iter=3, blas_threads=cap,
                  callback=lambda iteration, value: seen.append(blas_threads()))
            assert seen and all(s == inside for s in seen)
            assert blas_threads() == {2}
