"""Solvers: each minimises an :class:`~roembed.objective.EdgeObjective` in one parametrisation."""
from .lbfgs import SolverResult, minimize_embedding

__all__ = ["SolverResult", "minimize_embedding"]
