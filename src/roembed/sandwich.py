r"""How sure is this map, without refitting: the local (sandwich) approximation of the query bootstrap.

:func:`local_uncertainty` reads per-object covariances off the curvature of the fitted objective:
the sandwich :math:`H^{-1} B H^{-1}` (the infinitesimal jackknife of the query bootstrap), with every
other object fixed (``others="fixed"``) or with the whole map moving and the similarity directions
projected out as the bootstrap's Procrustes alignment does (``others="free"``).  Its results share
:class:`~roembed.uncertainty.UncertaintyRegions` with :class:`~roembed.uncertainty.BootstrapResult`.
It agrees with the bootstrap only with many queries per coordinate (measured in
``docs/uncertainty.md``: at p = 2 close, regions a little small; at p = 10 far too small).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2
from sklearn.base import clone

from ._warn import warn
from .data import as_comparisons
from .data.diagnostics import DataWarning
from .estimators.base import check_estimator_argument, check_param
from .losses import Sigmoid, robust_curvature, robust_penalty
from .uncertainty import UncertaintyRegions


def _group_sum(inverse: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """(size, p): the rows of ``values`` summed by group ``inverse``."""
    return np.stack([np.bincount(inverse, weights=v, minlength=size) for v in values.T], axis=1)


def _outer_sum(index: np.ndarray, vectors: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    r"""(size, p, p): :math:`\sum_{e: index_e = o} w_e v_e v_e^T` per ``o`` (one bincount per entry of the
    upper triangle; no (entries, p, p) temporary)."""
    p = vectors.shape[1]
    out = np.empty((size, p, p))
    for a in range(p):
        wa = weights * vectors[:, a]
        for b in range(a, p):
            out[:, a, b] = out[:, b, a] = np.bincount(index, weights=wa * vectors[:, b], minlength=size)
    return out


def _query_chunks(edge_query: np.ndarray, size: int):
    """Edge indices sorted by query, in chunks of about ``size`` edges that never split a query."""
    order = np.argsort(edge_query, kind="stable")
    q = edge_query[order]
    start = 0
    while start < len(order):
        stop = min(start + size, len(order))
        while stop < len(order) and q[stop] == q[stop - 1]:
            stop += 1
        yield order[start:stop]
        start = stop


def _edge_terms(objective, X: np.ndarray, edges: np.ndarray):
    """For ``edges``: their objects (k, 4), near and far difference vectors ``x_i - x_j``, ``x_l - x_k`` (k, p),
    the margin's first and second derivatives in ``d_near`` and ``d_far``, and ``a_c psi'(s_c)``,
    ``a_c psi''(s_c)`` (the loss, or its outlier envelope where the objective has caps)."""
    loss, k = objective.loss, len(edges)
    obj = np.asarray(objective.objects)[edges].astype(np.int64)
    vn, vf = X[obj[:, 0]] - X[obj[:, 1]], X[obj[:, 2]] - X[obj[:, 3]]
    dn, df = np.einsum("ep,ep->e", vn, vn), np.einsum("ep,ep->e", vf, vf)
    s, sn, sf = (np.broadcast_to(np.asarray(v, float), (k,)) for v in loss.margin(dn, df))
    snn, sff = (np.broadcast_to(np.asarray(v, float), (k,)) for v in loss.margin_curvature(dn, df))
    cap = objective.cap
    if cap is None:
        slope, curvature = loss.penalty(s)[1], loss.curvature(s)
    else:
        c = cap if np.ndim(cap) == 0 else np.asarray(cap)[edges]
        slope, curvature = robust_penalty(loss, s, c, objective.two_sided)[1], \
            robust_curvature(loss, s, c, objective.two_sided)
    w = np.asarray(objective.loss_weight, float)[edges]
    t1 = w * np.broadcast_to(slope, (k,))  # d F / d s_c
    t2 = w * np.broadcast_to(curvature, (k,))  # d^2 F / d s_c^2
    if objective.reverse_weight is not None:  # + b_c phi(-s_c), never shifted
        b = np.asarray(objective.reverse_weight, float)[edges]
        t1 = t1 - b * np.broadcast_to(loss.penalty(-s)[1], (k,))
        t2 = t2 + b * np.broadcast_to(loss.curvature(-s), (k,))
    return obj, vn, vf, sn, sf, snn, sff, t1, t2


def sloped_queries(objective, X: np.ndarray, edge_query: np.ndarray, chunk: int = 1 << 16) -> int:
    """The number of queries with at least one edge where the fitted loss has a slope (``a_c psi'(s_c) != 0``):
    the queries :func:`local_curvature`'s gradients and scatter are made of.  A hinge (SOE) has none beyond its
    margin; a smooth loss (t-STE, CKL, the refinement's sigmoid) has one everywhere."""
    edge_query = np.asarray(edge_query, dtype=np.int64)
    sloped = [edge_query[edges][_edge_terms(objective, X, edges)[7] != 0] for edges in _query_chunks(edge_query, chunk)]
    return int(len(np.unique(np.concatenate(sloped)))) if sloped else 0


def local_curvature(objective, X: np.ndarray, alpha: float, edge_query: np.ndarray, chunk: int = 1 << 16):
    r"""Per object ``o``, with every other object fixed: the Hessian ``H_o``, the scatter of the query
    gradients ``B_o`` and the gradient, of :math:`F(X) = \sum_c a_c \psi_c(s_c) + \alpha \|X\|_F^2`
    (``objective``: an :class:`~roembed.objective.EdgeObjective` with its ``objects``).

    For edge ``c`` and an object ``o`` in it, with :math:`u = \partial d / \partial x_o` of the near or far
    distance it is in (:math:`\pm 2 (x_a - x_b)`) and :math:`G_{co} = \partial s_c / \partial x_o`:

    .. math::
        \nabla_o = \sum_c a_c \psi'_c\, G_{co}, \qquad
        H_o = 2\alpha I + \sum_c a_c \big[\psi''_c\, G_{co} G_{co}^T + \psi'_c \textstyle\sum_{\text{pair}}
              (s_{dd}\, u u^T + 2 s_d I)\big], \qquad
        B_o = \sum_q g_{qo} g_{qo}^T - \tfrac1Q S_o S_o^T

    with :math:`g_{qo}` the gradient of query ``q``'s edges (both directions), :math:`S_o = \sum_q g_{qo}`
    and ``Q`` the number of queries (the centring makes ``B`` the covariance of the query multiplicities of
    a bootstrap, multinomial with :math:`\mathrm{Cov} = I - 11^T/Q`).  The Hessian is exact where the loss
    is twice differentiable (the losses' ``curvature`` and ``margin_curvature``; on a kink, one side's value).
    Vectorised over edges (``chunk`` at a time, whole queries per chunk).
    Returns ``H, B, gradient``: (n, p, p), (n, p, p), (n, p).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, p = X.shape
    H = np.zeros((n, p, p))
    B = np.zeros((n, p, p))
    S = np.zeros((n, p))
    diag = np.zeros(n)
    edge_query = np.asarray(edge_query, dtype=np.int64)  # (query, object) keys below: query * n + object
    for edges in _query_chunks(edge_query, chunk):
        k = len(edges)
        obj, vn, vf, sn, sf, snn, sff, t1, t2 = _edge_terms(objective, X, edges)
        # one entry per (edge, slot): object, d distance / d x (u), d s / d x through that distance
        slot_obj = obj.T.reshape(-1)
        u = 2.0 * np.concatenate([vn, -vn, vf, -vf])
        ds, dds = np.concatenate([sn, sn, sf, sf]), np.concatenate([snn, snn, sff, sff])
        edge = np.tile(np.arange(k), 4)
        grad = ds[:, None] * u
        coef = np.tile(t1, 4)
        # the margin gradient of each (edge, object): an object may sit in both pairs (a triplet's anchor)
        eo, eo_inverse = np.unique(edge * n + slot_obj, return_inverse=True)
        G = _group_sum(eo_inverse.reshape(-1), grad, len(eo))
        H += _outer_sum(np.concatenate([slot_obj, eo % n]), np.concatenate([u, G]),
                        np.concatenate([coef * dds, t2[eo // n]]), n)
        diag += np.bincount(slot_obj, weights=2.0 * coef * ds, minlength=n)
        # the gradient of each (query, object): both directions of the query together
        qo, qo_inverse = np.unique(edge_query[edges][edge] * n + slot_obj, return_inverse=True)
        g = _group_sum(qo_inverse.reshape(-1), coef[:, None] * grad, len(qo))
        B += _outer_sum(qo % n, g, np.ones(len(qo)), n)
        S += _group_sum(qo % n, g, n)
    H += (diag + 2.0 * alpha)[:, None, None] * np.eye(p)
    n_queries = len(np.unique(edge_query))
    B -= np.einsum("op,oq->opq", S, S) / max(n_queries, 1)
    return H, B, S + 2.0 * alpha * X


def sandwich(H: np.ndarray, B: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    r""":math:`H_o^{-1} B_o H_o^{-1}` per object; NaN where ``H_o`` is not positive definite or ``B_o`` is
    singular (relative to its largest eigenvalue, ``rtol``): there the comparisons do not pin every
    coordinate of ``x_o`` and a region would be unbounded or flat."""
    n, p, _ = H.shape
    eig_h, eig_b = np.linalg.eigvalsh(H), np.linalg.eigvalsh(B)
    ok = (eig_h[:, 0] > rtol * np.abs(eig_h[:, -1])) & (eig_b[:, 0] > rtol * eig_b[:, -1]) & (eig_b[:, -1] > 0)
    cov = np.full((n, p, p), np.nan)
    if ok.any():
        Hinv = np.linalg.inv(H[ok])
        cov[ok] = Hinv @ B[ok] @ Hinv
        cov[ok] = 0.5 * (cov[ok] + np.swapaxes(cov[ok], 1, 2))
    return cov


JOINT_MAX_COORDINATES = 5000
"""``others="free"`` holds dense (n p) x (n p) matrices: about 200 MB each at this many coordinates."""


def joint_curvature(objective, X: np.ndarray, alpha: float, edge_query: np.ndarray):
    r"""The Hessian ``H`` and the centred query scatter ``B`` of the whole embedding, dense (n p, n p), with the
    gradient (n p,); coordinate ``a`` of object ``o`` at ``o p + a``.  The terms of :func:`local_curvature`
    with every object free: :math:`H = J_s^T \mathrm{diag}(a\psi'') J_s + \sum_D J_D^T \mathrm{diag}(a\psi' s_{DD})
    J_D + (L \otimes I_p) + 2\alpha I`, ``J_s`` and ``J_D`` the sparse Jacobians of the margins and of the near
    and far distances, ``L`` the graph Laplacian of the pairs weighted by :math:`2 a\psi' s_D`."""
    from scipy import sparse

    X = np.ascontiguousarray(X, dtype=np.float64)
    n, p = X.shape
    E = len(objective.loss_weight)
    obj, vn, vf, sn, sf, snn, sff, t1, t2 = _edge_terms(objective, X, np.arange(E))
    rows, dims = np.repeat(np.arange(E), p), np.arange(p)

    def jacobian(a, b, v):  # d ||x_a - x_b||^2 / dX: 2 v at a, -2 v at b
        cols = np.concatenate([(a[:, None] * p + dims).ravel(), (b[:, None] * p + dims).ravel()])
        data = np.concatenate([2.0 * v.ravel(), -2.0 * v.ravel()])
        return sparse.csr_matrix((data, (np.concatenate([rows, rows]), cols)), shape=(E, n * p))

    Jn, Jf = jacobian(obj[:, 0], obj[:, 1], vn), jacobian(obj[:, 2], obj[:, 3], vf)
    Js = sparse.diags(np.asarray(sn)) @ Jn + sparse.diags(np.asarray(sf)) @ Jf
    H = (Js.T @ sparse.diags(t2) @ Js + Jn.T @ sparse.diags(t1 * snn) @ Jn
         + Jf.T @ sparse.diags(t1 * sff) @ Jf).toarray()
    a, b = np.concatenate([obj[:, 0], obj[:, 2]]), np.concatenate([obj[:, 1], obj[:, 3]])
    w = 2.0 * np.concatenate([t1 * sn, t1 * sf])
    L = np.bincount(np.concatenate([a * n + a, b * n + b, a * n + b, b * n + a]),
                    weights=np.concatenate([w, w, -w, -w]), minlength=n * n).reshape(n, n)
    H += np.kron(L, np.eye(p)) + 2.0 * alpha * np.eye(n * p)
    queries, inverse = np.unique(np.asarray(edge_query), return_inverse=True)
    G = Js.T @ sparse.csr_matrix((t1, (np.arange(E), inverse.reshape(-1))), shape=(E, len(queries)))
    S = np.asarray(G.sum(axis=1)).reshape(-1)
    B = (G @ G.T).toarray() - np.outer(S, S) / len(queries)
    return H, B, S + 2.0 * alpha * X.reshape(-1)


def similarity_directions(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases (n p, .) of the directions in which a similarity transform moves ``X`` to first
    order: ``(rotations, all)``, ``all`` adding translations and scaling -- what Procrustes alignment removes."""
    n, p = X.shape
    rotations = []
    for k in range(p):
        for l in range(k + 1, p):
            V = np.zeros_like(X)
            V[:, k], V[:, l] = X[:, l], -X[:, k]
            rotations.append(V.reshape(-1))
    translations = [np.tile(np.eye(p)[k], n) for k in range(p)]
    rot = np.linalg.qr(np.array(rotations).T)[0] if rotations else np.zeros((n * p, 0))
    every = np.linalg.qr(np.array(rotations + translations + [X.reshape(-1)]).T)[0]
    return rot, every


def joint_sandwich(H: np.ndarray, B: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Per-object blocks (n, p, p) of :math:`P H^+ B H^+ P`: the sandwich of the whole embedding, projected off
    the similarity directions (:math:`P`), as the bootstrap's Procrustes alignment removes them.  ``H`` is
    singular along the rotations (the objective does not see them); :math:`H^+` there is
    :math:`(H + c\,T T^T)^{-1}` restricted by ``P`` (``T``: the rotations, ``c``: the mean curvature)."""
    n, p = X.shape
    rot, every = similarity_directions(X)
    c = np.trace(H) / len(H)
    M = np.linalg.solve(H + c * rot @ rot.T, np.eye(len(H)))
    A = M - every @ (every.T @ M)  # P M
    C = A @ B @ A.T
    idx = np.arange(n)
    return C.reshape(n, p, n, p)[idx, :, idx, :]


@dataclass(repr=False)  # the dataclass's repr printed the Hessians and scatters whole
class LocalUncertaintyResult(UncertaintyRegions):
    """Per-object regions from the local sandwich (see :func:`local_uncertainty`).

    ``covariances`` (n, p, p): :math:`H_i^{-1} B_i H_i^{-1}`, NaN for objects without a region;
    ``hessians`` and ``query_scatter``: the ``H_i`` and ``B_i`` behind them; ``gradient``: the
    objective's gradient at the fit (about zero when the fit converged); ``n_queries``: ``Q``;
    ``n_sloped_queries``: those where the fitted loss has a slope (:func:`sloped_queries`).
    """

    estimator: object
    embedding: np.ndarray
    covariances: np.ndarray
    hessians: np.ndarray
    query_scatter: np.ndarray
    gradient: np.ndarray
    n_queries: int
    n_sloped_queries: int
    confidence: float = 0.9

    @property
    def sloped_queries_per_coordinate(self) -> float:
        """``n_sloped_queries`` over the coordinates of the objects with comparisons (``n_used p``): below
        :data:`MIN_SLOPED_QUERIES_PER_COORDINATE` the regions are far too small (:func:`local_uncertainty`)."""
        n_used = len(self.estimator.graph_.comparisons.used_objects)
        return self.n_sloped_queries / max(n_used * self.embedding.shape[1], 1)

    def __repr__(self) -> str:
        n, p = self.embedding.shape
        return (f"LocalUncertaintyResult({n} objects in {p} dimension{'s' * (p != 1)}, {100 * self.confidence:g}% "
                f"regions for {int(self.has_region.sum())}; {self.n_sloped_queries} of {self.n_queries} queries "
                "sloped)")

    @property
    def centres(self) -> np.ndarray:
        """(n, p): the centres of the regions: the fit."""
        return self.embedding

    @property
    def radius2(self) -> float:
        """:math:`\\chi^2_p(\\text{confidence})`: the normal region of the sandwich covariance."""
        return float(chi2.ppf(self.confidence, self.embedding.shape[1]))


OTHERS = ("fixed", "free")
# Below this many sloped queries per coordinate local_uncertainty warns (docs/uncertainty.md, "When the regions
# are far too small": chosen on exploration seeds 100-104, checked on seeds 0-4).
MIN_SLOPED_QUERIES_PER_COORDINATE = 6
# The same for a fit that ends in the sigmoid refinement (a slope on every query; the map the mean of two
# refinements): docs/uncertainty.md, the same section (chosen on exploration seeds 100-102, checked on 0-2).
MIN_REFINED_QUERIES_PER_COORDINATE = 30


def local_uncertainty(estimator, comparisons=None, *, confidence: float = 0.9,
                      others: str = "fixed") -> LocalUncertaintyResult:
    r"""Per-object uncertainty from the curvature of the objective at the fit, without refitting.

    For each object ``i``, with every other object fixed at the fit, the infinitesimal jackknife of the
    query bootstrap (the sandwich estimator of an M-estimator whose units are queries):

    .. math::  \Sigma_i = H_i^{-1} B_i H_i^{-1},

    ``H_i`` the Hessian of the objective in ``x_i`` (loss and ridge; exact where the loss is smooth),
    ``B_i`` the scatter of the gradients in ``x_i`` of the queries (all votes on one comparison, both
    directions; :func:`local_curvature`).  The regions are normal:
    :math:`(x - \hat x_i)^T \Sigma_i^{-1} (x - \hat x_i) \le \chi^2_p(\text{confidence})`.  No constant is
    tuned.  What it leaves out, by construction (measured in ``docs/uncertainty.md``):

    * the other objects' uncertainty: ``x_i``'s region is conditional on the rest of the map, where the
      bootstrap refits everything and aligns each replicate to the fit by Procrustes.  Here there is no
      gauge to remove (the others fix rotation, translation and scale), and nothing of the others'
      movement reaches ``x_i``;
    * everything the linearisation misses: non-smooth or non-convex losses far from the fit, the choice
      of the "auto" parameters (fixed at the fit's) and the annotator weights (fixed).  A hinge (SOE) fit
      whose comparisons mostly lie beyond the margin has a slope on few of them and its regions rest on
      those: an object left with a tenth of its comparisons kept its region (docs/uncertainty.md);
    * that a refined default fit is the mean of refinements at several slopes (``refine_ensemble``): the
      curvature is read at that mean from the first slope's objective, whose minimum it is not (its
      gradient is in ``gradient``; the query scatter ``B_i`` is centred, so a common drift does not count).

    The queries where the fitted loss has a slope are what the regions are made of: with fewer than
    :data:`MIN_SLOPED_QUERIES_PER_COORDINATE` (6) per coordinate of the map it warns
    (:class:`~roembed.data.diagnostics.DataWarning`).  Below 6 the 90% regions held the truth for a median 25%
    of the objects on synthetic data (0-78%), from 6 on for 81% (65-92%; docs/uncertainty.md, "When the
    regions are far too small").  The refinement's sigmoid has a slope on every query, and there the count
    says less: a refined fit warns below :data:`MIN_REFINED_QUERIES_PER_COORDINATE` (30), where the regions
    held the truth for a median 39% of the objects (0-85%), from 30 on for 85% (56-92%).

    Parameters
    ----------
    estimator
        A fitted :class:`~roembed.RobustOrdinalEmbedding` (or CV), or a fitted factored estimator
        (SOE, STE, t-STE, CKL, GNMDS); an unfitted one is cloned and fitted on ``comparisons``.
    comparisons : Comparisons or array, optional
        Needed for an unfitted estimator; for a fitted one, if given, they must be those it was fitted on.
    confidence : float
        Level of the regions (0.9: 90%).

    Objects whose comparisons do not pin all ``p`` coordinates (fewer informative queries than
    dimensions, or a flat loss: a hinge with every comparison satisfied beyond the margin) get NaN
    covariances and no region, with a :class:`~roembed.data.diagnostics.DataWarning`.
    """
    check_estimator_argument(estimator, "local_uncertainty(fitted_estimator), or "
                                        "local_uncertainty(estimator, comparisons)")
    check_param("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if others not in OTHERS:
        raise ValueError(f"others must be one of {OTHERS}, got {others!r}")
    if hasattr(estimator, "embedding_"):
        fitted = estimator
        if comparisons is not None:
            given, used = as_comparisons(comparisons), fitted.graph_.comparisons
            if not (given.quadruplets.shape == used.quadruplets.shape and np.array_equal(given.quadruplets,
                    used.quadruplets) and np.array_equal(given.weight, used.weight)):
                raise ValueError("comparisons differ from those the estimator was fitted on (leave them out, "
                                 "or pass an unfitted estimator to fit on them)")
    elif comparisons is None:
        raise ValueError("the estimator is not fitted: pass the comparisons to fit it on")
    else:
        fitted = clone(estimator).fit(as_comparisons(comparisons))
    if not hasattr(fitted, "_fitted_objective"):
        raise TypeError(f"local_uncertainty needs an estimator defined by a loss (RobustOrdinalEmbedding, SOE, "
                        f"STE, TSTE, CKL, GNMDS), got {type(fitted).__name__}; use bootstrap()")
    graph, objective, alpha = fitted._fitted_objective()
    X = np.asarray(fitted.embedding_, dtype=np.float64)
    H, B, gradient = local_curvature(objective, X, alpha, np.asarray(graph.edge_query))
    cov = sandwich(H, B)
    if others == "free":
        if X.size > JOINT_MAX_COORDINATES:
            raise ValueError(f"others='free' holds ({X.size} x {X.size}) matrices; above {JOINT_MAX_COORDINATES} "
                             "coordinates use others='fixed' or bootstrap()")
        defined = np.isfinite(cov).all(axis=(1, 2))
        cov = joint_sandwich(*joint_curvature(objective, X, alpha, np.asarray(graph.edge_query))[:2], X)
        cov[~defined] = np.nan
    result = LocalUncertaintyResult(fitted, X, cov, H, B, gradient, n_queries=len(np.unique(graph.edge_query)),
                                    n_sloped_queries=sloped_queries(objective, X, graph.edge_query),
                                    confidence=confidence)
    per_coordinate, refined = result.sloped_queries_per_coordinate, isinstance(objective.loss, Sigmoid)
    limit = MIN_REFINED_QUERIES_PER_COORDINATE if refined else MIN_SLOPED_QUERIES_PER_COORDINATE
    if per_coordinate < limit:
        what, held = (("the fit ends in the sigmoid refinement, which needs many queries: "
                       f"{result.n_sloped_queries} queries", 39) if refined else
                      (f"the fitted loss has a slope on {result.n_sloped_queries} of {result.n_queries} queries", 25))
        warn(f"local_uncertainty: {what}, {per_coordinate:.2g} per coordinate of the map; with fewer than {limit} "
             f"the regions are far too small (on synthetic data their 90% regions held the truth for a median "
             f"{held}% of the objects); use bootstrap() for calibrated regions", DataWarning)
    missing = np.setdiff1d(fitted.graph_.comparisons.used_objects, np.flatnonzero(result.has_region))
    if len(missing):
        names = fitted.graph_.object_names
        shown = ", ".join(str(names[o] if names is not None else o) for o in missing[:5])
        warn(f"local_uncertainty: {len(missing)} of {len(fitted.graph_.comparisons.used_objects)} objects "
             f"have no region (their comparisons do not pin all {X.shape[1]} coordinates: too few "
             f"informative queries, or a flat loss there): {shown}{', ...' if len(missing) > 5 else ''}; "
             "their rows are NaN", DataWarning)
    return result


__all__ = ["local_uncertainty", "LocalUncertaintyResult", "local_curvature", "sloped_queries", "sandwich",
           "joint_curvature", "joint_sandwich", "similarity_directions", "OTHERS", "JOINT_MAX_COORDINATES",
           "MIN_SLOPED_QUERIES_PER_COORDINATE", "MIN_REFINED_QUERIES_PER_COORDINATE"]
