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


def _plus_one(x):
    return x + 1.0


def _plus_two(x):
    return x + 2.0


def test_kernels_cache_in_a_private_temp_folder_where_numba_finds_no_folder(tmp_path, monkeypatch):
    """A read-only install run by a user without a writable home (as containers run): numba's ``cache=True``
    raised at import ("no locator available"), so roembed could not be imported.  ``compiled`` caches in the
    temporary folder instead, only in one this user owns and no one else can write (the cache holds pickles),
    and leaves numba's setting for other packages as it was."""
    import os
    import tempfile

    import numba
    from numba.core import caching, config

    from roembed._kernels import compiled

    user_provided = caching.CacheImpl._locator_classes[0]  # numba.config.CACHE_DIR's (named with "_" before 0.61)
    assert user_provided.__name__.endswith("UserProvidedCacheLocator")
    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [user_provided])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = config.CACHE_DIR
    with pytest.raises(RuntimeError, match="no locator available"):
        numba.njit(cache=True)(_plus_one)  # what numba alone does there

    kernel = compiled()(_plus_one)
    folder = tmp_path / f"roembed-numba-{os.getuid()}"
    assert kernel(1.0) == 2.0 and config.CACHE_DIR == before
    assert kernel._cache._cache_path.startswith(str(folder))
    assert list(folder.rglob("*.nbi")) and folder.stat().st_mode & 0o777 == 0o700  # compiled once, kept

    folder.chmod(0o777)  # another user could plant a cache there: compiled uncached instead
    other = compiled()(_plus_two)
    assert other(1.0) == 3.0 and isinstance(other._cache, caching.NullCache)
    assert not list(folder.rglob("*_plus_two*"))
