"""Factored solver: full-batch L-BFGS on the embedding ``X`` (n x p)."""
from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from ..objective import EdgeObjective, PairDistances


_OBSERVERS: contextvars.ContextVar = contextvars.ContextVar("roembed_iteration_observers", default=())


@contextlib.contextmanager
def observe_iterations(observer):
    """Calls ``observer(iteration, value)`` after every iteration of every
    :func:`minimize_embedding` run inside the block (used by progress bars)."""
    token = _OBSERVERS.set(_OBSERVERS.get() + (observer,))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


@dataclass
class SolverResult:
    """What a solver returns: the solution, its objective and how it got there."""

    solution: np.ndarray
    objective: float
    n_iter: int
    converged: bool
    history: list = field(default_factory=list)
    message: str = ""


def minimize_embedding(
    objective: EdgeObjective,
    distances: PairDistances,
    X0: np.ndarray,
    *,
    alpha: float = 0.0,
    max_iter: int = 1000,
    tol: float = 1e-7,
    callback=None,
) -> SolverResult:
    """Minimises ``objective(d(X)) + alpha * ||X||_F^2`` over ``X`` with L-BFGS.

    ``tol`` is the relative decrease of the objective below which L-BFGS stops.
    ``callback(iteration, value)`` is called once per iteration.
    """
    shape = X0.shape
    last = {}

    def fun(flat):
        X = flat.reshape(shape)
        d, diff = distances.from_embedding(X)
        value, g_pair, _ = objective.evaluate(d)
        grad = distances.embedding_grad(g_pair, diff)
        if alpha:
            value = value + alpha * np.vdot(X, X)
            grad = grad + 2.0 * alpha * X
        last["value"] = float(value)
        return float(value), grad.ravel()

    history = []

    def record(_):
        history.append(last["value"])
        if callback is not None:
            callback(len(history), last["value"])
        for observer in _OBSERVERS.get():
            observer(len(history), last["value"])

    res = minimize(fun, np.asarray(X0, dtype=np.float64).ravel(), jac=True, method="L-BFGS-B",
                   callback=record, options=dict(maxiter=int(max_iter), ftol=tol, gtol=1e-10, maxcor=20))
    return SolverResult(res.x.reshape(shape), float(res.fun), int(res.nit), bool(res.nit < max_iter),
                        history, str(res.message))
