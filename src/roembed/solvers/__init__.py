"""Solvers: each minimises an :class:`~roembed.objective.EdgeObjective` in one parametrisation."""
from .lbfgs import SolverResult, minimize_embedding
from .projected_gradient import minimize_gram

__all__ = ["SolverResult", "minimize_embedding", "minimize_gram"]


def __getattr__(name):
    """``minimize_embedding_torch`` is imported lazily (torch is an optional extra)."""
    if name == "minimize_embedding_torch":
        from .torch_lbfgs import minimize_embedding_torch

        return minimize_embedding_torch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
