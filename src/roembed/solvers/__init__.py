"""Solvers: each minimises an :class:`~roembed.objective.EdgeObjective` in one parametrisation.

:func:`solve` with the registry ``SOLVERS`` is the one entry point the estimators use (and :func:`shifts`
the outlier shifts at an embedding, on the solver's backend).
"""
from .lbfgs import SolverResult, minimize_embedding
from .progress import observe_iterations
from .projected_gradient import minimize_gram
from .registry import SOLVERS, STOPPABLE, shifts, solve

__all__ = ["SOLVERS", "STOPPABLE", "SolverResult", "minimize_embedding", "minimize_gram", "observe_iterations",
           "shifts", "solve"]


def __getattr__(name):
    """``minimize_embedding_torch`` is imported lazily (torch is an optional extra)."""
    if name == "minimize_embedding_torch":
        from .torch_lbfgs import minimize_embedding_torch

        return minimize_embedding_torch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
