"""The paper's music-artist protocol (aset400 triplets, van der Maaten & Weinberger 2012).

Per trial the 9,090 valid triplets (9,107 rows minus the 17 that repeat an
artist) are split at random into 5,000 training, 2,000 validation and the rest
(2,090) test triplets; the embedding has ``p = 9`` dimensions.  Contamination
model ``flip``: a fraction ``q`` of the *training* triplets is reversed (the
paper's 25% setting); validation and test stay as collected.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..data import Comparisons, canonical_quadruplets
from .synthetic import Split


def read_music(path) -> Comparisons:
    """The aset400 triplets from a folder; :func:`roembed.data.datasets.load_music` when available."""
    try:
        from ..data.datasets import load_music
    except ImportError:  # loader not installed: read the CSV and drop rows that repeat an object
        import pandas as pd

        t = pd.read_csv(Path(path) / "music_triplets_0based.csv")[["anchor", "closer", "farther"]]
        t = t.to_numpy(np.int64)
        keep = (t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2])
        return Comparisons(t[keep])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the 17 dropped rows are expected
        return load_music(path)


@lru_cache(maxsize=4)
def _cached_music(path: str) -> Comparisons:
    return read_music(path)


@lru_cache(maxsize=4)
def _fingerprint(path: str) -> str:
    """The first 16 hex digits of the SHA-256 of the music triplets as read (object indices, row order)."""
    quadruplets = np.ascontiguousarray(_cached_music(path).quadruplets, dtype=np.int64)
    return hashlib.sha256(quadruplets.tobytes()).hexdigest()[:16]


def edge_keys(canonical: np.ndarray, n_objects: int) -> np.ndarray:
    """One integer per canonical quadruplet (exact while ``n_objects**4 < 2**63``)."""
    q = np.asarray(canonical, dtype=np.int64)
    n = n_objects
    return ((q[:, 0] * n + q[:, 1]) * n + q[:, 2]) * n + q[:, 3]


@dataclass(frozen=True)
class MusicProtocol:
    """Music artists: random 5,000 / 2,000 / rest split per trial, p = 9, model ``flip``."""

    path: str
    n_train: int = 5000
    n_validation: int = 2000
    n_components: int = 9
    name: str = "music"
    models: tuple = ("flip",)

    def load(self):
        """The music triplets (read once per process); a folder without them raises FileNotFoundError."""
        return _cached_music(str(self.path))

    def settings(self) -> dict:
        """What fixes a trial's data besides the seed and the cell: the split sizes and the triplets, by content
        (the same file in another folder resumes a store; an edited one does not)."""
        fields = {k: v for k, v in asdict(self).items() if k not in ("path", "name", "models")}
        return {**fields, "data_sha256": _fingerprint(str(self.path))}

    def draw(self, model: str, rate: float, seed: int) -> Split:
        if model != "flip":
            raise ValueError(f"the music protocol has one contamination model, 'flip'; got {model!r}")
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"contamination rate must be in [0, 1], got {rate}")
        data = self.load()
        if self.n_train + self.n_validation >= len(data):
            raise ValueError(f"only {len(data)} music triplets for {self.n_train} + {self.n_validation}")
        rng = np.random.RandomState(seed)
        order = rng.permutation(len(data))
        n_flip = int(round(rate * self.n_train))
        flip_rows = rng.permutation(self.n_train)[:n_flip]
        train = data[order[: self.n_train]].flipped(flip_rows)
        n = data.n_objects
        flipped_keys = edge_keys(canonical_quadruplets(train.quadruplets[flip_rows]), n)

        def wrong_edge(quads):
            return np.isin(edge_keys(quads, n), flipped_keys)

        validation = data[order[self.n_train: self.n_train + self.n_validation]]
        test = data[order[self.n_train + self.n_validation:]]
        return Split(train, validation, test, wrong_edge, n_flip)
