"""The annotator-type model: planted fakes found and down-weighted, EM monotone, gold anchors, chance tests."""
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from roembed.annotator_model import TYPES, crowd_reliability, fit_annotator_types, fit_crowd, likelihood_loss
from roembed.annotators import benjamini_hochberg, chance_tests, position_bias
from roembed.data import Comparisons
from roembed.estimators.competitors import TSTE
from roembed.estimators.robust import RobustOrdinalEmbedding
from roembed.experiments import make_synthetic
from roembed.losses import SquaredHinge, TStudent
from roembed.objective import quadruplet_distances


@pytest.fixture(scope="module")
def spam():
    # 20 annotators, 5 fakes: make_synthetic's "spammers" answer at random or always flip
    return make_synthetic(n_objects=30, dim=2, n_train=1500, n_validation=10, n_test=3000, votes=(4, 8),
                          rate=0.25, model="spammers", n_annotators=20, random_state=3)


@pytest.fixture(scope="module")
def fitted(spam):
    return RobustOrdinalEmbedding(2, random_state=0).fit(spam.train)


def test_planted_fakes_are_found_and_down_weighted(spam, fitted):
    types = fitted.annotator_types_
    planted = spam.spammers
    honest = types.index[~types.index.isin(planted)]
    assert (types.loc[planted, "follows"] < 0.05).all()
    assert (types.loc[honest, "follows"] > 0.95).all()
    # the later stages see the fakes' responses with (almost) no weight
    votes = fitted.graph_.comparisons.weight
    table = fitted.annotators_.set_index("annotator")
    assert set(table.index[table["suspect"]]) == set(planted)
    assert table.loc[planted, "reason"].str.len().gt(0).all() and (table.loc[honest, "reason"] == "").all()
    assert votes.sum() == len(spam.train)  # the user's weights are untouched
    # and the fit is closer to the truth than the same estimator ignoring annotator ids
    ignoring = RobustOrdinalEmbedding(2, random_state=0, annotators=None).fit(spam.train)
    # measured 0.9783 vs 0.9760 since the default tunes its weighting (net / majority already discount
    # the fakes' votes); 0.01 apart with the earlier per-vote default
    assert fitted.score(spam.test) > ignoring.score(spam.test)


def test_inverters_and_random_answerers_are_told_apart(spam, fitted):
    types = fitted.annotator_types_.loc[spam.spammers]
    table = fitted.annotators_.set_index("annotator").loc[spam.spammers]
    flip = table["agreement"] < 0.2  # always-flipping fakes
    assert flip.any() and (~flip).any()
    assert (types.loc[flip.to_numpy(), "inverts"] > 0.95).all()
    assert (types.loc[~flip.to_numpy(), "random"] > 0.95).all()
    assert table.loc[flip, "inverts"].all() and table.loc[flip, "reason"].str.contains("inverts").all()
    assert table.loc[~flip, "reason"].str.contains("random").all()


def test_em_objective_decreases_monotonically_and_converges(spam):
    graph = spam.train.aggregate()
    rng = np.random.default_rng(0)
    X0 = 0.1 * rng.standard_normal((graph.n_objects, 2))
    result = fit_annotator_types(graph, X0, TStudent(alpha=1.0), alpha=1e-4, max_rounds=50, step_iter=5, tol=1e-8)
    history = result.objective_history
    assert len(history) >= 4 and history[-1] < history[0] - 0.05
    assert np.all(np.diff(history) <= 1e-12 * np.abs(history[:-1]))
    assert result.converged
    post = result.posterior[["follows", "inverts", "random"]].to_numpy()
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    assert result.prior.sum() == pytest.approx(1.0)


def test_objective_matches_its_formula_on_a_tiny_case():
    # two annotators, three responses; J written out by hand
    q = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1]])
    C = Comparisons(q, n_objects=3, annotator=["a", "a", "b"], weight=[1.0, 2.0, 1.0])
    graph = C.aggregate()
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    loss = TStudent(alpha=1.0)
    res = fit_annotator_types(graph, X, loss, alpha=0.0, max_rounds=1, step_iter=1)
    d_near, d_far = quadruplet_distances(X, C.quadruplets)
    s, _, _ = loss.margin(d_near, d_far)
    p = expit(s)
    prior = np.array([2.0, 1.5, 1.5]) / 5.0
    w = np.array([1.0, 2.0, 1.0])

    def log_marginal(rows):
        lik = [np.sum(w[rows] * np.log(p[rows])), np.sum(w[rows] * np.log(1 - p[rows])), np.sum(w[rows]) * np.log(0.5)]
        return np.log(np.sum(prior * np.exp(lik)))

    J = -(log_marginal([0, 1]) + log_marginal([2])) - np.sum((np.array([2.0, 1.5, 1.5]) - 1) * np.log(prior))
    assert res.objective_history[0] == pytest.approx(J / w.sum())
    # the posterior returned is the E-step at the last round's embedding and prior, written out by hand
    d_near, d_far = quadruplet_distances(res.embedding, C.quadruplets)
    p = expit(loss.margin(d_near, d_far)[0])
    for a, rows in (("a", [0, 1]), ("b", [2])):
        lik = res.prior.to_numpy() * np.exp([np.sum(w[rows] * np.log(p[rows])), np.sum(w[rows] * np.log(1 - p[rows])),
                                             np.sum(w[rows]) * np.log(0.5)])
        np.testing.assert_allclose(res.posterior.loc[a, list(TYPES)].to_numpy(float), lik / lik.sum(), rtol=1e-12)


def test_gold_answers_anchor_the_type():
    rng = np.random.default_rng(1)
    n = 12
    q = np.array([t for t in rng.integers(0, n, size=(300, 3)) if len(set(t)) == 3])[:200]
    X = rng.standard_normal((n, 2))
    C = Comparisons(q, n_objects=n, annotator=np.repeat(["a", "b"], 100))
    graph = C.aggregate()
    loss = TStudent(alpha=1.0)
    # no ordinary evidence about "b" beyond its answers; gold says b is right / wrong on all its answers
    gold = np.full(len(C), np.nan)
    gold[100:] = 1.0
    right = fit_annotator_types(graph, X, loss, gold=gold, max_rounds=3)
    gold[100:] = 0.0
    wrong = fit_annotator_types(graph, X, loss, gold=gold, max_rounds=3)
    assert right.posterior.loc["b", "follows"] > 0.99 and wrong.posterior.loc["b", "inverts"] > 0.99
    assert np.all(np.diff(wrong.objective_history) <= 1e-12)
    with pytest.raises(ValueError, match="gold"):
        fit_annotator_types(graph, X, loss, gold=np.ones(5))
    with pytest.raises(ValueError, match="gold values"):
        fit_annotator_types(graph, X, loss, gold=np.full(len(C), 2.0))
    est = RobustOrdinalEmbedding(2, random_state=0).fit(C, gold=gold)
    assert est.annotator_types_.loc["b", "inverts"] > 0.99


def test_likelihood_loss_and_options():
    assert isinstance(likelihood_loss(SquaredHinge(), 3), TStudent) and likelihood_loss(SquaredHinge(), 3).alpha == 2.0
    tste = TStudent(alpha=4.0)
    assert likelihood_loss(tste, 2) is tste
    q = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]])
    no_ids = RobustOrdinalEmbedding(2, random_state=0).fit(Comparisons(q, n_objects=3))
    assert no_ids.annotator_types_ is None
    one = RobustOrdinalEmbedding(2, random_state=0).fit(Comparisons(q, n_objects=3, annotator=[1, 1, 1, 1]))
    assert one.annotator_types_ is None
    with pytest.raises(ValueError, match="annotators"):
        RobustOrdinalEmbedding(annotators="yes").fit(q)
    with pytest.raises(ValueError, match="prior_counts"):
        fit_annotator_types(Comparisons(q, n_objects=3, annotator=[1, 2, 1, 2]).aggregate(), np.zeros((3, 2)),
                            TStudent(), prior_counts=(0.5, 1, 1))
    with pytest.raises(ValueError, match="annotator ids"):
        fit_crowd(Comparisons(q, n_objects=3).aggregate(), TStudent(), np.zeros((3, 2)))


def test_chance_tests_known_values():
    # annotator 0: 10 single triplets, 8 agree; annotator 1: 4 odd-one-out answers (two triplets on the same
    # objects), agreeing 2, 2, 1, 0 times -> unit scores 1, 1, 0.5, 0 -> sum 2.5 over 4 units
    single = np.array([[0, 1, 0, 2 + i] for i in range(10)])
    twins = np.array([[0, 1, 0, 2], [1, 0, 1, 2], [3, 4, 3, 5], [4, 3, 4, 5], [6, 7, 6, 8], [7, 6, 7, 8],
                      [0, 3, 0, 6], [3, 0, 3, 6]])
    quads = np.vstack([single, twins])
    who = np.repeat([0, 1], [10, 8])
    agrees = np.array([1] * 8 + [0] * 2 + [1, 1, 1, 1, 1, 0, 0, 0], bool)
    n_units, total, p_above, p_below = chance_tests(quads, who, agrees, 2)
    assert n_units.tolist() == [10, 4] and total.tolist() == [8.0, 2.5]
    assert p_above[0] == pytest.approx(56 / 1024)  # P(Bin(10, 1/2) >= 8)
    assert p_below[0] == pytest.approx(1 - 11 / 1024)  # P(Bin(10, 1/2) <= 8)
    assert p_above[1] == pytest.approx(11 / 16)  # P(Bin(4, 1/2) >= floor(2.5) = 2)
    assert p_below[1] == pytest.approx(15 / 16)  # P(Bin(4, 1/2) <= ceil(2.5) = 3)
    # the units of a Comparisons (cached) give the same tests
    cached = Comparisons(quads, annotator=who).answer_units
    for given, computed in zip(chance_tests(quads, who, agrees, 2, units=cached), (n_units, total, p_above, p_below)):
        np.testing.assert_array_equal(given, computed)


def test_benjamini_hochberg_known_values():
    p = np.array([0.01, 0.04, 0.03, 0.5])
    np.testing.assert_allclose(benjamini_hochberg(p), [0.04, 0.16 / 3, 0.16 / 3, 0.5])  # min over ranks >= i of p * 4 / rank
    assert benjamini_hochberg(np.array([1.0, 1.0])).tolist() == [1.0, 1.0]


def coordinated_inverters(seed=5, n=150, n_queries=300, n_honest=12, n_inverters=16):
    """Honest annotators (10% slips) answer every query; inverters all answer the first half reversed,
    outvoting the honest ones there (40% of the responses)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    q = np.array([t for t in rng.integers(0, n, size=(3 * n_queries, 3)) if len(set(t)) == 3])[:n_queries]
    d_near, d_far = quadruplet_distances(X, q[:, [0, 1, 0, 2]])
    truth = np.where((d_near < d_far)[:, None], q, q[:, [0, 2, 1]])
    rows, who = [], []
    for a in range(n_honest):
        slip = rng.random(len(q)) < 0.1
        rows.append(np.where(slip[:, None], truth[:, [0, 2, 1]], truth))
        who += [a] * len(q)
    for a in range(n_inverters):
        rows.append(truth[: len(q) // 2][:, [0, 2, 1]])
        who += [100 + a] * (len(q) // 2)
    return Comparisons(np.vstack(rows), n_objects=n, annotator=np.array(who)), X


def test_an_em_continued_is_the_uninterrupted_em():
    """fit_crowd stops its first start after SWITCH_ROUNDS rounds and continues it: the rounds that follow
    are those of one call, to the bit, also from type probabilities in Fortran order (as a DataFrame's values
    can be: with 150 annotators NumPy sums such a column in another order than a C-ordered one)."""
    crowd = make_synthetic(n_objects=30, dim=2, n_train=1500, n_validation=10, n_test=10, votes=(4, 8), rate=0.25,
                           model="spammers", n_annotators=150, random_state=3)
    graph = crowd.train.aggregate()
    loss = TStudent(alpha=1.0)
    X0 = TSTE(2, random_state=0).fit(crowd.train).embedding_
    whole = fit_annotator_types(graph, X0, loss, tol=1e-7)
    assert whole.converged and whole.n_rounds > 3
    head = fit_annotator_types(graph, X0, loss, tol=1e-7, max_rounds=2)
    assert not head.converged and head.n_rounds == 2
    q = np.asfortranarray(head.posterior[list(TYPES)].to_numpy())
    tail = fit_annotator_types(graph, head.embedding, loss, tol=1e-7, initial_posterior=q,
                               history=head.objective_history)
    np.testing.assert_array_equal(tail.embedding, whole.embedding)
    np.testing.assert_array_equal(tail.objective_history, whole.objective_history)
    pd.testing.assert_frame_equal(tail.posterior, whole.posterior, check_exact=True)
    pd.testing.assert_series_equal(tail.prior, whole.prior, check_exact=True)
    assert tail.converged and tail.n_rounds == whole.n_rounds - 2 and head.n_iter + tail.n_iter == whole.n_iter
    with pytest.raises(ValueError, match="initial_posterior"):  # rounds to continue need the posterior they ended with
        fit_annotator_types(graph, head.embedding, loss, history=head.objective_history)
    # the memory order of the given probabilities changes no bit (on spread-out values, whose sums differ by order)
    spread = np.random.default_rng(0).dirichlet(np.ones(3), size=len(whole.posterior))
    assert not np.array_equal(spread.sum(axis=0), np.asfortranarray(spread).sum(axis=0))
    c_order, f_order = (fit_annotator_types(graph, X0, loss, max_rounds=1, initial_posterior=s)
                        for s in (spread, np.asfortranarray(spread)))
    pd.testing.assert_series_equal(c_order.prior, f_order.prior, check_exact=True)
    np.testing.assert_array_equal(c_order.embedding, f_order.embedding)


def test_an_em_behind_another_start_gives_up(spam):
    """give_up_above: the EM stops, unconverged, at the first round where it lies above that value by more
    than GIVE_UP_ROUNDS times its last decrease (its rounds until then are the full run's); ahead, nothing
    changes."""
    from roembed.annotator_model import GIVE_UP_ROUNDS, hopeless

    assert hopeless([0.60, 0.599], 0.40) and not hopeless([0.60, 0.599], 0.55) and not hopeless([0.6], 0.0)
    # 0.01 a round: the bound lies GIVE_UP_ROUNDS such decreases below the last value
    assert not hopeless([0.60, 0.59], 0.59 - 0.9 * 0.01 * GIVE_UP_ROUNDS)
    assert hopeless([0.60, 0.59], 0.59 - 1.1 * 0.01 * GIVE_UP_ROUNDS)
    graph = spam.train.aggregate()
    loss = TStudent(alpha=1.0)
    X0 = TSTE(2, random_state=0).fit(spam.train).embedding_
    whole = fit_annotator_types(graph, X0, loss, tol=1e-7)
    ahead = fit_annotator_types(graph, X0, loss, tol=1e-7, give_up_above=whole.objective_history[-1] + 1.0)
    np.testing.assert_array_equal(ahead.objective_history, whole.objective_history)
    far_below = whole.objective_history[-1] - 0.01
    behind = fit_annotator_types(graph, X0, loss, tol=1e-7, give_up_above=far_below)
    h = behind.objective_history
    assert not behind.converged and behind.n_rounds < whole.n_rounds and hopeless(h, far_below)
    assert not hopeless(h[:-1], far_below)  # it gave up at the first such round
    np.testing.assert_array_equal(h, whole.objective_history[: len(h)])


def test_fit_crowd_without_a_second_start_is_one_em(spam, monkeypatch):
    """Without a second start (here: none allowed), fit_crowd's first start, stopped after SWITCH_ROUNDS rounds
    (here one, as this EM converges in two) and continued, is the EM of one fit_annotator_types call from the
    plain fit, to the bit."""
    import roembed.annotator_model as model

    monkeypatch.setattr(model, "SWITCH_MIN_SHARE", 1.01)
    monkeypatch.setattr(model, "SWITCH_ROUNDS", 1)
    graph = spam.train.aggregate()
    loss = TStudent(alpha=1.0)
    X0 = 0.1 * np.random.default_rng(0).standard_normal((spam.train.n_objects, 2))
    plain = model.plain_likelihood_fit(graph, loss, X0)
    one = fit_annotator_types(graph, plain.solution, loss)
    assert one.n_rounds > model.SWITCH_ROUNDS  # the continuation runs
    crowd = fit_crowd(graph, loss, X0)
    np.testing.assert_array_equal(crowd.embedding, one.embedding)
    np.testing.assert_array_equal(crowd.objective_history, one.objective_history)
    pd.testing.assert_frame_equal(crowd.posterior, one.posterior, check_exact=True)
    assert crowd.n_rounds == one.n_rounds and crowd.n_iter == plain.n_iter + one.n_iter


def test_coordinated_inverters_need_the_crowd_start():
    C, _ = coordinated_inverters()
    graph = C.aggregate()
    rho = crowd_reliability(graph)
    ids = np.unique(C.annotator)
    assert (rho[ids < 100] > 0.5).all() and (rho[ids >= 100] < -0.9).all()
    loss = TStudent(alpha=1.0)
    plain = TSTE(2, random_state=0).fit(C)
    from_plain = fit_annotator_types(graph, plain.embedding_, loss)
    assert (from_plain.posterior.loc[100:, "follows"] > 0.5).all()  # a local minimum: the fakes "follow"
    crowd = fit_crowd(graph, loss, 0.1 * np.random.default_rng(0).standard_normal((C.n_objects, 2)))
    assert (crowd.posterior.loc[100:, "inverts"] > 0.95).all() and (crowd.posterior.loc[:99, "follows"] > 0.95).all()
    assert crowd.objective_history[-1] < from_plain.objective_history[-1]


@pytest.mark.parametrize("switched, runs", [((0,), True), ((12,), False)])
def test_crowd_start_needs_a_share_of_the_answers(monkeypatch, switched, runs):
    """fit_crowd's second start (annotators the crowd contradicts, started as inverting) runs only when they
    give at least SWITCH_MIN_SHARE of the answers: annotator 0 gives 300 of 3,610, annotator 12 gives 10."""
    import roembed.annotator_model as model

    C, _ = coordinated_inverters(n_inverters=0)
    extra = Comparisons(C.triplets[:10], n_objects=C.n_objects, annotator=np.full(10, 12))
    C = Comparisons.concat([C, extra])
    graph = C.aggregate()
    assert len(C) == 3610 and np.count_nonzero(C.annotator == 0) == 300
    share = {0: 300 / 3610, 12: 10 / 3610}[switched[0]]
    assert (share >= model.SWITCH_MIN_SHARE) == runs
    ids = np.unique(C.annotator)
    assert model.switched_share(graph, np.isin(ids, switched)) == pytest.approx(share)
    monkeypatch.setattr(model, "crowd_reliability", lambda g, n_iter=200: np.where(np.isin(ids, switched), -1.0, 1.0))
    starts = []
    real = model.fit_annotator_types

    def counted(*args, **kwargs):  # a second start: type probabilities given, no earlier rounds
        if kwargs.get("history") is None:
            starts.append(kwargs.get("initial_posterior") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(model, "fit_annotator_types", counted)
    X0 = 0.1 * np.random.default_rng(0).standard_normal((C.n_objects, 2))
    crowd = model.fit_crowd(graph, TStudent(alpha=1.0), X0)
    assert starts == ([False, True] if runs else [False])
    assert (crowd.posterior["follows"] > 0.9).all()  # every annotator is honest: the kept start says so


def test_position_bias_finds_lazy_workers():
    rng = np.random.default_rng(0)
    honest = rng.integers(0, 3, size=(30, 40))  # 30 workers, 40 answers each, positions at chance
    lazy = np.full((3, 40), 1)
    lazy[2, :6] = 0  # mostly lazy: 34 of 40 on one position
    position = np.concatenate([honest.ravel(), lazy.ravel()])
    annotator = np.repeat(np.arange(33), 40)
    table = position_bias(position, annotator, n_positions=3).set_index("annotator")
    flagged = set(table.index[table["lazy"]])
    assert flagged >= {30, 31, 32} and len(flagged - {30, 31, 32}) <= 1  # FDR 0.1: one chance find allowed
    assert table.loc[30, "top_share"] == 1.0 and table.loc[32, "top_share"] == pytest.approx(34 / 40)
    # the p-value: P(Bin(40, 1/3) >= 40) * 3
    assert table.loc[30, "p_position"] == pytest.approx(3 * (1 / 3) ** 40)
    assert "position 1 in 40 of 40" in table.loc[30, "reason"] and table.loc[0, "reason"] == ""
    with pytest.raises(ValueError, match="positions"):
        position_bias([0, 1, 2, 3], [0, 0, 1, 1], n_positions=3)
    with pytest.raises(ValueError, match="one length"):
        position_bias([0, 1], [0])


def _answers(X, n, flip, rng, annotator):
    """``n`` random triplets on ``X``, each answered truthfully and then flipped with probability ``flip``
    (a scalar or one per response)."""
    t = np.array([rng.choice(len(X), 3, replace=False) for _ in range(n)])
    d = lambda a, b: np.linalg.norm(X[a] - X[b], axis=1)  # noqa: E731
    right = d(t[:, 0], t[:, 1]) < d(t[:, 0], t[:, 2])
    keep = right ^ (rng.random(n) < flip)
    t = np.where(keep[:, None], t, t[:, [0, 2, 1]])
    return Comparisons(t, n_objects=len(X), annotator=annotator)


def test_heterogeneity_test_known_answer_and_calibration():
    from scipy.stats import chi2

    from roembed.annotator_model import heterogeneity_test
    from roembed.metrics import satisfied

    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 2))
    C = _answers(X, 400, 0.2, rng, annotator=np.repeat(np.arange(8), 50))
    h = heterogeneity_test(C.aggregate(), X)
    ok = satisfied(X, C.aggregate().comparisons)  # the test's own row order
    who = np.asarray(C.aggregate().comparisons.annotator)
    k = np.bincount(who, weights=ok)
    rate = k.sum() / 400
    assert h.df == 7
    assert h.statistic == pytest.approx(np.sum((k - 50 * rate) ** 2) / (rate * (1 - rate) * 50))
    assert h.p_value == pytest.approx(chi2.sf(h.statistic, 7))
    # noise spread evenly over the crowd: the p-value is uniform, rejecting at 5% about 5% of the time
    rejected = [heterogeneity_test(_answers(X, 300, 0.2, np.random.default_rng(s), np.arange(300) % 30).aggregate(),
                                   X).p_value < 0.05 for s in range(100)]
    assert 0.0 <= np.mean(rejected) <= 0.12
    # three spammers among 30 workers with 10 answers each: rejected
    flip = np.where(np.arange(300) % 30 < 3, 0.5, 0.1)
    spam = _answers(X, 300, flip, np.random.default_rng(1), np.arange(300) % 30)
    assert heterogeneity_test(spam.aggregate(), X).p_value < 0.01


def test_the_annotator_stage_runs_only_when_annotators_differ(spam, fitted):
    assert fitted.chosen_params_["annotators"] == "types" and fitted.chosen_params_["annotator_heterogeneity_p"] < 1e-6
    # the same crowd size and answers per worker, but every worker alike (20% of single answers flipped)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 2))
    even = _answers(X, 1500, 0.2, rng, annotator=np.arange(1500) % 20)
    est = RobustOrdinalEmbedding(2, random_state=0).fit(even)
    assert est.annotator_types_ is None and est.chosen_params_["annotators"] is None
    assert est.chosen_params_["annotator_heterogeneity_p"] > 0.01
    ignoring = RobustOrdinalEmbedding(2, random_state=0, annotators=None).fit(even)
    np.testing.assert_array_equal(est.embedding_, ignoring.embedding_)


@pytest.mark.parametrize("scale", ["sum to 1", 1e-3, 7.0])
def test_a_scale_common_to_all_weights_changes_nothing(spam, fitted, scale):
    """Weights that sum to 1 were a crowd of a 1,500th of an answer each to the annotator stage: its types drifted to
    the prior, annotators that follow came out suspect and the fit warned that the followers give only a minority
    of the answers (the rest of the fit divides the weights by their total)."""
    m = len(spam.train)
    weight = np.full(m, 1.0 / m) if scale == "sum to 1" else np.full(m, scale)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaled = RobustOrdinalEmbedding(2, random_state=0).fit(spam.train, sample_weight=weight)
    assert [str(w.message) for w in caught] == []
    np.testing.assert_allclose(scaled.embedding_, fitted.embedding_, atol=1e-6)
    np.testing.assert_allclose(scaled.annotator_types_.to_numpy(), fitted.annotator_types_.to_numpy(), atol=1e-6)
    assert scaled.annotators_["suspect"].tolist() == fitted.annotators_["suspect"].tolist()
    assert sorted(scaled.annotators_.loc[scaled.annotators_["suspect"], "annotator"]) == sorted(spam.spammers)


def test_the_stage_reads_weights_relative_to_their_mean_over_the_responses_that_weigh_anything():
    from roembed.estimators.robust import unit_weighted

    quads = np.array([[0, 1, 0, 2], [1, 2, 1, 3], [2, 3, 2, 0], [3, 0, 3, 1]])
    graph = Comparisons(quads, weight=[0.0, 1.0, 1.0, 1.0], annotator=[0, 0, 1, 1]).aggregate()
    assert unit_weighted(graph) is graph  # a weight of 0 leaves a response out; the others still count one each
    scaled = unit_weighted(Comparisons(quads, weight=[0.0, 2.0, 6.0, 4.0], annotator=[0, 0, 1, 1]).aggregate())
    np.testing.assert_allclose(scaled.comparisons.weight, [0.0, 0.5, 1.5, 1.0])  # their mean is 1, ratios kept
    drawn = Comparisons(quads, weight=[3.0, 1.0, 2.0, 1.0], copies=[3, 1, 2, 1], annotator=[0, 0, 1, 1]).aggregate()
    assert unit_weighted(drawn) is drawn  # a bootstrap's query drawn three times is three answers


def test_the_fitted_graph_keeps_no_edge_objects_after_the_annotator_stage(fitted):
    """The M-step reads the edges' objects (16 bytes an edge); they live in the EM, not on the estimator's graph."""
    assert fitted.chosen_params_["annotators"] == "types"
    assert "edge_objects" not in vars(fitted.graph_)


def test_every_solve_of_the_annotator_stage_runs_on_one_blas_thread(spam, monkeypatch):
    """The EM's M-steps and its plain likelihood fit go through ``minimize_embedding`` and its BLAS cap, as every
    other fit: the two-loop recursion's dot products are memory-bound, and threaded they waited on the other
    core (the M-step once called the solver directly, uncapped). The caller's own setting is restored."""
    import roembed.solvers.lbfgs as lbfgs
    from roembed._threads import blas_limit

    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen, original = [], lbfgs.two_loop_lbfgs

    def blas_threads():
        return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]

    def spy(*args, **kwargs):
        seen.append(max(blas_threads()))
        return original(*args, **kwargs)

    monkeypatch.setattr(lbfgs, "two_loop_lbfgs", spy)
    graph = spam.train.aggregate()
    X0 = 0.1 * np.random.default_rng(0).standard_normal((graph.n_objects, 2))
    with blas_limit(2):
        before = blas_threads()
        result = fit_crowd(graph, TStudent(alpha=1.0), X0, alpha=1e-4)
        after = blas_threads()
    assert result.n_rounds >= 1 and len(seen) >= 1 + result.n_rounds  # the plain fit, then an M-step per round
    assert set(seen) == {1}
    assert after == before


def test_query_sharers_known_values_and_only_they_get_a_reliability():
    """Annotators 1 and 2 answer the same query (2 in the other direction), 1 and 3 answer one more query
    together, 4 answers alone; id 7 repeats its own answer. Only sharers can get a crowd reliability other than 0."""
    from roembed.annotator_model import query_sharers

    C = Comparisons(np.array([[0, 1, 2], [0, 2, 1], [3, 4, 5], [3, 4, 5], [6, 7, 8], [1, 2, 3], [1, 2, 3]]),
                    n_objects=9, annotator=np.array([1, 2, 1, 3, 4, 7, 7]))
    np.testing.assert_array_equal(query_sharers(C.aggregate()), [True, True, True, False, False])  # ids 1, 2, 3, 4, 7
    crowd = make_synthetic(n_objects=40, dim=2, n_train=300, n_validation=10, n_test=10, votes=(1, 2), rate=0.25,
                           model="spammers", n_annotators=30, random_state=4).train
    loners = Comparisons(np.array([[0, 38, 39], [1, 38, 39], [2, 38, 39], [3, 37, 39]]), n_objects=40,
                         annotator=np.array([50, 51, 52, 52]))  # queries nobody else answered
    graph = Comparisons.concat([crowd, loners]).aggregate()
    sharers, rho = query_sharers(graph), crowd_reliability(graph)
    np.testing.assert_array_equal(np.flatnonzero(~sharers), [30, 31, 32])  # the three loners, last in id order
    assert (rho[~sharers] == 0).all() and (rho[sharers] != 0).all()


def test_fit_crowd_skips_the_crowd_reliability_where_it_cannot_switch_enough(monkeypatch):
    """With one answer per query nobody shares a query, so rho is 0 for everyone and the second start cannot
    run: fit_crowd does not compute it, and returns what it returns when it does."""
    import roembed.annotator_model as model

    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 2))
    q = np.array([t for t in rng.integers(0, 60, size=(900, 3)) if len(set(t)) == 3])[:600]
    d_near, d_far = quadruplet_distances(X, q[:, [0, 1, 0, 2]])
    C = Comparisons(np.where((d_near < d_far)[:, None], q, q[:, [0, 2, 1]]), n_objects=60,
                    annotator=rng.integers(0, 12, size=len(q)))
    graph = C.aggregate()
    assert len(np.unique(graph.edge_query)) == len(C) and not model.query_sharers(graph).any()
    X0 = 0.1 * rng.standard_normal((60, 2))
    calls, real = [], model.crowd_reliability
    monkeypatch.setattr(model, "crowd_reliability", lambda g, n_iter=200: calls.append(1) or real(g, n_iter))
    skipped = model.fit_crowd(graph, TStudent(alpha=1.0), X0)
    assert calls == []
    monkeypatch.setattr(model, "SWITCH_MIN_SHARE", 0.0)  # a bound that lets it run: rho is computed, switches nobody
    computed = model.fit_crowd(graph, TStudent(alpha=1.0), X0)
    assert calls == [1]
    np.testing.assert_array_equal(skipped.embedding, computed.embedding)
    pd.testing.assert_frame_equal(skipped.posterior, computed.posterior)


def test_sparse_rows_in_order_sum_as_bincount_does():
    # duplicates kept apart, each row summed in the responses' order: the same floats as np.bincount
    from roembed.annotator_model import _rows_in_order

    rng = np.random.default_rng(1)
    rows, cols = rng.integers(0, 40, 5000), rng.integers(0, 300, 5000)
    values, v = rng.standard_normal(5000) * 10 ** rng.uniform(-8, 8, 5000), rng.standard_normal((300, 2))
    A = _rows_in_order(rows, cols, values, (41, 300))  # row 40: no entry
    for k in range(2):
        assert np.array_equal(A @ v[:, k], np.bincount(rows, weights=values * v[cols, k], minlength=41))
    assert np.array_equal((A @ v)[:, 1], np.bincount(rows, weights=values * v[cols, 1], minlength=41))
    assert A.nnz == 5000 and (A @ v)[40].tolist() == [0.0, 0.0]


def _odd_one_out_crowd(seed, n_honest=20, n_fakes=13, per=40, n_triples=60, right=0.7):
    """Odd-one-out answers on 30 objects in 2-D: honest workers pick the odd one (the object outside the closest
    pair) with probability ``right``, another at random otherwise; each fake always picks a member of the
    closest pair, the same one every time (a coordinated group, 40% of the answers with the defaults).  Returns
    the responses and the true answers of every triple."""
    from roembed.data.convert import from_odd_one_out

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 2))
    triples = np.array([t for t in rng.integers(0, 30, size=(3 * n_triples, 3)) if len(set(t)) == 3])[:n_triples]
    pair = np.stack([np.linalg.norm(X[triples[:, a]] - X[triples[:, b]], axis=1) for a, b in ((1, 2), (0, 2), (0, 1))], 1)
    odd = pair.argmin(1)  # the position outside the closest pair
    shown, position, who = [], [], []
    for a in range(n_honest + n_fakes):
        pick = rng.choice(n_triples, per, replace=False)
        honest = np.where(rng.random(per) < right, odd[pick], (odd[pick] + rng.integers(1, 3, per)) % 3)
        shown.append(triples[pick])
        position.append(honest if a < n_honest else np.where(odd[pick] == 0, 1, 0))
        who.append(np.full(per, a))
    responses = from_odd_one_out(np.concatenate(shown), np.concatenate(position), annotator=np.concatenate(who),
                                 n_objects=30)
    return responses, from_odd_one_out(triples, odd, n_objects=30)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_consistent_minority_is_not_taken_for_the_crowd(seed, monkeypatch):
    # 13 fakes answering in concert give 40% of the answers: the EM's objective prefers the map they agree on (J
    # alone inverts the map), the crowd's orientation (crowd_reliability) keeps the honest majority's.
    # Seeds where J prefers the fakes' start by a clear margin (1: J 0.436 against the honest start's 0.446,
    # 2: 0.455 against 0.466). On seeds 0, 3 and 4 J itself prefers the honest start, so there the second half
    # shows nothing; seed 0's margin (0.6%) went one way on one CPU and the other way on another
    import roembed.annotator_model as model
    from roembed.metrics import agreement

    responses, truth = _odd_one_out_crowd(seed)
    fit = RobustOrdinalEmbedding(2, random_state=0).fit(responses)
    assert fit.annotator_types_["follows"].iloc[20:].max() < 0.5 and agreement(fit.embedding_, truth) > 0.65
    table = fit.annotators_
    assert table.loc[table["annotator"] >= 20, "suspect"].all()
    monkeypatch.setattr(model, "crowd_oriented", lambda *args: True)  # J alone decides
    inverted = RobustOrdinalEmbedding(2, random_state=0).fit(responses)
    assert inverted.annotator_types_["follows"].iloc[20:].min() > 0.5 and agreement(inverted.embedding_, truth) < 0.4


def test_a_coordinated_group_the_agreement_test_misses_still_starts_the_annotator_stage():
    # 13 fakes in concert among 20 honest workers, 200 triples: the plain fit is pulled halfway, both sides agree
    # with it alike, and the heterogeneity test lets it through; the crowd contradicts exactly the fakes
    from roembed.annotator_model import contradicted_share
    from roembed.metrics import agreement

    responses, truth = _odd_one_out_crowd(0, n_triples=200, per=60)
    assert contradicted_share(responses.aggregate()) == pytest.approx(13 / 33)
    fit = RobustOrdinalEmbedding(2, random_state=0).fit(responses)
    assert fit.chosen_params_["annotators"] == "types" and fit.chosen_params_["annotator_heterogeneity_p"] > 0.01
    assert fit.annotator_types_["follows"].iloc[20:].max() < 0.5 and agreement(fit.embedding_, truth) > 0.9
    off = RobustOrdinalEmbedding(2, random_state=0, annotators=None).fit(responses)
    assert agreement(off.embedding_, truth) < 0.8
    # workers alike on shared triples (each answers 60 of 200, right 70% of the time): nobody is contradicted
    alike, _ = _odd_one_out_crowd(1, n_fakes=0, n_triples=200, per=60)
    assert contradicted_share(alike.aggregate()) == 0.0


def test_a_crowd_that_mostly_does_not_follow_is_warned_about():
    from roembed.data.diagnostics import DataWarning

    def fit(rate):
        data = make_synthetic(n_objects=30, dim=2, n_train=1500, n_validation=10, n_test=100, votes=(4, 8), rate=rate,
                              model="spammers", n_annotators=20, random_state=3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            RobustOrdinalEmbedding(2, random_state=0).fit(data.train)
        return [str(w.message) for w in caught if issubclass(w.category, DataWarning)]

    said = [m for m in fit(0.6) if "follow the map" in m]
    assert len(said) == 1 and "give only 40% of the answers" in said[0]
    assert not any("follow the map" in m for m in fit(0.25))


def test_the_final_fit_counts_what_the_stage_took_off_half_each_way(spam):
    """With ``weighting="vote"`` the fitted objective counts each response ``q`` for its answer and
    ``(1 - q) / 2`` each way (``q``: its annotator's probability of following); under ``net`` it does not
    count reversed at all (the halves would cancel in the difference of the two directions)."""
    from roembed.data.comparisons import annotator_index

    est = RobustOrdinalEmbedding(2, loss="tste", weighting="vote", refine=None, max_iter=200,
                                 random_state=0).fit(spam.train)
    assert est.annotator_types_ is not None
    graph, objective, _ = est._fitted_objective()
    C = est.graph_.comparisons
    q = est.annotator_types_["follows"].to_numpy()[annotator_index(C)[1]]
    total = C.weight.sum()
    half = np.bincount(est.graph_.response_edge, weights=C.weight * (1 - q), minlength=len(graph)) / 2 / total
    assert half.max() > 0.001 / len(graph)  # the spammers' answers: something was taken off
    np.testing.assert_allclose(objective.reverse_weight, half, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(objective.loss_weight, graph.votes / total + half, rtol=1e-10, atol=1e-15)
    net = RobustOrdinalEmbedding(2, loss="tste", weighting="net", refine=None, max_iter=200,
                                 random_state=0).fit(spam.train)
    assert net._fitted_objective()[1].reverse_weight is None
