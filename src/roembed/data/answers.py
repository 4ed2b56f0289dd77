"""Answers that say several comparisons at once, as the triplets they imply.

* odd-one-out answers (:func:`from_odd_one_out`): "of a, b, c, the odd one is c" says d(a, b) < d(a, c) and
  d(b, a) < d(b, c), two triplets;
* rank trials as psiz stores them (:func:`from_rank_trials`): a query, its references, the chosen ones first; an
  8-rank-2 trial is 13 triplets.

The file readers (:mod:`roembed.data.convert`) use the odd-one-out checks for files with odd-one-out columns.
"""
from __future__ import annotations

import numpy as np

from .comparisons import Comparisons
from .validation import InvalidComparisonsError, RowLocator, _first, check_extra, check_weights, index_array

__all__ = ["from_odd_one_out", "from_rank_trials"]


# -- odd-one-out ---------------------------------------------------------------------------
def _odd_one_out_problems(shown: np.ndarray, odd: np.ndarray, odd_is: str, base: int = 0):
    """``(mask, reason)`` for bad odd-one-out rows, and the odd one's position (0..2).

    ``base``: the number of the first position in ``odd`` (0, or 1 for files that count from 1).
    """
    repeated = (shown[:, 0] == shown[:, 1]) | (shown[:, 0] == shown[:, 2]) | (shown[:, 1] == shown[:, 2])
    problems = [(repeated, "the three objects shown are not distinct")]
    if odd_is == "object":
        hit = shown == odd[:, None]
        problems.append((~hit.any(axis=1), "the odd one is not among the objects shown"))
        position = hit.argmax(axis=1)
    elif odd_is == "position":
        problems.append(((odd < base) | (odd > base + 2),
                         f"the odd-one-out position is not {base}, {base + 1} or {base + 2}"))
        position = np.clip(odd - base, 0, 2)
    else:
        raise ValueError(f"odd_is must be 'position' or 'object', got {odd_is!r}")
    return problems, position


def _odd_one_out_triplets(shown: np.ndarray, position: np.ndarray) -> np.ndarray:
    others = np.array([[1, 2], [0, 2], [0, 1]])[position]
    rows = np.arange(len(shown))
    a, b, c = shown[rows, others[:, 0]], shown[rows, others[:, 1]], shown[rows, position]
    return np.stack([np.stack([a, b, c], 1), np.stack([b, a, c], 1)], axis=1).reshape(-1, 3)


def from_odd_one_out(
    shown, odd, *, odd_is: str = "position", annotator=None, weight=None, timestamp=None,
    response_time=None, gold=None, n_objects=None, object_names=None, extra=None, where: RowLocator | None = None,
) -> Comparisons:
    """Odd-one-out answers to triplets: two triplets per answer.

    ``shown`` is (m, 3): the objects shown; ``odd`` is (m,): the 0-based position
    (``odd_is="position"``) or the object index (``odd_is="object"``) of the odd one.
    With ``a``, ``b`` the other two, the answer says d(a, b) < d(a, odd) and
    d(b, a) < d(b, odd): rows ``2r`` and ``2r + 1`` are ``(a, b, odd)`` and ``(b, a, odd)``,
    each with answer ``r``'s metadata.  With ``odd_is="position"`` both also get the odd one's position
    as their ``position`` (where on the screen the annotator clicked, when ``shown`` is in screen
    order); an odd one given as an object says nothing about the screen, so then there is none.
    A known-answer mark (``gold``) goes to both triplets: a right answer makes both right; of a wrong answer's two triplets only one is known to be wrong
    (the other compares two distances the known answer says nothing about), and both count as
    wrong, as one wrong unit, in the annotator model.
    """
    where = where or RowLocator()
    check_extra(extra)
    shown = np.asarray(shown)
    if shown.ndim != 2 or shown.shape[1] != 3:
        raise InvalidComparisonsError(f"odd-one-out answers need (m, 3) shown objects, got shape {shown.shape}")
    if len(shown) == 0:
        raise InvalidComparisonsError("no comparisons: the input is empty")
    shown = index_array(shown, where)
    odd = index_array(np.asarray(odd).reshape(-1), where, what="odd one")
    if len(odd) != len(shown):
        raise InvalidComparisonsError(f"got {len(odd)} odd-one-out answers for {len(shown)} shown triples")
    problems, position = _odd_one_out_problems(shown, odd, odd_is)
    for mask, reason in problems:
        if mask.any():
            r = _first(mask)
            raise InvalidComparisonsError(f"{where(r)}: {reason}: shown {tuple(int(v) for v in shown[r])}, "
                                          f"odd {int(odd[r])}")  # numpy 2 printed np.int64(2)
    for name, values in (("weight", weight), ("annotator", annotator), ("timestamp", timestamp),
                         ("response_time", response_time), ("gold", gold),
                         *((f"extra column {k!r}", v) for k, v in (extra or {}).items())):
        if values is not None and np.size(values) != len(shown):  # was counted in triplets, two per answer
            raise InvalidComparisonsError(f"got {np.size(values)} {name} values for {len(shown)} answers "
                                          "(one per answer)")
    if weight is not None:
        weight = check_weights(weight, len(shown), where)

    def twice(values):
        return None if values is None else np.repeat(np.asarray(values), 2)

    twice_where = where.subset(np.repeat(np.arange(len(shown)), 2))
    if where.lines is None:
        twice_where.lines = np.repeat(np.arange(len(shown)), 2)
    return Comparisons(
        _odd_one_out_triplets(shown, position), n_objects=n_objects, weight=twice(weight),
        annotator=twice(annotator), timestamp=twice(timestamp), response_time=twice(response_time),
        gold=twice(gold), position=twice(position) if odd_is == "position" else None,
        object_names=object_names, extra={k: twice(v) for k, v in (extra or {}).items()}, where=twice_where,
    )


# -- rank trials (psiz) ---------------------------------------------------------------------
def _per_trial(values, m: int, name: str):
    """``values`` (one, or one per trial) as one per trial of ``m``; None stays None."""
    if values is None:
        return None
    values = np.asarray(values)
    if values.ndim == 0:
        return np.broadcast_to(values, (m,))
    if values.shape != (m,):
        raise InvalidComparisonsError(f"{name} needs one value or one per trial ({m}), got shape {values.shape}")
    return values


def _rank_trial_arrays(stimulus_set, n_select, is_ranked, mask_zero: bool, where: RowLocator):
    """``(query, references, n_references, n_select, is_ranked)`` of psiz rank trials, each checked; references
    are 0-based object indices with -1 where a trial has fewer references than the widest."""
    shown = np.asarray(stimulus_set)
    if shown.ndim != 2 or shown.shape[1] < 3:
        raise InvalidComparisonsError(f"rank trials need (m, 1 + references) objects, at least 3 columns (a query "
                                      f"and two references), got shape {shown.shape}")
    if len(shown) == 0:
        raise InvalidComparisonsError("no comparisons: the input is empty")
    given = shown = index_array(shown, where)
    if mask_zero:  # psiz from 0.8: 0 pads a trial, objects count from 1
        shown = given - 1
    present = shown >= 0  # psiz before 0.8: any negative index pads a trial
    n_ref = present[:, 1:].sum(axis=1)
    m = len(shown)
    n_select = np.asarray(n_select)  # index_array reads rows: a scalar as one row
    n_select = _per_trial(index_array(n_select.reshape(-1), where, what="n_select").reshape(n_select.shape), m,
                          "n_select")
    ranked = np.asarray(is_ranked)
    if not (ranked.dtype == bool or ranked.dtype.kind in "iu" and np.isin(ranked, (0, 1)).all()):
        # a text ("no") or NaN was read as True
        raise InvalidComparisonsError(f"is_ranked must be True or False (one, or one per trial), got {is_ranked!r}")
    is_ranked = _per_trial(ranked.astype(bool), m, "is_ranked")
    pad = "0" if mask_zero else "a negative index"
    first_gap = np.cumsum(~present[:, 1:], axis=1) > 0
    ids = np.where(present, shown, -1)
    ordered = np.sort(ids, axis=1)
    repeated = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1)
    problems = [
        (~present[:, 0], f"the query is a placeholder ({pad})"),
        ((first_gap & present[:, 1:]).any(axis=1), f"a reference follows a placeholder ({pad}): placeholders "
                                                   "pad the end of a trial"),
        (n_ref < 2, "fewer than two references"),
        (repeated, "an object appears twice in the trial"),
        ((n_select < 1) | (n_select > n_ref), "n_select is not between 1 and the number of references"),
        ((n_select == n_ref) & ~is_ranked, "every reference chosen, unranked: the trial compares nothing"),
    ]
    for mask, reason in problems:
        if mask.any():
            r = _first(mask)
            raise InvalidComparisonsError(f"{where(r)}: {reason}: {tuple(int(v) for v in given[r])}"
                                          + (f", n_select {int(n_select[r])}" if "n_select" in reason else ""))
    return shown[:, 0], ids[:, 1:], n_ref, n_select, is_ranked


def from_rank_trials(
    stimulus_set, n_select=1, *, is_ranked=True, mask_zero: bool = False, annotator=None, weight=None,
    response_time=None, n_objects=None, object_names=None, where: RowLocator | None = None,
) -> Comparisons:
    """Rank trials, as psiz stores them: a query, its references, the chosen ones first.

    Row ``t`` of ``stimulus_set`` is ``(q, r_1, ..., r_R)``: the query, then the references shown with the
    ``s = n_select[t]`` the annotator chose first (in the order chosen when ``is_ranked``), the others after in
    any order; psiz's ``RankObservations`` (before 0.8) pads shorter trials with negative indices, ``psiz.data.Rank``
    (0.8 on) with 0 and counts objects from 1 (``mask_zero=True``).  "8-rank-2" trials (eight references, two
    chosen in order) are psiz's usual design; a "2-rank-1" trial is a triplet.

    Each chosen reference is closer to the query than every reference chosen after it (ranked trials) and every
    one not chosen: the triplets ``(q, r_a, r_b)`` for ``a <= s`` and ``a < b``, leaving out ``b <= s`` when the
    choice is unranked.  An 8-rank-2 trial gives 7 + 6 = 13 triplets, unranked 12; a 2-rank-1 trial gives one.
    These are cblearn's ``triplets_from_multiselect(stimulus_set, n_select, is_ranked)``, in its order.
    Rows are trial by trial, in the order of ``(a, b)``; each triplet carries its trial's ``annotator``,
    ``weight`` and ``response_time`` (psiz's ``agent_id``, ``weight`` and ``rt_ms``), and its row of
    ``stimulus_set`` as ``extra["trial"]``.  The triplets of one trial compare different objects, so a split by
    query puts some in training and others in validation, where the fit has seen the choice that answers them;
    the splits by object set (``groups="object_set"``: ``roembed fit --holdout``, ``select_dimension``,
    ``RobustOrdinalEmbeddingCV``'s folds) hold out whole trials instead, read from ``extra["trial"]``
    (:func:`roembed.model_selection.trial_ids`).  The annotator tests count each triplet
    as a unit of evidence, though a trial's triplets share one choice (measured on simulated crowds of 8-rank-2
    trials, 20 honest annotators and 5 choosing at random, 40 trials each, eight seeds: no honest annotator
    suspected, 39 of 40 random ones found at the larger noise, 40 of 40 at the smaller).

    ``n_select`` and ``is_ranked`` are one value or one per trial.
    """
    where = where or RowLocator()
    query, refs, n_ref, n_select, is_ranked = _rank_trial_arrays(stimulus_set, n_select, is_ranked, mask_zero, where)
    a, b = np.triu_indices(refs.shape[1], k=1)  # every pair of reference positions, a < b
    keep = ((a[None, :] < n_select[:, None]) & (b[None, :] < n_ref[:, None])
            & (is_ranked[:, None] | (b[None, :] >= n_select[:, None])))
    trial, pair = np.nonzero(keep)
    triplets = np.stack([query[trial], refs[trial, a[pair]], refs[trial, b[pair]]], axis=1)
    if weight is not None:
        weight = check_weights(weight, len(query), where)[trial]
    per_trial = where.subset(trial)
    if where.lines is None:
        per_trial.lines = trial
    annotator = _per_trial(annotator, len(query), "annotator")
    response_time = _per_trial(response_time, len(query), "response_time")
    return Comparisons(
        triplets, n_objects=n_objects, weight=weight,
        annotator=None if annotator is None else annotator[trial],
        response_time=None if response_time is None else response_time[trial],
        object_names=object_names, extra={"trial": trial}, where=per_trial,
    )
