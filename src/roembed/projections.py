"""Constraint sets and projections on Gram matrices, and the orientation every fitted map is returned in."""
from __future__ import annotations

import numpy as np
from scipy.linalg import eigh


def _sym(G: np.ndarray) -> np.ndarray:
    return 0.5 * (G + G.T)


def project_psd(G: np.ndarray) -> np.ndarray:
    """Frobenius projection onto the PSD cone: negative eigenvalues set to 0."""
    vals, vecs = np.linalg.eigh(_sym(G))
    vals = np.maximum(vals, 0.0)
    return (vecs * vals) @ vecs.T


def top_eigenpairs(G: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``rank`` LARGEST eigenvalues of symmetric ``G`` (descending) and their vectors.

    ``eigh`` returns ascending eigenvalues; taking the first ``rank`` of them (as the
    authors' MATLAB reference does) would keep the smallest ones.
    """
    n = G.shape[0]
    rank = min(int(rank), n)
    vals, vecs = eigh(_sym(G), subset_by_index=[n - rank, n - 1])
    return vals[::-1], vecs[:, ::-1]


def project_psd_rank(G: np.ndarray, rank: int) -> np.ndarray:
    """Projection onto PSD matrices of rank at most ``rank`` (top eigenpairs, clipped at 0)."""
    vals, vecs = top_eigenpairs(G, rank)
    vals = np.maximum(vals, 0.0)
    return (vecs * vals) @ vecs.T


def embedding_from_gram(G: np.ndarray, rank: int) -> np.ndarray:
    """``X`` (n x rank) with ``X X^T`` the best rank-``rank`` PSD approximation of ``G``."""
    vals, vecs = top_eigenpairs(G, rank)
    return vecs * np.sqrt(np.maximum(vals, 0.0))


def orient_embedding(X) -> np.ndarray:
    """``X`` (n x p) centred and turned to its principal axes: column 1 the direction of most spread, and each
    axis signed so that the sum of the cubed coordinates is positive (the longer tail on the positive side).

    The objective of every loss reads only distances, so a fit is defined up to a rotation, a reflection and
    (without a ridge) a translation, and the solver's start picks one: fits from two seeds that found the same
    minimum were drawn as two different pictures.  Fixing the orientation makes them one, and makes the first two
    coordinates the principal plane a map of more than two dimensions is drawn on.  Distances are unchanged (up to
    rounding); a map with non-finite coordinates is returned as it is.
    Why the cubes: a sign read from every object moves less between two fits of nearly the same map than one
    read from the farthest object (scikit-learn's ``svd_flip`` rule), where two objects at the ends of an axis
    lie about as far out.  Pairs of default fits from different seeds (music at p = 2, six seeds; four synthetic
    crowds at p = 2, four seeds each; 39 pairs): the signs matched the pair's best alignment in 38 with the cubes,
    34 with the farthest object, 35 with a fixed weighting of the objects by number (sixty-sixth session)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or not np.isfinite(X).all():
        return X
    return (X - X.mean(axis=0)) @ principal_axes(X)


def principal_axes(X) -> np.ndarray:
    """The (p, p) orthonormal basis :func:`orient_embedding` turns ``X`` (n x p, finite) to: the principal axes
    of the centred map by decreasing spread, each signed so that the cubed coordinates along it sum positive."""
    centred = np.asarray(X, dtype=np.float64) - np.mean(X, axis=0)
    axes = np.linalg.svd(centred, full_matrices=False)[2].T
    return axes * np.where(((centred @ axes) ** 3).sum(axis=0) < 0, -1.0, 1.0)


def center_gram(G: np.ndarray) -> np.ndarray:
    """``J G J`` with ``J = I - 11^T/n``: distances are unchanged, the embedding is centred."""
    G = G - G.mean(axis=0, keepdims=True)
    return G - G.mean(axis=1, keepdims=True)
