r"""Factored solver on torch tensors: full-batch L-BFGS on any device (optional extra ``torch``).

The objective is the very same :class:`~roembed.objective.EdgeObjective` as on
the CPU path: its index arrays, loss weights and caps are moved to the device
once and the shared losses evaluate on tensors (``roembed._array.TorchOps``).
The gradient is the closed-form adjoint, not autograd:

.. math::  \nabla_X F = 2 \sum_p g_p (e_a - e_b)(x_a - x_b)^T + 2 \alpha X,

scattered with ``index_add_`` over the object pairs, so memory stays linear in
the number of comparisons (no n x n matrix, no autograd tape).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from ..objective import EdgeObjective, PairDistances
from .lbfgs import SolverResult

DTYPES = ("float32", "float64")


def import_torch():
    """``torch``, or an ImportError that says how to get it."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("solver='torch' needs PyTorch: pip install 'roembed[torch]' (or pip install torch)") from exc
    return torch


def resolve_device(device=None):
    """A ``torch.device`` (default: CUDA when available, else CPU); fails loudly if it does not exist."""
    torch = import_torch()
    dev = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {str(dev)!r} requested but torch sees no CUDA device")
    if dev.type == "mps" and not (hasattr(torch.backends, "mps") and torch.backends.mps.is_available()):
        raise RuntimeError(f"device {str(dev)!r} requested but MPS is not available")
    return dev


def check_on_device(tensors, device) -> None:
    """Raises if any tensor is not on ``device`` (guards against silently staying on the CPU)."""
    for t in tensors:
        if t.device.type != device.type or (device.index is not None and t.device.index != device.index):
            raise RuntimeError(f"tensor on {t.device}, expected {device}")


class TorchObjective:
    """An :class:`EdgeObjective` and :class:`PairDistances` moved to ``device``; evaluates value and gradient."""

    def __init__(self, objective: EdgeObjective, distances: PairDistances, device=None, dtype="float32"):
        torch = import_torch()
        if str(dtype) not in DTYPES and dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        self.torch = torch
        self.device = resolve_device(device)
        self.dtype = getattr(torch, str(dtype).replace("torch.", ""))

        def idx(a):
            return torch.tensor(np.asarray(a, dtype=np.int64), device=self.device)

        def real(a):
            if a is None:
                return None
            return torch.tensor(np.asarray(a, dtype=np.float64), device=self.device).to(self.dtype)

        self.objective = dataclasses.replace(objective, near=idx(objective.near), far=idx(objective.far),
                                             loss_weight=real(objective.loss_weight), cap=real(objective.cap))
        self.a, self.b = idx(distances.a), idx(distances.b)
        self.n_objects = distances.n_objects
        check_on_device([self.a, self.b, self.objective.near, self.objective.loss_weight], self.device)

    def tensor(self, X):
        return self.torch.as_tensor(np.asarray(X, dtype=np.float64), device=self.device).to(self.dtype)

    def value_and_grad(self, X, alpha: float = 0.0):
        """``F(X)`` (0-d tensor), ``dF/dX`` and the per-edge ``gamma`` (None without caps)."""
        diff = X[self.a] - X[self.b]
        d = (diff * diff).sum(dim=1)
        value, g_pair, gamma = self.objective.evaluate(d)
        gd = (2.0 * g_pair)[:, None] * diff
        grad = self.torch.zeros_like(X).index_add_(0, self.a, gd).index_add_(0, self.b, -gd)
        if alpha:
            value = value + alpha * (X * X).sum()
            grad = grad + (2.0 * alpha) * X
        return value, grad, gamma


def minimize_embedding_torch(objective: EdgeObjective, distances: PairDistances, X0: np.ndarray, *, alpha=0.0,
                             max_iter=1000, tol=1e-7, device=None, dtype="float32", callback=None) -> SolverResult:
    """Minimises ``objective(d(X)) + alpha ||X||_F^2`` with torch's full-batch L-BFGS (strong Wolfe).

    Same contract as :func:`roembed.solvers.minimize_embedding`; ``tol`` is the
    change of the objective below which L-BFGS stops.  The solution comes back
    as a float64 NumPy array.
    """
    torch_objective = TorchObjective(objective, distances, device, dtype)
    torch = torch_objective.torch
    X = torch_objective.tensor(X0).requires_grad_(False)
    check_on_device([X], torch_objective.device)
    optimizer = torch.optim.LBFGS([X], lr=1.0, max_iter=int(max_iter), max_eval=int(max_iter) * 5 // 4 + 20,
                                  tolerance_grad=1e-10, tolerance_change=float(tol), history_size=20,
                                  line_search_fn="strong_wolfe")
    history = []

    def closure():
        value, grad, _ = torch_objective.value_and_grad(X, alpha)
        X.grad = grad
        v = float(value)
        history.append(v)
        if callback is not None:
            callback(len(history), v)
        return value

    start = time.perf_counter()
    with torch.no_grad():
        optimizer.step(closure)
        value, _, _ = torch_objective.value_and_grad(X, alpha)
    n_iter = int(optimizer.state[X].get("n_iter", 0))
    return SolverResult(X.detach().cpu().numpy().astype(np.float64), float(value), n_iter, n_iter < max_iter,
                        history, f"torch L-BFGS on {X.device} in {time.perf_counter() - start:.2f}s")
