"""Iteration observers: who hears about solver progress (progress bars, verbose printing).

Solvers call one ``callback(iteration, value)``; :func:`roembed.solvers.solve` is the
only place that turns it into the user's callback plus every observer registered
with :func:`observe_iterations`.  Estimators that run several solves in one fit (restarts, the
candidates of a tuning, a final fit) name each with :func:`phase`, which observers read with
:func:`current_phase`: a progress line then says which solve its objective belongs to.
"""
from __future__ import annotations

import contextlib
import contextvars

_OBSERVERS: contextvars.ContextVar = contextvars.ContextVar("roembed_iteration_observers", default=())
_PHASE: contextvars.ContextVar = contextvars.ContextVar("roembed_fit_phase", default="")


@contextlib.contextmanager
def observe_iterations(observer):
    """Calls ``observer(iteration, value)`` after every iteration of every
    :func:`~roembed.solvers.solve` run inside the block (used by progress bars)."""
    token = _OBSERVERS.set(_OBSERVERS.get() + (observer,))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


@contextlib.contextmanager
def phase(label: str):
    """Names the solves run inside the block (``"restarts"``, ``"choosing t-STE, vote"``, ``"final fit"``)."""
    token = _PHASE.set(label)
    try:
        yield
    finally:
        _PHASE.reset(token)


def current_phase() -> str:
    """The label of the innermost :func:`phase` block, ``""`` outside any."""
    return _PHASE.get()


def reporter(callback=None):
    """One ``(iteration, value)`` callback calling ``callback`` and the active observers (None if neither)."""
    listeners = ((callback,) if callback is not None else ()) + _OBSERVERS.get()
    if not listeners:
        return None

    def report(iteration, value):
        for listener in listeners:
            listener(iteration, value)
    return report
