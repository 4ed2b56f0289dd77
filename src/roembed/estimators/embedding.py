r"""Embedding by minimising a comparison loss: the shared core of the estimators.

``LossEmbedding`` minimises

.. math::  \frac{1}{\sum_c w_c} \sum_c w_c\, \psi_c(s_c(X)) \;+\; \alpha \|X\|_F^2

over the embedding ``X`` (factored solver, L-BFGS), where ``w_c`` are the votes
of edge ``c`` of the comparison graph (real-valued weights enter the gradient;
rows are never repeated), ``s_c`` the loss's margin and ``psi_c`` the loss's
penalty, optionally with outlier caps (the robust estimators).  Subclasses
choose the loss (``_loss``) and the caps (``_outlier_caps``).
"""
from __future__ import annotations

import numpy as np

from ..data import ComparisonGraph
from ..losses import Loss
from ..objective import PairDistances
from ..solvers import minimize_embedding
from .base import OrdinalEmbedding, check_param, edge_objective, random_embedding


class LossEmbedding(OrdinalEmbedding):
    """Base for estimators defined by a loss; not used directly.

    Subclasses call ``super().__init__`` from an ``__init__`` that lists their
    parameters explicitly (scikit-learn reads the signature).
    """

    def __init__(self, n_components=2, *, alpha=0.0, max_iter=1000, tol=1e-9, random_state=None, verbose=0):
        self.n_components = n_components
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.verbose = verbose

    # -- hooks ---------------------------------------------------------------
    def _loss(self) -> Loss:  # pragma: no cover - abstract
        raise NotImplementedError

    def _outlier_caps(self, graph: ComparisonGraph):
        """Per-edge caps ``kappa_c`` (None: plain loss)."""
        return None

    def _check_params(self) -> None:
        super()._check_params()
        check_param("alpha", self.alpha, low=0)
        check_param("max_iter", self.max_iter, low=1, integer=True)
        check_param("tol", self.tol, low=0)

    # -- fitting -------------------------------------------------------------
    def _objective(self, graph: ComparisonGraph):
        total = graph.votes.sum()
        if total <= 0:
            raise ValueError("all comparison weights are zero")
        return edge_objective(graph, self._loss(), graph.votes / total, self._outlier_caps(graph),
                              getattr(self, "two_sided", False))

    def _initial_embedding(self, graph: ComparisonGraph) -> np.ndarray:
        return random_embedding(graph.n_objects, self.n_components, self.random_state)

    def _fit_graph(self, graph: ComparisonGraph) -> None:
        objective = self._objective(graph)
        distances = PairDistances(graph.pairs, graph.n_objects)
        result = minimize_embedding(objective, distances, self._initial_embedding(graph), alpha=self.alpha,
                                    max_iter=self.max_iter, tol=self.tol)
        self._store_result(result.solution, result, objective, distances)

    def _store_result(self, X, result, objective, distances) -> None:
        self.embedding_ = X
        self.objective_ = result.objective
        self.n_iter_ = result.n_iter
        self.history_ = np.asarray(result.history)
