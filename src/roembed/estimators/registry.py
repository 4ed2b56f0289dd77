"""The one table of estimators, read by the command line, the experiments runner and the benchmarks.

``ESTIMATORS`` maps a short name to ``"module:Class"`` (imported only when asked for).
Every estimator follows one fitted-attribute contract (checked in
``tests/estimators/test_contract.py``):

* all: ``embedding_`` (n_objects x n_components), ``n_iter_`` (int), ``objective_``
  (a float: the final objective), ``history_`` (1-d array: the objective per iteration),
  ``graph_``, ``n_objects_``, ``object_names_``;
* robust ones (:data:`ROBUST`) also: ``gamma_`` and ``outlier_mask_`` (one per edge of
  ``graph_``), ``outliers_`` (a table of the flagged comparisons) and, when the responses
  carry annotator ids, ``annotators_``.
"""
from __future__ import annotations

import importlib

ESTIMATORS = {
    "robust": "roembed.estimators.robust:RobustOrdinalEmbedding",
    "robust-cv": "roembed.estimators.robust:RobustOrdinalEmbeddingCV",
    "roe": "roembed.estimators.roe:ROE",
    "soe": "roembed.estimators.competitors:SOE",
    "gnmds": "roembed.estimators.competitors:GNMDS",
    "ste": "roembed.estimators.competitors:STE",
    "tste": "roembed.estimators.competitors:TSTE",
    "ckl": "roembed.estimators.competitors:CKL",
    "two-stage": "roembed.estimators.two_stage:TwoStageEmbedding",
}
#: estimators that report outliers (``gamma_``, ``outlier_mask_``, ``outliers_``, ``annotators_``)
ROBUST = ("robust", "robust-cv", "roe")
#: the attributes every fitted estimator has
FITTED = ("embedding_", "n_iter_", "objective_", "history_", "graph_", "n_objects_", "object_names_")
FITTED_ROBUST = ("gamma_", "outlier_mask_", "outliers_")


def estimator_class(name: str):
    """The class registered as ``name`` (``KeyError`` naming the registered ones otherwise)."""
    try:
        target = ESTIMATORS[name]
    except KeyError:
        raise KeyError(f"unknown estimator {name!r}; registered: {', '.join(ESTIMATORS)}") from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


__all__ = ["ESTIMATORS", "ROBUST", "FITTED", "FITTED_ROBUST", "estimator_class"]
