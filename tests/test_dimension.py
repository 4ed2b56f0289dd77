import numpy as np
import pytest

from roembed import SOE, RobustOrdinalEmbedding
from roembed.dimension import select_dimension
from roembed.experiments import make_synthetic


def planted(dim, seed=0, rate=0.0):
    return make_synthetic(n_objects=30, dim=dim, n_train=2500, n_validation=100, votes=(3, 6), n_annotators=10,
                          n_test=100, rate=rate, model="vote", random_state=seed).train


@pytest.mark.parametrize("dim", [2, 3])  # 1-d fits from random starts get stuck (objects cannot pass)
def test_the_true_dimension_on_easy_data(dim):
    sel = select_dimension(RobustOrdinalEmbedding(max_iter=300, random_state=0), planted(dim), dimensions=range(1, 6), cv=3,
                           random_state=0)
    assert sel.n_components == dim
    table = sel.table
    assert table["chosen"].sum() == 1 and table.loc[table["chosen"], "n_components"].item() == dim
    assert table["error"].iloc[0] >= table["error"].min() and (table["se_vs_best"] >= 0).all()
    assert len(table["fold_errors"].iloc[0]) == 3
    assert repr(sel) == (f"DimensionSelection(n_components={dim} by the one-standard-error rule, least error at "
                         f"{sel.best}; tried {table['n_components'].tolist()}, see .table)")


def test_robust_selection_under_contamination_and_early_stopping():
    # (data seed 1 sat on the one-standard-error rule's edge: with the refinement ensemble p = 3 beat p = 2 by
    # 0.0043 against a margin of 0.0028, without it by 0.0026; seeds 2-7 choose 2 either way)
    sel = select_dimension(RobustOrdinalEmbedding(max_iter=300, random_state=0), planted(2, seed=3, rate=0.2),
                           cv=3, patience=2, random_state=0)
    assert sel.n_components == 2
    # stops two dimensions after the last improvement of the first (upward) pass instead of trying 1..20;
    # the downward pass may then move the minimum lower still
    assert sel.best + 2 <= sel.table["n_components"].max() <= 8


def test_min_rule_never_chooses_a_smaller_error_than_the_best():
    sel = select_dimension(SOE(max_iter=300, random_state=0), planted(2), dimensions=[1, 2, 3], cv=3, rule="min",
                           patience=None, random_state=0)
    assert sel.n_components == sel.best
    assert sel.table.loc[sel.table["n_components"] == sel.best, "error"].item() == sel.table["error"].min()


def test_n_components_auto_on_the_estimator():
    c = planted(2, seed=2)
    est = SOE("auto", max_iter=300, random_state=0).fit(c)
    assert est.n_components == "auto" and est.n_components_ == 2 and est.embedding_.shape == (30, 2)
    assert est.dimension_selection_.n_components == 2
    fixed = SOE(2, max_iter=300, random_state=0).fit(c)
    assert fixed.n_components_ == 2 and np.allclose(fixed.embedding_, est.embedding_)


def test_bad_parameters():
    with pytest.raises(ValueError, match="rule"):
        select_dimension(SOE(), planted(1), rule="aic")
    with pytest.raises(ValueError, match="dimensions"):
        select_dimension(SOE(), planted(1), dimensions=[0, 1])
    # one number or a string where a list belongs: was "'int' object is not iterable" or a string's letters
    for dimensions in (3, "123", [1.5, 2]):
        with pytest.raises(ValueError, match=r"dimensions must be a list of positive integers \(e.g. \[1, 2, 3\]\)"):
            select_dimension(SOE(), planted(1), dimensions=dimensions)
    for kwargs, match in ((dict(cv=1), "cv must be >= 2"), (dict(patience=0), "patience must be >= 1"),
                          (dict(n_jobs=0), "n_jobs must be 1 or more"), (dict(threads_per_fit=0), "threads_per_fit"),
                          # were NumPy's "SeedSequence expects int ..." and "expected non-negative integer"
                          (dict(random_state=1.5), "random_state must be None, an int"),
                          (dict(random_state=-1), "random_state must be an integer seed")):
        with pytest.raises(ValueError, match=match):
            select_dimension(SOE(), planted(1), dimensions=[1, 2], **kwargs)
    with pytest.raises(ValueError, match="n_components"):
        SOE(n_components="three").fit(planted(1))
    # fewer distinct queries than folds: the error says what needed the folds
    with pytest.raises(ValueError, match=r"^choosing the dimension by 5-fold cross-validation: 3 sets of objects "
                                         r"cannot fill 5 folds$"):
        SOE(n_components="auto").fit(np.array([[0, 1, 2], [1, 2, 3], [2, 3, 0], [0, 1, 2]]))
    with pytest.raises(ValueError, match=r": 1 set of objects cannot fill 5 folds$"):  # one query, its answer twice
        SOE(n_components="auto").fit(np.array([[0, 1, 2], [0, 1, 2]]))


def test_dimension_plot():
    from roembed.plotting import plot_dimension_selection

    sel = select_dimension(SOE(max_iter=200, random_state=0), planted(2), dimensions=[1, 2, 3], cv=3, patience=None,
                           random_state=0)
    fig = plot_dimension_selection(sel)
    line = fig.axes[0].lines[0]
    assert list(line.get_xdata()) == [1, 2, 3]


def test_a_self_tuning_estimator_tunes_once_per_dimension_and_keeps_what_the_user_set(monkeypatch):
    import roembed.estimators.robust as robust
    from roembed.estimators.robust import tuned_params

    splits = []
    real = robust.holdout_mask
    monkeypatch.setattr(robust, "holdout_mask", lambda *a, **k: splits.append(1) or real(*a, **k))
    est = RobustOrdinalEmbedding(max_iter=200, random_state=0)
    sel = select_dimension(est, planted(2, seed=3), dimensions=[1, 2, 3], cv=3, patience=None, random_state=0)
    assert len(splits) == 3  # one validation search per dimension, not one per fold (9)
    assert sel.n_components == 2
    fitted = RobustOrdinalEmbedding(2, weighting="net", max_iter=200, random_state=0).fit(planted(2, seed=3))
    chosen = tuned_params(fitted)
    assert "weighting" not in chosen and chosen["loss"] in ("soe", "tste") and "refine" in chosen
    assert tuned_params(SOE(2, max_iter=50).fit(planted(2))) == {}


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_the_fold_fits_warnings_come_back_counted_with_their_dimensions(n_jobs):
    from sklearn.exceptions import ConvergenceWarning

    # max_iter=2 cannot converge: every kept fold fit warns; the caller hears it once, counted, with the dimensions
    # -- from worker processes too, whose own warnings would otherwise be lost
    est = SOE(max_iter=2, random_state=0)
    with pytest.warns(UserWarning) as record:
        sel = select_dimension(est, planted(2), dimensions=[1, 2], cv=3, patience=None, n_jobs=n_jobs,
                               random_state=0)
    counted = [str(w.message) for w in record if "cross-validation fits" in str(w.message)]
    assert counted == ["6 of 6 cross-validation fits (n_components 1, 2): ConvergenceWarning: SOE did not converge "
                       "in 2 iterations (maximum number of iterations reached); increase max_iter"]
    assert not any(w.category is ConvergenceWarning for w in record)  # no raw per-fold warning
    assert list(sel.table["n_components"]) == [1, 2]


FITTED_SETS = []


class _RecordingSOE(SOE):
    """SOE that notes the object sets of each training fold and how many responses each has there."""

    def fit(self, X, y=None):
        from collections import Counter

        FITTED_SETS.append(Counter(frozenset(t) for t in X.triplets))
        return super().fit(X, y)


def test_folds_keep_every_comparison_among_the_same_objects_together():
    """By query, an odd-one-out answer's two triplets fell in different folds: the fold that scored one had fitted
    the other (simulated odd-one-out answers: 4 of 22 choices overshot the true dimension, 1 by object set)."""
    from collections import Counter

    from roembed.data import from_odd_one_out

    rng = np.random.default_rng(0)
    shown = np.array([rng.choice(20, 3, replace=False) for _ in range(300)])
    data = from_odd_one_out(shown, rng.integers(0, 3, 300))
    everything = Counter(frozenset(t) for t in data.triplets)
    FITTED_SETS.clear()
    select_dimension(_RecordingSOE(random_state=0), data, dimensions=[1, 2], cv=3, patience=None, random_state=0)
    assert len(FITTED_SETS) >= 6  # 3 folds x 2 dimensions
    for seen in FITTED_SETS:
        assert all(everything[s] == n for s, n in seen.items()) and sum(seen.values()) < len(data)
