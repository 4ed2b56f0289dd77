"""What every robust estimator reports about outliers, in one place.

A robust estimator sets one outlier shift ``gamma_c`` per edge of its comparison
graph; ``gamma_c != 0`` flags edge ``c``.  This mixin turns that into the
fitted attributes users read: ``gamma_``, ``outlier_mask_``, ``outliers_`` (a
table of flagged edges with votes, annotators and gamma) and, when the
responses carry annotator ids, ``annotators_``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted


class OutlierReportMixin:
    """Mixin for estimators with per-edge outlier shifts; call ``_store_outliers(gamma)`` in fit."""

    def _store_outliers(self, gamma: np.ndarray, threshold: float = 0.0) -> None:
        """Stores ``gamma_`` and flags edges with ``|gamma_c| > threshold``.  An edge whose responses all weigh 0
        in the data given (``graph_.votes``) counts for nothing, so it has no answer to explain: its shift is 0
        (read at the map's margin anyway, a contradicted one was flagged and listed in outliers.csv until the
        seventy-first session).  Responses an estimator weighed down itself (the annotator stage's) stay
        flagged as their shifts say."""
        gamma = np.where(np.asarray(self.graph_.votes) > 0, np.asarray(gamma, dtype=np.float64), 0.0)
        self.gamma_ = gamma
        self.outlier_mask_ = np.abs(gamma) > threshold
        flagged = np.flatnonzero(self.outlier_mask_)
        flagged = flagged[np.argsort(-np.abs(gamma[flagged]), kind="stable")]  # largest |gamma| first
        table = self.graph_.edge_table(flagged)
        table["gamma"] = gamma[flagged]
        self.outliers_ = table

    def outlier_responses(self) -> pd.DataFrame:
        """The raw responses that sit on flagged edges, with their edge and gamma."""
        check_is_fitted(self, "gamma_")
        graph = self.graph_
        rows = np.flatnonzero(self.outlier_mask_[graph.response_edge])
        df = graph.comparisons[rows].to_frame()  # the flagged rows alone, not a frame of every response
        df.insert(0, "response", rows)
        df["edge"] = graph.response_edge[rows]
        df["gamma"] = self.gamma_[df["edge"].to_numpy()]
        return df.reset_index(drop=True)

    @property
    def annotators_(self) -> pd.DataFrame:
        """Per-annotator reliability (see :func:`roembed.annotators.annotator_reliability`)."""
        check_is_fitted(self, "gamma_")
        if self.graph_.comparisons.annotator is None:
            raise AttributeError("annotators_ needs comparisons with annotator ids")
        from ..annotators import annotator_reliability

        return annotator_reliability(self)
