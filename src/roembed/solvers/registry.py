r"""One entry point for every embedding solver: :func:`solve` and the registry ``SOLVERS``.

Each solver minimises ``objective(d(X)) + alpha ||X||_F^2`` (``d``: the squared
pair distances of :class:`~roembed.objective.PairDistances`) from a start ``X0``
(n x p) and returns a :class:`~roembed.solvers.lbfgs.SolverResult` whose
``solution`` is an embedding (n x p); the Gram solver also fills ``gram``.

=========  ===========================================================  ==========================
name       method                                                       options
=========  ===========================================================  ==========================
lbfgs      L-BFGS on ``X`` (:func:`~roembed.solvers.minimize_embedding`)  ``method``, ``blas_threads``
torch      the same L-BFGS on torch tensors, any device (optional)      ``device``, ``dtype``
gram       projected gradient on ``G = X X^T``, rank ``p``               ``blas_threads``
=========  ===========================================================  ==========================

(``factored`` is an alias of ``lbfgs``.)  FISTA over ``(G, gamma)``
(:func:`~roembed.solvers.fista.fista_gram`) minimises a different problem -- the
shifts are variables, with an l1 prox -- so it is not a solver of this registry;
:class:`~roembed.ROE` calls it directly.

Progress: ``solve`` is the only place that reports iterations -- to ``callback``
and to every :func:`~roembed.solvers.progress.observe_iterations` observer.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..objective import EdgeObjective, PairDistances
from .lbfgs import SolverResult, minimize_embedding
from .progress import reporter
from .projected_gradient import check_gram_fits, minimize_gram


def _lbfgs(objective, distances, X0, *, alpha, max_iter, tol, callback, method="two-loop", blas_threads=1,
           stop=None):
    return minimize_embedding(objective, distances, X0, alpha=alpha, max_iter=max_iter, tol=tol, callback=callback,
                              method=method, blas_threads=blas_threads, stop=stop)


def _torch(objective, distances, X0, *, alpha, max_iter, tol, callback, device=None, dtype="float64", stop=None):
    from .torch_lbfgs import minimize_embedding_torch

    return minimize_embedding_torch(objective, distances, X0, alpha=alpha, max_iter=max_iter, tol=tol,
                                    device=device, dtype=dtype, callback=callback, stop=stop)


def _gram(objective, distances, X0, *, alpha, max_iter, tol, callback, blas_threads=1):
    from ..projections import embedding_from_gram

    check_gram_fits(len(X0))
    rank = X0.shape[1]
    result = minimize_gram(objective, distances, X0 @ X0.T, rank, alpha=alpha, max_iter=max_iter, tol=tol,
                           callback=callback, blas_threads=blas_threads)
    result.gram = result.solution
    result.solution = embedding_from_gram(result.gram, rank)
    return result


SOLVERS: dict[str, Callable[..., SolverResult]] = {"lbfgs": _lbfgs, "factored": _lbfgs, "torch": _torch,
                                                   "gram": _gram}
STOPPABLE = ("lbfgs", "factored", "torch")
"""Solvers that take ``stop`` (the Gram solver has no embedding to show until it ends)."""


def solve(objective: EdgeObjective, distances: PairDistances, X0: np.ndarray, *, solver: str = "lbfgs",
          alpha: float = 0.0, max_iter: int = 1000, tol: float = 1e-7, callback=None, stop=None,
          **options) -> SolverResult:
    """Minimises ``objective(d(X)) + alpha ||X||_F^2`` from ``X0`` with the registered ``solver``.

    ``callback(iteration, value)`` and any active observer hear every iteration;
    ``stop(iteration, X)`` (solvers in ``STOPPABLE``; ``X`` the iterate, a tensor on the torch solver's
    device) ends the solve when it returns True (``SolverResult.stopped``); ``options`` go to the solver
    (see the module table).
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {solver!r}")
    if stop is not None:
        if solver not in STOPPABLE:
            raise ValueError(f"solver {solver!r} cannot be stopped early; stop needs one of {STOPPABLE}")
        options["stop"] = stop
    X0 = np.asarray(X0, dtype=np.float64)
    if X0.ndim != 2 or X0.shape[0] != distances.n_objects:
        raise ValueError(f"X0 has shape {X0.shape}, expected ({distances.n_objects}, p)")
    return SOLVERS[solver](objective, distances, X0, alpha=float(alpha), max_iter=int(max_iter), tol=float(tol),
                           callback=reporter(callback), **options)


def shifts(objective: EdgeObjective, distances: PairDistances, X: np.ndarray, *, solver: str = "lbfgs",
           device=None, dtype="float64", **solve_settings) -> np.ndarray | None:
    """The outlier shifts ``gamma_c`` of every edge at ``X`` (None without caps), where ``solver`` computes:
    the torch solver's device in its dtype (one pass like an evaluation; on the host, NumPy's loss took 10 s
    of the default fit of 10^8 comparisons on the H100 machine), else NumPy on the fit's threads.  The
    other settings of a solve (``max_iter``, ``callback``, ...) are accepted and ignored."""
    if solver != "torch":
        return objective.embedding_shifts(X, distances)
    from .torch_lbfgs import TorchObjective

    torch_objective = TorchObjective(objective, distances, device, dtype)
    gamma = torch_objective.gamma(torch_objective.tensor(X))
    return None if gamma is None else gamma.cpu().numpy().astype(np.float64)


__all__ = ["SOLVERS", "STOPPABLE", "shifts", "solve"]
