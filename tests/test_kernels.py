"""The compiled edge loops against NumPy, including the prefetch of rows ``PREFETCH_AHEAD`` edges ahead."""
import numpy as np
import pytest

from roembed._kernels import (PREFETCH_AHEAD, PREFETCH_MIN_BYTES, edge_distance_adjoint, edge_sq_distances,
                              prefetch_ahead)


def _reference(X, objects, g_near, g_far):
    i, j, l, k = objects.T
    d_near = ((X[i] - X[j]) ** 2).sum(1)
    d_far = ((X[l] - X[k]) ** 2).sum(1)
    grad = np.zeros_like(X)
    u = 2 * g_near[:, None] * (X[i] - X[j])
    v = 2 * g_far[:, None] * (X[l] - X[k])
    np.add.at(grad, i, u)
    np.add.at(grad, j, -u)
    np.add.at(grad, l, v)
    np.add.at(grad, k, -v)
    return d_near, d_far, grad


@pytest.mark.parametrize("ahead", [0, PREFETCH_AHEAD, 1])
@pytest.mark.parametrize("p", [1, 3, 10])
@pytest.mark.parametrize("layout", ["contiguous", "strided objects", "fortran X"])
def test_edge_loops_match_numpy_up_to_the_last_edge(p, layout, ahead):
    """Blocks that end at the last edge (where the prefetch would look past it) and blocks in the middle."""
    rng = np.random.default_rng(p)
    n, m = 30, 4 * PREFETCH_AHEAD + 5
    X = rng.normal(size=(n, p))
    objects = rng.integers(0, n, size=(2 * m if layout == "strided objects" else m, 4))
    if layout == "strided objects":
        objects = objects[::2]
    if layout == "fortran X":
        X = np.asfortranarray(X)
    g_near, g_far = rng.normal(size=m), rng.normal(size=m)
    for start, stop in [(0, m), (m - 3, m), (m - PREFETCH_AHEAD - 1, m), (5, 5 + PREFETCH_AHEAD), (m, m)]:
        d_near, d_far = np.empty(stop - start), np.empty(stop - start)
        edge_sq_distances(X, objects, start, d_near, d_far, ahead)
        grad = np.zeros_like(X)
        edge_distance_adjoint(X, objects, start, g_near[start:stop], g_far[start:stop], grad, ahead)
        ref_near, ref_far, ref_grad = _reference(X, objects[start:stop], g_near[start:stop], g_far[start:stop])
        np.testing.assert_allclose(d_near, ref_near, rtol=1e-12)
        np.testing.assert_allclose(d_far, ref_far, rtol=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-12, atol=1e-12)


def test_only_embeddings_beyond_the_caches_are_prefetched():
    rows = PREFETCH_MIN_BYTES // 80
    assert prefetch_ahead(np.zeros((rows - 1, 10))) == 0
    assert prefetch_ahead(np.zeros((rows + 1, 10))) == PREFETCH_AHEAD
