"""Two-stage pipeline: majority voting (ties), Eades-Lin-Smyth cycle removal, then an estimator."""
import numpy as np
import pytest
from sklearn.base import clone

from roembed import GNMDS, STE, Comparisons
from roembed.estimators.two_stage import TwoStageEmbedding, eades_lin_smyth_order, feedback_arcs, majority_vote
from roembed.experiments.synthetic import make_synthetic

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _is_acyclic(n, source, target):
    """Kahn's algorithm."""
    indeg = np.bincount(target, minlength=n)
    stack, seen = list(np.flatnonzero(indeg == 0)), 0
    adj = [[] for _ in range(n)]
    for s, t in zip(source, target):
        adj[s].append(t)
    while stack:
        v = stack.pop()
        seen += 1
        for t in adj[v]:
            indeg[t] -= 1
            if indeg[t] == 0:
                stack.append(t)
    return seen == n


def test_els_order_breaks_a_planted_cycle_with_one_arc():
    # 0 -> 1 -> 2 -> 0 is a cycle; 2 -> 3 -> 4 a tail
    source, target = np.array([0, 1, 2, 2, 3]), np.array([1, 2, 0, 3, 4])
    removed = feedback_arcs(5, source, target)
    assert removed.sum() == 1 and removed[[0, 1, 2]].any()
    assert _is_acyclic(5, source[~removed], target[~removed])
    order = eades_lin_smyth_order(5, source, target)
    assert sorted(order.tolist()) == list(range(5))


def test_els_keeps_a_dag_whole():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    keep = a != b
    source, target = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    assert not feedback_arcs(30, source, target).any()


@pytest.mark.parametrize("seed", range(5))
def test_els_result_is_acyclic_and_keeps_at_least_half(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 40, 300), rng.integers(0, 40, 300)
    keep = a != b
    source, target = a[keep], b[keep]
    removed = feedback_arcs(40, source, target)
    assert _is_acyclic(40, source[~removed], target[~removed])
    assert removed.sum() <= keep.sum() / 2


def test_two_stage_removes_minority_ties_and_a_planted_cycle():
    # objects 0..4; pairs p01, p02, p03 on anchor 0; a cycle p01<p02<p03<p01 plus consistent comparisons
    q = [[0, 1, 0, 2]] * 3 + [[0, 2, 0, 1]] * 1     # 3:1 majority for d01 < d02
    q += [[0, 2, 0, 3]] * 2                          # d02 < d03
    q += [[0, 3, 0, 1]] * 2                          # d03 < d01: closes the cycle
    q += [[1, 2, 1, 3]] * 2 + [[1, 3, 1, 2]] * 2     # a 2:2 tie
    q += [[2, 3, 2, 4]] * 1 + [[4, 0, 4, 1]] * 1     # unanimous, no cycle
    est = TwoStageEmbedding(2, estimator=GNMDS(max_iter=50), random_state=0).fit(Comparisons(q))
    assert est.n_minority_ == 1 and est.n_ties_ == 1 and est.n_cycle_ == 1
    stages = est.removed_["stage"].value_counts().to_dict()
    assert stages == {"minority": 1, "tie": 2, "cycle": 1}
    assert len(est.comparisons_) == 4 and np.all(est.comparisons_.weight == 1)
    cycle = est.removed_.loc[est.removed_["stage"] == "cycle", ["i", "j", "l", "k"]].to_numpy()[0]
    assert tuple(cycle) in {(0, 1, 0, 2), (0, 2, 0, 3), (0, 3, 0, 1)}
    assert est.embedding_.shape == (5, 2) and est.estimator_.n_components == 2


def test_a_query_drawn_twice_by_a_bootstrap_counts_twice_after_voting():
    # query (0; 1, 2) answered 3:1, drawn twice (weight and copies 2); query (0; 3, 4) once
    q = [[0, 1, 0, 2]] * 3 + [[0, 2, 0, 1]] + [[0, 3, 0, 4]]
    c = Comparisons(q, weight=[2, 2, 2, 2, 1], copies=[2, 2, 2, 2, 1])
    est = TwoStageEmbedding(2, estimator=GNMDS(max_iter=20), random_state=0).fit(c)
    kept = {tuple(e): w for e, w in zip(est.comparisons_.quadruplets.tolist(), est.comparisons_.weight)}
    assert kept == {(0, 1, 0, 2): 2.0, (0, 3, 0, 4): 1.0}


def test_majority_vote_masks_partition_the_edges():
    graph = Comparisons([[0, 1, 2], [0, 2, 1], [0, 2, 1], [1, 0, 2], [1, 2, 0]]).aggregate()
    kept, minority, tie = majority_vote(graph)
    assert np.all(kept.astype(int) + minority + tie == 1)
    assert kept.sum() == 1 and minority.sum() == 1 and tie.sum() == 2


def test_two_stage_on_contaminated_votes_is_deterministic():
    data = make_synthetic(n_objects=20, dim=2, n_train=600, n_validation=10, votes=(3, 7), rate=0.3,
                          n_test=1000, random_state=10)
    est = TwoStageEmbedding(2, estimator=STE(max_iter=100), random_state=0)
    a = est.fit(data.train)
    b = clone(est).fit(data.train)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)
    graph = a.graph_
    near, far = graph.edge_pairs[a.kept_edges_, 0], graph.edge_pairs[a.kept_edges_, 1]
    assert _is_acyclic(len(graph.pairs), near, far)
    assert a.n_minority_ > 0 and a.score(data.test) > 0.8
    assert len(a.kept_edges_) + len(a.removed_) == len(graph)


def test_without_cycle_removal_and_default_estimator():
    data = make_synthetic(n_objects=15, dim=2, n_train=300, n_validation=10, votes=(1, 3), rate=0.2,
                          n_test=500, random_state=11)
    est = TwoStageEmbedding(2, remove_cycles=False, random_state=0).fit(data.train)
    assert est.n_cycle_ == 0 and type(est.estimator_).__name__ == "SOE"


@pytest.mark.parametrize("params, match", [
    (dict(estimator="STE"), "estimator"), (dict(remove_cycles="yes"), "remove_cycles"), (dict(n_components=0), "n_components"),
    # TwoStageEmbedding(SOE(2)): "n_components must be an integer, got SOE(...)" before
    (dict(n_components=GNMDS(2)), r"first argument is n_components, got GNMDS\(\); pass the estimator of stage 3 by "
                                  r"name: TwoStageEmbedding\(n_components, estimator=...\)"),
])
def test_bad_parameters_raise(params, match):
    with pytest.raises(ValueError, match=match):
        TwoStageEmbedding(**params).fit([[0, 1, 2]])


def test_nothing_left_raises():
    with pytest.raises(ValueError, match="no comparisons left"):
        TwoStageEmbedding().fit([[0, 1, 2], [0, 2, 1]])
