"""The chunked, threaded evaluation from the embedding agrees with the pair form, whatever the chunking."""
import numpy as np
import pytest

from roembed.data import Comparisons
from roembed.estimators.base import edge_objective
from roembed.losses import get_loss
from roembed import objective as objective_module
from roembed.objective import PairDistances


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(3)
    q = rng.integers(0, 40, size=(3_000, 4))
    q[::2, 2] = q[::2, 0]  # half triplets
    lo, hi = np.minimum(q[:, [0, 2]], q[:, [1, 3]]), np.maximum(q[:, [0, 2]], q[:, [1, 3]])
    ok = (lo[:, 0] != hi[:, 0]) & (lo[:, 1] != hi[:, 1]) & ((lo[:, 0] != lo[:, 1]) | (hi[:, 0] != hi[:, 1]))
    return Comparisons(q[ok], n_objects=40, weight=rng.uniform(0.5, 2, ok.sum())).aggregate()


def pair_form(objective, distances, X):
    value, g_pair, gamma = objective.evaluate(distances.from_embedding(X))
    return value, distances.embedding_grad(g_pair, X), gamma


@pytest.mark.parametrize("loss", ["soe", "ste", "tste", "ckl", "gnmds", "roe"])
@pytest.mark.parametrize("cap", [None, 0.4, "per-edge"])
def test_embedding_evaluation_matches_the_pair_form(graph, loss, cap):
    rng = np.random.default_rng(0)
    caps = rng.uniform(0.1, 1, len(graph)) if cap == "per-edge" else cap
    objective = edge_objective(graph, get_loss(loss), graph.votes / graph.votes.sum(), caps)
    distances = PairDistances(graph.pairs, graph.n_objects)
    X = rng.standard_normal((graph.n_objects, 3))
    value, grad, gamma = pair_form(objective, distances, X)
    for chunk, threads in [(None, 1), (7, 1), (64, 2), (1000, 3)]:
        objective.chunk = chunk
        v, g = objective.embedding_value_and_grad(X, distances, threads=threads)
        assert v == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(g, grad, rtol=1e-9, atol=1e-13)
        _, _, gm = objective.evaluate(distances.from_embedding(X))
        if cap is None:
            assert gm is None
        else:
            np.testing.assert_allclose(gm, gamma, atol=1e-14)
        np.testing.assert_allclose(objective.margins(distances.from_embedding(X)),
                                   objective.loss.margin(*[distances.from_embedding(X)[p] for p in
                                                           objective.pair_indices()])[0])


@pytest.fixture
def small_thread_blocks(monkeypatch):
    """Threads for these small test graphs (a thread gets THREAD_EDGES edges or more)."""
    monkeypatch.setattr(objective_module, "THREAD_EDGES", 50)


def test_objects_are_looked_up_through_the_pairs_when_not_given(graph, small_thread_blocks):
    objective = edge_objective(graph, get_loss("soe"), graph.votes / graph.votes.sum(), 0.5)
    distances = PairDistances(graph.pairs, graph.n_objects)
    X = np.random.default_rng(1).standard_normal((graph.n_objects, 2))
    expected = objective.embedding_value_and_grad(X, distances, threads=2)  # edge by edge (threads)
    objective.objects = None
    v, g = objective.embedding_value_and_grad(X, distances, threads=2)
    assert v == pytest.approx(expected[0], rel=1e-12)
    np.testing.assert_allclose(g, expected[1], rtol=1e-12)
    np.testing.assert_array_equal(np.sort(objective.objects, axis=1), np.sort(graph.edge_objects, axis=1))


def test_the_same_thread_count_gives_the_same_bits(graph, small_thread_blocks):
    objective = edge_objective(graph, get_loss("soe"), graph.votes / graph.votes.sum(), 0.5)
    objective.chunk = 100
    distances = PairDistances(graph.pairs, graph.n_objects)
    X = np.random.default_rng(2).standard_normal((graph.n_objects, 4))
    first, second = (objective.embedding_value_and_grad(X, distances, threads=2) for _ in range(2))
    assert first[0] == second[0] and np.array_equal(first[1], second[1])


def test_prefetching_rows_changes_no_bit(graph, small_thread_blocks, monkeypatch):
    """Embeddings of every size through the prefetching loops (threshold 0) give the same bits."""
    from roembed import _kernels

    objective = edge_objective(graph, get_loss("soe"), graph.votes / graph.votes.sum(), 0.5)
    objective.chunk = 100
    distances = PairDistances(graph.pairs, graph.n_objects)
    X = np.random.default_rng(4).standard_normal((graph.n_objects, 10))
    plain = (objective.embedding_value_and_grad(X, distances, threads=2), objective.embedding_margins(X, distances),
             objective.embedding_shifts(X, distances))
    monkeypatch.setattr(_kernels, "PREFETCH_MIN_BYTES", 0)
    assert _kernels.prefetch_ahead(X) > 0
    (v, g), margins, shifts = (objective.embedding_value_and_grad(X, distances, threads=2),
                               objective.embedding_margins(X, distances), objective.embedding_shifts(X, distances))
    assert v == plain[0][0] and np.array_equal(g, plain[0][1])
    np.testing.assert_array_equal(margins, plain[1])
    np.testing.assert_array_equal(shifts, plain[2])


@pytest.mark.parametrize("loss", ["soe", "tste", "roe"])
def test_margins_and_shifts_from_the_embedding_match_the_pair_form(graph, loss):
    objective = edge_objective(graph, get_loss(loss), graph.votes / graph.votes.sum(), 0.3, two_sided=True)
    objective.chunk = 50
    distances = PairDistances(graph.pairs, graph.n_objects)
    X = np.random.default_rng(4).standard_normal((graph.n_objects, 3))
    d = distances.from_embedding(X)
    np.testing.assert_allclose(objective.embedding_margins(X, distances), objective.margins(d), rtol=1e-12)
    np.testing.assert_allclose(objective.embedding_margins(X, distances, step=7), objective.margins(d)[::7],
                               rtol=1e-12)
    np.testing.assert_allclose(objective.embedding_shifts(X, distances), objective.evaluate(d)[2], atol=1e-12)
    objective.cap = None
    assert objective.embedding_shifts(X, distances) is None


def _evaluate_in_child(queue, objective, distances, X):
    queue.put(objective.embedding_value_and_grad(X, distances, threads=2)[0])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_evaluates_with_threads_of_its_own(graph, small_thread_blocks):
    """joblib / Dask workers forked from a process that has used the thread pool must not wait on
    the parent's threads (they do not exist in the child): the child finishes, with the same value."""
    import multiprocessing

    objective = edge_objective(graph, get_loss("soe"), graph.votes / graph.votes.sum())
    objective.chunk = 100  # several chunks, so two threads share them
    distances = PairDistances(graph.pairs, graph.n_objects)
    X = np.random.default_rng(1).standard_normal((graph.n_objects, 2))
    value = objective.embedding_value_and_grad(X, distances, threads=2)[0]  # the parent's pool exists now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_evaluate_in_child, args=(queue, objective, distances, X))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung in the objective's thread pool")
    assert child.exitcode == 0 and queue.get(timeout=5) == value


def test_fewer_edges_than_two_threads_need_run_on_one(graph, monkeypatch):
    """Below 2 x THREAD_EDGES edges a second thread costs more than it saves: the evaluation runs in the
    calling thread (the pool is never asked) and gives the bits of threads=1; above, the pool runs it."""
    objective = edge_objective(graph, get_loss("soe"), graph.votes / graph.votes.sum(), 0.5)
    objective.chunk = 50
    distances = PairDistances(graph.pairs, graph.n_objects)
    X = np.random.default_rng(3).standard_normal((graph.n_objects, 3))
    one = objective.embedding_value_and_grad(X, distances, threads=1)
    asked = []
    real_pool = objective_module._pool
    monkeypatch.setattr(objective_module, "_pool", lambda workers: asked.append(workers) or real_pool(workers))
    monkeypatch.setattr(objective_module, "THREAD_EDGES", len(objective) // 2 + 1)
    two = objective.embedding_value_and_grad(X, distances, threads=2)
    assert asked == [] and two[0] == one[0] and np.array_equal(two[1], one[1])
    monkeypatch.setattr(objective_module, "THREAD_EDGES", len(objective) // 2)
    threaded = objective.embedding_value_and_grad(X, distances, threads=2)
    assert asked == [2, 2]  # one submission per block
    assert threaded[0] == pytest.approx(one[0], rel=1e-12)
    np.testing.assert_allclose(threaded[1], one[1], rtol=1e-10, atol=1e-14)


def test_one_thread_goes_through_the_pairs_when_they_are_fewer_than_the_edges(graph, small_thread_blocks):
    """Dense graph (fewer pairs than edges): the pair form's exact sums, and no per-edge objects built;
    a sparse graph (more pairs than edges) goes edge by edge; both paths agree."""
    distances = PairDistances(graph.pairs, graph.n_objects)
    assert len(distances) < len(graph)
    X = np.random.default_rng(5).standard_normal((graph.n_objects, 3))
    for loss in ("soe", "tste"):
        objective = edge_objective(graph, get_loss(loss), graph.votes / graph.votes.sum(), 0.4)
        objective.objects = None
        value, grad = objective.embedding_value_and_grad(X, distances, threads=1)
        pair_value, g_pair, _ = objective.evaluate(distances.from_embedding(X), gamma=False)
        assert value == float(pair_value) and objective.objects is None
        assert np.array_equal(grad, distances.embedding_grad(g_pair, X))
        by_edges = objective.embedding_value_and_grad(X, distances, threads=2)
        assert objective.objects is not None  # built by the threads' edge loops
        assert by_edges[0] == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(by_edges[1], grad, rtol=1e-10, atol=1e-14)
    rng = np.random.default_rng(6)
    rows = rng.integers(0, 400, size=(300, 3))
    rows = rows[(rows[:, 0] != rows[:, 1]) & (rows[:, 0] != rows[:, 2]) & (rows[:, 1] != rows[:, 2])]
    sparse = Comparisons(rows, n_objects=400).aggregate()
    sparse_distances = PairDistances(sparse.pairs, sparse.n_objects)
    assert len(sparse_distances) > len(sparse)
    objective = edge_objective(sparse, get_loss("soe"), sparse.votes / sparse.votes.sum(), 0.4)
    objective.objects = None
    Y = rng.standard_normal((400, 3))
    value, grad = objective.embedding_value_and_grad(Y, sparse_distances, threads=1)
    assert objective.objects is not None  # edge by edge
    pair_value, g_pair, _ = objective.evaluate(sparse_distances.from_embedding(Y), gamma=False)
    assert value == pytest.approx(float(pair_value), rel=1e-12)
    np.testing.assert_allclose(grad, sparse_distances.embedding_grad(g_pair, Y), rtol=1e-10, atol=1e-14)


def test_a_subgraph_objective_equals_its_responses_and_reads_pair_indices_only_when_needed(graph, monkeypatch):
    """The tuning's training subgraph keeps its parent's pairs: going edge by edge it never builds its (E, 2)
    pair indices, and either way its objective is that of aggregating its responses."""
    monkeypatch.setattr(objective_module, "THREAD_EDGES", 64)  # two threads: edge by edge
    rng = np.random.default_rng(1)
    responses = (graph.response_query % 5 != 0)  # whole queries, as the hold-out split takes them
    sub, ref = graph.subgraph(responses), graph.comparisons[responses].aggregate()
    assert len(sub.pairs) > len(ref.pairs)  # some parent pairs are in none of the subgraph's edges
    X = rng.standard_normal((graph.n_objects, 3))
    objective = edge_objective(sub, get_loss("soe"), sub.votes / sub.votes.sum(), 0.4)
    expected = edge_objective(ref, get_loss("soe"), ref.votes / ref.votes.sum(), 0.4)
    ref_distances = PairDistances(ref.pairs, ref.n_objects)
    objective.chunk = expected.chunk = 64
    v, g = objective.embedding_value_and_grad(X, PairDistances(sub.pairs, sub.n_objects), threads=2)
    assert "edge_pairs" not in vars(sub) and objective.near is None
    v_ref, g_ref = expected.embedding_value_and_grad(X, ref_distances, threads=2)
    assert v == v_ref and np.array_equal(g, g_ref)  # the same edges in the same order: bit for bit
    value, grad, gamma = pair_form(objective, PairDistances(sub.pairs, sub.n_objects), X)  # now it reads them
    assert "edge_pairs" in vars(sub)
    value_ref, grad_ref, gamma_ref = pair_form(expected, ref_distances, X)
    assert value == pytest.approx(value_ref, rel=1e-12) and np.array_equal(gamma, gamma_ref)
    np.testing.assert_allclose(grad, grad_ref, rtol=1e-9, atol=1e-13)
