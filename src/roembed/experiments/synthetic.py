"""The paper's synthetic protocol and the contamination models.

Simulation of Ma, Xu & Cao (2019): ``n = 100`` points in ``R^10`` drawn from
``N(0, I/20)``; every triplet query ``(i, {j, k})`` is labelled by the true
distances; 10,000 of them train, 10,000 validate and the rest (about 465,000)
test.  Each training triplet is answered ``s`` times, ``s`` uniform in 15..50.

Contamination models (rate ``q``); the paper's text is ambiguous, so all are offered:

``vote``
    every training vote is flipped independently with probability ``q``.
``majority``
    a fraction ``q`` of the training triplets get a random majority of their
    votes flipped (more than half, at most all).
``unanimous``
    a fraction ``q`` of the training triplets get all their votes flipped;
    local majority voting cannot detect these.
``spammers``
    votes are spread over ``n_annotators`` annotators; a fraction ``q`` of the
    annotators are spammers, half answering at random and half always flipping.

Votes are always spread uniformly over annotators, so every model has annotator
ids.  The ground truth (which votes were flipped, which annotators spam) is kept.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from .._random import as_random_state
from ..data import Comparisons
from ..data.validation import count_noun
from ..estimators.base import check_param
from ..metrics import contradicted

CONTAMINATION_MODELS = ("vote", "majority", "unanimous", "spammers")


def all_triplet_queries(n: int) -> np.ndarray:
    """Every query ``(i, j, k)`` with ``j < k`` and ``i`` not in ``{j, k}``: ``n (n-1)(n-2)/2`` rows."""
    j, k = np.triu_indices(n, 1)
    i = np.repeat(np.arange(n), len(j))
    jj, kk = np.tile(j, n), np.tile(k, n)
    keep = (i != jj) & (i != kk)
    return np.stack([i[keep], jj[keep], kk[keep]], axis=1)


def label_triplets(X: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Orders each query ``(i, j, k)`` so that ``j`` is the true closer object."""
    i, j, k = queries.T
    closer = ((X[i] - X[j]) ** 2).sum(1) <= ((X[i] - X[k]) ** 2).sum(1)
    return np.where(closer[:, None], queries, queries[:, [0, 2, 1]])


@dataclass
class SyntheticData:
    """One draw of the synthetic protocol.

    ``train`` holds every vote as a response (with annotator ids); the other
    fields are ground truth for evaluation.
    """

    X_true: np.ndarray
    train: Comparisons
    validation: Comparisons
    test: Comparisons
    train_triplets: np.ndarray  # (n_train, 3) distinct true triplets
    vote_triplet: np.ndarray  # (n_votes,) index into train_triplets of each vote
    flipped: np.ndarray  # (n_votes,) bool: the vote disagrees with the truth
    spammers: np.ndarray  # annotator ids that are spammers (empty unless model='spammers')
    model: str
    rate: float

    @property
    def triplet_majority_flipped(self) -> np.ndarray:
        """(n_train,) bool: most votes of the training triplet disagree with the truth."""
        n = len(self.train_triplets)
        flips = np.bincount(self.vote_triplet, weights=self.flipped, minlength=n)
        votes = np.bincount(self.vote_triplet, minlength=n)
        return flips > votes / 2

    def __repr__(self) -> str:  # the dataclass's repr printed every array (thousands of lines in a notebook)
        n, p = self.X_true.shape
        spam = f", {count_noun(len(self.spammers), 'spammer')}" if len(self.spammers) else ""
        return (f"SyntheticData({n} objects in {p} dimensions, model={self.model!r}, rate={self.rate:g}: "
                f"train {self.train!r} ({int(self.flipped.sum())} of {len(self.flipped)} votes flipped{spam}), "
                f"validation {self.validation!r}, test {self.test!r})")


def make_synthetic(
    n_objects: int = 100,
    dim: int = 10,
    n_train: int = 10_000,
    n_validation: int = 10_000,
    votes: tuple[int, int] = (15, 50),
    rate: float = 0.0,
    model: str = "vote",
    n_annotators: int = 100,
    n_test: int | None = None,
    random_state=None,
) -> SyntheticData:
    """Draws the synthetic protocol with contamination ``model`` at ``rate``.

    ``n_test=None`` keeps every remaining query as test data (the paper's setting).
    """
    if model not in CONTAMINATION_MODELS:
        raise ValueError(f"unknown contamination model {model!r}; choose one of {CONTAMINATION_MODELS}")
    check_param("rate", rate)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"contamination rate must be in [0, 1], got {rate}")
    # each was numpy's words ("high <= 0", "low >= high", "negative dimensions are not allowed") or went through:
    # dim=0 put every object at one point, votes=(1.5, 2) drew whole votes from a fraction
    for name, value, low in (("n_objects", n_objects, 3), ("dim", dim, 1), ("n_train", n_train, 1),
                             ("n_validation", n_validation, 1), ("n_annotators", n_annotators, 1)):
        check_param(name, value, low=low, integer=True)
    if n_test is not None:
        check_param("n_test", n_test, low=1, integer=True)
    if np.ndim(votes) != 1 or len(votes) != 2:
        raise ValueError(f"votes must be a pair (fewest, most) of votes per training triplet, got {votes!r}")
    for value in votes:
        check_param("votes", value, low=1, integer=True)
    if votes[0] > votes[1]:
        raise ValueError(f"votes must be (fewest, most) with fewest <= most, got {tuple(votes)}")
    rng = as_random_state(random_state)
    X = rng.standard_normal((n_objects, dim)) / np.sqrt(20.0)
    queries = all_triplet_queries(n_objects)
    if n_train + n_validation >= len(queries):
        raise ValueError(
            f"only {len(queries)} triplet queries for n_objects={n_objects}, and n_train + n_validation = "
            f"{n_train + n_validation} must leave some for the test set: lower n_train or n_validation"
        )
    order = rng.permutation(len(queries))
    train = label_triplets(X, queries[order[:n_train]])
    val = label_triplets(X, queries[order[n_train:n_train + n_validation]])
    test_idx = order[n_train + n_validation:]
    if n_test is not None:
        test_idx = test_idx[:n_test]
    test = label_triplets(X, queries[test_idx])

    lo, hi = votes
    n_votes = rng.randint(lo, hi + 1, size=n_train)
    vote_triplet = np.repeat(np.arange(n_train), n_votes)
    annotator = rng.randint(n_annotators, size=len(vote_triplet))
    flipped = np.zeros(len(vote_triplet), dtype=bool)
    spammers = np.array([], dtype=np.int64)
    first_vote = np.concatenate([[0], np.cumsum(n_votes)[:-1]])

    if model == "vote":
        flipped = rng.random_sample(len(vote_triplet)) < rate
    elif model in ("majority", "unanimous"):
        chosen = rng.permutation(n_train)[: int(round(rate * n_train))]
        for t in chosen:  # one draw per chosen triplet (<= n_train iterations, off the hot path)
            s = n_votes[t]
            k = s if model == "unanimous" else rng.randint(s // 2 + 1, s + 1)
            flipped[first_vote[t] + rng.permutation(s)[:k]] = True
    else:  # spammers
        spammers = np.sort(rng.permutation(n_annotators)[: int(round(rate * n_annotators))])
        kind = rng.random_sample(len(spammers)) < 0.5  # True: random answers, False: always flip
        is_random = np.isin(annotator, spammers[kind])
        is_flipper = np.isin(annotator, spammers[~kind])
        flipped = is_flipper | (is_random & (rng.random_sample(len(vote_triplet)) < 0.5))

    votes_arr = train[vote_triplet]
    votes_arr[flipped] = votes_arr[flipped][:, [0, 2, 1]]
    return SyntheticData(
        X_true=X,
        train=Comparisons(votes_arr, n_objects=n_objects, annotator=annotator),
        validation=Comparisons(val, n_objects=n_objects),
        test=Comparisons(test, n_objects=n_objects),
        train_triplets=train,
        vote_triplet=vote_triplet,
        flipped=flipped,
        spammers=spammers,
        model=model,
        rate=float(rate),
    )


@dataclass
class Split:
    """One trial of a protocol: train / validation / test comparisons and the contamination truth."""

    train: Comparisons
    validation: Comparisons
    test: Comparisons
    wrong_edge: Callable[[np.ndarray], np.ndarray]  # canonical quadruplets (E, 4) -> bool: contradicts the truth
    n_contaminated: int  # contaminated training votes


@dataclass(frozen=True)
class SyntheticProtocol:
    """The paper's simulation as a runner protocol (see :func:`make_synthetic`); shrink it for quick runs."""

    n_objects: int = 100
    dim: int = 10
    n_train: int = 10_000
    n_validation: int = 10_000
    n_test: int | None = None
    votes: tuple = (15, 50)
    n_annotators: int = 100
    name: str = "synthetic"
    models: tuple = CONTAMINATION_MODELS

    @property
    def n_components(self) -> int:
        return self.dim

    def settings(self) -> dict:
        """What fixes a trial's data besides the seed and the cell (every field but the name and the models): a
        result store is resumed only under the same settings (:meth:`ResultStore.check_settings`)."""
        return {k: v for k, v in asdict(self).items() if k not in ("name", "models")}

    def draw(self, model: str, rate: float, seed: int) -> Split:
        data = make_synthetic(self.n_objects, self.dim, self.n_train, self.n_validation, self.votes, rate, model,
                              self.n_annotators, self.n_test, random_state=seed)
        X = data.X_true

        def wrong_edge(quads):
            return contradicted(X, quads)

        return Split(data.train, data.validation, data.test, wrong_edge, int(data.flipped.sum()))
