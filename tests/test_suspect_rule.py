"""The suspect rule: agreement shown below a reference midway between chance and the crowd's median
(binomial tests over units, Benjamini-Hochberg), inverters, and ``unproven`` reported, not flagged."""
from itertools import combinations
from math import comb

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from roembed.annotators import annotator_reliability, binomial_tail, suspect_threshold
from roembed.data import Comparisons

# annotator kind: (number of annotators, responses each, of which the truth satisfies)
CROWD = {"honest": (20, 100, 90), "few": (10, 16, 11), "spammer": (3, 120, 60), "inverter": (1, 60, 10)}


class Known(BaseEstimator):
    """A "fitted" estimator whose embedding is the truth, so each annotator's agreement is known exactly."""

    def __init__(self, X=None):
        self.X = X

    def fit(self, comparisons):
        self.graph_ = comparisons.aggregate()
        self.embedding_ = self.X
        self.outlier_mask_ = np.zeros(len(self.graph_), dtype=bool)
        return self


@pytest.fixture(scope="module")
def crowd():
    """Triplets on distinct object sets per annotator, exactly ``agree`` of them satisfied by the truth."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(25, 2))
    sets = np.array(list(combinations(range(25), 3)))
    rows, who, kind_of = [], [], {}
    for kind, (count, n, agree) in CROWD.items():
        for _ in range(count):
            a = len(kind_of)
            kind_of[a] = kind
            for r, (i, j, k) in enumerate(sets[rng.choice(len(sets), n, replace=False)]):
                near, far = (j, k) if np.linalg.norm(X[i] - X[j]) < np.linalg.norm(X[i] - X[k]) else (k, j)
                rows.append((i, near, far) if r < agree else (i, far, near))
                who.append(a)
    data = Comparisons(np.array(rows), n_objects=25, annotator=np.array(who))
    table = annotator_reliability(Known(X).fit(data)).set_index("annotator")
    return table, kind_of


def test_known_agreements(crowd):
    table, kind_of = crowd
    for a, kind in kind_of.items():
        _, n, agree = CROWD[kind]
        assert table.loc[a, "n_units"] == n and table.loc[a, "agreement"] == pytest.approx(agree / n)


def test_reference_is_midway_between_chance_and_the_median_unit(crowd):
    table, _ = crowd
    # 2,000 of the 2,580 units belong to annotators at 0.9: the median unit's rate is 0.9
    assert table.attrs["crowd_agreement"] == pytest.approx(0.9)
    assert table.attrs["reference_agreement"] == pytest.approx(0.7)
    assert "shown below 0.700" in table.attrs["suspect_rule"]


def test_p_values_and_q_values_by_hand(crowd):
    table, kind_of = crowd
    for a, kind in kind_of.items():
        _, n, agree = CROWD[kind]
        by_hand = sum(comb(n, k) * 0.7 ** k * 0.3 ** (n - k) for k in range(agree + 1))  # P(Bin(n, 0.7) <= agree)
        assert table.loc[a, "p_below_reference"] == pytest.approx(by_hand, rel=1e-9)
    # Benjamini-Hochberg: q_(i) = min over ranks j >= i of p_(j) * A / j
    p = np.sort(table["p_below_reference"].to_numpy())
    q = [min(min(p[j] * len(p) / (j + 1) for j in range(i, len(p))), 1.0) for i in range(len(p))]
    np.testing.assert_allclose(np.sort(table["q_below_reference"].to_numpy()), q, rtol=1e-12)


def test_spammers_and_inverters_flagged_honest_low_counts_not(crowd):
    table, kind_of = crowd
    kind = table.index.map(kind_of)
    assert table.loc[kind == "spammer", "suspect"].all() and table.loc[kind == "inverter", "suspect"].all()
    assert table.loc[kind == "inverter", "inverts"].all() and not table.loc[kind != "inverter", "inverts"].any()
    # honest workers with 16 answers at 0.69 are not shown above chance (unproven), but not shown bad either
    few = table[kind == "few"]
    assert few["unproven"].all() and not few["suspect"].any() and (few["reason"] == "").all()
    assert not table.loc[kind == "honest", ["suspect", "unproven"]].any().any()
    assert table.loc[kind == "spammer", "reason"].str.contains("below the reference 0.70").all()
    assert table.loc[kind == "inverter", "reason"].str.contains("inverts").all()


def test_suspect_threshold_weighted_median():
    assert suspect_threshold([0.9, 0.7, 0.3]) == pytest.approx(0.6)
    # weighted: the smallest value with at least half the weight at or below it; NaN and zero weight left out
    assert suspect_threshold([0.9, 0.5, 0.2, np.nan], weight=[1, 1, 5, 3]) == pytest.approx(0.35)
    assert suspect_threshold([0.9, 0.5, 0.2], weight=[3, 2, 1]) == pytest.approx(0.5)  # 3 of 6 at or below 0.5
    assert suspect_threshold([0.9, 0.5, 0.2], weight=[4, 1, 0]) == pytest.approx(0.7)


def test_binomial_tail_rounds_fractional_sums_conservatively():
    # 10.5 of 20 units: below uses P(X <= 11), above P(X >= 10); no units: p = 1
    below = binomial_tail([10.5, 0.0], [20, 0], 0.7, "below")
    above = binomial_tail([10.5], [20], 0.5, "above")
    assert below[0] == pytest.approx(sum(comb(20, k) * 0.7 ** k * 0.3 ** (20 - k) for k in range(12)))
    assert above[0] == pytest.approx(sum(comb(20, k) for k in range(10, 21)) / 2 ** 20)
    assert below[1] == 1.0
    with pytest.raises(ValueError, match="side"):
        binomial_tail([1.0], [2], 0.5, "left")


def test_bad_fdr():
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="fdr"):
            annotator_reliability(object(), fdr=bad)


def test_planted_spammers_found_by_the_test_alone():
    """Without the annotator model (``annotators=None``) the reference test finds every planted spammer,
    also one whose in-sample agreement is shown above chance (0.55 over 348 units)."""
    from roembed import RobustOrdinalEmbedding
    from roembed.experiments import make_synthetic

    spam = make_synthetic(n_objects=30, dim=2, n_train=1500, n_validation=10, n_test=10, votes=(4, 8),
                          rate=0.25, model="spammers", n_annotators=20, random_state=3)
    table = RobustOrdinalEmbedding(2, random_state=0, annotators=None).fit(spam.train).annotators_
    assert "p_follows" not in table
    flagged = table.loc[table["suspect"], "annotator"]
    assert set(flagged) == set(spam.spammers)
    assert (~table.loc[table["suspect"], "unproven"]).any()  # the old rule ("not shown above chance") missed it
    assert table.loc[~table["suspect"], "reason"].eq("").all()
