"""Compiled loops over object pairs (numba): the hot spots of the factored solvers.

With ``P`` object pairs, NumPy would gather ``X[a] - X[b]`` into a ``(P, p)``
temporary and scatter the gradient back through a sparse product.  These loops
read rows of ``X`` (small, so cached) and allocate nothing per pair: at 10^6
triplets (``P`` about 2 * 10^6, p = 10) one distance-and-gradient evaluation
took about 60 ms instead of 250 ms (profiled), and the whole robust fit of
``benchmarks/bench_scale.py`` 14.4 s instead of 37.6 s.

Compiled on first use and cached on disk (numba's ``cache=True``).
"""
from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def pair_sq_distances(X, a, b, out):
    """``out[k] = ||X[a[k]] - X[b[k]]||^2``; returns ``out``."""
    p = X.shape[1]
    for k in range(a.shape[0]):
        i, j = a[k], b[k]
        total = 0.0
        for c in range(p):
            t = X[i, c] - X[j, c]
            total += t * t
        out[k] = total
    return out


@numba.njit(cache=True, nogil=True)
def pair_distance_adjoint(X, a, b, g, out):
    """Adds ``2 g[k] (x_a - x_b)`` to ``out[a[k]]`` and subtracts it from ``out[b[k]]``; returns ``out``.

    With ``d_k = ||x_a - x_b||^2`` this is ``sum_k g_k dd_k/dX``, the gradient of
    ``F`` given ``g = dF/dd``.
    """
    p = X.shape[1]
    for k in range(a.shape[0]):
        i, j = a[k], b[k]
        w = 2.0 * g[k]
        for c in range(p):
            t = w * (X[i, c] - X[j, c])
            out[i, c] += t
            out[j, c] -= t
    return out
