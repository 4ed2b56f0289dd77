r"""FISTA with backtracking (Beck & Teboulle 2009) over a Gram matrix and per-edge outlier shifts.

ROE's Algorithm 2 (Ma, Xu & Cao 2019).  With ``x = (G, gamma)`` it minimises

.. math::  F(G, \gamma) = f(G, \gamma) + \lambda \sum_c b_c |\gamma_c|, \qquad
           f(G, \gamma) = \sum_c a_c\, \phi\big(m_c(G) + \gamma_c\big),

over ``G`` in the PSD cone (or the PSD matrices of rank ``<= p``), where
``m_c(G) = <A_c, G> = d_lk - d_ij`` is the margin of edge ``c``, ``phi`` the
loss's penalty (ROE: :class:`roembed.losses.Squared`, ``phi(s) = (1 - s)^2 / 2``)
and ``a_c`` its loss weights, all taken from an
:class:`~roembed.objective.EdgeObjective`.

Iteration ``k`` (the paper's notation): find the smallest ``i >= 0`` with
``L = eta^i L_{k-1}`` such that ``F(p_L(beta)) <= Q_L(p_L(beta), beta)``, where

.. math::  Q_L(x, \beta) = f(\beta) + \langle x - \beta, \nabla f(\beta)\rangle
           + \tfrac{L}{2}\|x - \beta\|^2 + \lambda \sum_c b_c|\gamma_c|

and ``p_L(beta)`` is the prox step: ``G <- Proj_PSD(G_beta - grad_G / L)``
(Frobenius; top-``p`` eigenpairs for a rank constraint) and
``gamma <- soft(gamma_beta - grad_gamma / L, mu)`` with ``mu_c = lambda b_c / L``.
Then ``x_k = p_L(beta_k)``, ``t_{k+1} = (1 + sqrt(1 + 4 t_k^2)) / 2`` and
``beta_{k+1} = x_k + ((t_k - 1) / t_{k+1}) (x_k - x_{k-1})``.

Everything is vectorised over edges: margins from ``G`` through the object
pairs (:meth:`PairDistances.from_gram`) and the gradient back through
:meth:`PairDistances.gram_grad` (one ``bincount``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._warn import warn
from ..objective import EdgeObjective, PairDistances
from ..projections import project_psd, project_psd_rank
from .lbfgs import SolverResult


@dataclass
class FistaResult(SolverResult):
    """:class:`SolverResult` (``solution`` is ``G``) plus the shifts and the backtracking record.

    ``history`` holds ``F(x_k)``; ``bounds`` the accepted ``Q_L(x_k, beta_k)``
    (``F <= Q`` at every accepted step, up to rounding); ``lipschitz`` the ``L_k``.
    """

    gamma: np.ndarray = None
    bounds: list = field(default_factory=list)
    lipschitz: list = field(default_factory=list)
    n_backtracks: int = 0


def smooth_part(objective: EdgeObjective, distances: PairDistances, G: np.ndarray, gamma: np.ndarray,
                gradient: bool = True):
    """``f(G, gamma) = sum_c a_c phi(m_c(G) + gamma_c)`` and, if asked, ``(grad_G, grad_gamma)``."""
    d = distances.from_gram(G)
    near, far = objective.pair_indices()
    s, ds_near, ds_far = objective.loss.margin(d[near], d[far])
    value, slope = objective.loss.penalty(s + gamma)
    a = objective.loss_weight
    f = float(np.dot(a, value))
    if not gradient:
        return f
    grad_gamma = a * slope  # d f / d gamma_c = d f / d s_c
    n_pairs = objective.n_pairs
    g_pair = (np.bincount(near, grad_gamma * ds_near, n_pairs) + np.bincount(far, grad_gamma * ds_far, n_pairs))
    return f, distances.gram_grad(g_pair), grad_gamma


def soft_threshold(z: np.ndarray, mu, nonneg: bool = False) -> np.ndarray:
    """``argmin_g mu|g| + (g - z)^2 / 2`` (with ``g >= 0`` if ``nonneg``)."""
    if nonneg:
        return np.maximum(z - mu, 0.0)
    return np.sign(z) * np.maximum(np.abs(z) - mu, 0.0)


def fista_gram(
    objective: EdgeObjective,
    distances: PairDistances,
    G0: np.ndarray,
    gamma0: np.ndarray | None = None,
    *,
    lam: float,
    penalty_weight: np.ndarray | None = None,
    nonneg: bool = False,
    rank: int | None = None,
    L0: float = 1.0,
    eta: float = 2.0,
    max_iter: int = 300,
    tol: float = 1e-6,
    callback=None,
) -> FistaResult:
    """Minimises ``F(G, gamma)`` (module docstring) by FISTA with backtracking.

    Parameters
    ----------
    objective : EdgeObjective
        Loss, edges (near/far pair indices) and loss weights ``a_c``; its ``cap`` is ignored (``reverse_weight`` must be None).
    distances : PairDistances
        The object pairs the edges index.
    G0, gamma0 : starting point (``gamma0`` defaults to 0).
    lam : float
        ``lambda >= 0``.
    penalty_weight : (E,) array, optional
        ``b_c`` (default 1).
    nonneg : bool
        Constrain ``gamma >= 0`` (only violated comparisons can be outliers).
    rank : int or None
        None: project onto the PSD cone; ``p``: onto PSD matrices of rank ``<= p``
        (top-``p`` eigenpairs, a non-convex set).
    L0, eta : float
        Initial Lipschitz estimate (``> 0``) and its growth factor (``> 1``).
    max_iter, tol :
        Stops once both the relative change of ``(G, gamma)`` and the relative change of
        ``F`` fall below ``tol``; a :class:`~sklearn.exceptions.ConvergenceWarning` is
        issued when ``max_iter`` iterations ran without that.
    callback : callable, optional
        ``callback(k, F_k)`` after every iteration.
    """
    if objective.reverse_weight is not None:
        raise ValueError("FISTA does not support reverse_weight (its shifts move each edge's margin one way)")
    if not L0 > 0:
        raise ValueError(f"L0 must be > 0, got {L0!r}")
    if not eta > 1:
        raise ValueError(f"eta must be > 1, got {eta!r}")
    if lam < 0:
        raise ValueError(f"lam must be >= 0, got {lam!r}")
    n_edges = len(objective)
    b = np.ones(n_edges) if penalty_weight is None else np.asarray(penalty_weight, dtype=np.float64)
    project = project_psd if rank is None else (lambda M: project_psd_rank(M, rank))

    def penalty(gamma):
        return lam * float(np.dot(b, np.abs(gamma)))

    x_G = np.array(G0, dtype=np.float64)
    x_g = np.zeros(n_edges) if gamma0 is None else np.array(gamma0, dtype=np.float64)
    y_G, y_g = x_G, x_g
    t, L = 1.0, float(L0)
    f_y, grad_G, grad_g = smooth_part(objective, distances, y_G, y_g)
    F_prev = f_y + penalty(y_g)
    history, bounds, lipschitz = [], [], []
    n_backtracks, converged, k = 0, False, 0
    for k in range(1, int(max_iter) + 1):
        while True:  # backtracking: smallest L = eta^i L_{k-1} with F(p_L) <= Q_L
            p_G = project(y_G - grad_G / L)
            p_g = soft_threshold(y_g - grad_g / L, lam * b / L, nonneg)
            d_G, d_g = p_G - y_G, p_g - y_g
            f_p = smooth_part(objective, distances, p_G, p_g, gradient=False)
            q = f_y + np.vdot(grad_G, d_G) + np.dot(grad_g, d_g) + 0.5 * L * (np.vdot(d_G, d_G) + np.dot(d_g, d_g))
            if f_p <= q + 1e-12 * max(1.0, abs(f_y)):  # rounding slack only
                break
            L *= eta
            n_backtracks += 1
        pen = penalty(p_g)
        F = f_p + pen
        history.append(F)
        bounds.append(float(q) + pen)
        lipschitz.append(L)
        if callback is not None:
            callback(k, F)

        step = np.sqrt(np.vdot(p_G - x_G, p_G - x_G) + np.dot(p_g - x_g, p_g - x_g))
        size = np.sqrt(np.vdot(x_G, x_G) + np.dot(x_g, x_g))
        small = step <= tol * max(1.0, size) and abs(F - F_prev) <= tol * max(1.0, abs(F_prev))

        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        momentum = (t - 1.0) / t_next
        y_G = p_G + momentum * (p_G - x_G)
        y_g = p_g + momentum * (p_g - x_g)
        x_G, x_g, t, F_prev = p_G, p_g, t_next, F
        if small:
            converged = True
            break
        f_y, grad_G, grad_g = smooth_part(objective, distances, y_G, y_g)
    if not converged:
        warn(f"FISTA did not converge in {max_iter} iterations (tol={tol}); "
             "increase max_iter or tol", ConvergenceWarning)
    return FistaResult(x_G, history[-1], k, converged, history,
                       "converged" if converged else "max_iter reached",
                       gamma=x_g, bounds=bounds, lipschitz=lipschitz, n_backtracks=n_backtracks)
