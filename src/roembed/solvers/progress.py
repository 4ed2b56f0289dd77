"""Iteration observers: who hears about solver progress (progress bars, verbose printing).

Solvers call one ``callback(iteration, value)``; :func:`roembed.solvers.solve` is the
only place that turns it into the user's callback plus every observer registered
with :func:`observe_iterations`.
"""
from __future__ import annotations

import contextlib
import contextvars

_OBSERVERS: contextvars.ContextVar = contextvars.ContextVar("roembed_iteration_observers", default=())


@contextlib.contextmanager
def observe_iterations(observer):
    """Calls ``observer(iteration, value)`` after every iteration of every
    :func:`~roembed.solvers.solve` run inside the block (used by progress bars)."""
    token = _OBSERVERS.set(_OBSERVERS.get() + (observer,))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


def reporter(callback=None):
    """One ``(iteration, value)`` callback calling ``callback`` and the active observers (None if neither)."""
    listeners = ((callback,) if callback is not None else ()) + _OBSERVERS.get()
    if not listeners:
        return None

    def report(iteration, value):
        for listener in listeners:
            listener(iteration, value)
    return report
