r"""Factored solver on torch tensors: full-batch L-BFGS on any device (optional extra ``torch``).

The iterations are the NumPy path's (:func:`~roembed.solvers.lbfgs.two_loop_lbfgs`) on tensors
(:class:`TorchVectors`).

The objective is the very same :class:`~roembed.objective.EdgeObjective` as on
the CPU path: the edges' objects, loss weights and caps are moved to the device
once and the shared losses evaluate on tensors (``roembed._array.TorchOps``).
The gradient is the closed-form adjoint, not autograd:

.. math::  \nabla_X F = 2 \sum_c \left(g^{near}_c (e_i - e_j)(x_i - x_j)^T
           + g^{far}_c (e_l - e_k)(x_l - x_k)^T\right) + 2 \alpha X,

scattered with ``index_add_``.  Every evaluation runs over the edges in chunks
of :data:`~roembed.objective.TORCH_CHUNK`, so device memory is the edges' own
arrays (int32 objects, float32 weights: 20 bytes per comparison) plus one
chunk's temporaries, whatever the number of comparisons: no n x n matrix, no
autograd tape, no per-comparison (m, p) array.  Values are summed in float64.
On a CUDA device the gather and the scatter of each chunk are two fused Triton kernels
(:mod:`roembed.solvers.triton_kernels`; Triton ships with torch's CUDA builds, and ``torch.compile``
on CUDA needs it too); elsewhere, or with ``deterministic=True`` (under
``torch.use_deterministic_algorithms``, so ``index_add_`` takes its deterministic, slower path on CUDA),
eager torch operations.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time

import numpy as np

from .._optional import import_optional
from ..objective import EdgeObjective, PairDistances
from .lbfgs import SolverResult, two_loop_lbfgs

DTYPES = ("float32", "float64")


def dtype_name(dtype) -> str:
    """``"float32"`` or ``"float64"`` for that dtype given as text, NumPy's (``np.float32``) or torch's; anything
    else raises (``np.float32`` was refused by its text, "<class 'numpy.float32'>")."""
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPES and not isinstance(dtype, str):
        try:
            name = np.dtype(dtype).name
        except TypeError:
            pass
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    return name


def import_torch():
    """``torch``, or an ImportError that says how to get it."""
    return import_optional("torch", "solver='torch'", "pip install 'roembed[torch]' (or pip install torch)",
                           package="PyTorch")


def resolve_device(device=None):
    """A ``torch.device`` (default: CUDA when available, else CPU); fails loudly if it does not exist."""
    torch = import_torch()
    try:
        dev = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError:  # torch's own words list two dozen device types
        raise RuntimeError(f"{device!r} is no device torch knows: cpu, cuda (or cuda:0, cuda:1, ...), mps") from None
    if dev.type == "meta":  # was "Tensor.item() cannot be called on meta tensors", mid-fit
        raise RuntimeError("device 'meta' holds shapes, not numbers: no fit can run on it (cpu, cuda, mps)")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {str(dev)!r} requested but torch sees no CUDA device")
    if dev.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise RuntimeError(f"device {str(dev)!r} requested but MPS is not available")
    return dev


def check_on_device(tensors, device) -> None:
    """Raises if any tensor is not on ``device`` (guards against silently staying on the CPU)."""
    for t in tensors:
        if t.device.type != device.type or (device.type != "cpu" and device.index is not None
                                            and t.device.index != device.index):  # CPU tensors have no index
            raise RuntimeError(f"tensor on {t.device}, expected {device}")


def edge_differences(X, q):
    """Each edge's near and far differences ``x_i - x_j``, ``x_l - x_k`` (rows of the chunk) and their squared
    norms: the eager path keeps the differences for :func:`scatter_differences` instead of gathering the
    four rows again."""
    diff_near = X[q[:, 0]] - X[q[:, 1]]
    diff_far = X[q[:, 2]] - X[q[:, 3]]
    return diff_near, diff_far, (diff_near * diff_near).sum(1), (diff_far * diff_far).sum(1)


def scatter_differences(q, diff_near, diff_far, g_near, g_far, grad):
    """:func:`edge_adjoint` from the differences of :func:`edge_differences` (overwritten)."""
    diff_near.mul_((2.0 * g_near)[:, None])
    diff_far.mul_((2.0 * g_far)[:, None])
    grad.index_add_(0, q[:, 0], diff_near).index_add_(0, q[:, 1], diff_near, alpha=-1)
    grad.index_add_(0, q[:, 2], diff_far).index_add_(0, q[:, 3], diff_far, alpha=-1)
    return grad


def edge_sq_distances(X, q):
    """Squared distances of each edge's near pair ``(q0, q1)`` and far pair ``(q2, q3)`` at ``X``."""
    return edge_differences(X, q)[2:]


def edge_adjoint(X, q, g_near, g_far, grad):
    """Adds ``2 g (x_a - x_b)`` to row ``a`` and subtracts it from row ``b`` of ``grad``, for each edge's
    near pair (slope ``g_near``) and far pair (``g_far``)."""
    diff_near, diff_far, _, _ = edge_differences(X, q)
    return scatter_differences(q, diff_near, diff_far, g_near, g_far, grad)


@functools.lru_cache(maxsize=None)
def _triton_kernels():
    """``(edge_sq_distances, edge_adjoint)`` of :mod:`roembed.solvers.triton_kernels`, or None without Triton."""
    try:
        from . import triton_kernels
    except ImportError:
        return None
    return triton_kernels.edge_sq_distances, triton_kernels.edge_adjoint


class TorchObjective:
    """An :class:`EdgeObjective` moved to ``device``; evaluates value and gradient chunk by chunk."""

    def __init__(self, objective: EdgeObjective, distances: PairDistances, device=None, dtype="float32",
                 chunk: int | None = None):
        torch = import_torch()
        self.torch = torch
        self.device = resolve_device(device)
        self.dtype = getattr(torch, dtype_name(dtype))
        objects = np.asarray(objective.objects_of(distances))  # not kept on the caller's objective
        index = np.int32 if distances.n_objects < np.iinfo(np.int32).max else np.int64

        def real(a):  # None stays None; a scalar becomes a 0-d tensor
            return None if a is None else torch.as_tensor(np.asarray(a), device=self.device).to(self.dtype)

        self.objects = torch.tensor(objects.astype(index, copy=False), device=self.device)
        self.objective = dataclasses.replace(objective, near=None, far=None, objects=None, graph=None,
                                             loss_weight=real(objective.loss_weight), cap=real(objective.cap),
                                             reverse_weight=real(objective.reverse_weight),
                                             chunk=chunk or objective.chunk)
        self.n_objects = distances.n_objects
        check_on_device([self.objects, self.objective.loss_weight], self.device)

    def tensor(self, X):
        """A copy of ``X`` on the device (``as_tensor`` would share a float64 CPU array, which L-BFGS then overwrites)."""
        return self.torch.tensor(np.asarray(X, dtype=np.float64), device=self.device).to(self.dtype)

    def value_and_grad(self, X, alpha: float = 0.0):
        """``F(X)`` (0-d float64 tensor) and ``dF/dX``."""
        torch = self.torch
        kernels = self._kernels()
        grad = torch.zeros_like(X)
        value = torch.zeros((), dtype=torch.float64, device=X.device)
        for sl in self.objective._slices(torch=True):
            q = self.objects[sl]
            if kernels is None:
                diff_near, diff_far, d_near, d_far = edge_differences(X, q)
            else:
                d_near, d_far = kernels[0](X, q)
            v, g_near, g_far, _ = self.objective.terms(d_near, d_far, sl)
            value += v
            if kernels is None:
                scatter_differences(q, diff_near, diff_far, g_near, g_far, grad)
            else:
                kernels[1](X, q, g_near, g_far, grad)
        if alpha:
            value = value + alpha * (X * X).sum(dtype=torch.float64)
            grad = grad + (2.0 * alpha) * X
        return value, grad

    def _kernels(self):
        """The gather and scatter halves of an evaluation as fused Triton kernels on a CUDA device that Triton
        supports (compute capability 7.0 or more), unless deterministic (their atomic adds are not); else
        None: eager, the differences gathered once per chunk and kept for the adjoint."""
        if (self.device.type != "cuda" or self.torch.are_deterministic_algorithms_enabled()
                or self.torch.cuda.get_device_capability(self.device) < (7, 0)):
            return None
        return _triton_kernels()

    def gamma(self, X):
        """The per-edge outlier shifts at ``X`` (None without caps).  The distances come from the fused gather
        kernel where an evaluation would use it: eager, a chunk's gathered coordinates (4 p numbers per edge)
        doubled the fit's device peak at 10^5 and 10^6 comparisons (p = 10; H200, thirty-sixth session)."""
        if self.objective.cap is None:
            return None
        kernels = self._kernels()
        out = self.torch.empty(len(self.objective), dtype=X.dtype, device=X.device)
        for sl in self.objective._slices(torch=True):
            q = self.objects[sl]
            d_near, d_far = edge_sq_distances(X, q) if kernels is None else kernels[0](X, q)
            out[sl] = self.objective.terms(d_near, d_far, sl)[3]
        return out


HOST_VECTORS = 1 << 16
"""Most unknowns (n x p) for which the L-BFGS iterates and pairs stay on the host as on the NumPy path
(float64 iterates, float32 pairs, the compiled recursion), the device only evaluating: on small problems
the recursion's 80 tiny device operations per iteration cost more than copying the iterate and gradient
(on an H100 at 10^4 unknowns, cProfile'd: 1.5 ms per iteration, half of a 1.5 s default fit of 10^5
triplets; the compiled recursion's 8 us per 1,000 unknowns on the CPU would make it about 0.1 ms;
docs/results.md, "On a GPU after the fifteenth session")."""


class TorchVectors:
    """:func:`~roembed.solvers.lbfgs.two_loop_lbfgs`'s vector operations on torch tensors: iterates and pairs
    in the tensors' dtype and device.  The two-loop recursion keeps its coefficients on the device (0-d
    tensors), so an iteration waits for the device only for the line search's values and a few scalars;
    ``torch.optim.LBFGS`` waited on each of its 2 x 20 coefficients (on an H100 its own work took 1.3 s
    of a 2.1 s default fit of 10^5 triplets, docs/results.md "On a GPU")."""

    def __init__(self, torch):
        self.torch = torch

    def start(self, x0):
        return x0.clone()

    def history(self, memory: int, x):
        return x.new_empty((memory, x.numel())), x.new_empty((memory, x.numel()))

    def dot(self, a, b) -> float:
        return float(self.torch.dot(a, b))

    def norm(self, a) -> float:
        return float(self.torch.linalg.vector_norm(a))

    def max_abs(self, a) -> float:
        return float(a.abs().max())

    def curvature(self, s, y):
        """``(s.y, ||s||, ||y||, y.y)``, read from the device at once."""
        torch = self.torch
        sy, ss, yy = torch.stack([torch.dot(s, y), torch.dot(s, s), torch.dot(y, y)]).tolist()
        return sy, math.sqrt(ss), math.sqrt(yy), yy

    def direction(self, g, steps, changes, rhos, oldest, count, scale):
        """``H g``: :func:`roembed._kernels.two_loop_direction` in tensor operations."""
        torch, size, q = self.torch, steps.shape[0], g.clone()
        coefs = [None] * count
        for h in range(count - 1, -1, -1):
            row = (oldest + h) % size
            coefs[h] = float(rhos[row]) * torch.dot(steps[row], q)
            q.addcmul_(changes[row], coefs[h], value=-1.0)
        q.mul_(float(scale))
        for h in range(count):
            row = (oldest + h) % size
            q.addcmul_(steps[row], coefs[h] - float(rhos[row]) * torch.dot(changes[row], q))
        return q


def minimize_embedding_torch(objective: EdgeObjective, distances: PairDistances, X0: np.ndarray, *, alpha=0.0,
                             max_iter=1000, tol=1e-7, device=None, dtype="float32", callback=None,
                             deterministic=False, chunk=None, stop=None) -> SolverResult:
    """Minimises ``objective(d(X)) + alpha ||X||_F^2`` with the NumPy path's L-BFGS
    (:func:`~roembed.solvers.lbfgs.two_loop_lbfgs`: Armijo backtracking, the same stopping rule), its
    vectors on the device (:class:`TorchVectors`) or, up to :data:`HOST_VECTORS` unknowns, on the host.

    Same contract as :func:`roembed.solvers.minimize_embedding`; ``tol`` is the
    relative decrease of the objective below which L-BFGS stops.  The solution comes back
    as a float64 NumPy array.  ``chunk``: edges per chunk (default
    :data:`~roembed.objective.TORCH_CHUNK`); ``deterministic``: see the module docstring; ``stop(iteration,
    X)``: as on the NumPy path, ``X`` being the iterate where it lives (a NumPy array on the host, else a
    tensor on the device: read it only when needed, a copy to the host costs ``4 n p`` bytes).
    """
    torch_objective = TorchObjective(objective, distances, device, dtype, chunk)
    torch = torch_objective.torch
    X = torch_objective.tensor(X0)
    check_on_device([X], torch_objective.device)
    shape, history, last, stopped = X.shape, [], {}, []
    on_host = X.numel() <= HOST_VECTORS

    def fun(x):
        if on_host:  # x: the float64 iterate on the host
            X.copy_(torch.from_numpy(x.reshape(shape)))
        value, grad = torch_objective.value_and_grad(X if on_host else x.view(shape), alpha)
        last["value"] = float(value)
        return last["value"], (grad.to(torch.float64).cpu().numpy().ravel() if on_host else grad.view(-1))

    def record(x):
        history.append(last["value"])
        if callback is not None:
            callback(len(history), last["value"])
        if stop is not None and stop(len(history), x.reshape(shape) if on_host else x.view(shape)):
            stopped.append(len(history))
            return True
        return False

    start = time.perf_counter()
    with torch.no_grad(), _deterministic(torch, deterministic):
        x, value, n_iter, converged, message = two_loop_lbfgs(
            fun, np.asarray(X0, dtype=np.float64).ravel() if on_host else X.view(-1), max_iter=int(max_iter),
            tol=tol, callback=record, vectors=None if on_host else TorchVectors(torch))
    solution = (x if on_host else x.cpu().numpy()).reshape(shape).astype(np.float64)
    return SolverResult(solution, float(value), n_iter, converged, history,
                        f"{message}; L-BFGS on {X.device} in {time.perf_counter() - start:.2f}s", stopped=bool(stopped))


@contextlib.contextmanager
def _deterministic(torch, on: bool):
    """``torch.use_deterministic_algorithms(True)`` inside the block when ``on``; the previous setting after."""
    if not on:
        yield
        return
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before)
