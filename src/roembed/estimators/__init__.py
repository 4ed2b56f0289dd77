"""Estimators: thin compositions of a loss, a parametrisation and a solver."""
from .base import OrdinalEmbedding
from .competitors import CKL, GNMDS, SOE, STE, TSTE
from .embedding import LossEmbedding
from .robust import RobustOrdinalEmbedding, RobustOrdinalEmbeddingCV
from .roe import ROE
from .two_stage import TwoStageEmbedding

__all__ = ["OrdinalEmbedding", "LossEmbedding", "GNMDS", "CKL", "STE", "TSTE", "SOE", "TwoStageEmbedding",
           "RobustOrdinalEmbedding", "RobustOrdinalEmbeddingCV", "ROE"]
