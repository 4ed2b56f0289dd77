r"""The objective over a comparison graph, shared by every solver.

Distances are defined on *object pairs* (the vertices of the comparison graph)
and each edge compares two of them:

``d_pair``  --(loss per edge)-->  ``value``, ``g_pair = d value / d d_pair``

The parametrisation of the distances (a Gram matrix ``G`` or an embedding ``X``)
is handled by :class:`PairDistances`; the solvers combine the two.

The per-edge objective is

.. math::  \sum_c a_c\, \psi_c(s_c), \qquad
           \psi_c(s) = \min_{\gamma} \phi(s + \gamma) + \kappa_c |\gamma|

with loss weights ``a_c`` and outlier caps ``kappa_c`` (no caps: ``psi = phi``).

Memory.  Every evaluation runs over the edges in chunks (:data:`CHUNK` edges on
NumPy, :data:`TORCH_CHUNK` on torch): the loss's elementwise temporaries exist
for one chunk at a time, so an evaluation costs the edges' own arrays plus
``O(chunk)``.  The factored solvers go further with
:meth:`EdgeObjective.embedding_value_and_grad`, which reads the rows of ``X``
directly per edge (compiled loops) and stores nothing per pair or per edge --
except on one thread over a graph with no more pairs than edges, where two
arrays per pair (distances and slopes, at most 16 bytes per edge) are cheaper.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._array import ops_for
from ._kernels import (NUMPY_ORDER_MAX, edge_distance_adjoint, edge_sq_distances, pair_distance_adjoint,
                       pair_sq_distances, prefetch_ahead, quadruplet_sq_distances)
from ._threads import _pool, default_threads, in_blocks
from .losses import Loss, robust_penalty

CHUNK = 8192
"""Edges per chunk on NumPy: the loss's temporaries (about 20 arrays) stay in a core's L2 cache."""
TORCH_CHUNK = 1 << 22
"""Edges per chunk on torch: bounds device memory (about 10 p-wide float32 temporaries of this length)."""
THREAD_EDGES = 1 << 14
"""Fewest edges per thread of :meth:`EdgeObjective.embedding_value_and_grad`: on fewer, a second thread's
hand-offs cost more than it saves (the default fit of the synthetic protocol's 20,000 edges took 1.04 s on
one thread and 1.20 s on two; 10^5 edges 2.9 s and 2.0 s; docs/results.md, "Small fits")."""


class PairDistances:
    """Squared distances over the object pairs ``(a, b)`` and their adjoints.

    ``from_embedding(X)`` gives ``d_p = ||x_a - x_b||^2``; ``embedding_grad``
    maps ``g_p = dF/dd_p`` back to ``dF/dX``: row ``a`` gets ``2 g_p (x_a - x_b)``
    and row ``b`` its negative.  Both are compiled loops over the pairs
    (:mod:`roembed._kernels`), so time and memory are linear in the number of pairs.
    The pair indices are views of ``pairs`` and keep its integer type (int32 from a
    :class:`~roembed.data.ComparisonGraph`).
    """

    def __init__(self, pairs: np.ndarray, n_objects: int):
        pairs = np.asarray(pairs)
        if not np.issubdtype(pairs.dtype, np.integer):
            pairs = pairs.astype(np.int64)
        self.a, self.b = pairs[:, 0], pairs[:, 1]  # views: no copy of a graph's pairs
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
        n, a, b = self.n_objects, self.a.astype(np.int64), self.b.astype(np.int64)
        index = np.concatenate([a * n + a, b * n + b, a * n + b, b * n + a])
        weights = np.concatenate([g_pair, g_pair, -g_pair, -g_pair])
        return np.bincount(index, weights=weights, minlength=n * n).reshape(n, n)


@dataclass
class EdgeObjective:
    """``sum_c a_c psi_c(s_c)`` (``+ b_c phi(-s_c)`` with ``reverse_weight``) over edges whose near/far pairs
    index ``d_pair``.

    Parameters
    ----------
    loss : Loss
    near, far : (E,) int arrays or None
        Pair indices of each edge's near pair ``(i, j)`` and far pair ``(l, k)``; None: read from
        ``graph.edge_pairs`` when first needed (:meth:`pair_indices`).
    loss_weight : (E,) array
        ``a_c`` (e.g. the votes ``w_c``, or ``w_c^2`` for ROE's paper weighting).
    n_pairs : int
    cap : (E,) array, scalar or None
        Outlier caps ``kappa_c`` (a scalar: the same for every edge); None gives the plain loss.
    two_sided : bool
        Let ``gamma`` take both signs (see :func:`roembed.losses.robust_penalty`).
    chunk : int or None
        Edges per chunk (None: :data:`CHUNK` on NumPy, :data:`TORCH_CHUNK` on torch).
    reverse_weight : (E,) array or None
        ``b_c``: each edge also counts reversed, ``+ b_c phi(-s_c)``, in the same pass over the edges (the
        annotator model's M-step, where a response counts with its annotator's probability of following and,
        reversed, of inverting; the robust fit's ``vote`` weighting after the annotator stage, where the part of
        a response its annotator's doubt takes off counts half each way).  With ``cap`` the outlier shift
        ``gamma_c`` moves the forward term only: ``a_c psi_c(s_c) + b_c phi(-s_c)``.
    objects : (E, 4) int array or None
        The objects of each edge's near and far pair (``ComparisonGraph.edge_objects``), read by
        :meth:`embedding_value_and_grad`; None: looked up through the pairs on first use.
    graph : ComparisonGraph or None
        Where ``near``/``far`` come from when None.  Going edge by edge through ``objects``, a solve
        never reads them: a tuning subgraph then has no (E, 2) array of pair indices (8 bytes an edge).
    """

    loss: Loss
    near: np.ndarray
    far: np.ndarray
    loss_weight: np.ndarray
    n_pairs: int
    cap: np.ndarray | float | None = None
    two_sided: bool = False
    chunk: int | None = None
    objects: np.ndarray | None = None
    graph: object = None
    reverse_weight: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.loss_weight)

    def pair_indices(self) -> tuple[np.ndarray, np.ndarray]:
        """``(near, far)``, read from ``graph`` on first use when not given."""
        if self.near is None:
            edge_pairs = self.graph.edge_pairs
            self.near, self.far = edge_pairs[:, 0], edge_pairs[:, 1]
        return self.near, self.far

    def _slices(self, start: int = 0, stop: int | None = None, torch: bool = False):
        size = self.chunk or (TORCH_CHUNK if torch else CHUNK)
        stop = len(self) if stop is None else stop
        return (slice(s, min(s + size, stop)) for s in range(start, stop, size))

    def terms(self, d_near, d_far, edges: slice):
        """For the edges ``edges`` at distances ``d_near, d_far``: their summed objective (float64),
        ``d objective / d d_near``, ``d objective / d d_far`` and the outlier shifts (None without caps)."""
        ops = ops_for(d_near)
        s, ds_near, ds_far = self.loss.margin(d_near, d_far)
        if self.cap is None:
            value, slope = self.loss.penalty(s)
            gamma = None
        else:
            cap = self.cap if getattr(self.cap, "ndim", 0) == 0 else self.cap[edges]
            value, slope, gamma = robust_penalty(self.loss, s, cap, self.two_sided)
        w = self.loss_weight[edges]
        g = w * slope
        total = (w * value).sum(dtype=ops.float64)
        if self.reverse_weight is not None:
            b = self.reverse_weight[edges]
            if gamma is None:  # phi(-s) from phi(s) where the loss allows (no second softplus)
                value, slope = self.loss.reversed_penalty(s, value, slope)
            else:  # the shift explains the forward answer only: the reversed term is the plain loss at -s
                value, slope = Loss.reversed_penalty(self.loss, s, None, None)
            total = total + (b * value).sum(dtype=ops.float64)
            g = g + b * slope
        return total, g * ds_near, g * ds_far, gamma

    def margins(self, d_pair):
        """The margin ``s_c`` of every edge at the pair distances ``d_pair``."""
        out, (near, far) = ops_for(d_pair).empty_like(d_pair, len(self)), self.pair_indices()
        for sl in self._slices(torch=not isinstance(d_pair, np.ndarray)):
            out[sl] = self.loss.margin(d_pair[near[sl]], d_pair[far[sl]])[0]
        return out

    def evaluate(self, d_pair, gamma: bool = True):
        """Returns the objective, ``d objective / d d_pair`` and the per-edge outlier shifts ``gamma``
        (None without caps or with ``gamma=False``)."""
        ops = ops_for(d_pair)
        g_pair = ops.zeros_like(d_pair)
        shifts = ops.empty_like(d_pair, len(self)) if gamma and self.cap is not None else None
        value, (all_near, all_far) = 0.0, self.pair_indices()
        for sl in self._slices(torch=not isinstance(d_pair, np.ndarray)):
            near, far = all_near[sl], all_far[sl]
            v, g_near, g_far, gm = self.terms(d_pair[near], d_pair[far], sl)
            value = value + v
            ops.scatter_add(g_pair, near, g_near)
            ops.scatter_add(g_pair, far, g_far)
            if shifts is not None:
                shifts[sl] = gm
        return value, g_pair, shifts

    def objects_of(self, distances: PairDistances) -> np.ndarray:
        """(E, 4) the objects of each edge's near and far pair: ``objects``, or looked up through the pairs
        (not kept)."""
        if self.objects is not None:
            return self.objects
        near, far = self.pair_indices()
        return np.stack([distances.a[near], distances.b[near], distances.a[far], distances.b[far]], axis=1)

    def _objects(self, distances: PairDistances) -> np.ndarray:
        """:meth:`objects_of`, kept in ``objects`` for the next evaluation."""
        self.objects = self.objects_of(distances)
        return self.objects

    def embedding_margins(self, X: np.ndarray, distances: PairDistances, step: int = 1) -> np.ndarray:
        """The margins ``s_c`` at the embedding ``X`` of the edges ``0, step, 2 step, ...``, chunk by chunk
        (no per-pair array), in blocks on the fit's threads (:func:`~roembed._threads.in_blocks`)."""
        X, objects = distances._embedding(X), self._objects(distances)[::step]
        out, ahead, size = np.empty(len(objects)), prefetch_ahead(X), self.chunk or CHUNK

        def block(lo, hi):
            d_near, d_far = np.empty(size), np.empty(size)
            for start in range(lo, hi, size):
                k = min(size, hi - start)
                edge_sq_distances(X, objects, start, d_near[:k], d_far[:k], ahead)
                out[start: start + k] = self.loss.margin(d_near[:k], d_far[:k])[0]

        in_blocks(block, len(objects))
        return out

    def embedding_shifts(self, X: np.ndarray, distances: PairDistances) -> np.ndarray | None:
        """The outlier shifts ``gamma_c`` of every edge at the embedding ``X`` (None without caps), in blocks
        on the fit's threads."""
        if self.cap is None:
            return None
        X, objects = distances._embedding(X), self._objects(distances)
        out, ahead, size = np.empty(len(self)), prefetch_ahead(X), self.chunk or CHUNK

        def block(lo, hi):
            d_near, d_far = np.empty(size), np.empty(size)
            for sl in self._slices(lo, hi):
                k = sl.stop - sl.start
                edge_sq_distances(X, objects, sl.start, d_near[:k], d_far[:k], ahead)
                out[sl] = self.terms(d_near[:k], d_far[:k], sl)[3]

        in_blocks(block, len(self))
        return out

    def embedding_value_and_grad(self, X: np.ndarray, distances: PairDistances, threads: int | None = None):
        """``F(d(X))`` and ``dF/dX`` in one pass over the edges (NumPy; ``distances`` gives the pairs' objects).

        Chunk by chunk, a compiled loop computes the chunk's near and far distances from the rows of
        ``X``, the loss turns them into slopes, and a second loop adds their adjoint to the gradient:
        nothing is stored per pair or per edge.  With ``threads`` > 1 (default :func:`default_threads`)
        contiguous blocks of edges run in threads (the loops release the GIL, so does NumPy on the
        loss's arrays), each into its own gradient buffer, summed at the end; the result is the same
        for the same number of threads.  Each thread gets at least :data:`THREAD_EDGES` edges.  On one
        thread, a graph with no more object pairs than edges goes through the pairs instead
        (:meth:`_pair_value_and_grad`): the same sums in another order.
        """
        X, n_edges = distances._embedding(X), len(self)
        # one thread below 2 * THREAD_EDGES edges whatever the count (not asked for: 10 us an evaluation)
        threads = 1 if n_edges < 2 * THREAD_EDGES else min(threads or default_threads(), n_edges // THREAD_EDGES)
        if threads == 1 and len(distances) <= n_edges:
            return self._pair_value_and_grad(X, distances)
        objects, ahead = self._objects(distances), prefetch_ahead(X)

        def block(lo, hi, grad):
            size = self.chunk or CHUNK
            d_near, d_far = np.empty(min(size, hi - lo)), np.empty(min(size, hi - lo))
            value = 0.0
            for sl in self._slices(lo, hi):
                k = sl.stop - sl.start
                edge_sq_distances(X, objects, sl.start, d_near[:k], d_far[:k], ahead)
                v, g_near, g_far, _ = self.terms(d_near[:k], d_far[:k], sl)
                value += v
                edge_distance_adjoint(X, objects, sl.start, _per_edge(g_near, k), _per_edge(g_far, k), grad, ahead)
            return value

        if threads == 1:  # no bounds, list or pool: at 300 edges they took a third of an evaluation (profiled)
            grad = np.zeros_like(X)
            return float(block(0, n_edges, grad)), grad
        bounds = np.linspace(0, n_edges, threads + 1).astype(np.int64)
        grads = [np.zeros_like(X) for _ in range(threads)]
        jobs = [_pool(threads).submit(block, bounds[t], bounds[t + 1], grads[t]) for t in range(threads)]
        values = [job.result() for job in jobs]
        for g in grads[1:]:
            grads[0] += g
        return float(sum(values)), grads[0]

    def _pair_value_and_grad(self, X: np.ndarray, distances: PairDistances):
        """:meth:`embedding_value_and_grad` through the pairs, for graphs with no more pairs than edges: each
        pair's distance once, the loss per edge on gathered distances, each pair's adjoint once (on the
        synthetic protocol, 4,853 pairs under 19,983 edges, 0.47 ms against 0.82-1.5 ms per evaluation
        edge by edge; on random graphs with twice as many pairs as edges, 1.1-1.2x slower)."""
        value, g_pair, _ = self.evaluate(distances.from_embedding(X), gamma=False)
        return float(value), distances.embedding_grad(g_pair, X)


def _per_edge(g, k: int) -> np.ndarray:
    """``g`` as ``k`` per-edge values: itself when it is already one per edge (a loss's slopes), else broadcast
    (a constant ``ds/dd`` of 1 or -1)."""
    return g if getattr(g, "shape", None) == (k,) else np.broadcast_to(g, (k,))


QUADRUPLET_CHUNK = 1 << 16
"""Rows per chunk of :func:`quadruplet_distances` in NumPy (rows longer than
:data:`~roembed._kernels.NUMPY_ORDER_MAX`)."""


def quadruplet_distances(X: np.ndarray, quads: np.ndarray):
    """``d(i, j)`` and ``d(l, k)`` for each row of ``quads`` under embedding ``X`` (float; others as float64).

    A compiled loop over the rows (:func:`~roembed._kernels.quadruplet_sq_distances`), in blocks on the
    fit's threads (:func:`~roembed._threads.in_blocks`), summing each distance in NumPy's order: the result
    equals ``((X[a] - X[b]) ** 2).sum(1)`` bit for bit, with no ``(rows, p)`` temporaries.  Rows longer
    than :data:`~roembed._kernels.NUMPY_ORDER_MAX` go through NumPy itself, :data:`QUADRUPLET_CHUNK` rows
    at a time.
    """
    X, quads = np.asarray(X), np.asarray(quads)
    X = np.ascontiguousarray(X if X.dtype in (np.float32, np.float64) else X.astype(np.float64))
    d_near, d_far = np.empty(len(quads), X.dtype), np.empty(len(quads), X.dtype)
    if X.shape[1] <= NUMPY_ORDER_MAX:
        in_blocks(lambda lo, hi: quadruplet_sq_distances(X, quads, lo, hi, d_near, d_far), len(quads))
        return d_near, d_far
    for start in range(0, len(quads), QUADRUPLET_CHUNK):
        q = quads[start: start + QUADRUPLET_CHUNK]
        d_near[start: start + len(q)] = ((X[q[:, 0]] - X[q[:, 1]]) ** 2).sum(axis=1)
        d_far[start: start + len(q)] = ((X[q[:, 2]] - X[q[:, 3]]) ** 2).sum(axis=1)
    return d_near, d_far
