import numpy as np
import pytest
from scipy.spatial import procrustes as scipy_procrustes
from scipy.stats import special_ortho_group

from roembed.data import Comparisons
from roembed.metrics import (contradicted, describe_flags_by_vote, flags_by_vote, intransitive_share, knn_agreement,
                             margin_summary, margins, object_residuals, outlier_precision_recall, procrustes,
                             procrustes_align,
                             procrustes_disparity, procrustes_error, satisfied, set_precision_recall,
                             triplet_error, wilson_interval)


def _points(n=30, p=3, seed=0):
    return np.random.default_rng(seed).standard_normal((n, p))


@pytest.mark.parametrize("p", [2, 5])
def test_procrustes_of_a_rotated_scaled_shifted_reflected_copy_is_zero(p):
    X = _points(p=p)
    R = special_ortho_group.rvs(p, random_state=1)
    R[:, 0] *= -1  # a reflection too
    Y = 3.7 * X @ R + np.arange(p)
    assert procrustes_error(X, Y) == pytest.approx(0.0, abs=1e-10)
    assert procrustes_disparity(X, Y) == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(procrustes_align(X, Y), X)
    fit = procrustes(X, Y)
    assert fit.scale == pytest.approx(1 / 3.7)
    # without scaling the size difference remains
    assert procrustes_error(X, Y, scaling=False) > 1.0


def test_procrustes_disparity_matches_scipy_and_is_symmetric():
    X, Y = _points(seed=0), _points(seed=1)
    assert procrustes_disparity(X, Y) == pytest.approx(scipy_procrustes(X, Y)[2])
    assert procrustes_disparity(X, Y) == pytest.approx(procrustes_disparity(Y, X))
    assert 0.5 < procrustes_disparity(X, Y) <= 1.0  # unrelated point sets


def test_procrustes_pads_a_lower_dimensional_embedding():
    X = _points(p=2)
    X3 = np.hstack([X, np.zeros((len(X), 1))]) @ special_ortho_group.rvs(3, random_state=2)
    assert procrustes_error(X3, X) == pytest.approx(0.0, abs=1e-10)
    with pytest.raises(ValueError, match="same objects"):
        procrustes(X, X[:-1])


def test_knn_agreement():
    X = _points(n=50)
    assert knn_agreement(X, 2 * X + 1, k=5) == 1.0
    unrelated = np.mean([knn_agreement(X, _points(n=50, seed=s), k=5) for s in range(1, 6)])
    assert unrelated < 0.3  # chance is 5/49
    with pytest.raises(ValueError, match="k must be"):
        knn_agreement(X, X, k=50)


def test_triplet_error_and_interval_known_answer():
    X = np.array([[0.0], [1.0], [3.0]])
    # 0 is closer to 1 than to 2 (true), and the reverse (false), 3 votes vs 1
    c = Comparisons([[0, 1, 2], [0, 2, 1]], weight=[3.0, 1.0])
    e = triplet_error(X, c)
    assert e.value == pytest.approx(0.25)
    # both directions are one query: effective size 1, so the interval is the Wilson interval of n=1
    low, high = wilson_interval(0.25, 1.0)
    assert (e.low, e.high) == pytest.approx((float(low), float(high)))
    # many distinct correct triplets: error 0, a narrow interval
    Xr = _points(n=20, p=2)
    from roembed.experiments.synthetic import all_triplet_queries, label_triplets
    true = label_triplets(Xr, all_triplet_queries(20))
    e = triplet_error(Xr, true)
    assert e.value == 0.0 and e.low == 0.0 and e.high < 0.002


def test_triplet_error_by_object_set_counts_one_observation_per_set():
    """An odd-one-out answer (two triplets, two queries) or a triple's three anchors: one observation, not two
    or three, where the hold-out is by set (``roembed fit --holdout``)."""
    X = np.array([[0.0], [1.0], [3.0], [7.0]])
    c = Comparisons([[0, 1, 2], [1, 0, 2], [3, 2, 1]])  # two queries on {0, 1, 2}, one on {1, 2, 3}
    by_query, by_set = triplet_error(X, c), triplet_error(X, c, unit="object_set")
    assert by_query.value == by_set.value == 0.0
    assert (by_query.low, by_query.high) == pytest.approx(tuple(map(float, wilson_interval(0.0, 3.0))))
    # the sets weigh 2 and 1 responses: effective size (2 + 1)^2 / (2^2 + 1^2) = 9 / 5
    assert (by_set.low, by_set.high) == pytest.approx(tuple(map(float, wilson_interval(0.0, 9.0 / 5.0))))
    with pytest.raises(ValueError, match="unit must be 'query' or 'object_set', got 'answer'"):
        triplet_error(X, c, unit="answer")


def test_margins_are_scale_free_and_signed():
    X = _points(n=10, p=2)
    t = np.array([[0, 1, 2], [3, 4, 5]])
    m = margins(X, t)
    assert np.allclose(m, margins(10 * X, t))
    d = lambda a, b: np.sum((X[a] - X[b]) ** 2)  # noqa: E731
    assert np.sign(m[0]) == np.sign(d(0, 2) - d(0, 1))
    s = margin_summary(X, t)
    assert s["violated_share"] == pytest.approx(np.mean(m <= 0))


def test_object_residuals_count_each_object_once_per_response():
    X = np.array([[0.0], [1.0], [3.0], [10.0]])
    c = Comparisons([[0, 1, 2], [0, 2, 1], [1, 2, 3]], n_objects=4)
    table = object_residuals(X, c)
    assert table["n_responses"].tolist() == [2, 3, 3, 1]
    assert table["violated_share"].tolist() == pytest.approx([0.5, 1 / 3, 1 / 3, 0.0])


def test_intransitive_share():
    # around anchor 0: 1 < 2, 2 < 3, 3 < 1 is a cycle; 1 < 2, 2 < 4, 1 < 4 is not
    cyclic = Comparisons([[0, 1, 2], [0, 2, 3], [0, 3, 1]])
    assert intransitive_share(cyclic) == 1.0
    both = Comparisons([[0, 1, 2], [0, 2, 3], [0, 3, 1], [0, 2, 4], [0, 1, 4]])
    assert intransitive_share(both) == pytest.approx(0.5)
    # data from points is never cyclic; ties (one vote each way) are dropped
    from roembed.experiments.synthetic import all_triplet_queries, label_triplets
    X = _points(n=12, p=2)
    assert intransitive_share(label_triplets(X, all_triplet_queries(12))) == 0.0
    tied = Comparisons([[0, 1, 2], [0, 2, 1], [0, 2, 3], [0, 3, 1]])
    assert np.isnan(intransitive_share(tied))


def test_outlier_precision_recall_one_convention():
    s = outlier_precision_recall([True, True, False, False], [True, False, True, False])
    assert (s["precision"], s["recall"], s["true_positives"]) == (0.5, 0.5, 1)
    empty = outlier_precision_recall([False, False], [True, False])
    assert np.isnan(empty["precision"]) and empty["recall"] == 0.0
    assert np.isnan(outlier_precision_recall([True], [False])["recall"])
    sets = set_precision_recall({"a", "b"}, {"b", "c", "d"})
    assert sets["precision"] == 0.5 and sets["recall"] == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="shape"):
        outlier_precision_recall([True], [True, False])


def test_flags_by_vote_counts_each_flagged_edge_by_its_own_query():
    graph = Comparisons([[0, 1, 2]] * 3 + [[0, 2, 1]]  # 3 against 1
                        + [[3, 4, 5]] * 2 + [[3, 5, 4]] * 2  # tied
                        + [[6, 7, 8]]).aggregate()  # one vote, one direction
    edge = {tuple(q[[0, 1, 3]]): e for e, q in enumerate(graph.edges)}
    assert len(edge) == 5
    every = flags_by_vote(graph, np.ones(5, bool))
    assert every == {"outvoted": 1, "tied": 2, "majority": 2, "split_queries": True}
    assert describe_flags_by_vote(every) == "1 outvoted within their query, 2 tied, 2 with their query's majority"
    some = np.zeros(5, bool)
    some[[edge[(0, 2, 1)], edge[(3, 4, 5)], edge[(6, 7, 8)]]] = True
    assert flags_by_vote(graph, some) == {"outvoted": 1, "tied": 1, "majority": 1, "split_queries": True}
    plain = Comparisons([[0, 1, 2], [0, 1, 2], [3, 4, 5]]).aggregate()  # no query answered both ways
    assert flags_by_vote(plain, [True, False]) == {"outvoted": 0, "tied": 0, "majority": 1, "split_queries": False}
    assert describe_flags_by_vote(flags_by_vote(plain, [True, False])) == describe_flags_by_vote(None) == ""
    with pytest.raises(ValueError, match="edges"):
        flags_by_vote(plain, [True])


def test_contradicted_is_strict():
    X = np.array([[0.0], [1.0], [-1.0], [2.0]])
    # d(0,1) = d(0,2): a tie is not a contradiction; d(0,3) > d(0,1) contradicts (0, 3, 0, 1)
    assert contradicted(X, [[0, 1, 0, 2], [0, 3, 0, 1], [0, 1, 0, 3]]).tolist() == [False, True, False]


def test_one_standard_error_rule_known_answers():
    from roembed.metrics import one_standard_error

    rng = np.random.default_rng(0)
    base = rng.random(400)
    w = np.ones(400)
    noise = rng.normal(0, 0.2, 400)
    # candidate 0 worse than candidate 1 by 0.002 on average, paired noise sd 0.2 (SE 0.01): kept
    E = np.column_stack([base + 0.002 + noise, base, base + 0.05])
    chosen, best, se = one_standard_error(E, w)
    assert (chosen, best) == (0, 1)
    diff = E[:, 0] - E[:, 1]
    assert se[0] == pytest.approx(diff.std() / np.sqrt(399)) and se[1] == 0.0
    # worse by 0.05 with the same noise: five standard errors, the best is chosen
    chosen, best, _ = one_standard_error(np.column_stack([base + 0.05 + noise, base]), w)
    assert chosen == best == 1
    # weights: a query with weight 0 does not count
    E2 = np.column_stack([np.r_[base, 100.0], np.r_[base, 0.0]])
    assert one_standard_error(E2, np.r_[w, 0.0])[:2] == (0, 0)


@pytest.mark.parametrize("seed", range(5))
def test_weighted_median_with_whole_weights_does_not_depend_on_the_order_of_ties(seed):
    """Whole-number weights take the unstable sort: on values with many ties (and zero weights) the result
    is that of the stable order, the definition's; fractional weights keep the stable order."""
    from roembed.metrics import weighted_median

    rng = np.random.default_rng(seed)
    values = rng.integers(0, 6, size=2001).astype(float)
    for weights in (rng.integers(0, 4, size=2001).astype(float), np.ones(2001), rng.random(2001)):
        order = np.argsort(values, kind="stable")
        cum = np.cumsum(weights[order])
        expected = values[order][np.searchsorted(cum, 0.5 * cum[-1])]
        assert weighted_median(values, weights) == expected
        assert weighted_median(values[::-1], weights[::-1]) == expected
    assert weighted_median([1.0, 2.0, 3.0, 4.0], [1, 1, 1, 1]) == 2.0  # half the weight at or below 2
    assert weighted_median([1.0, 2.0, 3.0], [0, 0, 5]) == 3.0


@pytest.mark.parametrize("seed", range(4))
def test_stable_argsort_is_numpys_stable_order(seed):
    """The quicksort-then-ties order equals NumPy's stable sort: distinct values, few and many ties,
    signed zeros, NaNs (last, in their input order), single precision, empty and one-element input."""
    from roembed.metrics import stable_argsort

    rng = np.random.default_rng(seed)
    cases = [rng.standard_normal(5000), np.round(rng.standard_normal(5000), 1),
             rng.integers(0, 4, size=5000).astype(float), np.r_[rng.standard_normal(4000), np.zeros(20)],
             rng.standard_normal(3000).astype(np.float32), np.empty(0), np.ones(1)]
    mixed = rng.standard_normal(3000)
    mixed[rng.integers(0, 3000, size=40)] = np.nan
    mixed[rng.integers(0, 3000, size=40)] = -0.0
    mixed[rng.integers(0, 3000, size=40)] = 0.0
    mixed[rng.integers(0, 3000, size=40)] = 1.5
    cases.append(mixed)
    for values in cases:
        np.testing.assert_array_equal(stable_argsort(values), np.argsort(values, kind="stable"))


def test_an_embedding_that_cannot_answer_the_comparisons_is_refused():
    """The distances are read by a compiled loop without bounds checks: comparisons naming objects past X's last
    row read other memory (a triplet error of 0.5 from 5 rows for 9 objects), and NaN coordinates counted as
    violations (error 1.0); a confidence of 2 gave the interval (nan, nan)."""
    X = np.random.default_rng(0).normal(size=(10, 2))
    triplets = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    for call in (triplet_error, margins, satisfied):
        with pytest.raises(ValueError, match="the comparisons name object 8, but X has 5 rows"):
            call(X[:5], triplets)
        bad = X.copy()
        bad[3, 1] = np.nan
        with pytest.raises(ValueError, match=r"X has 1 NaN or infinite coordinate \(the first in row 3\)"):
            call(bad, triplets)
        with pytest.raises(ValueError, match=r"shape \(n_objects, n_components\), got shape \(10,\)"):
            call(X[:, 0], triplets)
    # n_objects above the rows, every index within them: answered
    assert triplet_error(X[:9], Comparisons(triplets, n_objects=12)).value == triplet_error(X, triplets).value
    for confidence in (2, 0, float("nan")):
        with pytest.raises(ValueError, match="confidence must be in"):
            triplet_error(X, triplets, confidence=confidence)
    with pytest.raises(ValueError, match=r"reference has coordinates that are NaN or infinite \(the first in row 3\)"):
        procrustes_error(bad, X)  # was LinAlgError "SVD did not converge"
    assert np.isnan(procrustes_error(np.zeros_like(X), X))  # no radius to relate to, as documented
