"""Solvers: each minimises an :class:`~roembed.objective.EdgeObjective` in one parametrisation."""
from .lbfgs import SolverResult, minimize_embedding
from .projected_gradient import minimize_gram

__all__ = ["SolverResult", "minimize_embedding", "minimize_gram"]
