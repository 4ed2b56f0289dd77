"""Factored solver: full-batch L-BFGS on the embedding ``X`` (n x p)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from .._kernels import two_loop_direction
from .._threads import blas_limit
from ..objective import EdgeObjective, PairDistances


STOPPED = "stopped by the caller"
"""The message of a solve ended by the caller's ``stop``."""


@dataclass
class SolverResult:
    """What a solver returns: the solution, its objective and how it got there (``gram``: the Gram solver's G)."""

    solution: np.ndarray
    objective: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)
    message: str = ""
    gram: np.ndarray | None = None
    stopped: bool = False  # ended by the caller's ``stop`` (see :func:`roembed.solvers.solve`)


def minimize_embedding(
    objective: EdgeObjective,
    distances: PairDistances,
    X0: np.ndarray,
    *,
    alpha: float = 0.0,
    max_iter: int = 1000,
    tol: float = 1e-7,
    callback=None,
    method: str = "scipy",
    blas_threads: int | None = 1,
    stop=None,
) -> SolverResult:
    """Minimises ``objective(d(X)) + alpha * ||X||_F^2`` over ``X`` with L-BFGS.

    ``tol`` is the relative decrease of the objective below which L-BFGS stops.
    ``callback(iteration, value)`` is called once per iteration.
    ``stop(iteration, X)``, asked after every iteration, ends the solve where it is when it returns
    True (``stopped``); until then the iterates are those of a solve without it.
    ``method``: ``"scipy"`` (SciPy's L-BFGS-B) or ``"two-loop"``
    (:func:`two_loop_lbfgs`, same stopping rule, far less overhead per iteration).
    ``blas_threads`` caps BLAS threads during the solve (None: no cap).  Its vector
    operations are memory-bound; threaded dot products on a loaded machine were
    measured 40x slower than one thread.
    """
    with blas_limit(blas_threads):
        return _minimize_embedding(objective, distances, X0, alpha, max_iter, tol, callback, method, stop)


def _minimize_embedding(objective, distances, X0, alpha, max_iter, tol, callback, method, stop=None) -> SolverResult:
    shape = X0.shape
    last = {}

    def fun(flat):
        X = flat.reshape(shape)
        value, grad = objective.embedding_value_and_grad(X, distances)
        if alpha:
            value = value + alpha * np.vdot(X, X)
            grad = grad + 2.0 * alpha * X
        last["value"] = float(value)
        return float(value), grad.ravel()

    history, stopped = [], []

    def record(x):
        """True (two-loop) or StopIteration (SciPy) when ``stop`` ends the solve."""
        history.append(last["value"])
        if callback is not None:
            callback(len(history), last["value"])
        if stop is not None and stop(len(history), x.reshape(shape)):
            stopped.append(len(history))
            if method != "two-loop":
                raise StopIteration
            return True
        return False

    if method == "two-loop":
        x, value, n_iter, converged, message = two_loop_lbfgs(
            fun, np.asarray(X0, dtype=np.float64).ravel(), max_iter=int(max_iter), tol=tol, callback=record)
        return SolverResult(x.reshape(shape), value, n_iter, converged, history, message, stopped=bool(stopped))
    if method != "scipy":
        raise ValueError(f"method must be 'scipy' or 'two-loop', got {method!r}")
    res = minimize(fun, np.asarray(X0, dtype=np.float64).ravel(), jac=True, method="L-BFGS-B",
                   callback=record, options=dict(maxiter=int(max_iter), ftol=tol, gtol=1e-10, maxcor=20))
    n_iter = stopped[0] if stopped else int(res.nit)
    return SolverResult(res.x.reshape(shape), float(res.fun), n_iter, bool(not stopped and res.nit < max_iter),
                        history, STOPPED if stopped else str(res.message), stopped=bool(stopped))


class NumpyVectors:
    """The vector operations of :func:`two_loop_lbfgs` on NumPy arrays (float64 iterates; the pairs in
    ``history_dtype``).  :class:`roembed.solvers.torch_lbfgs.TorchVectors` does the same on a device."""

    def __init__(self, history_dtype=np.float32):
        self.history_dtype = history_dtype

    def start(self, x0):
        return np.asarray(x0, dtype=np.float64).copy()

    def history(self, memory: int, x):
        """The ring buffers of ``memory`` steps and gradient changes of vectors like ``x``."""
        return np.empty((memory, x.size), self.history_dtype), np.empty((memory, x.size), self.history_dtype)

    dot = staticmethod(lambda a, b: float(np.dot(a, b)))
    norm = staticmethod(lambda a: float(np.linalg.norm(a)))
    max_abs = staticmethod(lambda a: float(np.max(np.abs(a))))

    @staticmethod
    def curvature(s, y):
        """``(s.y, ||s||, ||y||, y.y)`` of a step and its gradient change (the norms as ``np.linalg.norm`` computes
        them, ``sqrt(x.x)``, without its checks)."""
        yy = float(np.dot(y, y))
        return float(np.dot(s, y)), math.sqrt(float(np.dot(s, s))), math.sqrt(yy), yy

    direction = staticmethod(two_loop_direction)


def two_loop_lbfgs(fun, x0, *, max_iter=1000, tol=1e-9, gtol=1e-10, memory=20, c1=1e-4, max_backtracks=40,
                   callback=None, history_dtype=np.float32, vectors=None):
    """Plain L-BFGS (Nocedal & Wright, Alg. 7.4/7.5) with Armijo backtracking from the unit step.

    ``fun(x) -> (value, gradient)``.  Stops when ``f_old - f <= tol * max(|f_old|, |f|, 1)``
    (SciPy's ``ftol`` rule), when ``max|grad| <= gtol``, or when no step decreases ``f``
    (a kink of a non-smooth loss; counted as converged).  Pairs with ``s.y <= 0`` are
    skipped, so the inverse-Hessian model stays positive definite.  Its work per
    iteration is ``O(memory * len(x))`` vector operations, much less than
    L-BFGS-B's, which matters when one evaluation is cheap; the recursion is one compiled
    call over ring buffers of the pairs (:func:`roembed._kernels.two_loop_direction`: 8 us
    instead of 200 us per iteration at 20 pairs of 1,000 unknowns).
    ``callback(x)`` is called after each iteration; a true return value ends the solve there
    (not converged, message ``STOPPED``).  Returns ``x, value, n_iter, converged, message``.

    ``history_dtype``: storage of the ``memory`` step and gradient-change pairs, the
    solver's largest state (``2 * memory`` vectors of ``len(x)``: 32 bytes per comparison
    in float64 at n = m / 100, p = 10).  float32 halves it; ``rho`` and the initial scaling
    are computed in float64 before storing, and the recursion accumulates in float64.
    Measured at 10^6 random triplets (n = 10^4, p = 10): the same iterations and held-out
    error as float64 (``benchmarks/bench_scale.py``, docs/results.md).

    ``vectors``: the array operations (default :class:`NumpyVectors` with ``history_dtype``); with
    :class:`~roembed.solvers.torch_lbfgs.TorchVectors` the same iterations run on torch tensors, ``fun``
    then taking and returning tensors (its value a float).
    """
    vectors = NumpyVectors(history_dtype) if vectors is None else vectors
    x = vectors.start(x0)
    f, g = fun(x)
    memory = int(memory)
    steps, changes = vectors.history(memory, x)
    rhos, oldest, count, scale = np.empty(memory), 0, 0, 1.0  # ring buffers of the newest ``count`` pairs
    n_iter, converged, message = 0, False, "maximum number of iterations reached"
    for n_iter in range(1, int(max_iter) + 1):
        if count:
            q = vectors.direction(g, steps, changes, rhos, oldest, count, scale)
        else:
            q = g / max(vectors.norm(g), 1e-300)
        direction = -q
        slope = vectors.dot(g, direction)
        if slope >= 0:  # lost descent (numerical): restart from steepest descent
            oldest, count = 0, 0
            direction = -g / max(vectors.norm(g), 1e-300)
            slope = vectors.dot(g, direction)
        t = 1.0
        for _ in range(max_backtracks):
            x_new = x + t * direction
            f_new, g_new = fun(x_new)
            if f_new <= f + c1 * t * slope:
                break
            t *= 0.5
        else:
            n_iter, converged, message = n_iter - 1, True, "line search found no decrease"
            break
        s, y = x_new - x, g_new - g
        sy, norm_s, norm_y, yy = vectors.curvature(s, y)
        if sy > 1e-10 * norm_s * norm_y:
            row = (oldest + count) % memory  # the next free row, or the oldest pair's when all are used
            steps[row], changes[row], rhos[row] = s, y, 1.0 / sy
            scale = sy / yy
            if count < memory:
                count += 1
            else:
                oldest = (oldest + 1) % memory
        f_old, (x, f, g) = f, (x_new, f_new, g_new)
        if callback is not None and callback(x):
            message = STOPPED
            break
        if f_old - f <= tol * max(abs(f_old), abs(f), 1.0):
            converged, message = True, "relative decrease of the objective below tol"
            break
        if vectors.max_abs(g) <= gtol:
            converged, message = True, "gradient below gtol"
            break
    return x, float(f), n_iter, converged, message
