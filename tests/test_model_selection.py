import numpy as np
import pytest

from roembed.data import Comparisons, InvalidComparisonsError
from roembed.model_selection import GroupedKFold, distinct_ids, holdout_split, response_groups


def _votes():
    # query A = (0,1,2) answered 3 times, twice one way and once the other; B = (1,2,3) twice; C, D once
    rows = [(0, 1, 2), (0, 2, 1), (0, 1, 2), (1, 2, 3), (1, 2, 3), (2, 0, 3), (3, 0, 1)]
    return Comparisons(np.array(rows), annotator=["a", "b", "a", "c", "c", "b", "d"])


def test_both_directions_of_a_comparison_share_a_query():
    q = response_groups(_votes())
    assert q[0] == q[1] == q[2]
    assert q[3] == q[4]
    assert len(np.unique(q)) == 4


def test_folds_keep_queries_whole_and_cover_every_response_once():
    c = _votes()
    q = response_groups(c)
    seen = []
    for train, test in GroupedKFold(2, random_state=0).split(c):
        assert not set(q[train]) & set(q[test])
        seen.extend(test)
    assert sorted(seen) == list(range(len(c)))


def test_folds_are_seeded_and_shuffled():
    rng = np.random.default_rng(1)
    c = Comparisons(rng.permutation(np.array([(i, (i + 1) % 20, (i + 2) % 20) for i in range(20)])))
    first = [t.tolist() for _, t in GroupedKFold(4, random_state=3).split(c)]
    assert first == [t.tolist() for _, t in GroupedKFold(4, random_state=3).split(c)]
    assert first != [t.tolist() for _, t in GroupedKFold(4, random_state=4).split(c)]


def test_annotator_groups_keep_each_person_on_one_side():
    c = _votes()
    for train, test in GroupedKFold(2, groups="annotator", random_state=0).split(c):
        assert not set(c.annotator[train]) & set(c.annotator[test])
    with pytest.raises(InvalidComparisonsError, match="annotator ids"):
        list(GroupedKFold(2, groups="annotator").split(Comparisons(np.array([(0, 1, 2), (1, 2, 0)]))))


def test_object_groups_join_every_comparison_among_the_same_objects():
    from roembed.model_selection import object_sets

    # a triple's three anchors, both directions: one set; another triple, another set
    triplets = Comparisons(np.array([(0, 1, 2), (1, 0, 2), (2, 0, 1), (0, 2, 1), (0, 1, 3), (3, 1, 2)]))
    assert object_sets(triplets).tolist() == [0, 0, 0, 0, 1, 2]
    # quadruplets over four objects share a set whatever the pairs; a triplet written as a quadruplet has three
    quads = Comparisons(np.array([(0, 1, 2, 3), (1, 0, 3, 2), (0, 2, 1, 3), (0, 1, 0, 2), (1, 0, 1, 2), (0, 1, 2, 4)]))
    assert object_sets(quads).tolist() == [0, 0, 0, 1, 1, 2]
    rng = np.random.default_rng(0)
    triples = np.array([rng.choice(12, 3, replace=False) for _ in range(60)])
    c = Comparisons(rng.permutation(np.concatenate([np.roll(triples, r, axis=1) for r in range(3)])))  # 3 anchors
    sets = [frozenset(r) for r in c.triplets]
    for train, test in GroupedKFold(3, groups="object_set", random_state=0).split(c):
        assert not {sets[r] for r in train} & {sets[r] for r in test}
    train, test = holdout_split(c, 0.3, 0, "object_set")
    assert not set(map(frozenset, train.triplets)) & set(map(frozenset, test.triplets))
    by_query = holdout_split(c, 0.3, 0)  # by query, a triple's anchors fall on both sides
    assert set(map(frozenset, by_query[0].triplets)) & set(map(frozenset, by_query[1].triplets))


def test_holdout_holds_whole_queries_and_refuses_empty_sides():
    c = _votes()
    train, test = holdout_split(c, 0.5, random_state=0)
    q_train = {tuple(sorted(map(tuple, [r[:2], r[2:]]))) for r in train.quadruplets}
    q_test = {tuple(sorted(map(tuple, [r[:2], r[2:]]))) for r in test.quadruplets}
    assert len(train) + len(test) == len(c) and not q_train & q_test
    with pytest.raises(InvalidComparisonsError, match="^a hold-out of 0.01 of 4 query groups leaves nothing held out$"):
        holdout_split(c, 0.01)
    with pytest.raises(InvalidComparisonsError, match="^a hold-out of 0.01 of 4 sets of objects leaves nothing held"):
        holdout_split(c, 0.01, groups="object_set")
    with pytest.raises(InvalidComparisonsError, match="nothing to train on"):
        holdout_split(c, 0.99)
    with pytest.raises(InvalidComparisonsError, match="cannot fill"):
        list(GroupedKFold(5).split(c))


def test_holdout_takes_given_group_ids_and_checks_their_length():
    """A graph's response_query passed as ``groups`` gives the split of groups="query" (no second
    aggregation); annotator ids as an array give the split of groups="annotator"; a wrong length is refused."""
    c = _votes()
    graph = c.aggregate()
    for given, named in ((graph.response_query, "query"), (response_groups(c, "annotator"), "annotator")):
        a_train, a_held = holdout_split(c, 0.5, random_state=3, groups=given)
        b_train, b_held = holdout_split(c, 0.5, random_state=3, groups=named)
        assert np.array_equal(a_train.quadruplets, b_train.quadruplets)
        assert np.array_equal(a_held.quadruplets, b_held.quadruplets)
    with pytest.raises(ValueError, match="one id per response"):
        holdout_split(c, 0.5, groups=graph.edge_query)  # one per edge, not per response


@pytest.mark.parametrize("ids", [np.array([5, 0, 5, 2, 9], dtype=np.int32), np.array([3, 3, 3], dtype=np.uint8),
                                 np.array([0, 10**9, 4]), np.array([-1, 2, -1]), np.array(["b", "a", "b"]),
                                 np.array([], dtype=np.int64)])
def test_distinct_ids_equal_np_unique_with_its_dtype(ids):
    got = distinct_ids(ids)  # the table for small non-negative integers, np.unique for the rest
    assert np.array_equal(got, np.unique(ids)) and got.dtype == np.unique(ids).dtype


@pytest.mark.parametrize("ids", [np.array([3, 0, 7, 3, 9, 9, 1], dtype=np.int32), np.arange(50)[::-1] % 13,
                                 np.array([-2, 5, -2, 8]), np.array(["b", "a", "c", "a"]), np.array([10**9, 1])])
def test_membership_through_a_table_is_isin(ids):
    """holdout_mask's membership test: a table for small non-negative integer ranges, np.isin otherwise."""
    from roembed.model_selection import _members

    chosen = np.unique(ids)[::2]
    assert np.array_equal(_members(ids, chosen), np.isin(ids, chosen))
    assert not _members(ids, chosen[:0]).any()


def test_grouped_kfold_in_grid_search_keeps_queries_whole_and_prints_its_settings():
    """The README's recipe: GridSearchCV(..., cv=GroupedKFold(3)) over Comparisons; every fold it fits holds whole
    queries (no query's votes on both sides), and the splitter prints as scikit-learn's do."""
    from sklearn.model_selection import GridSearchCV

    from roembed import SOE

    rng = np.random.default_rng(0)
    rows = np.array([t for t in rng.integers(0, 12, size=(200, 3)) if len(set(t)) == 3])
    c = Comparisons(np.repeat(rows, 3, axis=0), n_objects=12)  # three votes per query
    splitter = GroupedKFold(3, random_state=0)
    assert repr(splitter) == "GroupedKFold(n_splits=3, groups='query', random_state=0)"
    ids = response_groups(c)
    for train, test in splitter.split(c):
        assert not np.intersect1d(ids[train], ids[test]).size
    search = GridSearchCV(SOE(random_state=0), {"n_components": [1, 2]}, cv=splitter).fit(c)
    assert len(search.cv_results_["mean_test_score"]) == 2 and search.best_params_["n_components"] in (1, 2)
