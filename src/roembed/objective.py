r"""The objective over a comparison graph, shared by every solver.

Distances are computed once per *object pair* (the vertices of the comparison
graph), never once per comparison, and gradients flow back the same way:

``d_pair``  --(loss per edge)-->  ``value``, ``g_pair = d value / d d_pair``

The parametrisation of the distances (a Gram matrix ``G`` or an embedding ``X``)
is handled by :class:`PairDistances`; the solvers combine the two.

The per-edge objective is

.. math::  \sum_c a_c\, \psi_c(s_c), \qquad
           \psi_c(s) = \min_{\gamma} \phi(s + \gamma) + \kappa_c |\gamma|

with loss weights ``a_c`` and outlier caps ``kappa_c`` (no caps: ``psi = phi``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._array import ops_for
from ._kernels import pair_distance_adjoint, pair_sq_distances
from .losses import Loss, robust_penalty


class PairDistances:
    """Squared distances over the object pairs ``(a, b)`` and their adjoints.

    ``from_embedding(X)`` gives ``d_p = ||x_a - x_b||^2``; ``embedding_grad``
    maps ``g_p = dF/dd_p`` back to ``dF/dX``: row ``a`` gets ``2 g_p (x_a - x_b)``
    and row ``b`` its negative.  Both are compiled loops over the pairs
    (:mod:`roembed._kernels`), so time and memory are linear in the number of pairs.
    """

    def __init__(self, pairs: np.ndarray, n_objects: int):
        pairs = np.asarray(pairs, dtype=np.int64)
        self.a, self.b = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
        self.n_objects = int(n_objects)
        if len(pairs) and (pairs.min() < 0 or pairs.max() >= self.n_objects):  # the loops do not bounds-check
            raise ValueError(f"pair indices must lie in [0, {self.n_objects}), got {pairs.min()}..{pairs.max()}")

    def __len__(self) -> int:
        return len(self.a)

    def _embedding(self, X) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != self.n_objects:
            raise ValueError(f"embedding has shape {X.shape}, expected ({self.n_objects}, p)")
        return X

    def from_embedding(self, X: np.ndarray) -> np.ndarray:
        """``d`` (P,): the squared distance of every pair under the embedding ``X``."""
        return pair_sq_distances(self._embedding(X), self.a, self.b, np.empty(len(self.a)))

    def embedding_grad(self, g_pair: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``dF/dX`` (n, p) from ``g_pair = dF/dd`` at the embedding ``X``."""
        X = self._embedding(X)
        g_pair = np.ascontiguousarray(g_pair, dtype=np.float64)
        if g_pair.shape != self.a.shape:
            raise ValueError(f"g_pair has shape {g_pair.shape}, expected ({len(self.a)},)")
        return pair_distance_adjoint(X, self.a, self.b, g_pair, np.zeros_like(X))

    def from_gram(self, G: np.ndarray) -> np.ndarray:
        """``d_p = G_aa + G_bb - 2 G_ab``."""
        diag = np.diag(G)
        return diag[self.a] + diag[self.b] - 2.0 * G[self.a, self.b]

    def gram_grad(self, g_pair: np.ndarray) -> np.ndarray:
        """Adjoint of :meth:`from_gram`: ``sum_p g_p (e_a - e_b)(e_a - e_b)^T`` (symmetric)."""
        n, a, b = self.n_objects, self.a, self.b
        index = np.concatenate([a * n + a, b * n + b, a * n + b, b * n + a])
        weights = np.concatenate([g_pair, g_pair, -g_pair, -g_pair])
        return np.bincount(index, weights=weights, minlength=n * n).reshape(n, n)


@dataclass
class EdgeObjective:
    """``sum_c a_c psi_c(s_c)`` over edges whose near/far pairs index ``d_pair``.

    Parameters
    ----------
    loss : Loss
    near, far : (E,) int arrays
        Pair indices of each edge's near pair ``(i, j)`` and far pair ``(l, k)``.
    loss_weight : (E,) array
        ``a_c`` (e.g. the votes ``w_c``, or ``w_c^2`` for ROE's paper weighting).
    n_pairs : int
    cap : (E,) array or None
        Outlier caps ``kappa_c``; None gives the plain loss.
    two_sided : bool
        Let ``gamma`` take both signs (see :func:`roembed.losses.robust_penalty`).
    """

    loss: Loss
    near: np.ndarray
    far: np.ndarray
    loss_weight: np.ndarray
    n_pairs: int
    cap: np.ndarray | None = None
    two_sided: bool = False

    def margins(self, d_pair):
        s, _, _ = self.loss.margin(d_pair[self.near], d_pair[self.far])
        return s

    def evaluate(self, d_pair):
        """Returns the objective, ``d objective / d d_pair`` and the per-edge outlier shifts ``gamma``."""
        ops = ops_for(d_pair)
        s, ds_near, ds_far = self.loss.margin(d_pair[self.near], d_pair[self.far])
        if self.cap is None:
            value, slope = self.loss.penalty(s)
            gamma = None
        else:
            value, slope, gamma = robust_penalty(self.loss, s, self.cap, self.two_sided)
        g = self.loss_weight * slope
        g_pair = ops.bincount(self.near, g * ds_near, self.n_pairs) + ops.bincount(self.far, g * ds_far, self.n_pairs)
        return (self.loss_weight * value).sum(), g_pair, gamma


def quadruplet_distances(X: np.ndarray, quads: np.ndarray):
    """``d(i, j)`` and ``d(l, k)`` for each row of ``quads`` under embedding ``X``."""
    quads = np.asarray(quads)
    d_near = ((X[quads[:, 0]] - X[quads[:, 1]]) ** 2).sum(axis=1)
    d_far = ((X[quads[:, 2]] - X[quads[:, 3]]) ** 2).sum(axis=1)
    return d_near, d_far
