"""BLAS threads per fit, whatever runs the fits (serial, joblib processes, Dask workers)."""
from __future__ import annotations

from functools import lru_cache

from threadpoolctl import ThreadpoolController


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # finding the BLAS libraries costs ~30 ms: once per process


def limit_threads(n: int):
    """A context manager running BLAS (and OpenMP) with ``n`` threads."""
    return _controller().limit(limits=n)
