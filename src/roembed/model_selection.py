"""Splitting comparisons for validation: always by *query*, never by response.

A query is an unordered comparison: both directions of ``d(i, j) < d(l, k)`` and
every vote on them (:attr:`roembed.data.ComparisonGraph.response_query`).  A split
by response puts votes of one query on both sides, so validation rewards
memorising the training votes; every split in roembed (cross-validation, the
CLI's hold-out, the benchmarks) goes through this module instead.  Grouping by
annotator (``groups="annotator"``) keeps each person's answers on one side; grouping by
the objects compared (``groups="object_set"``) keeps every comparison among the same objects on
one side, so a held-out comparison asks about objects no training comparison asks about together.

The objects matter for odd-one-out answers: one answer is two triplets, ``(a, b, odd)`` and
``(b, a, odd)``, two queries, and a split by query holds out one half of an answer while the fit
sees the other.  On the THINGS set (20,000 answers on 1,000 triples; default fit at p = 2,
hold-out seeds 101-103) the held-out error was 0.28 by query, 0.25 by answer and 0.48-0.51 by
object set: by query the score measured the halves of answers the fit had seen, and on new triples the
map is no better than chance.  Rank trials (:func:`~roembed.data.from_rank_trials`) compare different sets in
one answer: the grouping by object set holds out whole trials for them (:func:`response_groups`).  On
triplets asked one query at a time the two splits agree within their noise (music, p = 2, seeds 4001-4003:
0.202-0.217 by query, 0.205-0.227 by object set).  The CLI's ``--holdout``, which measures and chooses nothing,
holds out by object set, as
:func:`roembed.dimension.select_dimension`'s folds and :class:`~roembed.RobustOrdinalEmbeddingCV`'s (an integer
``cv``) do; the tuning keeps its query split (by set it chose worse on THINGS and no better on simulated
odd-one-out answers: docs/tried.md).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ._factorize import factorize
from .data import Comparisons, as_comparisons, distinct_values
from .data.validation import InvalidComparisonsError, count_noun

GROUPINGS = ("query", "annotator", "object_set")
_NOUNS = {"query": ("query group", None), "annotator": ("annotator group", None),
          "object_set": ("set of objects", "sets of objects"), None: ("given group", None)}


def _groups_counted(n: int, groups) -> str:
    """``"3 query groups"``, ``"1 set of objects"``: ``n`` groups of kind ``groups`` (an array: given ones)."""
    return count_noun(n, *_NOUNS[groups if isinstance(groups, str) else None])


def response_groups(comparisons: Comparisons, groups="query") -> np.ndarray:
    """An integer group id per response: its query, its annotator, the set of objects it compares
    (:func:`object_sets`; for rank trials, whose triplets compare different sets, its trial: :func:`trial_ids`),
    or ``groups`` itself when it is an array of one id per response (e.g. a graph's ``response_query``, which
    saves aggregating again).

    Why the trial: an 8-rank-2 trial is 13 triplets over 13 sets of objects with one choice behind them, and a
    split by set held some out while the fit saw the rest.  Simulated 8-rank-2 trials (30 objects at p = 2, 300
    trials, Plackett-Luce choices; default fit on 80%, seeds 5001-5008): the held-out error by set was 0.030
    (standard error 0.006) below the error on new trials, by trial 0.006 (0.006) above.  Trials and sets
    together (a trial's sets, and every trial asking about one of them, as one group) made one group of the
    3,900 triplets: over 30 objects most sets recur in other trials."""
    if not isinstance(groups, str):
        ids = np.asarray(groups)
        if ids.shape != (len(comparisons),):
            raise ValueError(f"groups has shape {ids.shape}, expected one id per response ({len(comparisons)},)")
        return ids
    if groups == "query":
        return comparisons.aggregate().response_query
    if groups == "annotator":
        if comparisons.annotator is None:
            raise InvalidComparisonsError("groups='annotator' needs annotator ids")
        return distinct_values(comparisons.annotator.astype(str))[1]
    if groups == "object_set":
        trials = trial_ids(comparisons)
        return object_sets(comparisons) if trials is None else trials
    raise ValueError(f"groups must be one of {GROUPINGS}, got {groups!r}")


def object_sets(comparisons: Comparisons) -> np.ndarray:
    """Per response, an id of the set of distinct objects it compares: a triplet's three (whatever its anchor),
    a quadruplet's four; responses share an id exactly when they compare the same objects."""
    quads = np.sort(comparisons.quadruplets, axis=1)
    repeated = np.zeros_like(quads, dtype=bool)
    repeated[:, 1:] = quads[:, 1:] == quads[:, :-1]
    distinct = np.sort(np.where(repeated, -1, quads), axis=1)  # a triplet (i, j, i, k): -1, i, j, k sorted
    return pd.DataFrame(distinct).groupby(list(range(4)), sort=False).ngroup().to_numpy()


def trial_ids(comparisons: Comparisons) -> np.ndarray | None:
    """Per response, an integer id of the trial it came from, where ``extra["trial"]`` names trials of several
    triplets each (as :func:`~roembed.data.from_rank_trials` records them): triplets whose trial ids each hold
    one anchor (and one annotator, where there are annotator ids), some of them more than one triplet.  None
    otherwise: a column called "trial" read from a file may number the trials of each session, shared by every
    participant (different anchors under one id), and one trial per triplet groups less than the sets of
    objects do.  Trials of two :func:`~roembed.data.from_rank_trials` calls joined by ``Comparisons.concat``
    share their numbers: number the second call's on to keep them apart,
    ``second.with_extra(trial=second.extra["trial"] + len(first_trials))``."""
    trial = comparisons.extra.get("trial")
    if trial is None or len(comparisons) == 0 or not comparisons.is_triplet:
        return None
    ids = factorize(np.asarray(trial))[0]
    if (ids < 0).any() or np.bincount(ids).max() < 2:  # a missing trial id; one triplet per trial
        return None
    same = [comparisons.quadruplets[:, 0]]
    if comparisons.annotator is not None:
        same.append(factorize(comparisons.annotator.astype(str))[0])
    order = np.argsort(ids, kind="stable")
    run = ids[order][1:] == ids[order][:-1]  # consecutive responses of one trial id
    for values in same:
        if (values[order][1:] != values[order][:-1])[run].any():
            return None
    return ids


def distinct_ids(ids: np.ndarray) -> np.ndarray:
    """``np.unique(ids)``; for non-negative integer ids (queries, annotator codes) through a table of
    which ids occur, in linear time (10^7 query ids: 9 s in ``np.unique``'s sort on one core)."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu" or len(ids) == 0 or ids.min() < 0 or ids.max() > 4 * len(ids):
        return np.unique(ids)
    present = np.zeros(int(ids.max()) + 1, dtype=bool)
    present[ids] = True
    return np.flatnonzero(present).astype(ids.dtype, copy=False)


class GroupedKFold:
    """K folds of whole groups (queries by default), in a seeded random order.

    A scikit-learn splitter over :class:`~roembed.data.Comparisons`: ``split(X)`` yields
    ``(train_rows, test_rows)``; groups are dealt to folds in a shuffled order, so folds
    differ in size by at most one group.
    """

    def __init__(self, n_splits: int = 3, *, groups: str = "query", random_state=None):
        self.n_splits = n_splits
        self.groups = groups
        self.random_state = random_state

    def __repr__(self) -> str:  # as scikit-learn's splitters print
        return f"GroupedKFold(n_splits={self.n_splits}, groups={self.groups!r}, random_state={self.random_state!r})"

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        return self.n_splits

    def split(self, X, y=None, groups=None):
        comparisons = as_comparisons(X, y)
        ids = response_groups(comparisons, self.groups)
        unique, inverse = np.unique(ids, return_inverse=True)
        if not isinstance(self.n_splits, (int, np.integer)) or self.n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2, got {self.n_splits!r}")
        if len(unique) < self.n_splits:
            raise InvalidComparisonsError(
                f"{_groups_counted(len(unique), self.groups)} cannot fill {self.n_splits} folds")
        fold_of_group = np.empty(len(unique), dtype=np.int64)
        order = _generator(self.random_state).permutation(len(unique))
        fold_of_group[order] = np.arange(len(unique)) % self.n_splits
        fold = fold_of_group[inverse.reshape(-1)]
        rows = np.arange(len(comparisons))
        for f in range(self.n_splits):
            yield rows[fold != f], rows[fold == f]


def _generator(random_state) -> np.random.Generator:
    """``np.random.default_rng(random_state)`` on every NumPy this package supports: a ``RandomState`` (scikit-learn's
    usual ``random_state``) is wrapped as NumPy 2 wraps it, a ``Generator`` over its bit generator, drawing on (and
    advancing) the same stream; NumPy 1.26's ``default_rng`` refuses it."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.Generator(random_state._bit_generator)
    return np.random.default_rng(random_state)


def holdout_mask(comparisons: Comparisons, fraction: float, random_state=None, groups="query") -> np.ndarray:
    """A boolean mask of the held-out responses: a seeded ``fraction`` of the groups (queries by default),
    held out whole.

    ``groups``: ``"query"``, ``"annotator"``, ``"object_set"`` or one group id per response (see
    :func:`response_groups`).

    Raises ``InvalidComparisonsError`` when the fraction rounds to no group or to all of them.
    """
    ids = response_groups(comparisons, groups)
    unique = distinct_ids(ids)
    n_held = int(round(fraction * len(unique)))
    if n_held < 1 or n_held >= len(unique):
        raise InvalidComparisonsError(
            f"a hold-out of {fraction:g} of {_groups_counted(len(unique), groups)} leaves "
            f"{'nothing held out' if n_held < 1 else 'nothing to train on'}")
    held = _generator(random_state).choice(unique, size=n_held, replace=False)
    return _members(ids, held)


def _members(ids: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """``np.isin(ids, chosen)``; for non-negative integer ids of a small range through a table of the chosen
    ones (10^8 query ids: 2.7 s in ``np.isin``)."""
    if ids.dtype.kind not in "iu" or len(ids) == 0 or ids.min() < 0 or ids.max() > 4 * len(ids):
        return np.isin(ids, chosen)
    table = np.zeros(int(ids.max()) + 1, dtype=bool)
    table[chosen] = True
    return table[ids]


def holdout_split(comparisons: Comparisons, fraction: float, random_state=None, groups="query"):
    """``(train, held_out)``: the responses outside and inside :func:`holdout_mask`."""
    mask = holdout_mask(comparisons, fraction, random_state, groups)
    return comparisons[~mask], comparisons[mask]


__all__ = ["GroupedKFold", "holdout_mask", "holdout_split", "object_sets", "response_groups", "trial_ids",
           "GROUPINGS"]
