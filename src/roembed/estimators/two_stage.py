r"""The "traditional" two-stage pipeline: clean the comparisons, then embed.

Stage 1, majority voting.  For every comparison the direction with more votes
wins: edge ``c`` of the comparison graph is kept when ``w_c > w_c-bar`` and
counts once (weight 1) afterwards; the outvoted direction is removed
(``"minority"``) and a comparison whose two directions have equal votes is
dropped entirely (``"tie"``).

Stage 2, cycle removal.  The kept comparisons form a directed graph on object
pairs, with an arc ``(i, j) -> (l, k)`` for ``d(i, j) < d(l, k)``; a cycle is a
set of comparisons no embedding can satisfy.  Keeping the largest acyclic
subgraph (maximum acyclic subgraph, NP-hard) is approximated by the greedy
ordering of Eades, Lin & Smyth (1993, "A fast and effective heuristic for the
feedback arc set problem"): repeatedly move every sink to the back of the
order and every source to the front; when neither exists, move the vertex
with the largest ``outdegree - indegree`` to the front (lowest index on ties).
Arcs that point backwards in the final order are removed (``"cycle"``); the
rest is acyclic by construction and keeps at least half of the arcs.

Stage 3: any estimator is fitted to what is left.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import clone

from ..data import ComparisonGraph, Comparisons
from .base import OrdinalEmbedding, check_param
from .competitors import SOE


def majority_vote(graph: ComparisonGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean masks over ``graph``'s edges: ``(kept, minority, tie)``."""
    votes, opposing = graph.votes, graph.opposing_votes
    kept = votes > opposing
    return kept, votes < opposing, votes == opposing


def _gather(indptr: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """Positions ``indptr[v] .. indptr[v+1]-1`` for all ``v`` in ``vertices``, concatenated."""
    starts, lengths = indptr[vertices], indptr[vertices + 1] - indptr[vertices]
    total = int(lengths.sum())
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return offsets + np.arange(total)


def eades_lin_smyth_order(n_vertices: int, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """A vertex order with few backward arcs (Eades-Lin-Smyth greedy heuristic).

    Sinks (and sources) are removed in batches, which gives the same order
    class as removing them one at a time since no arc joins two of them.
    Vectorised over the arcs; the loop runs once per batch.
    """
    source, target = np.asarray(source, np.int64), np.asarray(target, np.int64)
    out_deg = np.bincount(source, minlength=n_vertices)
    in_deg = np.bincount(target, minlength=n_vertices)
    by_source, by_target = np.argsort(source, kind="stable"), np.argsort(target, kind="stable")
    out_ptr = np.concatenate([[0], np.cumsum(out_deg)])
    in_ptr = np.concatenate([[0], np.cumsum(in_deg)])
    arc_alive = np.ones(len(source), dtype=bool)
    alive = np.ones(n_vertices, dtype=bool)
    front, back = [], []
    while alive.any():
        batch = np.flatnonzero(alive & (out_deg == 0))
        if len(batch):
            back.append(batch)
        else:
            batch = np.flatnonzero(alive & (in_deg == 0))
            if len(batch) == 0:
                delta = np.where(alive, out_deg - in_deg, np.iinfo(np.int64).min)
                batch = np.array([int(np.argmax(delta))])
            front.append(batch)
        alive[batch] = False
        arcs = np.concatenate([by_source[_gather(out_ptr, batch)], by_target[_gather(in_ptr, batch)]])
        arcs = np.unique(arcs[arc_alive[arcs]])
        arc_alive[arcs] = False
        out_deg -= np.bincount(source[arcs], minlength=n_vertices)
        in_deg -= np.bincount(target[arcs], minlength=n_vertices)
    return np.concatenate(front + back[::-1]).astype(np.int64)


def feedback_arcs(n_vertices: int, source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Boolean mask of the arcs whose removal leaves the graph acyclic (backward in the ELS order)."""
    position = np.empty(n_vertices, dtype=np.int64)
    position[eades_lin_smyth_order(n_vertices, source, target)] = np.arange(n_vertices)
    return position[np.asarray(source)] >= position[np.asarray(target)]


class TwoStageEmbedding(OrdinalEmbedding):
    """Majority voting, then cycle removal, then ``estimator``.

    Parameters
    ----------
    n_components : int
        Embedding dimension; set on the estimator.
    estimator : OrdinalEmbedding or None
        Fitted on the cleaned comparisons (cloned; its ``n_components`` and
        ``random_state`` are set from this wrapper).  Default :class:`SOE`.
    remove_cycles : bool
        Run stage 2 (otherwise majority voting only).
    random_state : int, RandomState, Generator or None

    Attributes
    ----------
    graph_ : ComparisonGraph of the raw responses.
    estimator_ : the fitted estimator.
    comparisons_ : Comparisons that reached stage 3 (one row per kept edge, weight 1, or the edge's
        ``copies`` when a bootstrap drew its query several times).
    kept_edges_ : indices into ``graph_``'s edges of those rows.
    removed_ : DataFrame of removed edges (``graph_.edge_table`` plus ``stage`` in
        ``{"minority", "tie", "cycle"}``).
    n_minority_, n_ties_, n_cycle_ : int
        Edges removed as outvoted, comparisons dropped as ties, edges removed to break cycles.
    """

    def __init__(self, n_components=2, *, estimator=None, remove_cycles=True, random_state=None):
        self.n_components = n_components
        self.estimator = estimator
        self.remove_cycles = remove_cycles
        self.random_state = random_state

    def _check_params(self) -> None:
        if isinstance(self.n_components, OrdinalEmbedding):  # TwoStageEmbedding(SOE(2)), as a pipeline is built
            raise ValueError(f"TwoStageEmbedding's first argument is n_components, got {self.n_components!r}; pass "
                             "the estimator of stage 3 by name: TwoStageEmbedding(n_components, estimator=...)")
        super()._check_params()
        if self.estimator is not None and not isinstance(self.estimator, OrdinalEmbedding):
            raise ValueError(f"estimator must be a roembed OrdinalEmbedding, got {self.estimator!r}")
        if not isinstance(self.remove_cycles, (bool, np.bool_)):
            raise ValueError(f"remove_cycles must be True or False, got {self.remove_cycles!r}")
        check_param("n_components", self.n_components, low=1, integer=True)

    def _fit_graph(self, graph: ComparisonGraph) -> None:
        kept, minority, tie = majority_vote(graph)
        stage = np.full(len(graph), "", dtype=object)
        stage[minority], stage[tie] = "minority", "tie"
        edges = np.flatnonzero(kept)
        if self.remove_cycles and len(edges):
            near, far = graph.edge_pairs[edges, 0], graph.edge_pairs[edges, 1]
            backward = feedback_arcs(len(graph.pairs), near, far)
            stage[edges[backward]] = "cycle"
            edges = edges[~backward]
        if len(edges) == 0:
            raise ValueError("no comparisons left after majority voting and cycle removal")
        removed = np.flatnonzero(stage != "")
        table = graph.edge_table(removed)
        table["stage"] = stage[removed]
        self.removed_ = table
        self.n_minority_ = int(minority.sum())
        self.n_ties_ = int((tie & ((graph.reverse_edge < 0) | (np.arange(len(graph)) < graph.reverse_edge))).sum())
        self.n_cycle_ = int((stage == "cycle").sum())
        self.kept_edges_ = edges
        self.comparisons_ = Comparisons(graph.edges[edges], weight=graph.copies[edges], n_objects=graph.n_objects,
                                        object_names=graph.object_names)  # a query drawn twice counts twice
        base = self.estimator if self.estimator is not None else SOE()
        self.estimator_ = clone(base).set_params(n_components=self.n_components, random_state=self.random_state)
        self.estimator_.fit(self.comparisons_)
        self.embedding_ = self.estimator_.embedding_
        for key in ("n_iter_", "objective_", "history_"):  # the fitted-attribute contract of every estimator
            setattr(self, key, getattr(self.estimator_, key))
