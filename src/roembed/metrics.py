r"""Diagnostics of an embedding and of an outlier detector: one definition each, used everywhere.

Everything here takes plain arrays (an embedding ``X`` of shape (n, p)) and
comparisons (:class:`~roembed.data.Comparisons`, or an (m, 3) / (m, 4) array);
nothing needs a fitted estimator.  The comparisons' object numbers are rows of ``X``: a test
set read with object names of its own is numbered in its own sorted order, so pass
``test.renumbered(estimator.object_names_)`` (``estimator.score`` does this itself).

Comparisons are scored on squared Euclidean distances, as the estimators fit
them: a response ``(i, j, l, k)`` ("d(i, j) < d(l, k)") is *satisfied* when
``d(i, j) < d(l, k)`` strictly; a tie counts as violated.

Outlier detection (:func:`outlier_precision_recall`) has one convention:

* an edge (a distinct directed comparison) is *contaminated* when the true points
  contradict it, ``d_true(i, j) > d_true(l, k)`` (strictly; a tie is not a
  contradiction -- it has probability zero under continuous truth);
* precision = contaminated flagged edges / flagged edges, recall = contaminated
  flagged edges / contaminated edges, both over edges (not votes);
* an empty denominator gives ``nan`` (nothing flagged has no precision), never 0 or 1.

The same function scores sets of annotators (``flagged`` = suspect, ``truth`` = planted spammers).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.stats import norm

from .data import Comparisons, as_comparisons
from .data.validation import count_noun
from .model_selection import response_groups
from ._kernels import NUMPY_ORDER_MAX, satisfied_votes
from ._threads import in_blocks
from .objective import QUADRUPLET_CHUNK, quadruplet_distances


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval ``[low, high]`` at level ``confidence``."""

    value: float
    low: float
    high: float
    confidence: float

    def __iter__(self):  # value, low, high = interval
        return iter((self.value, self.low, self.high))


# -- agreement of an embedding with comparisons ----------------------------------------------------
def wilson_interval(successes, n, confidence: float = 0.95):
    """Wilson score interval for a binomial proportion ``successes / n`` (arrays allowed).

    ``n`` may be an effective (real-valued) count; ``n == 0`` gives ``(0, 1)``.
    The interval always contains ``successes / n``: at ``p = 1`` (or 0) rounding would
    otherwise put the upper (lower) end a hair inside it (0.9999999999999999).
    """
    successes, n = np.asarray(successes, float), np.asarray(n, float)
    z = norm.ppf(0.5 + confidence / 2.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, successes / n, 0.5)
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = np.where(n > 0, np.clip(np.minimum(centre - half, p), 0.0, 1.0), 0.0)
    high = np.where(n > 0, np.clip(np.maximum(centre + half, p), 0.0, 1.0), 1.0)
    return low, high


def _embedding_and_comparisons(X, comparisons) -> tuple[np.ndarray, Comparisons]:
    """``X`` as a float (n, p) array of finite coordinates with a row for every object ``comparisons`` names,
    and the comparisons; anything else raises.  The distances are read by a compiled loop without bounds
    checks: an object past the last row read other memory (a triplet error of 0.5 from 5 rows for 9 objects),
    and a NaN coordinate counted as a violated comparison."""
    comparisons = as_comparisons(comparisons)
    X = np.asarray(X, float)
    if X.ndim != 2:
        raise ValueError(f"X must be an embedding of shape (n_objects, n_components), got shape {X.shape}")
    finite = np.isfinite(X)
    if not finite.all():
        raise ValueError(f"X has {count_noun(int((~finite).sum()), 'NaN or infinite coordinate')} "
                         f"(the first in row {int(np.flatnonzero(~finite.all(axis=1))[0])})")
    if comparisons.n_objects > len(X):
        top = int(comparisons.quadruplets.max())
        if top >= len(X):
            raise ValueError(f"the comparisons name object {top}, but X has {len(X)} rows (one per object)")
    return X, comparisons


def satisfied(X, comparisons) -> np.ndarray:
    """Per response: True when the embedding ``X`` satisfies it (``d(i, j) < d(l, k)``)."""
    X, comparisons = _embedding_and_comparisons(X, comparisons)
    d_near, d_far = quadruplet_distances(X, comparisons.quadruplets)
    return d_near < d_far


def agreement(X, comparisons) -> float:
    """Weighted share of the responses that ``X`` satisfies (1 - triplet error; NaN without weight):
    the estimators' ``score`` and the self-tuning default's validation score."""
    comparisons = as_comparisons(comparisons)
    w = comparisons.weight
    return float(np.dot(w, satisfied(X, comparisons)) / w.sum()) if w.sum() > 0 else float("nan")


def edge_agreement(X, graph, edges) -> float:
    """:func:`agreement` of the responses on the edges ``edges`` of ``graph`` (whole edges, as a split by
    query holds), read through the graph's edges by a compiled loop on the fit's threads
    (:func:`~roembed._kernels.satisfied_votes`): each edge counts its votes, and no copy of the responses
    is made (the self-tuning fit's validation score; at 10^7 comparisons a copy of the
    held-out 20% took 8 bytes per comparison).  Equal to ``agreement(X, responses)`` bit for bit when the
    weights are integers (every sum is exact), else to rounding.  ``X`` may be a torch tensor (the torch
    solver's iterate, handed to its ``stop``), copied to the host."""
    if hasattr(X, "detach"):  # a torch tensor: an iterate on the torch solver's device (its ``stop``)
        X = X.detach().cpu().numpy()
    X, edges = np.asarray(X, float), np.asarray(edges)
    votes = np.asarray(graph.votes, dtype=np.float64)
    if X.shape[1] <= NUMPY_ORDER_MAX:
        X = np.ascontiguousarray(X)
        sums = in_blocks(lambda lo, hi: satisfied_votes(X, graph.pairs, graph.edge_pairs, edges, votes, lo, hi),
                         len(edges))
        total, satisfied = (float(sum(parts)) for parts in zip(*sums))
        return satisfied / total if total > 0 else float("nan")
    total = satisfied = 0.0  # long rows: NumPy's distances, by chunks of the edges
    for start in range(0, len(edges), QUADRUPLET_CHUNK):
        chunk = edges[start: start + QUADRUPLET_CHUNK]
        d_near, d_far = quadruplet_distances(X, graph.pairs[graph.edge_pairs[chunk]].reshape(len(chunk), 4))
        total += votes[chunk].sum()
        satisfied += np.dot(votes[chunk], d_near < d_far)
    return float(satisfied / total) if total > 0 else float("nan")


def stable_argsort(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")``, computed as NumPy's vectorised quicksort followed by sorting
    the positions within each run of equal values, which is all a stable sort adds: 0.028 s against
    0.090 s on 2^20 distinct doubles on the development machine (NumPy 2.4).  Where more than an eighth
    of the neighbours tie, the lexicographic pass costs more than it saves and the stable sort runs."""
    order = np.argsort(values, kind="quicksort")
    ordered = values[order]
    tied = ordered[1:] == ordered[:-1]  # position i ties with i + 1 (NaNs tie with each other, sorted last)
    if ordered.dtype.kind in "fc":
        tied |= np.isnan(ordered[1:]) & np.isnan(ordered[:-1])
    if np.count_nonzero(tied) > len(tied) // 8:  # many ties (votes, agreements): the stable sort is faster
        return np.argsort(values, kind="stable")
    if tied.any():
        run = np.cumsum(np.r_[True, ~tied])
        at = np.flatnonzero(np.r_[tied, False] | np.r_[False, tied])  # the positions in runs of ties
        order[at] = order[at][np.lexsort((order[at], run[at]))]
    return order


def weighted_median(values, weights) -> float:
    """The smallest value with at least half the total weight at or below it (the running sums of the
    weights in the order of the values).

    With whole-number weights (votes; every running sum exact) the order among equal values cannot move
    the result, so an unstable sort does; other weights keep the stable order (:func:`stable_argsort`),
    whose rounding the result depends on."""
    values, weights = np.asarray(values), np.asarray(weights, dtype=np.float64)
    exact = weights.sum() < 2.0 ** 53 and bool(np.all(np.mod(weights, 1.0) == 0.0))
    order = np.argsort(values, kind="quicksort") if exact else stable_argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order[np.searchsorted(cum, 0.5 * cum[-1])]])


def one_standard_error(errors, weights) -> tuple[int, int, np.ndarray]:
    r"""The paired one-standard-error rule (Breiman et al.) over queries: ``(chosen, best, se)``.

    ``errors`` is (queries, candidates) in order of preference (simplest first), ``weights`` one per
    query.  With :math:`\bar e_k` the weighted mean error of candidate ``k`` and ``b`` the best, the
    chosen candidate is the first with :math:`\bar e_k - \bar e_b \le \mathrm{SE}(e_{qk} - e_{qb})`,
    the standard error of the weighted mean paired difference (effective size
    :math:`(\sum_q w_q)^2 / \sum_q w_q^2`): a simpler candidate is kept unless the held-out
    queries show it worse by more than their own noise.
    """
    E = np.asarray(errors, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    mean = w @ E / w.sum()
    best = int(np.argmin(mean))
    n_eff = w.sum() ** 2 / np.sum(w ** 2)
    diff = E - E[:, [best]]
    var = (w @ (diff - (w @ diff / w.sum())) ** 2) / w.sum()
    se = np.sqrt(var / max(n_eff - 1, 1))
    return int(np.flatnonzero(mean - mean[best] <= se)[0]), best, se


def triplet_error(X, comparisons, confidence: float = 0.95, unit: str = "query") -> Interval:
    r"""Weighted share of the responses that ``X`` violates, with a Wilson interval.

    Responses that share a query are not independent (they are votes on one question),
    so the interval uses the number of *queries* as the sample size, each query
    contributing its vote-weighted error: :math:`\hat e = \sum_q w_q e_q / \sum_q w_q`,
    effective size :math:`n = (\sum_q w_q)^2 / \sum_q w_q^2`.  On distinct triplets with
    unit weights this is the plain Wilson interval of the error rate.  ``unit="object_set"`` counts
    sets of objects instead (:func:`roembed.model_selection.response_groups`): the two triplets of an
    odd-one-out answer, or the three anchors of one triple, as one observation (``roembed fit``'s
    held-out error, whose hold-out is by set); for rank trials, each trial.
    """
    if not 0.0 < confidence < 1.0:  # 2 (or NaN) gave the interval (nan, nan)
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    comparisons = as_comparisons(comparisons)
    if unit not in ("query", "object_set"):
        raise ValueError(f"unit must be 'query' or 'object_set', got {unit!r}")
    wrong = ~satisfied(X, comparisons)
    query = response_groups(comparisons, unit)
    w_q = np.bincount(query, weights=comparisons.weight)
    used = w_q > 0
    if not used.any():
        return Interval(float("nan"), 0.0, 1.0, confidence)
    err = float(np.dot(comparisons.weight, wrong) / w_q.sum())
    n_eff = w_q.sum() ** 2 / np.sum(w_q[used] ** 2)
    low, high = wilson_interval(err * n_eff, n_eff, confidence)
    return Interval(err, float(low), float(high), confidence)


def margins(X, comparisons, normalize: bool = True) -> np.ndarray:
    r"""Per response, the margin :math:`d(l, k) - d(i, j)` (squared distances): > 0 when satisfied.

    ``normalize`` divides by the mean squared distance over all pairs of objects that
    occur in the comparisons, so margins are comparable across embeddings and scales
    (a margin of -0.1 is a violation by a tenth of a typical squared distance).  Their
    distribution is the analogue of PyMDE's distortions.
    """
    X, comparisons = _embedding_and_comparisons(X, comparisons)
    d_near, d_far = quadruplet_distances(X, comparisons.quadruplets)
    m = d_far - d_near
    if normalize:
        used = X[comparisons.used_objects]
        scale = 2.0 * np.sum((used - used.mean(axis=0)) ** 2) / max(len(used) - 1, 1)  # mean pair sq. distance
        m = m / scale if scale > 0 else m
    return m


def margin_summary(X, comparisons, quantiles=(0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)) -> pd.Series:
    """Weighted quantiles of the normalised margins, and the weighted share that is negative."""
    comparisons = as_comparisons(comparisons)
    m = margins(X, comparisons)
    w = comparisons.weight
    order = stable_argsort(m)
    cum = np.cumsum(w[order]) / w.sum()
    values = {f"q{q:g}": float(m[order][min(np.searchsorted(cum, q), len(m) - 1)]) for q in quantiles}
    values["violated_share"] = float(np.dot(w, m <= 0) / w.sum())
    return pd.Series(values, name="margin")


def object_residuals(X, comparisons) -> pd.DataFrame:
    """Per object: how many responses involve it, and the weighted share of them ``X`` violates.

    A response counts once for every distinct object in it.  Columns ``object, n_responses,
    weight, violated_share, mean_violation`` (the mean of ``max(0, -margin)``, normalised as in
    :func:`margins`), indexed by object; objects without responses have NaN shares.
    """
    comparisons = as_comparisons(comparisons)
    n = comparisons.n_objects
    q = comparisons.quadruplets
    w = comparisons.weight
    m = margins(X, comparisons)
    violated = (m <= 0).astype(float)
    hinge = np.maximum(0.0, -m)
    # one incidence per distinct object of a response (a triplet's anchor appears twice)
    rows = np.repeat(np.arange(len(q)), 4)
    objs = q.reshape(-1)
    first = np.ones(len(objs), bool)
    for c in range(1, 4):
        first[c::4] = np.all(q[:, [c]] != q[:, :c], axis=1)
    rows, objs = rows[first], objs[first]

    def per_object(values):
        return np.bincount(objs, weights=values[rows], minlength=n)

    weight = per_object(w)
    with np.errstate(invalid="ignore", divide="ignore"):
        table = pd.DataFrame({
            "n_responses": np.bincount(objs, minlength=n),
            "weight": weight,
            "violated_share": per_object(w * violated) / weight,
            "mean_violation": per_object(w * hinge) / weight,
        })
    if comparisons.object_names is not None:
        table.insert(0, "name", list(comparisons.object_names))
    table.index.name = "object"
    return table


def intransitive_share(comparisons) -> float:
    r"""Share of the comparison triangles that are cyclic: a direct measure of contradictory data.

    Each query is reduced to its majority direction (ties are dropped), giving a directed
    graph on object pairs, ``p -> q`` for ``d(p) < d(q)``.  Among the triangles of pairs with
    all three comparisons answered, the share that forms a directed cycle
    (``d(p) < d(q) < d(r) < d(p)``, impossible for any distances) is returned:
    :math:`\mathrm{tr}(A^3)/3` cycles over :math:`\mathrm{tr}(U^3)/6` triangles.
    For triplets the pairs share the anchor, so these are the classic intransitive triads
    ``j < k < l < j`` around one anchor.  NaN when there is no triangle.
    """
    graph = as_comparisons(comparisons).aggregate()
    net = graph.votes - graph.opposing_votes
    keep = net > 0
    near, far = graph.edge_pairs[keep, 0], graph.edge_pairs[keep, 1]
    n_pairs = len(graph.pairs)
    A = sparse.csr_matrix((np.ones(len(near)), (near, far)), shape=(n_pairs, n_pairs))
    U = ((A + A.T) > 0).astype(float)
    cycles = (A @ A).multiply(A.T).sum() / 3.0
    triangles = (U @ U).multiply(U).sum() / 6.0
    return float(cycles / triangles) if triangles > 0 else float("nan")


# -- two embeddings ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ProcrustesFit:
    r"""The similarity transform mapping ``X`` onto ``reference``: ``scale * (X - mean) @ rotation + shift``."""

    rotation: np.ndarray
    scale: float
    mean: np.ndarray
    shift: np.ndarray

    def apply(self, X) -> np.ndarray:
        X = _pad(np.asarray(X, float), self.rotation.shape[0])
        return self.scale * (X - self.mean) @ self.rotation + self.shift


def _pad(X: np.ndarray, p: int) -> np.ndarray:
    if X.shape[1] >= p:
        return X
    return np.hstack([X, np.zeros((len(X), p - X.shape[1]))])


def procrustes(reference, X, scaling: bool = True) -> ProcrustesFit:
    r"""Orthogonal Procrustes with translation and (optionally) scaling: ``X`` onto ``reference``.

    Minimises :math:`\|s (X - \bar X) R + \bar Y - Y\|_F` over orthogonal ``R`` (reflections
    allowed: an embedding is defined up to them) and ``s > 0``; with ``U S V^T`` the SVD of
    :math:`(X - \bar X)^T (Y - \bar Y)`, :math:`R = U V^T` and
    :math:`s = \mathrm{tr}(S) / \|X - \bar X\|_F^2`.  Embeddings of different dimension are
    compared by padding the smaller with zero columns (the result lives in the larger one).
    """
    Y, X = np.asarray(reference, float), np.asarray(X, float)
    if Y.ndim != 2 or X.ndim != 2 or len(Y) != len(X):
        raise ValueError(f"embeddings of the same objects needed, got shapes {Y.shape} and {X.shape}")
    for name, Z in (("reference", Y), ("X", X)):
        if not np.isfinite(Z).all():  # was LinAlgError "SVD did not converge"
            raise ValueError(f"{name} has coordinates that are NaN or infinite "
                             f"(the first in row {int(np.flatnonzero(~np.isfinite(Z).all(axis=1))[0])})")
    p = max(Y.shape[1], X.shape[1])
    Y, X = _pad(Y, p), _pad(X, p)
    mx, my = X.mean(axis=0), Y.mean(axis=0)
    Xc, Yc = X - mx, Y - my
    U, S, Vt = np.linalg.svd(Xc.T @ Yc)
    norm2 = float(np.sum(Xc ** 2))
    scale = float(S.sum() / norm2) if scaling and norm2 > 0 else 1.0
    return ProcrustesFit(U @ Vt, scale, mx, my)


def procrustes_align(reference, X, scaling: bool = True) -> np.ndarray:
    """``X`` after the similarity transform that best maps it onto ``reference``."""
    return procrustes(reference, X, scaling).apply(X)


def procrustes_error(reference, X, scaling: bool = True) -> float:
    r"""RMS distance between the aligned ``X`` and ``reference``, relative to ``reference``'s RMS radius.

    :math:`\sqrt{\sum_i \|\hat x_i - y_i\|^2 / \sum_i \|y_i - \bar y\|^2}`: 0 for a rotated,
    reflected, shifted and (with ``scaling``) rescaled copy; 1 for an unrelated embedding
    shrunk to the centroid; NaN when every point of ``reference`` lies at one place (no radius to relate to).
    """
    Y = np.asarray(reference, float)
    aligned = procrustes_align(Y, X, scaling)
    Y = _pad(Y, aligned.shape[1])
    denom = float(np.sum((Y - Y.mean(axis=0)) ** 2))
    return float(np.sqrt(np.sum((aligned - Y) ** 2) / denom)) if denom > 0 else float("nan")


def procrustes_disparity(reference, X) -> float:
    """SciPy's symmetric Procrustes disparity (both centred and scaled to unit norm): in [0, 1].

    Equals ``scipy.spatial.procrustes(reference, X)[2]`` for equal dimensions; it is the
    squared :func:`procrustes_error` with scaling.
    """
    return procrustes_error(reference, X, scaling=True) ** 2


def knn_agreement(reference, X, k: int = 10) -> float:
    """Mean share of each object's ``k`` nearest neighbours in ``reference`` that are also among its ``k`` in ``X``.

    1 when the neighbourhoods agree exactly; about ``k / (n - 1)`` for unrelated embeddings.
    """
    return float(knn_agreement_per_object(reference, X, k).mean())


def knn_agreement_per_object(reference, X, k: int = 10) -> np.ndarray:
    """Per object, the share of its ``k`` nearest neighbours in ``reference`` kept in ``X``."""
    Y, X = np.asarray(reference, float), np.asarray(X, float)
    n = len(Y)
    if len(X) != n:
        raise ValueError(f"embeddings of the same objects needed, got {len(Y)} and {len(X)} rows")
    if not 1 <= k < n:
        raise ValueError(f"k must be in 1..{n - 1}, got {k}")
    a, b = _neighbours(Y, k), _neighbours(X, k)
    hits = (a[:, :, None] == b[:, None, :]).any(axis=2).sum(axis=1)
    return hits / k


def _neighbours(X: np.ndarray, k: int, chunk: int = 1024) -> np.ndarray:
    """(n, k) indices of each row's ``k`` nearest other rows (unordered), ``chunk`` rows at a time."""
    sq = np.sum(X ** 2, axis=1)
    out = np.empty((len(X), k), dtype=np.int64)
    for start in range(0, len(X), chunk):
        rows = np.arange(start, min(start + chunk, len(X)))
        d = sq[rows, None] + sq[None, :] - 2.0 * X[rows] @ X.T
        d[np.arange(len(rows)), rows] = np.inf
        out[rows] = np.argpartition(d, k - 1, axis=1)[:, :k]
    return out


# -- outlier detection ------------------------------------------------------------------------------
def contradicted(X_true, quadruplets) -> np.ndarray:
    """Per comparison (e.g. a graph's ``edges``): True when the true points contradict it, strictly."""
    d_near, d_far = quadruplet_distances(np.asarray(X_true, float), np.asarray(quadruplets))
    return d_near > d_far


def outlier_precision_recall(flagged, truth) -> dict:
    """Precision and recall of boolean ``flagged`` against boolean ``truth`` (see the module docstring).

    Returns ``n_flagged, n_true, true_positives, precision, recall``; NaN for an empty denominator.
    """
    flagged, truth = np.asarray(flagged, bool), np.asarray(truth, bool)
    if flagged.shape != truth.shape:
        raise ValueError(f"flagged has shape {flagged.shape} but truth has {truth.shape}")
    tp = int((flagged & truth).sum())
    n_flagged, n_true = int(flagged.sum()), int(truth.sum())
    return {"n_flagged": n_flagged, "n_true": n_true, "true_positives": tp,
            "precision": tp / n_flagged if n_flagged else float("nan"),
            "recall": tp / n_true if n_true else float("nan")}


def flags_by_vote(graph, flagged) -> dict:
    """How the flagged edges of ``graph`` stand against the opposite direction of their own query.

    With repeated votes a query's minority side is contradicted by its own majority, so an
    embedding that follows the majority flags it as a matter of course.  Returns counts of flagged
    edges: ``outvoted`` (fewer votes than the opposite edge), ``tied`` (as many) and ``majority``
    (more: here the embedding overrules the query's majority), with ``split_queries``, whether
    any query has votes both ways (without, every flag is ``majority``).
    """
    flagged = np.asarray(flagged, bool)
    if flagged.shape != (len(graph),):
        raise ValueError(f"flagged has shape {flagged.shape} but the graph has {len(graph)} edges")
    votes, opposing = graph.votes[flagged], graph.opposing_votes[flagged]
    return {"outvoted": int((votes < opposing).sum()), "tied": int((votes == opposing).sum()),
            "majority": int((votes > opposing).sum()), "split_queries": bool((graph.opposing_votes > 0).any())}


def describe_flags_by_vote(counts: dict | None) -> str:
    """:func:`flags_by_vote`'s counts in words, ``""`` when no query has votes both ways."""
    if not counts or not counts["split_queries"]:
        return ""
    return (f"{counts['outvoted']:,} outvoted within their query, {counts['tied']:,} tied, "
            f"{counts['majority']:,} with their query's majority")


def edge_outlier_scores(estimator, X_true) -> dict:
    """:func:`outlier_precision_recall` of a fitted robust estimator's flagged edges against ``X_true``."""
    truth = contradicted(X_true, estimator.graph_.edges)
    return outlier_precision_recall(estimator.outlier_mask_, truth)


def set_precision_recall(found, planted) -> dict:
    """:func:`outlier_precision_recall` for sets (e.g. suspect annotators against planted spammers)."""
    found, planted = set(found), set(planted)
    universe = sorted(found | planted, key=str)
    return outlier_precision_recall([u in found for u in universe], [u in planted for u in universe])


__all__ = ["agreement", "weighted_median", "one_standard_error", "Interval", "wilson_interval", "satisfied", "triplet_error", "margins", "margin_summary",
           "object_residuals", "intransitive_share", "ProcrustesFit", "procrustes", "procrustes_align",
           "procrustes_error", "procrustes_disparity", "knn_agreement", "knn_agreement_per_object",
           "contradicted", "outlier_precision_recall", "edge_outlier_scores", "set_precision_recall"]
