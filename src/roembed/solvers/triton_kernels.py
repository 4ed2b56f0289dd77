"""The torch solver's two passes over the edges as Triton kernels, for CUDA devices (Triton ships with
PyTorch's CUDA builds; imported only there).

Eager torch gathers the four rows of every edge into ``(chunk, p)`` temporaries, subtracts, squares and
sums in separate kernels, and scatters through four ``index_add_`` calls: about a dozen passes over
``p``-wide arrays.  Here one kernel reads each edge's four object ids, gathers their rows (the embedding is
small enough to stay in the L2 cache) and writes the two squared distances; after the loss (torch, on
per-edge scalars) a second kernel gathers the rows again and adds ``+-2 g (x_a - x_b)`` to the gradient
rows with atomic adds.  Per edge, memory traffic is the ids, two distances and two slopes.  The atomic adds
make the gradient's summation order vary from run to run (as ``index_add_`` does on CUDA); a deterministic
solve uses the eager path.
"""
from __future__ import annotations

import triton
import triton.language as tl

BLOCK_WIDTH = 2048
"""Elements per program (``BLOCK_E * BLOCK_P``): ``BLOCK_E`` edges of ``BLOCK_P >= p`` coordinates."""


@triton.jit
def _edge_rows(Q, n_edges, p, stride, BLOCK_E: tl.constexpr, BLOCK_P: tl.constexpr):
    """This program's edges ``e`` (those that exist: ``live``), the coordinates ``c`` (``cell``: the
    (edge, coordinate) pairs that exist) and the offsets of the rows of each edge's four objects."""
    e = tl.program_id(0) * BLOCK_E + tl.arange(0, BLOCK_E)
    live = e < n_edges
    c = tl.arange(0, BLOCK_P)
    cell = live[:, None] & (c < p)[None, :]
    q = Q + e.to(tl.int64) * 4
    i = tl.load(q, mask=live, other=0).to(tl.int64) * stride
    j = tl.load(q + 1, mask=live, other=0).to(tl.int64) * stride
    l = tl.load(q + 2, mask=live, other=0).to(tl.int64) * stride
    k = tl.load(q + 3, mask=live, other=0).to(tl.int64) * stride
    return e, live, c, cell, i, j, l, k


@triton.jit
def _difference(X, a, b, c, cell):
    """``x_a - x_b`` for each edge's rows ``a``, ``b`` (zero outside ``cell``)."""
    return tl.load(X + a[:, None] + c[None, :], mask=cell, other=0.0) - tl.load(X + b[:, None] + c[None, :],
                                                                                mask=cell, other=0.0)


@triton.jit
def _distances_kernel(X, Q, d_near, d_far, n_edges, p, stride, BLOCK_E: tl.constexpr, BLOCK_P: tl.constexpr):
    e, live, c, cell, i, j, l, k = _edge_rows(Q, n_edges, p, stride, BLOCK_E, BLOCK_P)
    u = _difference(X, i, j, c, cell)
    v = _difference(X, l, k, c, cell)
    tl.store(d_near + e, tl.sum(u * u, axis=1), mask=live)
    tl.store(d_far + e, tl.sum(v * v, axis=1), mask=live)


@triton.jit
def _adjoint_kernel(X, Q, g_near, g_far, G, n_edges, p, stride, BLOCK_E: tl.constexpr, BLOCK_P: tl.constexpr):
    e, live, c, cell, i, j, l, k = _edge_rows(Q, n_edges, p, stride, BLOCK_E, BLOCK_P)
    u = _difference(X, i, j, c, cell) * (2.0 * tl.load(g_near + e, mask=live, other=0.0))[:, None]
    v = _difference(X, l, k, c, cell) * (2.0 * tl.load(g_far + e, mask=live, other=0.0))[:, None]
    tl.atomic_add(G + i[:, None] + c[None, :], u, mask=cell, sem="relaxed")
    tl.atomic_add(G + j[:, None] + c[None, :], -u, mask=cell, sem="relaxed")
    tl.atomic_add(G + l[:, None] + c[None, :], v, mask=cell, sem="relaxed")
    tl.atomic_add(G + k[:, None] + c[None, :], -v, mask=cell, sem="relaxed")


def _blocks(X, n_edges: int):
    block_p = triton.next_power_of_2(X.shape[1])
    block_e = max(BLOCK_WIDTH // block_p, 16)
    return (triton.cdiv(n_edges, block_e),), block_e, block_p


def edge_sq_distances(X, q):
    """As :func:`roembed.solvers.torch_lbfgs.edge_sq_distances`: ``X`` (n, p) contiguous, ``q`` (E, 4)
    contiguous object ids."""
    d_near = X.new_empty(q.shape[0])
    d_far = X.new_empty(q.shape[0])
    grid, block_e, block_p = _blocks(X, q.shape[0])
    _distances_kernel[grid](X, q, d_near, d_far, q.shape[0], X.shape[1], X.stride(0), BLOCK_E=block_e,
                            BLOCK_P=block_p)
    return d_near, d_far


def edge_adjoint(X, q, g_near, g_far, grad):
    """As :func:`roembed.solvers.torch_lbfgs.edge_adjoint` (``grad`` contiguous, updated in place)."""
    grid, block_e, block_p = _blocks(X, q.shape[0])
    g_near = g_near.to(X.dtype).expand(q.shape[0]).contiguous()
    g_far = g_far.to(X.dtype).expand(q.shape[0]).contiguous()
    _adjoint_kernel[grid](X, q, g_near, g_far, grad, q.shape[0], X.shape[1], X.stride(0), BLOCK_E=block_e,
                          BLOCK_P=block_p)
    return grad
