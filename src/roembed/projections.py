"""Constraint sets and projections on Gram matrices."""
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


def center_gram(G: np.ndarray) -> np.ndarray:
    """``J G J`` with ``J = I - 11^T/n``: distances are unchanged, the embedding is centred."""
    G = G - G.mean(axis=0, keepdims=True)
    return G - G.mean(axis=1, keepdims=True)
