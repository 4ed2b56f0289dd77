"""The torch backend evaluates the same objective as the NumPy path, on the device it is given."""
import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from roembed.data import Comparisons  # noqa: E402
from roembed.estimators.base import edge_objective  # noqa: E402
from roembed.losses import get_loss  # noqa: E402
from roembed.objective import PairDistances  # noqa: E402
from roembed.solvers import minimize_embedding  # noqa: E402
from roembed.solvers.torch_lbfgs import (TorchObjective, check_on_device, minimize_embedding_torch,  # noqa: E402
                                         resolve_device)

pytestmark = pytest.mark.torch


def _problem(loss="soe", cap=0.5, seed=0, n=15, m=300):
    rng = np.random.RandomState(seed)
    X_true = rng.randn(n, 3)
    trip = np.array([rng.choice(n, 3, replace=False) for _ in range(m)])
    def dist(a, b):
        return ((X_true[trip[:, a]] - X_true[trip[:, b]]) ** 2).sum(1)

    d = dist(0, 1) < dist(0, 2)
    trip[~d] = trip[~d][:, [0, 2, 1]]
    trip[:20] = trip[:20][:, [0, 2, 1]]  # some violated comparisons so the caps bite
    graph = Comparisons(trip, n_objects=n).aggregate()
    caps = None if cap is None else np.full(len(graph), cap)
    objective = edge_objective(graph, get_loss(loss), graph.votes / graph.votes.sum(), caps)
    return objective, PairDistances(graph.pairs, n), rng.randn(n, 2)


@pytest.mark.parametrize("loss", ["soe", "ste", "tste", "ckl", "gnmds", "roe"])
@pytest.mark.parametrize("cap", [None, 0.3])
@pytest.mark.parametrize("chunk", [None, 17])
def test_value_gradient_and_gamma_match_numpy(loss, cap, chunk):
    objective, distances, X = _problem(loss, cap)
    d = distances.from_embedding(X)
    value, g_pair, gamma = objective.evaluate(d)
    grad = distances.embedding_grad(g_pair, X) + 2 * 0.1 * X
    value = value + 0.1 * np.vdot(X, X)
    tobj = TorchObjective(objective, distances, "cpu", "float64", chunk=chunk)
    tv, tg = tobj.value_and_grad(tobj.tensor(X), alpha=0.1)
    tgamma = tobj.gamma(tobj.tensor(X))
    assert tv.dtype == torch.float64
    np.testing.assert_allclose(float(tv), value, rtol=1e-10)
    np.testing.assert_allclose(tg.numpy(), grad, rtol=1e-8, atol=1e-12)
    if cap is None:
        assert tgamma is None
    else:
        np.testing.assert_allclose(tgamma.numpy(), gamma, atol=1e-12)


@pytest.mark.parametrize("loss", ["tste", "ckl"])
@pytest.mark.parametrize("cap", [None, 0.3])
def test_reverse_weight_matches_numpy(loss, cap):
    objective, distances, X = _problem(loss, cap)
    b = np.random.RandomState(1).uniform(0, 1, len(objective)) / len(objective)
    objective = dataclasses.replace(objective, reverse_weight=b)
    value, g_pair, _ = objective.evaluate(distances.from_embedding(X))
    tobj = TorchObjective(objective, distances, "cpu", "float64", chunk=17)
    tv, tg = tobj.value_and_grad(tobj.tensor(X), alpha=0.0)
    assert value > dataclasses.replace(objective, reverse_weight=None).evaluate(distances.from_embedding(X))[0]
    np.testing.assert_allclose(float(tv), value, rtol=1e-10)
    np.testing.assert_allclose(tg.numpy(), distances.embedding_grad(g_pair, X), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("loss", ["soe", "ste"])
def test_gradient_matches_finite_differences(loss):
    objective, distances, X = _problem(loss, cap=0.3, seed=1)
    tobj = TorchObjective(objective, distances, "cpu", "float64")
    _, grad = tobj.value_and_grad(tobj.tensor(X), alpha=0.05)
    rng, eps = np.random.RandomState(2), 1e-6
    for _ in range(5):
        V = rng.randn(*X.shape)
        fp, _ = tobj.value_and_grad(tobj.tensor(X + eps * V), alpha=0.05)
        fm, _ = tobj.value_and_grad(tobj.tensor(X - eps * V), alpha=0.05)
        assert (float(fp) - float(fm)) / (2 * eps) == pytest.approx(float((grad.numpy() * V).sum()), rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("dtype, deterministic, chunk", [("float32", False, None), ("float64", False, None),
                                                       ("float32", True, 50)])
def test_solver_reaches_the_numpy_objective(dtype, deterministic, chunk):
    objective, distances, X0 = _problem("soe", cap=0.5, seed=3)
    ref = minimize_embedding(objective, distances, X0, alpha=1e-3, max_iter=500, tol=1e-12)
    res = minimize_embedding_torch(objective, distances, X0, alpha=1e-3, max_iter=500, tol=1e-12, device="cpu",
                                   dtype=dtype, deterministic=deterministic, chunk=chunk)
    assert not torch.are_deterministic_algorithms_enabled()  # restored
    assert res.solution.dtype == np.float64 and res.solution.shape == X0.shape
    assert res.objective <= ref.objective * (1 + (1e-3 if dtype == "float32" else 1e-6)) + 1e-7
    assert res.n_iter > 0 and "cpu" in res.message


def test_tensors_live_on_the_requested_device():
    objective, distances, _ = _problem()
    tobj = TorchObjective(objective, distances, "cpu", "float32")
    assert tobj.device.type == "cpu"
    for t in (tobj.objects, tobj.objective.loss_weight, tobj.objective.cap):
        assert t.device.type == "cpu"
    assert tobj.objective.loss_weight.dtype == torch.float32 and tobj.objects.dtype == torch.int32
    with pytest.raises(RuntimeError, match="expected"):
        check_on_device([torch.zeros(2)], torch.device("meta"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_missing_cuda_fails_loudly():
    with pytest.raises(RuntimeError, match="no CUDA"):
        resolve_device("cuda")


def test_a_device_torch_does_not_know_is_named_with_the_ones_it_does():
    """``roembed fit --device gpu`` printed torch's list of two dozen device types (ipu, xpu, mkldnn, opengl...)."""
    with pytest.raises(RuntimeError, match=r"^'gpu' is no device torch knows: cpu, cuda \(or cuda:0, cuda:1, \.\.\.\), "
                                           r"mps$"):
        resolve_device("gpu")
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(RuntimeError, match="device 'meta' holds shapes, not numbers"):  # was Tensor.item()'s, mid-fit
        resolve_device("meta")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("p, n_edges", [(3, 1), (10, 5000), (50, 4097)])
def test_triton_kernels_give_the_eager_value_and_gradient(p, n_edges):  # pragma: no cover - needs a GPU
    """The fused Triton passes (a CUDA device's path) against the eager ones, in float64 and float32, on
    edge counts that are no multiple of a block."""
    triton_kernels = pytest.importorskip("roembed.solvers.triton_kernels")
    import roembed.solvers.torch_lbfgs as torch_lbfgs

    rng = np.random.default_rng(p)
    for dtype, rtol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        X = torch.tensor(rng.standard_normal((40, p)), dtype=dtype, device="cuda")
        q = torch.tensor(rng.integers(0, 40, size=(n_edges, 4)), dtype=torch.int32, device="cuda")
        near, far = triton_kernels.edge_sq_distances(X, q)
        ref_near, ref_far = torch_lbfgs.edge_sq_distances(X, q)
        torch.testing.assert_close(near, ref_near, rtol=rtol, atol=0)
        torch.testing.assert_close(far, ref_far, rtol=rtol, atol=0)
        g_near, g_far = torch.randn(n_edges, dtype=dtype, device="cuda"), torch.randn(n_edges, dtype=dtype, device="cuda")
        grad = triton_kernels.edge_adjoint(X, q, g_near, g_far, torch.zeros_like(X))
        ref = torch_lbfgs.edge_adjoint(X, q, g_near, g_far, torch.zeros_like(X))
        torch.testing.assert_close(grad, ref, rtol=rtol, atol=rtol * float(ref.abs().max()))
    objective, distances, X0 = _problem("soe", cap=0.3, seed=5)
    tobj = TorchObjective(objective, distances, "cuda", "float64")
    assert tobj._kernels()[0] is triton_kernels.edge_sq_distances
    with torch_lbfgs._deterministic(torch, True):
        assert tobj._kernels() is None  # atomic adds are not deterministic


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_placement():  # pragma: no cover - runs where a GPU exists
    objective, distances, X0 = _problem()
    tobj = TorchObjective(objective, distances, "cuda", "float32")
    assert tobj.objects.is_cuda and tobj.objective.cap.is_cuda and tobj.tensor(X0).is_cuda


def test_bad_dtype():
    objective, distances, _ = _problem()
    with pytest.raises(ValueError, match="dtype"):
        TorchObjective(objective, distances, "cpu", "float16")


@pytest.mark.parametrize("loss", ["soe", "gnmds", "ste"])
def test_a_scalar_cap_matches_the_same_cap_per_edge(loss):
    objective, distances, X = _problem(loss, cap=0.3)
    scalar = TorchObjective(dataclasses.replace(objective, cap=0.3), distances, "cpu", "float64")
    per_edge = TorchObjective(objective, distances, "cpu", "float64")
    (v1, g1), (v2, g2) = (t.value_and_grad(t.tensor(X)) for t in (scalar, per_edge))
    assert float(v1) == pytest.approx(float(v2), rel=1e-12) and torch.allclose(g1, g2)
    assert torch.allclose(scalar.gamma(scalar.tensor(X)), per_edge.gamma(per_edge.tensor(X)))
    value, _, gamma = dataclasses.replace(objective, cap=0.3).evaluate(distances.from_embedding(X))
    assert float(v1) == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(scalar.gamma(scalar.tensor(X)).numpy(), gamma, atol=1e-12)


@pytest.mark.parametrize("count, oldest", [(1, 0), (5, 0), (7, 5), (8, 3)])
def test_the_tensor_two_loop_recursion_is_the_compiled_one(count, oldest):
    """TorchVectors.direction (coefficients kept on the device) computes the same H g as the NumPy path's
    compiled recursion, over a ring buffer that has wrapped or not."""
    from roembed._kernels import two_loop_direction
    from roembed.solvers.torch_lbfgs import TorchVectors

    rng = np.random.RandomState(count + oldest)
    memory, size = 8, 30
    steps, changes, g = rng.randn(memory, size), rng.randn(memory, size), rng.randn(size)
    changes += 3 * steps  # s.y > 0, as L-BFGS keeps
    rhos = 1.0 / np.einsum("ij,ij->i", steps, changes)
    expected = two_loop_direction(g, steps, changes, rhos, oldest, count, 0.7)
    got = TorchVectors(torch).direction(torch.tensor(g), torch.tensor(steps), torch.tensor(changes), rhos, oldest,
                                        count, 0.7)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12)
    assert not np.allclose(expected, 0.7 * g)  # the pairs changed the direction


def test_the_torch_solver_takes_the_numpy_paths_iterations(monkeypatch):
    """In float64 the torch solver runs the NumPy path's L-BFGS: with its vectors on the device (pairs in
    float64, as here on the host) and, for small problems, on the host (the CPU path's float32 pairs), the
    same number of iterations, objective values and solution to rounding (the evaluations differ in summation order)."""
    import roembed.solvers.torch_lbfgs as torch_lbfgs
    from roembed.solvers.lbfgs import two_loop_lbfgs

    objective, distances, X0 = _problem("soe", cap=0.5, seed=4)
    ref = minimize_embedding(objective, distances, X0, alpha=1e-3, max_iter=60, tol=1e-9, method="two-loop")
    on_host = minimize_embedding_torch(objective, distances, X0, alpha=1e-3, max_iter=60, tol=1e-9, device="cpu",
                                       dtype="float64")
    assert X0.size <= torch_lbfgs.HOST_VECTORS and on_host.n_iter == ref.n_iter > 10
    np.testing.assert_allclose(on_host.history, ref.history, rtol=1e-6)  # float32 pairs round a little apart
    np.testing.assert_allclose(on_host.solution, ref.solution, rtol=1e-4, atol=1e-6)

    values = []

    def fun(x):
        X = x.reshape(X0.shape)
        value, grad = objective.embedding_value_and_grad(X, distances)
        values.append(value + 1e-3 * np.vdot(X, X))
        return values[-1], (grad + 2e-3 * X).ravel()

    history = []
    x, value, n_iter, *_ = two_loop_lbfgs(fun, X0.ravel(), max_iter=60, tol=1e-9, history_dtype=np.float64,
                                          callback=lambda x: history.append(values[-1]))
    monkeypatch.setattr(torch_lbfgs, "HOST_VECTORS", 0)
    res = minimize_embedding_torch(objective, distances, X0, alpha=1e-3, max_iter=60, tol=1e-9, device="cpu",
                                   dtype="float64")
    assert res.n_iter == n_iter > 10 and len(res.history) == len(history) == n_iter
    np.testing.assert_allclose(res.history, history, rtol=1e-9)
    np.testing.assert_allclose(res.solution, x.reshape(X0.shape), rtol=1e-6, atol=1e-8)
    assert res.objective == pytest.approx(value, rel=1e-10)


@pytest.mark.parametrize("host_vectors", [True, False])
def test_stop_ends_the_torch_solve_on_the_iterates_of_a_solve_without_it(monkeypatch, host_vectors):
    """``stop`` (as the self-tuning fit's give-up rule uses it) sees each iterate -- a NumPy array when the
    vectors are on the host, else a tensor, which edge_agreement reads -- and ends the solve where it
    returns True; until then the iterates are those of a solve without it."""
    import roembed.solvers.torch_lbfgs as torch_lbfgs
    from roembed.metrics import edge_agreement
    from roembed.solvers import STOPPABLE, solve

    if not host_vectors:
        monkeypatch.setattr(torch_lbfgs, "HOST_VECTORS", 0)
    objective, distances, X0 = _problem("soe", cap=None, seed=6)
    graph = objective.graph
    full = minimize_embedding_torch(objective, distances, X0, alpha=1e-3, max_iter=200, tol=1e-12, device="cpu",
                                    dtype="float64")
    seen = []

    def stop(iteration, X):
        seen.append((iteration, type(X).__module__.split(".")[0], edge_agreement(X, graph, np.arange(len(graph)))))
        return iteration == 7

    assert "torch" in STOPPABLE
    res = solve(objective, distances, X0, solver="torch", alpha=1e-3, max_iter=200, tol=1e-12, device="cpu",
                dtype="float64", stop=stop)
    assert res.stopped and res.n_iter == 7 and full.n_iter > 7 and not full.stopped
    assert [s[0] for s in seen] == list(range(1, 8))
    assert {s[1] for s in seen} == {"numpy" if host_vectors else "torch"}
    assert 0.5 < seen[-1][2] <= 1.0
    np.testing.assert_allclose(res.history, full.history[:7], rtol=1e-12)


def test_the_fused_kernels_are_used_only_where_triton_runs(monkeypatch):
    """Dispatch, without a GPU: Triton's kernels on a CUDA device of compute capability 7.0 or more, eager
    torch on older ones, on other devices and when deterministic."""
    import roembed.solvers.torch_lbfgs as torch_lbfgs

    objective, distances, _ = _problem()
    tobj = TorchObjective(objective, distances, "cpu", "float32")
    fused = ("distances", "adjoint")
    monkeypatch.setattr(torch_lbfgs, "_triton_kernels", lambda: fused)
    assert tobj._kernels() is None  # the CPU
    tobj.device = torch.device("cuda")
    for capability, expected in (((9, 0), fused), ((7, 0), fused), ((6, 1), None)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        assert tobj._kernels() == expected
        with torch_lbfgs._deterministic(torch, True):
            assert tobj._kernels() is None


def test_shifts_on_the_torch_solvers_device_are_numpys():
    """solvers.shifts: the torch solver's shifts (its device, its dtype) are the NumPy pass's -- to
    rounding in float64, and in float32 the same edges flagged -- and None without caps."""
    from roembed.solvers import shifts

    objective, distances, X = _problem("soe", cap=0.3, seed=7)
    expected = objective.embedding_shifts(X, distances)
    assert np.count_nonzero(expected) > 5 and np.count_nonzero(expected == 0) > 5
    np.testing.assert_array_equal(shifts(objective, distances, X, solver="lbfgs", max_iter=5), expected)
    on_torch = shifts(objective, distances, X, solver="torch", device="cpu", dtype="float64", max_iter=5, tol=1e-9)
    assert on_torch.dtype == np.float64
    np.testing.assert_allclose(on_torch, expected, rtol=1e-12, atol=1e-14)
    in_float32 = shifts(objective, distances, X, solver="torch", device="cpu", dtype="float32")
    np.testing.assert_array_equal(in_float32 != 0, expected != 0)
    np.testing.assert_allclose(in_float32, expected, rtol=1e-5, atol=1e-6)
    plain, _, _ = _problem("soe", cap=None, seed=7)
    assert shifts(plain, distances, X, solver="torch", device="cpu") is None


def test_shifts_read_the_kernels_distances_where_an_evaluation_would(monkeypatch):
    """TorchObjective.gamma takes the distances from the fused gather kernel when one is in use (the eager
    gather of a chunk's coordinates doubled the device peak), and from the eager pass otherwise; the same
    shifts either way (the eager distances stand in for the kernel here, so this runs without a GPU)."""
    from roembed.solvers import torch_lbfgs

    objective, distances, X = _problem("soe", cap=0.3, seed=7)
    tobj = TorchObjective(objective, distances, "cpu", "float64")
    calls = []

    def gather(X, q):
        calls.append(len(q))
        return torch_lbfgs.edge_sq_distances(X, q)

    eager = tobj.gamma(tobj.tensor(X))
    monkeypatch.setattr(tobj, "_kernels", lambda: (gather, None))
    fused = tobj.gamma(tobj.tensor(X))
    assert sum(calls) == len(objective)
    torch.testing.assert_close(fused, eager, rtol=0, atol=0)
    np.testing.assert_allclose(eager.numpy(), objective.embedding_shifts(X, distances), rtol=1e-12, atol=1e-14)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_shifts_on_cuda_are_numpys():  # pragma: no cover - runs where a GPU exists
    from roembed.solvers import shifts

    objective, distances, X = _problem("soe", cap=0.3, seed=7)
    expected = objective.embedding_shifts(X, distances)
    on_cuda = shifts(objective, distances, X, solver="torch", device="cuda", dtype="float64")
    np.testing.assert_allclose(on_cuda, expected, rtol=1e-10, atol=1e-12)
    in_float32 = shifts(objective, distances, X, solver="torch", device="cuda", dtype="float32")
    np.testing.assert_array_equal(in_float32 != 0, expected != 0)
