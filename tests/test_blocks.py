"""Host-side passes over every edge run in blocks on the fit's threads (roembed._threads.in_blocks):
the same results, bit for bit, as one block."""
import numpy as np
import pytest

import roembed._threads as threads_module
from roembed._threads import block_bounds, in_blocks
from roembed.data import Comparisons
from roembed.data.comparisons import _edge_objects
from roembed.estimators.base import edge_objective
from roembed.losses import get_loss
from roembed.metrics import agreement, edge_agreement
from roembed.objective import PairDistances, quadruplet_distances


@pytest.fixture
def many_blocks(monkeypatch):
    """Three threads and blocks of at least 7 rows, whatever the machine."""
    monkeypatch.setattr(threads_module, "default_threads", lambda: 3)
    monkeypatch.setattr(threads_module, "BLOCK_ROWS", 7)


def _graph(seed=0, n=30, m=400):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    trip = np.array([rng.choice(n, 3, replace=False) for _ in range(m)])
    trip = np.concatenate([trip, trip[:60]])  # repeated votes
    trip[::7] = trip[::7][:, [0, 2, 1]]  # and contradicting ones
    return Comparisons(trip, n_objects=n), X


def test_blocks_cover_the_range_in_order():
    assert block_bounds(10, threads=3, min_rows=1) == [0, 3, 6, 10]
    assert block_bounds(10, threads=3, min_rows=4) == [0, 5, 10]  # no block under min_rows
    assert block_bounds(3, threads=4, min_rows=4) == [0, 3]  # one block when too few rows
    assert block_bounds(0, threads=2, min_rows=1) == [0, 0]
    assert in_blocks(lambda lo, hi: (lo, hi), 10, threads=3, min_rows=1) == [(0, 3), (3, 6), (6, 10)]


def test_quadruplet_distances_in_blocks(many_blocks):
    rng = np.random.default_rng(1)
    X, quads = rng.standard_normal((40, 10)), rng.integers(0, 40, size=(101, 4))
    near, far = quadruplet_distances(X, quads)
    assert np.array_equal(near, ((X[quads[:, 0]] - X[quads[:, 1]]) ** 2).sum(axis=1))
    assert np.array_equal(far, ((X[quads[:, 2]] - X[quads[:, 3]]) ** 2).sum(axis=1))


def test_edge_objects_in_blocks_with_and_without_a_mask(many_blocks):
    graph = _graph()[0].aggregate()
    expected = graph.pairs[graph.edge_pairs].reshape(len(graph), 4)
    assert np.array_equal(_edge_objects(graph.pairs, graph.edge_pairs), expected)
    keep = np.random.RandomState(2).rand(len(graph)) < 0.4
    kept = _edge_objects(graph.pairs, graph.edge_pairs, keep)
    assert kept.dtype == graph.pairs.dtype and np.array_equal(kept, expected[keep])
    assert _edge_objects(graph.pairs, graph.edge_pairs, np.zeros(len(graph), bool)).shape == (0, 4)


def test_edge_agreement_in_blocks_is_the_agreement_of_the_responses(many_blocks):
    comps, X = _graph(seed=3)
    graph = comps.aggregate()
    edges = np.random.RandomState(4).rand(len(graph)) < 0.5
    assert edge_agreement(X, graph, np.flatnonzero(edges)) == agreement(X, comps[edges[graph.response_edge]])


def test_margins_and_shifts_in_blocks_equal_one_block(monkeypatch):
    comps, X = _graph(seed=5)
    graph = comps.aggregate()
    objective = edge_objective(graph, get_loss("soe"), graph.votes / graph.votes.sum(), np.full(len(graph), 0.3))
    distances = PairDistances(graph.pairs, graph.n_objects)
    monkeypatch.setattr(threads_module, "default_threads", lambda: 1)
    one = objective.embedding_margins(X, distances), objective.embedding_shifts(X, distances)
    monkeypatch.setattr(threads_module, "default_threads", lambda: 3)
    monkeypatch.setattr(threads_module, "BLOCK_ROWS", 7)
    assert len(block_bounds(len(objective))) == 4
    many = objective.embedding_margins(X, distances), objective.embedding_shifts(X, distances)
    assert np.array_equal(one[0], many[0]) and np.array_equal(one[1], many[1])
    assert np.count_nonzero(one[1]) > 0  # some shifts are not zero: the caps bite
