"""Tiny, fast estimators and protocols for the experiment-runner tests (not a test module)."""
from __future__ import annotations

import numpy as np

from roembed.estimators.base import OrdinalEmbedding, edge_objective, random_embedding
from roembed.experiments import SyntheticProtocol
from roembed.losses import get_loss
from roembed.objective import PairDistances
from roembed.solvers import minimize_embedding

TINY = SyntheticProtocol(n_objects=12, dim=2, n_train=150, n_validation=80, n_test=300, votes=(1, 3),
                         n_annotators=6, name="tiny")

FITS: list[tuple] = []  # (random_state, alpha) of every fit in this process


class TinySOE(OrdinalEmbedding):
    """Squared-hinge embedding, few L-BFGS steps: fast enough for many cells."""

    def __init__(self, n_components=2, *, alpha=0.0, random_state=None):
        self.n_components = n_components
        self.alpha = alpha
        self.random_state = random_state

    def _fit_graph(self, graph):
        FITS.append((self.random_state, self.alpha))
        objective = edge_objective(graph, get_loss("squared_hinge"), graph.votes / graph.votes.sum())
        distances = PairDistances(graph.pairs, graph.n_objects)
        X0 = random_embedding(graph.n_objects, self.n_components, self.random_state, scale=0.1)
        self.embedding_ = minimize_embedding(objective, distances, X0, alpha=self.alpha, max_iter=60).solution


class TinyFlagger(TinySOE):
    """TinySOE that flags the edges outvoted by their reverse (a local-majority outlier detector)."""

    def _fit_graph(self, graph):
        super()._fit_graph(graph)
        self.outlier_mask_ = graph.opposing_votes > graph.votes


class Warning_(TinySOE):
    """TinySOE whose every fit warns twice the same way, and once about its trial's data."""

    def _fit_graph(self, graph):
        import warnings

        for _ in range(2):
            warnings.warn("always said", UserWarning)
        warnings.warn(f"{len(graph)} edges", RuntimeWarning)
        super()._fit_graph(graph)


class Broken(TinySOE):
    def _fit_graph(self, graph):
        raise ValueError("this method always fails")


class Interrupting(TinySOE):
    """Raises KeyboardInterrupt on the fit number ``STOP_AFTER`` (counted over the process)."""

    STOP_AFTER = [None]
    calls = [0]

    def _fit_graph(self, graph):
        Interrupting.calls[0] += 1
        if Interrupting.STOP_AFTER[0] is not None and Interrupting.calls[0] > Interrupting.STOP_AFTER[0]:
            raise KeyboardInterrupt("simulated interruption")
        super()._fit_graph(graph)


def true_error_rate(comparisons, X) -> float:
    from roembed.objective import quadruplet_distances

    d_near, d_far = quadruplet_distances(X, comparisons.quadruplets)
    return float(np.mean(d_near > d_far))
