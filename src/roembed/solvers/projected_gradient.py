r"""The "-p" solver of Jain, Jamieson & Nowak (2016): projected gradient on the Gram matrix.

Minimises

.. math::  F(G) = f(d(G)) + \alpha\, \mathrm{tr}(G)
           \quad \text{over } G \in \mathcal{K}_p = \{G \succeq 0,\ \mathrm{rank}\, G \le p\}

(``tr G = ||X||_F^2`` for ``G = X X^T``, so ``alpha`` is the same ridge as in the
factored solver) by the iteration

.. math::  G^+(t) = P_p\big(G - t \nabla F(G)\big)

where ``P_p`` keeps the ``p`` largest eigenpairs, clipped at zero
(:func:`roembed.projections.project_psd_rank`).  The step ``t`` is chosen by
Armijo backtracking along the projection arc (Bertsekas): halve ``t`` until

.. math::  F(G^+(t)) \le F(G) + \sigma \langle \nabla F(G), G^+(t) - G \rangle,

starting each search from the Barzilai-Borwein step
``<S, S> / <S, Y>`` (``S``, ``Y``: the last change of ``G`` and of the gradient;
twice the last step when ``<S, Y> <= 0`` or ``bb_step=False``), as in spectral
projected gradient (Birgin, Martinez & Raydan 2000) but with a monotone search.  ``f`` and its
gradient come from :class:`~roembed.objective.EdgeObjective` via
:meth:`PairDistances.from_gram` and its adjoint :meth:`PairDistances.gram_grad`.
"""
from __future__ import annotations

import os

import numpy as np

from .._threads import blas_limit
from ..objective import EdgeObjective, PairDistances
from ..projections import project_psd_rank
from .lbfgs import SolverResult

#: Bytes a Gram solver holds at its peak per entry of an n x n matrix: about ten float64 matrices (iterates,
#: gradient, the projection's eigendecomposition); tracemalloc peaks of ROE, SOE and GNMDS with ``solver="gram"``
#: at n = 1,500 were 9.1, 10.2 and 7.2 of them.
GRAM_BYTES_PER_ENTRY = 10 * 8


def _physical_memory() -> int | None:
    """This machine's memory in bytes, where the OS says (POSIX ``sysconf``), else None."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def check_gram_fits(n_objects: int) -> None:
    """A ValueError, before the first n x n matrix is made, where a Gram solver's matrices would not fit in this
    machine's memory: past it the operating system kills the process mid-fit, with no message."""
    need, total = GRAM_BYTES_PER_ENTRY * n_objects ** 2, _physical_memory()
    if total is not None and need > total:
        raise ValueError(
            f"the Gram solvers (ROE, solver='gram') hold n x n matrices: {n_objects:,} objects need about "
            f"{need / 2 ** 30:,.1f} GiB, more than this machine's {total / 2 ** 30:,.1f} GiB; the factored solver "
            "holds n x p (RobustOrdinalEmbedding, solver='lbfgs'; roembed fit --method robust)")


def gram_value_and_grad(objective: EdgeObjective, distances: PairDistances, G: np.ndarray, alpha: float = 0.0):
    """``F(G) = f(d(G)) + alpha tr(G)`` and its gradient (symmetric n x n)."""
    value, g_pair, _ = objective.evaluate(distances.from_gram(G))
    grad = distances.gram_grad(g_pair)
    if alpha:
        value = value + alpha * np.trace(G)
        grad[np.diag_indices_from(grad)] += alpha
    return float(value), grad


def minimize_gram(
    objective: EdgeObjective,
    distances: PairDistances,
    G0: np.ndarray,
    rank: int,
    *,
    alpha: float = 0.0,
    max_iter: int = 1000,
    tol: float = 1e-7,
    step: float = 1.0,
    sigma: float = 1e-4,
    max_backtracks: int = 50,
    bb_step: bool = True,
    blas_threads: int | None = 1,
    callback=None,
) -> SolverResult:
    """Projected gradient with Armijo backtracking on ``G`` (n x n), rank at most ``rank``.

    Stops when the relative decrease of ``F`` in an iteration falls below ``tol``,
    when no step satisfies the Armijo condition (``converged`` is then True if
    the projected step is already negligible), or after ``max_iter`` iterations.
    ``callback(iteration, value)`` is called once per iteration.
    ``blas_threads`` caps the BLAS threads of the eigendecompositions (None: no cap).
    One thread is the default: at these sizes (n in the hundreds) threading gains
    little, and on a loaded 2-core machine the default two BLAS threads made the
    same STE fits 11 times (n = 100, 180 iterations: 5.3 s vs 0.49 s) and 34 times
    (n = 400, 50 iterations: 30.7 s vs 0.91 s) slower (measured, one run each).
    """
    with blas_limit(blas_threads):
        return _minimize_gram(objective, distances, G0, rank, alpha, max_iter, tol, step, sigma, max_backtracks,
                              bb_step, callback)


def _minimize_gram(objective, distances, G0, rank, alpha, max_iter, tol, step, sigma, max_backtracks, bb_step,
                   callback) -> SolverResult:
    def value_grad(G):
        return gram_value_and_grad(objective, distances, G, alpha)

    G = project_psd_rank(np.asarray(G0, dtype=np.float64), rank)
    value, grad = value_grad(G)
    history, converged, message = [], False, "maximum number of iterations reached"
    t = float(step)
    n_iter = 0
    for n_iter in range(1, int(max_iter) + 1):
        for _ in range(max_backtracks):
            G_new = project_psd_rank(G - t * grad, rank)
            decrease = float(np.vdot(grad, G_new - G))
            if decrease < 0:
                value_new, grad_new = value_grad(G_new)
                if value_new <= value + sigma * decrease:
                    break
            t *= 0.5
        else:
            converged = abs(decrease) <= tol * max(abs(value), 1e-300)
            message = "line search found no decrease" + (" (stationary)" if converged else "")
            n_iter -= 1
            break
        old = value
        S, Y = G_new - G, grad_new - grad
        sy = float(np.vdot(S, Y))
        t = max(float(np.vdot(S, S)) / sy, t) if bb_step and sy > 0 else 2.0 * t
        G, value, grad = G_new, value_new, grad_new
        history.append(value)
        if callback is not None:
            callback(n_iter, value)
        if old - value <= tol * max(abs(old), 1e-300):
            converged, message = True, "relative decrease of the objective below tol"
            break
    return SolverResult(G, value, n_iter, converged, history, message)
