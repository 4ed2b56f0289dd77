"""The counting-sort aggregation (ComparisonGraph) against a plain np.unique definition of the graph."""
import numpy as np
import pytest

from roembed.data import Comparisons, canonical_quadruplets


def reference_graph(c: Comparisons) -> dict:
    """The graph by its definition: unique sorted pairs, then unique (near pair, far pair) keys."""
    n, q = c.n_objects, c.quadruplets.astype(np.int64)
    lo, hi = np.minimum(q[:, [0, 2]], q[:, [1, 3]]), np.maximum(q[:, [0, 2]], q[:, [1, 3]])
    pair_ids, pair_of = np.unique(np.concatenate([lo[:, 0] * n + hi[:, 0], lo[:, 1] * n + hi[:, 1]]),
                                  return_inverse=True)
    near, far = pair_of[: len(q)], pair_of[len(q):]
    keys, first, inverse, counts = np.unique(near * len(pair_ids) + far, return_index=True, return_inverse=True,
                                             return_counts=True)
    edge_pairs = np.stack([keys // len(pair_ids), keys % len(pair_ids)], axis=1)
    lookup = {k: e for e, k in enumerate(keys.tolist())}
    rev = [lookup.get(int(b) * len(pair_ids) + int(a), -1) for a, b in edge_pairs]
    return dict(pairs=np.stack([pair_ids // n, pair_ids % n], axis=1), edge_pairs=edge_pairs,
                edges=canonical_quadruplets(q[first]), response_edge=inverse.reshape(-1), n_responses=counts,
                votes=np.bincount(inverse.reshape(-1), weights=c.weight), reverse_edge=np.asarray(rev))


def random_comparisons(rng, n, m, triplets):
    q = rng.integers(0, n, size=(3 * m, 4))
    if triplets:
        q[:, 2] = q[:, 0]
    lo, hi = np.minimum(q[:, [0, 2]], q[:, [1, 3]]), np.maximum(q[:, [0, 2]], q[:, [1, 3]])
    valid = (lo[:, 0] != hi[:, 0]) & (lo[:, 1] != hi[:, 1]) & ((lo[:, 0] != lo[:, 1]) | (hi[:, 0] != hi[:, 1]))
    return Comparisons(q[valid][:m], n_objects=n, weight=rng.random(min(m, int(valid.sum()))))


@pytest.mark.parametrize("n, m, triplets", [(4, 30, True), (7, 200, False), (40, 5_000, True), (300, 20_000, False)])
def test_graph_matches_its_definition(n, m, triplets):
    c = random_comparisons(np.random.default_rng(n), n, m, triplets)
    graph, ref = c.aggregate(), reference_graph(c)
    for name, expected in ref.items():
        got = getattr(graph, name)
        if name == "votes":
            np.testing.assert_allclose(got, expected, rtol=1e-12)
        else:
            assert np.array_equal(got, expected), name
    assert len(graph) == len(ref["edge_pairs"])
    assert graph.n_queries == len(np.unique(graph.edge_query))


@pytest.mark.torch
@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("n, m, triplets", [(4, 30, True), (300, 20_000, False), (40, 5_000, True)])
def test_torch_sorted_graph_equals_the_counting_sorts(n, m, triplets, device):
    torch = pytest.importorskip("torch")
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    c = random_comparisons(np.random.default_rng(n + 1), n, m, triplets)
    graph, on_torch = c.aggregate(), c.aggregate(device=device)  # on "cpu": the GPU path's code, on the CPU
    for name in ("pairs", "edge_pairs", "response_edge", "votes", "reverse_edge", "edge_query"):
        got, expected = getattr(on_torch, name), getattr(graph, name)
        assert got.dtype == expected.dtype and np.array_equal(got, expected), name


def test_index_arrays_are_int32_and_read_only():
    graph = random_comparisons(np.random.default_rng(0), 50, 1_000, True).aggregate()
    for name in ("pairs", "edge_pairs", "response_edge", "n_responses", "reverse_edge", "edge_query"):
        array = getattr(graph, name)
        assert array.dtype == np.int32, name
        assert not array.flags.writeable, name
    assert graph.edges.dtype == np.int64 and not graph.edges.flags.writeable
    assert np.array_equal(graph.edge_quadruplets([2, 0]), graph.edges[[2, 0]])


@pytest.mark.parametrize("seed", range(4))
def test_object_groups_match_scipy_connected_components(seed):
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from roembed.data.diagnostics import object_groups

    rng = np.random.default_rng(seed)
    n = 60
    c = random_comparisons(rng, n, 25, triplets=bool(seed % 2))  # sparse: several groups, unused objects
    q = c.quadruplets
    adjacency = coo_matrix((np.ones(3 * len(q)), (np.repeat(q[:, 0], 3), q[:, 1:].reshape(-1))), shape=(n, n))
    _, labels = connected_components(adjacency, directed=False)
    groups = object_groups(c)
    used = np.zeros(n, bool)
    used[q.reshape(-1)] = True
    assert np.array_equal(c.used_objects, np.unique(q))
    assert np.all(groups[~used] == -1) and np.all(groups[used] >= 0)
    for a in np.flatnonzero(used):  # same partition of the used objects
        assert np.array_equal(groups[used] == groups[a], labels[used] == labels[a])
    sizes = np.bincount(groups[used])
    assert np.all(np.diff(sizes) <= 0)  # numbered by size, largest first


@pytest.mark.torch
def test_estimators_sort_on_the_torch_solvers_gpu_only():
    torch = pytest.importorskip("torch")
    from roembed import RobustOrdinalEmbedding

    assert RobustOrdinalEmbedding(2)._graph_device() is None
    assert RobustOrdinalEmbedding(2, solver="torch", device="cpu")._graph_device() is None
    on_gpu = RobustOrdinalEmbedding(2, solver="torch", device="cuda")
    if torch.cuda.is_available():
        assert on_gpu._graph_device().type == "cuda"
    else:
        with pytest.raises(RuntimeError, match="no CUDA device"):
            on_gpu._graph_device()
