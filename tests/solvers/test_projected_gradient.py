"""Both solvers: finite-difference gradients (factored: X; gram: G) and the gram solver's guarantees."""
import numpy as np
import pytest

from roembed.data import Comparisons
from roembed.estimators.base import edge_objective
from roembed.experiments.synthetic import label_triplets, all_triplet_queries
from roembed.losses import LOSSES
from roembed.objective import PairDistances
from roembed.projections import project_psd_rank
from roembed.solvers import minimize_embedding, minimize_gram
from roembed.solvers.projected_gradient import gram_value_and_grad

ALL = [LOSSES["squared"](), LOSSES["hinge"](), LOSSES["squared_hinge"](), LOSSES["logistic"](),
       LOSSES["tstudent"](alpha=2.0), LOSSES["ckl"](mu=0.1)]
IDS = [loss.name for loss in ALL]


def _problem(n=12, dim=2, m=200, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim))
    q = all_triplet_queries(n)
    trip = label_triplets(X, q[rng.permutation(len(q))[:m]])
    flip = rng.random(m) < noise
    trip[flip] = trip[flip][:, [0, 2, 1]]
    weight = rng.uniform(0.5, 3.0, m)
    return X, Comparisons(trip, n_objects=n, weight=weight).aggregate()


def _objective(graph, loss, cap=None):
    return edge_objective(graph, loss, graph.votes / graph.votes.sum(), cap), PairDistances(graph.pairs, graph.n_objects)


@pytest.mark.parametrize("loss", ALL, ids=IDS)
@pytest.mark.parametrize("alpha", [0.0, 0.05])
def test_gram_gradient_matches_finite_differences(loss, alpha):
    _, graph = _problem()
    objective, distances = _objective(graph, loss, cap=np.full(len(graph), 0.4) if alpha else None)
    rng = np.random.default_rng(3)
    Y = rng.standard_normal((graph.n_objects, 3))
    G = Y @ Y.T
    _, grad = gram_value_and_grad(objective, distances, G, alpha)
    for _ in range(3):
        V = rng.standard_normal(G.shape)
        V = V + V.T
        h = 1e-6
        fd = (gram_value_and_grad(objective, distances, G + h * V, alpha)[0]
              - gram_value_and_grad(objective, distances, G - h * V, alpha)[0]) / (2 * h)
        assert np.vdot(grad, V) == pytest.approx(fd, rel=1e-4, abs=1e-8)


@pytest.mark.parametrize("loss", ALL, ids=IDS)
def test_embedding_gradient_matches_finite_differences(loss):
    _, graph = _problem(seed=1)
    objective, distances = _objective(graph, loss, cap=np.full(len(graph), 0.4))
    X = np.random.default_rng(4).standard_normal((graph.n_objects, 3))

    def value(X):
        return objective.evaluate(distances.from_embedding(X))[0]

    d = distances.from_embedding(X)
    grad = distances.embedding_grad(objective.evaluate(d)[1], X)
    V = np.random.default_rng(5).standard_normal(X.shape)
    h = 1e-6
    fd = (value(X + h * V) - value(X - h * V)) / (2 * h)
    assert np.vdot(grad, V) == pytest.approx(fd, rel=1e-4, abs=1e-8)


def test_gram_solver_decreases_monotonically_and_returns_rank_p_psd():
    X, graph = _problem(n=15, m=300)
    objective, distances = _objective(graph, LOSSES["logistic"]())
    G0 = np.random.default_rng(0).standard_normal((15, 4))
    result = minimize_gram(objective, distances, G0 @ G0.T, 2, alpha=1e-3, max_iter=200, tol=1e-10)
    history = np.asarray(result.history)
    assert np.all(np.diff(history) <= 1e-12)
    assert result.objective == pytest.approx(history[-1])
    vals = np.linalg.eigvalsh(result.solution)
    assert vals.min() > -1e-9 and np.sum(vals > 1e-9) <= 2
    np.testing.assert_allclose(result.solution, result.solution.T)
    np.testing.assert_allclose(project_psd_rank(result.solution, 2), result.solution, atol=1e-9)


def test_gram_and_factored_solvers_reach_similar_objectives():
    _, graph = _problem(n=15, m=300, noise=0.0)
    objective, distances = _objective(graph, LOSSES["logistic"]())
    X0 = np.random.default_rng(0).standard_normal((15, 2))
    fact = minimize_embedding(objective, distances, X0, alpha=1e-2, tol=1e-12)
    gram = minimize_gram(objective, distances, X0 @ X0.T, 2, alpha=1e-2, max_iter=3000, tol=1e-12)
    assert gram.objective == pytest.approx(fact.objective, rel=2e-2)


def test_gram_solver_stops_at_a_stationary_point():
    _, graph = _problem(n=10, m=100, noise=0.0)
    objective, distances = _objective(graph, LOSSES["hinge"]())
    Y = 10 * np.random.default_rng(0).standard_normal((10, 2))
    first = minimize_gram(objective, distances, Y @ Y.T, 2, max_iter=500, tol=1e-12)
    again = minimize_gram(objective, distances, first.solution, 2, max_iter=50, tol=1e-12)
    assert again.objective <= first.objective + 1e-12
    assert again.n_iter < 50


def test_a_gram_problem_too_large_for_the_machine_stops_before_its_first_matrix(monkeypatch, tmp_path):
    """Past the machine's memory the operating system would kill the fit with no message."""
    import roembed
    from click.testing import CliRunner

    from roembed.cli import main
    from roembed.solvers import projected_gradient

    _, graph = _problem(n=12)
    triplets = graph.comparisons.triplets
    for est in (roembed.ROE(2, max_iter=5), roembed.SOE(2, solver="gram", max_iter=5)):
        assert np.isfinite(est.fit(triplets).embedding_).all()  # 11.5 KB needed
    # 12 objects need 12^2 * 80 bytes = 11,520: a machine of 10 KiB cannot hold them
    monkeypatch.setattr(projected_gradient, "_physical_memory", lambda: 10 * 2 ** 10)
    message = (r"the Gram solvers \(ROE, solver='gram'\) hold n x n matrices: 12 objects need about 0.0 GiB, "
               r"more than this machine's 0.0 GiB; the factored solver holds n x p")
    for est in (roembed.ROE(2), roembed.SOE(2, solver="gram"), roembed.RobustOrdinalEmbedding(2, solver="gram")):
        with pytest.raises(ValueError, match=message):
            est.fit(triplets)
    roembed.SOE(2, max_iter=5).fit(triplets)  # the factored solver holds n x p
    path = tmp_path / "c.csv"
    np.savetxt(path, triplets, fmt="%d", delimiter=",")
    result = CliRunner().invoke(main, ["fit", str(path), "--method", "roe", "--out", str(tmp_path / "o")])
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and "hold n x n matrices" in lines[0], result.output
    assert not (tmp_path / "o").exists()
    monkeypatch.setattr(projected_gradient, "_physical_memory", lambda: None)  # where the OS does not say
    projected_gradient.check_gram_fits(10 ** 6)
