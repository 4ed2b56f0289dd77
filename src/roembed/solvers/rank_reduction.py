r"""Rank reduction of a PSD solution that keeps every edge margin (ROE's Algorithm 1).

Lemon, So & Ye (2016), after Barvinok and Pataki: write ``G = U U^T`` with
``U`` of rank ``r`` and look for a nonzero symmetric ``Delta`` (r x r) in the
null space of

.. math::  \mathcal{A}_U(\Delta) = \big(\langle \Delta, U^T A_c U\rangle\big)_c ,
           \qquad \langle A_c, G\rangle = d_{lk} - d_{ij}.

With ``sigma_1`` the eigenvalue of ``Delta`` of largest magnitude (its sign
included), ``G <- U (I - Delta / sigma_1) U^T`` is PSD, has rank ``<= r - 1``
and the same margins ``<A_c, G>`` (so ``<A_c, G> + gamma_c`` is unchanged).
Repeat until the null space is trivial; generically that happens once
``r (r + 1) / 2`` no longer exceeds the rank of ``A_U`` (at most the number
of edges), which is usually still above the target dimension ``p``, so the
result is finally truncated to its top-``p`` eigenpairs
(:func:`truncate_rank`).

Cost: the null space is computed once, densely, over the ``K = r (r + 1) / 2``
entries of ``Delta`` (``O(min(E, P) K^2 + K^3)`` time, ``O(P K)`` memory, ``P``
object pairs); every further step only solves a small system inside it.  That
is fine for ranks up to about 100; beyond :data:`MAX_ENTRIES` it refuses.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh, null_space

from ..objective import PairDistances
from ..projections import top_eigenpairs

MAX_ENTRIES = 5e7  # largest (pairs x K) operator built densely (400 MB)


@dataclass
class RankReduction:
    """Outcome of :func:`reduce_rank` (``gram``: the reduced matrix, same margins)."""

    gram: np.ndarray
    n_steps: int
    rank_before: int
    rank_after: int
    null_dim: int  # dimension of the initial null space of A_U
    max_margin_change: float = 0.0  # max_c |<A_c, G_reduced - G>|: rounding only


def psd_factor(G: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """``U`` (n x r) with ``U U^T = G``, over the eigenvalues above ``rtol * max``."""
    vals, vecs = np.linalg.eigh(0.5 * (G + G.T))
    keep = vals > rtol * max(vals[-1], 0.0)
    return vecs[:, keep] * np.sqrt(vals[keep])


def _edge_operator(U: np.ndarray, distances: PairDistances, near: np.ndarray, far: np.ndarray):
    """The pair rows ``V`` (P x K) and the signed edge-pair incidence ``D`` (E x P): ``A_U = D V``.

    Row ``p`` of ``V`` maps the upper triangle ``delta`` of ``Delta`` to
    ``u_p^T Delta u_p`` with ``u_p = U[a] - U[b]`` (off-diagonal entries count twice).
    """
    r = U.shape[1]
    iu, ju = np.triu_indices(r)
    u = U[distances.a] - U[distances.b]
    V = u[:, iu] * u[:, ju] * np.where(iu == ju, 1.0, 2.0)
    n_edges, n_pairs = len(near), len(distances)
    D = sp.csr_matrix((np.r_[np.ones(n_edges), -np.ones(n_edges)],
                       (np.r_[np.arange(n_edges), np.arange(n_edges)], np.r_[far, near])),
                      shape=(n_edges, n_pairs))
    return V, D


def _operator_null_space(V: np.ndarray, D, rtol: float) -> np.ndarray:
    """Orthonormal basis (K x q) of the null space of ``D V``."""
    n_edges, K = D.shape[0], V.shape[1]
    if n_edges < K or K <= 300:  # small or wide: SVD of the operator itself
        M = np.asarray(D @ V)
        _, s, vt = np.linalg.svd(M, full_matrices=True)
        rank = int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0
        return vt[rank:].T
    gram = V.T @ np.asarray((D.T @ D) @ V)  # K x K, cheaper than the E x K operator when E > K
    top = eigh(gram, eigvals_only=True, subset_by_index=[K - 1, K - 1])[0]
    if top <= 0:
        return np.eye(K)
    # singular values of D V below sqrt(rtol) * largest (the squared operator loses half the digits)
    _, vecs = eigh(gram, subset_by_value=(-np.inf, rtol * top), driver="evr")
    return vecs


def _unpack(vectors: np.ndarray, r: int) -> np.ndarray:
    """(K, q) upper-triangle vectors -> (q, r, r) symmetric matrices."""
    iu, ju = np.triu_indices(r)
    mats = np.zeros((vectors.shape[1], r, r))
    mats[:, iu, ju] = vectors.T
    mats[:, ju, iu] = vectors.T
    return mats


def reduce_rank(G: np.ndarray, distances: PairDistances, near: np.ndarray, far: np.ndarray, *,
                rtol: float = 1e-10, max_steps: int | None = None) -> RankReduction:
    """Lemon-So-Ye rank reduction of PSD ``G`` keeping every margin ``d_far - d_near`` of the edges.

    ``near``/``far`` index the pairs of ``distances`` (as in an EdgeObjective).
    All steps work in the coordinates of the first factor: ``G_k = U W_k U^T``.
    """
    U = psd_factor(G, rtol)
    r = U.shape[1]
    if r == 0:
        return RankReduction(np.zeros_like(G), 0, 0, 0, 0)
    before = distances.from_gram(G)
    K = r * (r + 1) // 2
    if K * max(len(distances), min(len(near), K)) > MAX_ENTRIES:
        raise ValueError(f"rank reduction of a rank-{r} matrix needs a {len(distances)} x {K} operator; "
                         "too large - use rank_method='truncate'")
    V, D = _edge_operator(U, distances, near, far)
    basis = _unpack(_operator_null_space(V, D, rtol), r)  # Delta with <Delta, U^T A_c U> = 0
    null_dim = len(basis)
    W = np.eye(r)
    steps = 0
    while basis.size and (max_steps is None or steps < max_steps):
        w_vals, w_vecs = np.linalg.eigh(W)
        live = w_vals > rtol * w_vals[-1]
        kernel = w_vecs[:, ~live]
        # Delta'' = sum_i z_i basis_i must live in range(W): Delta'' kernel = 0
        if kernel.shape[1]:
            z = null_space(np.einsum("qab,bk->akq", basis, kernel).reshape(-1, len(basis)), rcond=rtol)
            if z.shape[1] == 0:
                break
            z = z[:, 0]
        else:
            z = np.eye(len(basis))[0]
        step = np.tensordot(z, basis, axes=1)  # = R Delta' R^T with Delta' in the current factor's coordinates
        R_pinv = (w_vecs[:, live] / np.sqrt(w_vals[live])).T
        ev = np.linalg.eigvalsh(R_pinv @ step @ R_pinv.T)
        sigma = ev[np.argmax(np.abs(ev))]
        W = W - step / sigma  # = R (I - Delta'/sigma_1) R^T: PSD, rank drops
        W = 0.5 * (W + W.T)
        steps += 1
    w_vals, w_vecs = np.linalg.eigh(W)
    live = w_vals > rtol * w_vals[-1]
    F = U @ (w_vecs[:, live] * np.sqrt(w_vals[live]))
    change = distances.from_gram(F @ F.T) - before
    max_change = float(np.abs(change[far] - change[near]).max()) if len(near) else 0.0
    return RankReduction(F @ F.T, steps, r, int(live.sum()), null_dim, max_change)


def truncate_rank(G: np.ndarray, rank: int) -> tuple[np.ndarray, float]:
    """Top-``rank`` PSD part of ``G`` (LARGEST eigenvalues) and the share of the spectrum it removed.

    The share is ``1 - sum(top positive eigenvalues) / sum(positive eigenvalues)``.
    """
    vals, vecs = top_eigenpairs(G, rank)
    vals = np.maximum(vals, 0.0)
    all_vals = np.linalg.eigvalsh(0.5 * (G + G.T))
    total = all_vals[all_vals > 0].sum()
    share = 1.0 - vals.sum() / total if total > 0 else 0.0
    return (vecs * vals) @ vecs.T, float(max(share, 0.0))
