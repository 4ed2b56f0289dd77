"""Annotator reliability: Wilson intervals, planted spammers, reweighting."""
import numpy as np
import pandas as pd
import pytest

from roembed.annotators import (annotator_reliability, fit_with_annotator_reweighting, reliability_weights,
                                suspect_threshold, wilson_interval)
from roembed.data import Comparisons
from roembed.experiments import make_synthetic
from roembed.estimators.robust import RobustOrdinalEmbedding
from roembed.objective import quadruplet_distances


@pytest.fixture(scope="module")
def spam():
    return make_synthetic(n_objects=30, dim=2, n_train=1500, n_validation=400, n_test=3000, votes=(4, 8),
                          rate=0.25, model="spammers", n_annotators=20, random_state=3)


@pytest.fixture(scope="module")
def fitted(spam):
    return RobustOrdinalEmbedding(2, random_state=0).fit(spam.train)


def test_wilson_interval_known_values():
    low, high = wilson_interval([8, 0, 5], [10, 10, 0])
    np.testing.assert_allclose(low[:2], [0.4902, 0.0], atol=1e-4)
    np.testing.assert_allclose(high[:2], [0.9433, 0.2775], atol=1e-4)
    assert (low[2], high[2]) == (0.0, 1.0)  # no votes: no information
    # more votes at the same share: narrower interval
    l1, h1 = wilson_interval(80, 100)
    assert h1 - l1 < high[0] - low[0]
    # the interval contains the share exactly, also at 0 and 1 (rounding left 1 - 1e-16 above it)
    for n in (1.49975, 1.69965, 3.5987, 4.49825):  # where the formula gave 1 - 1e-16
        lo, hi = wilson_interval([0.0, n], [n, n])
        assert lo[0] == 0.0 and hi[1] == 1.0


def test_planted_spammers_found_and_ranked_first(spam, fitted):
    table = fitted.annotators_
    planted = set(spam.spammers.tolist())
    found = set(table.loc[table["suspect"], "annotator"].tolist())
    assert found == planted
    assert set(table["annotator"].head(len(planted))) == planted
    spam_rows = table["annotator"].isin(planted)
    assert table.loc[spam_rows, "flagged_share"].min() > table.loc[~spam_rows, "flagged_share"].max()
    assert (table["agreement_low"] <= table["agreement"]).all() and (table["agreement"] <= table["agreement_high"]).all()


def test_table_counts_match_direct_computation(spam, fitted):
    table = annotator_reliability(fitted).set_index("annotator")
    train = spam.train
    assert table["n_votes"].sum() == len(train)
    on_flagged = fitted.outlier_mask_[fitted.graph_.response_edge]
    d_near, d_far = quadruplet_distances(fitted.embedding_, train.quadruplets)
    for a in (0, 7):
        rows = train.annotator == a
        assert table.loc[a, "n_votes"] == rows.sum()
        assert table.loc[a, "flagged_votes"] == on_flagged[rows].sum()
        assert table.loc[a, "agreement"] == pytest.approx(np.mean(d_near[rows] < d_far[rows]))
        assert table.loc[a, "agreement"] == pytest.approx(fitted.score(train[rows]))


def test_weights_enter_share_and_effective_count(fitted):
    m = len(fitted.graph_.comparisons)
    ann = fitted.graph_.comparisons.annotator
    base = annotator_reliability(fitted).set_index("annotator")
    # scaling all of one annotator's weights changes nothing
    w = np.where(ann == 0, 3.0, 1.0)
    scaled = annotator_reliability(fitted, weight=w).set_index("annotator")
    for col in ("agreement", "agreement_low", "agreement_high", "weighted_flagged_share"):
        assert scaled.loc[0, col] == pytest.approx(base.loc[0, col])
    # unequal weights: fewer effective votes -> wider interval
    rng = np.random.default_rng(0)
    uneven = annotator_reliability(fitted, weight=rng.exponential(size=m) ** 3).set_index("annotator")
    width = lambda t: (t["agreement_high"] - t["agreement_low"]).median()  # noqa: E731
    assert width(uneven) > width(base)
    with pytest.raises(ValueError, match="weights"):
        annotator_reliability(fitted, weight=np.ones(m - 1))
    with pytest.raises(ValueError, match="row 0: weight is negative"):  # was a weight of -n_votes in the table
        annotator_reliability(fitted, weight=-np.ones(m))
    for confidence in (2, float("nan")):  # went through to the intervals
        with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
            annotator_reliability(fitted, confidence=confidence)


def test_without_annotator_ids_is_an_error():
    rng = np.random.default_rng(0)
    q = np.array([(i, j, k) for i, j, k in rng.integers(0, 12, size=(400, 3)) if len({i, j, k}) == 3])
    est = RobustOrdinalEmbedding(random_state=0).fit(Comparisons(q, n_objects=12))
    with pytest.raises(AttributeError, match="annotator ids"):
        est.annotators_
    with pytest.raises(ValueError, match="annotator ids"):
        annotator_reliability(est)
    with pytest.raises(ValueError, match="annotator ids"):
        fit_with_annotator_reweighting(RobustOrdinalEmbedding(), Comparisons(q, n_objects=12))


def test_reliability_weights_rule():
    table = pd.DataFrame({"annotator": ["a", "b", "c", "d"], "agreement": [0.9, 0.9, 0.5, 0.1],
                          "agreement_high": [0.95, 0.9, 0.55, 0.15]})
    w = reliability_weights(table, min_weight=0.01)
    np.testing.assert_allclose(w.loc[["a", "b", "c", "d"]], [1.0, 1.0, 0.05 / 0.2, 0.01])
    chance = table.assign(agreement=0.5)
    assert (reliability_weights(chance) == 1.0).all()
    with pytest.raises(ValueError, match="annotator_reliability's table; it lacks agreement, agreement_high"):
        reliability_weights(table[["annotator"]])  # was KeyError 'agreement'
    for bad in (-0.1, 1.5, float("nan")):  # NaN weighted every annotator NaN
        with pytest.raises(ValueError, match=r"min_weight must be in \[0, 1\]"):
            reliability_weights(table, min_weight=bad)
    assert suspect_threshold([0.9, 0.7, 0.3]) == pytest.approx(0.6)


def test_reweighting_downweights_spammers_and_stops(spam):
    lines = []
    result = fit_with_annotator_reweighting(RobustOrdinalEmbedding(2, random_state=0, annotators=None), spam.train, max_rounds=3,
                                            validation=spam.validation, log=lines.append)
    planted = list(spam.spammers)
    honest = [a for a in result.annotator_weight.index if a not in planted]
    assert result.n_rounds >= 2 and len(lines) >= result.n_rounds
    assert result.annotator_weight.loc[planted].max() < 0.25  # random answerers: upper bound ~0.55
    assert result.annotator_weight.loc[honest].min() == 1.0
    down = int((result.annotator_weight < 1).sum())
    assert down >= len(planted) and repr(result) == (
        f"ReweightingResult({result.n_rounds} rounds, {down} of {len(result.annotator_weight)} annotators weighted "
        "below 1, estimator RobustOrdinalEmbedding)")
    assert set(result.history.columns) >= {"round", "objective", "n_suspect", "validation_score",
                                           "max_weight_change"}
    kept = result.history["validation_score"].idxmax()
    assert result.estimator.score(spam.validation) == pytest.approx(result.history.loc[kept, "validation_score"])
    # the reliability table is scored with the original weights (spammers still visible)
    found = set(result.reliability.loc[result.reliability["suspect"], "annotator"])
    assert found == set(planted)


def test_reweighting_round_limit_and_bad_params(spam):
    once = fit_with_annotator_reweighting(RobustOrdinalEmbedding(2, random_state=0, annotators=None), spam.train, max_rounds=0)
    assert once.n_rounds == 1 and (once.annotator_weight == 1).all()
    for bad, message in (({"max_rounds": -1}, "max_rounds"), ({"max_rounds": 1.5}, "max_rounds"),
                         ({"min_weight": 2.0}, "min_weight"),
                         ({"tol": float("nan")}, "tol must be"), ({"tol": -1}, "tol must be")):  # ran every round
        with pytest.raises(ValueError, match=message):
            fit_with_annotator_reweighting(RobustOrdinalEmbedding(), spam.train, **bad)


def test_a_plain_estimator_is_refused_by_name_not_called_unfitted(spam):
    """Annotators are scored by a robust fit's flags; a plain SOE said "This SOE instance is not fitted yet" from
    inside the first round, after fitting it."""
    from roembed import SOE

    with pytest.raises(ValueError, match=r"^annotator reweighting needs a robust estimator, whose flags score the "
                                         r"annotators \(RobustOrdinalEmbedding or ROE\), got SOE$"):
        fit_with_annotator_reweighting(SOE(2, random_state=0), spam.train, max_rounds=1)
    with pytest.raises(ValueError, match=r"^annotator reliability needs a robust estimator's flags .*; SOE flags no "
                                         r"comparison$"):
        annotator_reliability(SOE(2, random_state=0, max_iter=20).fit(spam.train))


def test_no_suspects_when_every_annotator_is_alike():
    clean = make_synthetic(n_objects=30, dim=2, n_train=1500, n_validation=10, n_test=10, votes=(4, 8),
                           rate=0.2, model="unanimous", n_annotators=20, random_state=4)
    table = RobustOrdinalEmbedding(2, random_state=0).fit(clean.train).annotators_
    assert not table["suspect"].any()
