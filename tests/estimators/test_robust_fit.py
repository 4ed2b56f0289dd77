"""The robust fit's problem and stages (roembed.estimators.robust_fit): the objective's gradient, the loss weights,
the lam="auto" rule, the restarts, the refinement and its ensemble, the outlier share."""
import dataclasses

import numpy as np
import pandas as pd
import pytest

from roembed import Comparisons
from roembed.estimators import robust_fit
from roembed.estimators.robust import follow_weighted
from roembed.estimators.robust_fit import (STAGES, FitState, RobustProblem, RobustSettings, auto_cap, edge_weights,
                                          fit_robust, restart_agreement, reverse_weights, stage_plain, stage_refine,
                                          stage_refine_ensemble)
from roembed.experiments.synthetic import make_synthetic
from roembed.losses import get_loss
from roembed.metrics import agreement, procrustes

LOSSES = ["soe", "ste", "tste", "ckl", "gnmds", "roe"]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("weighting", ["vote", "paper"])
def test_robust_objective_gradient_matches_finite_differences(planted, loss, weighting):
    graph = planted.train[:400].aggregate()
    problem = RobustProblem.build(graph, loss, weighting)
    objective = problem.robust(0.3)
    assert objective.cap is not None
    distances = problem.distances
    X = np.random.RandomState(0).randn(graph.n_objects, 2)

    def f(X):
        d = distances.from_embedding(X)
        return objective.evaluate(d)[0]

    d = distances.from_embedding(X)
    _, g_pair, _ = objective.evaluate(d)
    grad = distances.embedding_grad(g_pair, X)
    rng, eps = np.random.RandomState(1), 1e-6
    for _ in range(4):
        V = rng.randn(*X.shape)
        fd = (f(X + eps * V) - f(X - eps * V)) / (2 * eps)
        assert fd == pytest.approx(np.sum(grad * V), rel=1e-4, abs=1e-8)


def test_auto_lam_rule_known_answer():
    soe = get_loss("soe")
    # median 0, MAD 1 -> knee at -2 * 1.4826; SOE slope there: 2 (1 - s)
    assert auto_cap(soe, np.arange(-2.0, 3.0), np.ones(5)) == pytest.approx(2 * (1 + 2 * 1.4826))
    # weight on the margin 2 moves the median there and the MAD to 0: the knee is capped at margin 0
    assert auto_cap(soe, np.arange(-2.0, 3.0), np.array([1.0, 1, 1, 1, 10])) == pytest.approx(2.0)
    assert auto_cap(get_loss("ste"), np.full(4, 5.0), np.ones(4)) == pytest.approx(0.5)


def test_edge_weights_known_answer():
    # (0,1,2) voted 3 times, reversed once; (1,0,2) voted twice
    trip = np.array([[0, 1, 2]] * 3 + [[0, 2, 1]] + [[1, 0, 2]] * 2)
    graph = Comparisons(trip, n_objects=3).aggregate()
    order = {tuple(e): c for c, e in enumerate(graph.edges)}
    a, b, c = order[(0, 1, 0, 2)], order[(0, 2, 0, 1)], order[(1, 0, 1, 2)]
    for weighting, expected in (("vote", (3, 1, 2)), ("paper", (9, 1, 4)), ("net", (2, 0, 2)), ("majority", (1, 0, 1)),
                                ("consensus", (0.5, 0, 1))):  # (3 - 1) / (3 + 1) for the majority side
        w = edge_weights(graph, weighting)
        assert (w[a], w[b], w[c]) == expected, weighting


def _two_followers_and_a_spammer(follows):
    """``(graph, follow-weighted graph, edges a, b, c)``: (0,1,2) with two votes of annotators "a" and "b"
    against one of the spammer "s" (edges a and b), and (1,0,2) with one vote, of "s" (edge c)."""
    trip = np.array([[0, 1, 2], [0, 1, 2], [0, 2, 1], [1, 0, 2]])
    graph = Comparisons(trip, n_objects=3, annotator=["a", "b", "s", "s"]).aggregate()
    posterior = pd.DataFrame({"follows": follows}, index=pd.Index(["a", "b", "s"], name="annotator"))
    weighted = follow_weighted(graph, posterior)
    order = {tuple(e): c for c, e in enumerate(weighted.edges)}
    return graph, weighted, order[(0, 1, 0, 2)], order[(0, 2, 0, 1)], order[(1, 0, 1, 2)]


def test_majority_counts_what_the_annotator_stage_left_of_a_query():
    graph, weighted, a, b, c = _two_followers_and_a_spammer([1.0, 1.0, 0.0])
    w = edge_weights(weighted, "majority")
    assert (w[a], w[b], w[c]) == (1.0, 0.0, 0.0)  # the spammer's lone answer no longer counts once
    assert tuple(edge_weights(graph, "majority")[[a, b, c]]) == (1.0, 0.0, 1.0)
    # consensus: 2 votes against 1 agree by a third; with the spammer weighted to nothing the two agree wholly
    assert tuple(edge_weights(graph, "consensus")[[a, b, c]]) == pytest.approx((1 / 3, 0.0, 1.0))
    assert tuple(edge_weights(weighted, "consensus")[[a, b, c]]) == (1.0, 0.0, 0.0)
    np.testing.assert_array_equal(edge_weights(weighted, "net"), edge_weights(graph.scaled(np.array([1, 1, 0, 0.0])),
                                                                              "net"))


def test_vote_counts_what_the_annotator_stage_took_off_half_each_way():
    graph, weighted, a, b, c = _two_followers_and_a_spammer([1.0, 0.8, 0.0])
    # a response of an annotator following with probability q: q for its answer, (1 - q) / 2 each way
    assert tuple(edge_weights(weighted, "vote")[[a, b, c]]) == pytest.approx((1.9, 0.5, 0.5))
    assert tuple(reverse_weights(weighted, "vote")[[a, b, c]]) == pytest.approx((0.1, 0.5, 0.5))
    for weighting in ("net", "majority", "consensus", "paper"):  # read the difference of the two directions
        assert reverse_weights(weighted, weighting) is None
    assert reverse_weights(graph, "vote") is None  # no annotator stage: every vote as it is
    assert reverse_weights(_two_followers_and_a_spammer([1.0, 1.0, 1.0])[1], "vote") is None  # all follow
    np.testing.assert_array_equal(edge_weights(graph, "vote"), graph.votes)
    problem = RobustProblem.build(weighted, "ckl", "vote")
    assert problem.loss_weight.sum() + problem.reverse_weight.sum() == pytest.approx(1.0)  # every response's worth
    assert problem.robust(0.3).reverse_weight is problem.reverse_weight
    assert RobustProblem.build(weighted, "ckl", "net").reverse_weight is None
    nobody = _two_followers_and_a_spammer([0.0, 0.0, 0.0])[1]  # nothing decided: halves alone are no data
    with pytest.raises(ValueError, match="weighting='vote' decides no comparison: every query's votes cancel out"):
        RobustProblem.build(nobody, "ckl", "vote")
    # (1.9 + 0.5 + 0.5 answered, 0.1 + 0.5 + 0.5 of it reversed: (2.9 - 1.1) / (2.9 + 1.1) of the weight decides)
    assert robust_fit.decided_share(nobody, "vote") == 0.0
    assert robust_fit.decided_share(weighted, "vote") == pytest.approx(0.45)


def _refinement_value(problem, settings, X):
    objective = problem.refined(settings.refine)
    return objective.embedding_value_and_grad(X, problem.distances)[0] + settings.refine_alpha * np.sum(X * X)


def test_the_refinement_ensemble_is_the_mean_of_the_aligned_refinements(refine_setup):
    """Known answer: each slope's refinement from the same robust state, aligned onto the first by Procrustes with
    scaling, averaged; the stored objective is the first slope's at the mean, and the iterations add up.  One
    multiple is the refinement itself."""
    problem, settings, state, _ = refine_setup
    one = stage_refine_ensemble(problem, dataclasses.replace(settings, refine_ensemble=(1.0,)), state)
    first = stage_refine(problem, settings, state)
    np.testing.assert_array_equal(one.X, first.X)
    assert one.result.objective == first.result.objective
    steeper = stage_refine(problem, dataclasses.replace(settings, refine=3.0), state)
    both = stage_refine_ensemble(problem, dataclasses.replace(settings, refine_ensemble=(1.0, 1.5)), state)
    expected = (first.X + procrustes(first.X, steeper.X).apply(steeper.X)) / 2
    np.testing.assert_allclose(both.X, expected, rtol=0, atol=1e-12)
    assert not np.allclose(both.X, first.X, atol=1e-3)  # the slopes reach different maps
    assert both.result.objective == pytest.approx(_refinement_value(problem, settings, both.X), rel=1e-12)
    assert both.result.objective > first.result.objective  # the mean is not the first slope's minimum
    assert both.n_iter == first.n_iter + steeper.n_iter - state.n_iter
    assert both.unconverged == state.unconverged  # every refinement converged here
    no_refine = dataclasses.replace(settings, refine=None, refine_ensemble=(1.0, 1.5))
    assert stage_refine_ensemble(problem, no_refine, state) is state


def test_the_refinement_starts_at_the_sigmoid_s_best_scale(refine_setup):
    problem, settings, state, _ = refine_setup
    refined = stage_refine(problem, settings, state)
    assert refined.result.converged
    objective = problem.refined(settings.refine)
    # at the refinement's own minimum the best scale is 1, and 1/20 of a start 20 times too large
    assert robust_fit.refinement_scale(objective, problem.distances, refined.X, settings.refine_alpha) == \
        pytest.approx(1.0, abs=0.02)
    assert robust_fit.refinement_scale(objective, problem.distances, 20 * refined.X, settings.refine_alpha) == \
        pytest.approx(1 / 20, rel=0.02)
    # whatever the start, the chosen scale lowers (never raises) the objective the refinement minimises
    for factor in (0.05, 1.0, 30.0):
        X = factor * state.X
        s = robust_fit.refinement_scale(objective, problem.distances, X, settings.refine_alpha)
        assert _refinement_value(problem, settings, s * X) <= _refinement_value(problem, settings, X) + 1e-12


def test_a_refinement_from_a_start_at_the_wrong_scale_ends_where_the_right_one_does(refine_setup):
    problem, settings, state, held = refine_setup
    # t-STE's solutions have no natural scale; without the rescaling this start ended in a flat region of the
    # sigmoid (objective 0.295 against 0.270, held-out agreement 0.81 against 0.92)
    right = stage_refine(problem, settings, state)
    wrong = stage_refine(problem, settings, dataclasses.replace(state, X=300 * state.X))
    assert wrong.result.converged
    assert agreement(wrong.X, held) == pytest.approx(agreement(right.X, held), abs=0.005)
    assert wrong.result.objective == pytest.approx(right.result.objective, rel=1e-3)


def test_restarts_are_screened_then_the_lowest_goes_on(monkeypatch):
    data = make_synthetic(n_objects=30, dim=2, n_train=1000, n_validation=10, n_test=10, votes=(1, 1), rate=0.2,
                          model="vote", random_state=3002)
    problem = RobustProblem.build(data.train.aggregate(), "soe", "net")
    calls = []
    real = robust_fit.solve

    def recording(objective, distances, X0, **kw):
        result = real(objective, distances, X0, **kw)
        calls.append((kw["max_iter"], X0.copy(), result))
        return result

    monkeypatch.setattr(robust_fit, "solve", recording)
    monkeypatch.setattr(robust_fit, "RESTART_SCREEN", 5)  # too few to converge: the best start goes on
    settings = RobustSettings(alpha=3e-6, n_init=4, random_state=0, solve=dict(max_iter=5000, tol=1e-12))
    X0 = 0.1 * np.random.default_rng(0).standard_normal((30, 2))
    state = stage_plain(problem, settings, FitState(X=X0))
    screened, rest = calls[:4], calls[4:]
    assert [c[0] for c in screened] == [5] * 4 and [c[0] for c in rest] == [5000]
    values = np.array([c[2].objective for c in screened])
    np.testing.assert_allclose(state.restart_objectives, values)
    assert np.array_equal(rest[0][1], screened[int(np.argmin(values))][2].solution)  # the lowest goes on
    assert state.result.objective <= values.min() and state.result is rest[0][2]
    assert state.n_iter == sum(c[2].n_iter for c in calls)
    # one start: no screening, the full budget at once
    calls.clear()
    stage_plain(problem, RobustSettings(alpha=3e-6, n_init=1, solve=dict(max_iter=5000, tol=1e-12)), FitState(X=X0))
    assert [c[0] for c in calls] == [5000]


@pytest.mark.parametrize("values, converged, agree, expected", [
    ([1.0, 1.005, 1.0, 1.0001, 1.009], [True] * 5, 5, True),  # five within 1% of the lowest
    ([1.0, 1.005, 1.0, 1.0001, 1.2], [True] * 5, 5, False),  # the fifth settled elsewhere
    ([1.0, 1.0, 1.0, 1.0, 1.0], [True, True, True, True, False], 5, False),  # one stopped by the screen
    ([1.2, 1.0, 1.0, 1.0], [True] * 4, 3, True),  # measured against the lowest, wherever it comes
    ([1e-6, 5e-5, 9e-5], [True] * 3, 3, True),  # near zero: SAME_OBJECTIVE is the floor
])
def test_restarts_settled_counts_converged_starts_near_the_lowest(values, converged, agree, expected):
    from types import SimpleNamespace

    results = [SimpleNamespace(objective=v, converged=c) for v, c in zip(values, converged)]
    assert robust_fit.restarts_settled(results, agree) is expected


def test_restarts_stop_at_the_first_start_where_enough_agree(monkeypatch):
    """The whole rule on a real problem: no earlier start had enough agreeing ones, and the one where it
    stopped did; without ``restart_agree`` every start runs, and the stop only cuts that sequence short."""
    data = make_synthetic(n_objects=30, dim=1, n_train=600, n_validation=10, n_test=10, votes=(1, 1), rate=0.2,
                          model="vote", random_state=4)  # starts converge to folds of the line: not all agree
    problem = RobustProblem.build(data.train.aggregate(), "soe", "net")
    screened, real = [], robust_fit.solve

    def recording(objective, distances, X0, **kw):
        result = real(objective, distances, X0, **kw)
        if kw["max_iter"] == robust_fit.RESTART_SCREEN:
            screened.append(result)
        return result

    monkeypatch.setattr(robust_fit, "solve", recording)
    X0 = 0.1 * np.random.default_rng(0).standard_normal((30, 1))
    settings = RobustSettings(alpha=3e-6, n_init=20, random_state=0, solve=dict(max_iter=1000, tol=1e-6))
    every = stage_plain(problem, settings, FitState(X=X0))
    all_starts = list(screened)
    screened.clear()
    stopped = stage_plain(problem, dataclasses.replace(settings, restart_agree=3), FitState(X=X0))
    k = len(stopped.restart_objectives)
    assert 3 <= k < 20 and len(every.restart_objectives) == 20
    np.testing.assert_array_equal(stopped.restart_objectives, every.restart_objectives[:k])
    assert robust_fit.restarts_settled(all_starts[:k], 3)
    assert not any(robust_fit.restarts_settled(all_starts[:j], 3) for j in range(1, k))


def test_distinct_basins_are_the_lowest_starts_far_from_the_best_and_from_each_other():
    from types import SimpleNamespace as Result

    rng = np.random.default_rng(0)
    A, B, C = (rng.standard_normal((20, 2)) for _ in range(3))
    turn = np.array([[0.0, -1.0], [1.0, 0.0]])
    best = Result(objective=1.0, solution=A)
    results = [Result(objective=1.3, solution=C), best, Result(objective=1.1, solution=3.0 * A @ turn + 5.0),  # A moved
               Result(objective=1.2, solution=B), Result(objective=1.25, solution=B + 1e-4)]  # as B
    kept = robust_fit.distinct_basins(results, best, limit=3)
    assert len(kept) == 2 and kept[0] is B and kept[1] is C  # lowest first; A's and B's copies left out
    assert [X is B for X in robust_fit.distinct_basins(results, best, limit=2)] == [True]
    assert robust_fit.distinct_basins([best], best) == ()


def test_the_final_fit_keeps_the_lowest_final_objective_of_its_starts(monkeypatch):
    data = make_synthetic(n_objects=30, dim=2, n_train=1000, n_validation=10, n_test=10, votes=(1, 1), rate=0.2,
                          model="vote", random_state=4037)
    problem = RobustProblem.build(data.train.aggregate(), "soe", "consensus")
    settings = RobustSettings(alpha=3e-6, refine=1.5, refine_alpha=1e-4, refine_ensemble=(1.0, 1.5), n_init=10,
                              random_state=4037, solve=dict(max_iter=5000, tol=1e-9))
    restarted = stage_plain(problem, settings, FitState(X=0.1 * np.random.default_rng(1).standard_normal((30, 2))))
    basins = restarted.basins
    assert len(basins) == robust_fit.MAX_BASINS - 1
    single = dataclasses.replace(settings, n_init=1, restart_agree=None)
    state = fit_robust(problem, single, restarted.X, STAGES[:-1])
    others = [fit_robust(problem, single, X, STAGES[:-1]) for X in basins]
    lowest = min(others, key=lambda s: s.result.objective)
    gap = 1.0 - lowest.result.objective / state.result.objective
    assert gap > 0.001  # another start ends clearly lower
    state = dataclasses.replace(state, restart_objectives=np.array([1.0, 2.0]))
    rank = 1 + min(range(len(others)), key=lambda k: others[k].result.objective)
    for margin, expected, expected_rank in ((0.0, lowest, rank), (gap / 2, lowest, rank), (gap * 2, state, 0)):
        monkeypatch.setattr(robust_fit, "BASIN_MARGIN", margin)
        kept, kept_rank = robust_fit.lowest_final(problem, settings, state, basins)
        assert kept_rank == expected_rank
        np.testing.assert_array_equal(kept.X, expected.X)
        assert kept.result.objective == expected.result.objective
        assert kept.n_iter == state.n_iter + sum(s.n_iter for s in others)
        np.testing.assert_array_equal(kept.restart_objectives, [1.0, 2.0])  # the restarts' record stays
    kept, kept_rank = robust_fit.lowest_final(problem, settings, state, ())
    np.testing.assert_array_equal(kept.X, state.X)
    assert kept_rank == 0


@pytest.mark.parametrize("values, converged, expected", [
    ([1.0, 1.005, 1.2, 1.3], None, (2, 2)),  # unknown: every start counts as settled
    ([1.0, 1.2, 1.3, 1.4], [True, True, False, True], (1, 2)),  # the unconverged one is not a disagreement
    ([1.0, 1.2, 1.3], [True, False, False], (1, 0)),
    ([-2.0, -1.99, -1.5], [True, True, True], (2, 1)),  # negative objectives: 1% of |best|
    ([3.1e-5, 2.9e-5, 4.2e-5, 2.8e-5], [True] * 4, (4, 0)),  # all near zero: equally perfect fits
    ([0.003, 0.0031, 0.12], [True] * 3, (2, 1)),  # small, and one far above the floor
])
def test_restart_agreement(values, converged, expected):
    assert restart_agreement(np.array(values), None if converged is None else np.array(converged)) == expected


def test_stages_are_a_plain_sequence():
    names = [s.__name__ for s in STAGES]
    assert names == ["stage_plain", "stage_penalty", "stage_robust", "stage_refine_ensemble", "stage_shifts"]


def test_the_outlier_share_is_the_weight_of_the_shifted_edges(refine_setup, monkeypatch):
    problem, settings, state, _ = refine_setup
    gamma = state.objective.embedding_shifts(state.X, problem.distances)
    expected = problem.loss_weight[gamma > 0].sum() / problem.loss_weight.sum()
    assert 0.01 < expected < 0.5  # the majority flips are contamination the robust stage sees
    assert robust_fit.outlier_share(state.objective, problem.distances, state.X) == pytest.approx(expected, rel=1e-12)
    monkeypatch.setattr(robust_fit, "AUTO_CAP_EDGES", len(problem.graph) // 7)  # every 7th or 8th edge
    step = -(-len(problem.graph) // robust_fit.AUTO_CAP_EDGES)
    sampled = robust_fit.outlier_share(state.objective, problem.distances, state.X)
    every_kth = problem.loss_weight[::step]
    assert step > 1 and sampled == pytest.approx(every_kth[gamma[::step] > 0].sum() / every_kth.sum(), rel=1e-12)


@pytest.mark.parametrize("loss, alpha, expected", [
    # squared loss (ROE) on the margin d_far - d_near = 3 s^2 at scale s: (1 - 3 s^2)^2 / 2 + alpha 5 s^2
    ("roe", 0.0, np.sqrt(1 / 3)), ("roe", 0.03, np.sqrt((1 - 5 * 0.03 / 3) / 3)),
    # SOE's squared hinge on the Euclidean margin 2 s - s = s: (1 - s)^2 + alpha 5 s^2 below s = 1
    ("soe", 0.01, 1 / (1 + 5 * 0.01)),
])
def test_a_given_start_is_sized_where_its_loss_is_least_along_its_ray(loss, alpha, expected):
    """Objects 0, 1, 2 at 0, 1 and 2 on a line: one edge, 0 nearer 1 than 2 (squared distances 1 and 4)."""
    from roembed.objective import EdgeObjective, PairDistances

    distances = PairDistances(np.array([[0, 1], [0, 2]]), 3)
    objective = EdgeObjective(get_loss(loss), np.array([0]), np.array([1]), np.array([1.0]), 2)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    assert robust_fit.start_scale(objective, distances, X, alpha) == pytest.approx(expected, rel=0.02)
    assert robust_fit.start_scale(objective, distances, 10 * X, alpha) == pytest.approx(expected / 10, rel=0.02)
