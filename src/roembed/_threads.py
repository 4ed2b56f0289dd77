"""Threads per fit, whatever runs the fits (serial, joblib processes, Dask workers)."""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

import numba
from threadpoolctl import ThreadpoolController


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # finding the BLAS libraries costs ~30 ms: once per process


@contextmanager
def limit_threads(n: int):
    """Runs BLAS, OpenMP and the objective's own threads (numba's thread count, which
    :func:`roembed.objective.default_threads` reads; numba keeps it per calling thread) with
    ``n`` threads.  Without the last, every fit of a sweep used all cores however many workers
    ran: one Dask worker already took both cores of the 2-core machine, and two workers were no
    faster (25.2 s and 25.6 s for 20 bootstrap replicates)."""
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        with _controller().limit(limits=n):
            yield
    finally:
        numba.set_num_threads(previous)
