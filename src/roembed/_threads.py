"""Threads per fit, whatever runs the fits (serial, joblib processes, Dask workers)."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from functools import lru_cache

import numba
import numpy as np
from threadpoolctl import ThreadpoolController


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # finding the BLAS libraries costs ~30 ms: once per process


def blas_limit(n: int | None):
    """A context capping the BLAS threads at ``n`` (None: no cap), through the process's one controller.
    ``threadpoolctl.threadpool_limits`` looks the libraries up again on every call (about 3 ms): 37 solves
    of a default fit on the THINGS data spent 0.11 of 2.0 s there."""
    return nullcontext() if n is None else _controller().limit(limits=int(n), user_api="blas")


@contextmanager
def limit_threads(n: int):
    """Runs BLAS, OpenMP and the objective's own threads (numba's thread count, which
    :func:`default_threads` reads; numba keeps it per calling thread) with
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


_POOL: list = [None, 0]


def _pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of at least ``workers`` threads (grown, never shrunk: callers submit as many jobs
    as they want threads, and a pool rebuilt for each count joined its threads at every change)."""
    if _POOL[1] < workers:
        if _POOL[0] is not None:
            _POOL[0].shutdown()
        _POOL[:] = [ThreadPoolExecutor(workers, thread_name_prefix="roembed-objective"), workers]
    return _POOL[0]


def _forget_pool() -> None:
    """In a forked child the pool's threads do not exist: a job submitted to the inherited pool would
    wait forever (it did: 2 Dask workers forked from a process that had fitted, both stuck in their
    first fit).  The child starts a pool of its own on first use."""
    _POOL[:] = [None, 0]


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere processes are spawned, not forked
    os.register_at_fork(after_in_child=_forget_pool)


def default_threads() -> int:
    """Threads of the compiled loops over edges: numba's thread count (``NUMBA_NUM_THREADS``, or what
    :func:`limit_threads` set), at most the cores this process may run on."""
    return max(1, min(numba.get_num_threads(), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else numba.get_num_threads()))


BLOCK_ROWS = 1 << 16
"""Fewest rows per thread of :func:`in_blocks`."""


def block_bounds(n: int, threads: int | None = None, min_rows: int | None = None) -> list[int]:
    """``[0, ..., n]``: the ends of :func:`in_blocks`'s contiguous blocks of ``range(n)``, one per thread (at
    most :func:`default_threads`, each at least ``min_rows`` rows)."""
    min_rows = BLOCK_ROWS if min_rows is None else min_rows
    threads = max(1, min(threads or default_threads(), n // max(int(min_rows), 1)))
    return np.linspace(0, n, threads + 1).astype(np.int64).tolist()


def in_blocks(fn, n: int, threads: int | None = None, min_rows: int | None = None) -> list:
    """``[fn(lo, hi), ...]`` over the blocks ``[lo, hi)`` of :func:`block_bounds`, each in a thread of the
    pool, in order.  For compiled loops that release the GIL (numba's ``nogil``): the host-side passes over
    every edge of a fit (validation scores, margins, shifts, the edges' objects) on all the fit's threads."""
    bounds = block_bounds(n, threads, min_rows)
    if len(bounds) == 2:
        return [fn(0, n)]
    jobs = [_pool(len(bounds) - 1).submit(fn, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
    return [job.result() for job in jobs]
