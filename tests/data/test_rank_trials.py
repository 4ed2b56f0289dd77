"""psiz's rank trials (a query, its references, the chosen ones first) read as the triplets they imply."""
import numpy as np
import pytest

from roembed import SOE
from roembed.data import InvalidComparisonsError, from_rank_trials
from roembed.metrics import procrustes_disparity


def triplets(comparisons):
    """(anchor, closer, farther) rows of triplet comparisons."""
    q = comparisons.quadruplets
    assert np.all(comparisons.is_triplet)
    return q[:, [0, 1, 3]].tolist()


def test_a_two_rank_one_trial_is_a_triplet():
    assert triplets(from_rank_trials([[5, 2, 7]])) == [[5, 2, 7]]


def test_eight_rank_two_gives_each_chosen_reference_over_those_after_it():
    trial = [[0, 1, 2, 3, 4, 5, 6, 7, 8]]
    ranked = triplets(from_rank_trials(trial, n_select=2))
    assert ranked == [[0, 1, b] for b in range(2, 9)] + [[0, 2, b] for b in range(3, 9)]  # 7 + 6
    unranked = triplets(from_rank_trials(trial, n_select=2, is_ranked=False))
    assert unranked == [[0, 1, b] for b in range(3, 9)] + [[0, 2, b] for b in range(3, 9)]  # 12: not (0, 1, 2)


def test_padded_trials_per_trial_settings_and_metadata():
    """psiz before 0.8 pads with negative indices, from 0.8 with 0 (objects from 1); n_select, is_ranked and the
    trial's metadata apply per trial."""
    old = from_rank_trials([[3, 0, 1, -1, -1], [4, 0, 1, 2, 5]], n_select=[1, 2], is_ranked=[True, False],
                           annotator=["ann", "bob"], weight=[1.0, 0.5], response_time=[900, 1200])
    assert triplets(old) == [[3, 0, 1], [4, 0, 2], [4, 0, 5], [4, 1, 2], [4, 1, 5]]
    assert old.annotator.tolist() == ["ann"] + ["bob"] * 4
    assert old.weight.tolist() == [1.0] + [0.5] * 4
    assert np.asarray(old.response_time).tolist() == [900] + [1200] * 4
    new = from_rank_trials([[4, 1, 2, 0, 0], [5, 1, 2, 3, 6]], n_select=[1, 2], is_ranked=[True, False],
                           mask_zero=True)
    assert triplets(new) == triplets(old)


@pytest.mark.parametrize("trials, kwargs, message", [
    ([[0, 1, -1, 2]], {}, r"row 0: a reference follows a placeholder \(a negative index\).*\(0, 1, -1, 2\)"),
    ([[-1, 1, 2]], {}, r"row 0: the query is a placeholder"),
    ([[1, 2, 3], [1, 0, 3]], {"mask_zero": True}, r"row 1: a reference follows a placeholder \(0\).*\(1, 0, 3\)"),
    ([[0, 1, 2], [0, 1, 1]], {}, r"row 1: an object appears twice in the trial: \(0, 1, 1\)"),
    ([[0, 1, 2, -1]], {"n_select": 3}, r"n_select is not between 1 and the number of references.*n_select 3"),
    ([[0, 1, 2]], {"n_select": 2, "is_ranked": False}, r"every reference chosen, unranked"),
    ([[0, 1, 2.5]], {}, r"row 0: index 2.5 is not an integer|not an integer"),
    ([[0, 1]], {}, r"at least 3 columns"),
    (np.zeros((0, 3), int), {}, r"no comparisons: the input is empty"),
    ([[0, 1, 2], [3, 4, 5]], {"n_select": [1, 1, 1]}, r"n_select needs one value or one per trial \(2\), got shape"),
    ([[0, 1, 2], [3, 4, 5]], {"annotator": ["a"]}, r"annotator needs one value or one per trial \(2\)"),
    ([[0, 1, 2], [3, 4, 5]], {"weight": [1.0]}, r"weight"),
    ([[0, 1, 2, 3]], {"n_select": 1.5}, r"row 0: n_select .*not an integer"),
    ([[0, 1, 2, 3]], {"n_select": float("nan")}, r"row 0: n_select is missing"),
    # a text was read as True: "no" ranked the choices
    ([[0, 1, 2, 3]], {"n_select": 2, "is_ranked": "no"}, r"is_ranked must be True or False \(one, or one per trial\)"),
    ([[0, 1, 2, 3]], {"n_select": 2, "is_ranked": 2}, r"is_ranked must be True or False"),
])
def test_bad_trials_are_refused_naming_the_row(trials, kwargs, message):
    with pytest.raises(InvalidComparisonsError, match=message):
        from_rank_trials(trials, **kwargs)


def simulated_trials(X, n_trials, n_ref, n_select, rng, noise=0.0):
    """Trials whose chosen references are the ``n_select`` nearest to the query, in order, under distances
    perturbed by ``noise`` (a Gaussian scale relative to their spread)."""
    n = len(X)
    shown = np.array([rng.choice(n, n_ref + 1, replace=False) for _ in range(n_trials)])
    d = ((X[shown[:, 1:]] - X[shown[:, :1]]) ** 2).sum(-1)
    d = d + noise * d.std() * rng.standard_normal(d.shape)
    order = np.argsort(d, axis=1)
    return np.column_stack([shown[:, 0], np.take_along_axis(shown[:, 1:], order, axis=1)])


def test_noise_free_trials_agree_with_the_map_that_made_them_and_recover_it():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((25, 2))
    trials = simulated_trials(X, 150, 8, 2, rng)
    comparisons = from_rank_trials(trials, n_select=2)
    assert len(comparisons) == 13 * 150
    q = comparisons.quadruplets
    near = ((X[q[:, 0]] - X[q[:, 1]]) ** 2).sum(1)
    far = ((X[q[:, 2]] - X[q[:, 3]]) ** 2).sum(1)
    assert (near < far).all()
    fitted = SOE(2, random_state=0).fit(comparisons).embedding_
    assert procrustes_disparity(X, fitted) < 0.02
    # the same trials read as if the two chosen were the first two of eight unranked: one triplet per trial less
    assert len(from_rank_trials(trials, n_select=2, is_ranked=False)) == 12 * 150


@pytest.mark.parametrize("is_ranked", [True, False])
def test_the_triplets_are_cblearns_own_conversion(is_ranked):
    """cblearn's ``triplets_from_multiselect`` (the chosen columns first) gives the same triplets, in the same
    order (runs where cblearn is installed)."""
    preprocessing = pytest.importorskip("cblearn.preprocessing")
    rng = np.random.default_rng(3)
    trials = np.array([rng.choice(30, 9, replace=False) for _ in range(40)])
    theirs = preprocessing.triplets_from_multiselect(trials, 2, is_ranked)
    assert triplets(from_rank_trials(trials, n_select=2, is_ranked=is_ranked)) == theirs.tolist()


def test_each_triplet_carries_its_trial_so_a_split_can_hold_out_whole_trials():
    """An 8-rank-2 trial is 13 triplets over different objects: a split by query or object set put some of one
    choice's triplets in training and others in validation."""
    from roembed.model_selection import GroupedKFold, holdout_split

    rng = np.random.default_rng(0)
    trials = np.array([rng.choice(30, 9, replace=False) for _ in range(40)])
    c = from_rank_trials(trials, n_select=2)
    assert c.extra["trial"].tolist() == np.repeat(np.arange(40), 13).tolist()
    train, test = holdout_split(c, 0.25, 0, groups=c.extra["trial"])
    assert len(test) == 10 * 13 and not set(train.extra["trial"]) & set(test.extra["trial"])
    for fit_rows, held in GroupedKFold(4, groups=c.extra["trial"], random_state=0).split(c):
        assert not set(c.extra["trial"][fit_rows]) & set(c.extra["trial"][held])
    by_query = holdout_split(c, 0.25, 0)
    assert set(by_query[0].extra["trial"]) & set(by_query[1].extra["trial"])


def test_the_splits_by_object_set_hold_out_whole_trials():
    """By object set (``roembed fit --holdout``, ``select_dimension``, ``RobustOrdinalEmbeddingCV``'s folds) a
    trial's 13 triplets fell in different folds: simulated 8-rank-2 trials held out by set scored 0.030 below
    new trials (``response_groups``' docstring).  Now the grouping by set is the trial's for rank trials; a
    column called "trial" that does not name answers (one id over several anchors or annotators) is ignored."""
    from roembed import Comparisons
    from roembed.metrics import triplet_error, wilson_interval
    from roembed.model_selection import GroupedKFold, holdout_split, object_sets, response_groups, trial_ids

    rng = np.random.default_rng(0)
    trials = np.array([rng.choice(30, 9, replace=False) for _ in range(40)])
    c = from_rank_trials(trials, n_select=2)
    np.testing.assert_array_equal(response_groups(c, "object_set"), c.extra["trial"])
    sets = object_sets(c)
    assert len(np.unique(sets)) > 40 and any(len(np.unique(sets[c.extra["trial"] == t])) > 1 for t in range(40))
    for fit_rows, held in GroupedKFold(4, groups="object_set", random_state=0).split(c):
        assert not set(c.extra["trial"][fit_rows]) & set(c.extra["trial"][held])
    train, test = holdout_split(c, 0.25, 0, groups="object_set")
    assert len(test) == 10 * 13 and not set(train.extra["trial"]) & set(test.extra["trial"])
    # the error's interval counts trials: 40 units of 13 triplets each
    X = rng.standard_normal((30, 2))
    got = triplet_error(X, c, unit="object_set")
    low, high = map(float, wilson_interval(got.value * 40, 40, 0.95))
    assert (got.low, got.high) == pytest.approx((low, high))
    # a "trial" column of session trial numbers, shared by participants (several anchors per id), groups nothing
    numbered = Comparisons(c.triplets, n_objects=30, extra={"trial": c.extra["trial"] % 5})
    assert trial_ids(numbered) is None
    np.testing.assert_array_equal(response_groups(numbered, "object_set"), object_sets(numbered))
    # nor one id over two annotators' answers
    two = Comparisons(c.triplets, n_objects=30, annotator=np.arange(len(c)) % 2, extra={"trial": c.extra["trial"]})
    assert trial_ids(two) is None
    same = Comparisons(c.triplets, n_objects=30, annotator=c.extra["trial"] % 3, extra={"trial": c.extra["trial"]})
    np.testing.assert_array_equal(trial_ids(same), c.extra["trial"])
    # nor one trial per triplet (a numbered file of single triplets): the sets of objects group more
    assert trial_ids(Comparisons(c.triplets, n_objects=30, extra={"trial": np.arange(len(c))})) is None
