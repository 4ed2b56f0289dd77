r"""How many dimensions: held-out error per dimension, by grouped cross-validation.

:func:`select_dimension` fits ``estimator`` with ``n_components = p`` on the training
folds of :class:`~roembed.model_selection.GroupedKFold` (whole sets of objects per fold:
every comparison among the same objects, ``groups="object_set"``) for
``p = 1, 2, ...`` and scores the held-out responses.  Every query is held out exactly
once, so each dimension gets one held-out error :math:`e_q(p)` per query (vote-weighted
over its responses), and dimensions are compared *paired by query*.

Rule (``rule="1se"``, the one-standard-error rule of Breiman et al., paired): let
:math:`p^*` minimise the mean held-out error :math:`\bar e(p)`; choose the smallest
``p`` with

.. math::  \bar e(p) - \bar e(p^*) \le \mathrm{SE}\big(e_q(p) - e_q(p^*)\big),

the standard error of the mean paired difference over queries (weights: the queries'
votes, effective size :math:`(\sum_q w_q)^2/\sum_q w_q^2`).  A smaller model is kept
unless the data show it is worse by more than their own noise.  ``rule="min"`` returns
:math:`p^*`.

Why sets of objects: by query (until the seventieth session) an odd-one-out answer's two
triplets fell in different folds, and the fold that scored one had fitted the other.  On
simulated odd-one-out answers (60 objects in 3 dimensions, 1,500 answers, 20% at random;
exploration seeds 5001-5022) the folds by query chose 3 in 18 of 22 and more in the other four,
by set 3 in 21 of 22; on triplets asked one query at a time (4,000 single answers, 20% flipped,
seeds 5001-5012) both chose 3 in 12 of 12.

Dimensions are tried in increasing order and the search stops ``patience`` dimensions
after the last improvement of the minimum (the curve of held-out error is flat or rising
beyond the true dimension), so a 10-dimensional answer costs about 12 dimensions of fits.

Low-dimensional fits from random starts get stuck in local minima (objects cannot pass each
other in one or two dimensions), which would make the true dimension look worse than the next.
For estimators that take a start (``init``), a second pass goes downwards and refits every
dimension ``p`` of every fold from the top ``p`` principal coordinates of that fold's fit at
``p + 1``, keeping the fit with the lower *training* objective (about twice the fits).

Contamination: pass a robust estimator (the default is
:class:`~roembed.estimators.RobustOrdinalEmbedding`); the held-out responses are
contaminated too, but equally for every dimension, so the comparison stays paired and fair.

Self-tuning estimators (those with ``chosen_params_``, e.g. the default) tune once per
dimension, on the first fold's training data; the other folds and the downward pass reuse what
the first fold chose for every ``"auto"`` parameter it searches
(:func:`roembed.estimators.robust.tuned_params`; ``lam="auto"`` is a rule, not a search, and
stays per fold).  Tuning inside every fold cost five validation searches
per dimension: a robust selection took 30-300 s where plain SOE took 2-10 s.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import clone

from ._random import check_random_state_type
from ._threads import limit_threads
from ._warn import warn_counted
from .data import as_comparisons
from .data.diagnostics import DataWarning
from .data.validation import InvalidComparisonsError
from .estimators.base import check_estimator_argument, check_n_jobs, check_param
from .estimators.robust import tuned_params
from .metrics import one_standard_error, satisfied
from .model_selection import GroupedKFold

RULES = ("1se", "min")


@dataclass(repr=False)
class DimensionSelection:
    """Outcome of :func:`select_dimension`.

    ``table``: one row per dimension tried (``n_components, error, se_vs_best, fold_errors``),
    ``n_components``: the chosen dimension, ``best``: the dimension of least error, ``rule``.
    """

    table: pd.DataFrame
    n_components: int
    best: int
    rule: str

    def __repr__(self) -> str:  # the dataclass's repr cut the table to "n_components ... chosen"
        rule = {"1se": "the one-standard-error rule", "min": "least error"}.get(self.rule, repr(self.rule))
        return (f"DimensionSelection(n_components={self.n_components} by {rule}, least error at {self.best}; "
                f"tried {self.table['n_components'].tolist()}, see .table)")


def _fold_fit(estimator, comparisons, train, test, threads, init=None):
    """Fits on ``train`` (from ``init`` if given); ``(embedding, training objective, 1 per violated test response,
    the tuned parameters, the fit's warnings)``: the warnings as text, counted over the kept fits by
    :func:`select_dimension` (a fold fit's own warning would read as if about the final fit)."""
    with limit_threads(threads), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", DataWarning)  # a fold is a subset: the full fit warns about the data once
        est = clone(estimator)
        if init is not None:
            est.set_params(init=init)
        est.fit(comparisons[train])
    X = np.asarray(est.embedding_)
    return (X, float(getattr(est, "objective_", np.nan)), ~satisfied(X, comparisons[test]), tuned_params(est),
            sorted({f"{w.category.__name__}: {w.message}" for w in caught}))


def _fit_folds(estimator, comparisons, splits, parallel, threads):
    """One dimension on every fold: the first fold alone (it tunes), the others in parallel with its choice.
    Returns the per-fold outputs of :func:`_fold_fit` and the estimator with the choice set."""
    first = _fold_fit(estimator, comparisons, *splits[0], threads)
    estimator = clone(estimator).set_params(**first[3])
    rest = parallel(delayed(_fold_fit)(estimator, comparisons, tr, te, threads) for tr, te in splits[1:])
    return [first, *rest], estimator


def principal_start(X: np.ndarray, p: int) -> np.ndarray:
    """The top-``p`` principal coordinates of ``X``: a start for a ``p``-dimensional fit."""
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    return U[:, :p] * S[:p]


def select_dimension(estimator=None, comparisons=None, dimensions=None, *, cv: int = 5, rule: str = "1se",
                     patience: int = 2, n_jobs=None, threads_per_fit: int = 1, random_state=None
                     ) -> DimensionSelection:
    """Chooses ``n_components`` by grouped cross-validation (see the module docstring).

    Parameters
    ----------
    estimator : roembed estimator, optional
        Cloned with each ``n_components``; default ``RobustOrdinalEmbedding(random_state=random_state)``.
    comparisons : Comparisons or array
    dimensions : iterable of int, optional
        Candidates, tried in increasing order (default ``1 .. min(20, n_objects - 1)``, with early stopping).
    cv : int
        Folds of whole sets of objects (:class:`~roembed.model_selection.GroupedKFold`, seeded by ``random_state``).
    rule : "1se" or "min"
    patience : int or None
        Stop this many dimensions after the last improvement (None: try them all).
    n_jobs : int
        joblib workers over the folds of one dimension (any active joblib backend).
    """
    if estimator is not None:
        check_estimator_argument(estimator, "select_dimension(estimator, comparisons), or "
                                            "select_dimension(comparisons=...) for the default estimator")
    if comparisons is None:
        raise ValueError("select_dimension needs comparisons")
    comparisons = as_comparisons(comparisons)
    if estimator is None:
        from .estimators import RobustOrdinalEmbedding

        estimator = RobustOrdinalEmbedding(random_state=random_state)
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    if not isinstance(estimator.get_params(deep=False).get("init", "plain"), str):
        raise ValueError("the estimator's init is a start in one dimension, and select_dimension tries several: "
                         "leave init to the estimator's own start")
    check_param("cv", cv, low=2, integer=True)
    if patience is not None:
        check_param("patience", patience, low=1, integer=True)
    check_param("threads_per_fit", threads_per_fit, low=1, integer=True)
    check_n_jobs("n_jobs", n_jobs)
    check_random_state_type(random_state)  # was NumPy's "SeedSequence expects int ..." from inside the folds
    n_used = len(comparisons.used_objects)
    if dimensions is not None and (isinstance(dimensions, (str, bytes)) or not np.iterable(dimensions)
                                   or not all(isinstance(d, (int, np.integer)) for d in dimensions)):
        raise ValueError(f"dimensions must be a list of positive integers (e.g. [1, 2, 3]), got {dimensions!r}")
    dims = list(range(1, min(20, n_used - 1) + 1)) if dimensions is None else sorted(set(int(d) for d in dimensions))
    if not dims or dims[0] < 1:
        raise ValueError(f"dimensions must be positive integers, got {dimensions!r}")
    try:
        splits = list(GroupedKFold(cv, groups="object_set", random_state=random_state).split(comparisons))
    except InvalidComparisonsError as exc:  # say what needed the folds (``roembed fit --dim auto`` on tiny data)
        raise InvalidComparisonsError(f"choosing the dimension by {cv}-fold cross-validation: {exc}") from None
    graph = comparisons.aggregate()
    query = np.unique(graph.response_query, return_inverse=True)[1].reshape(-1)
    w = comparisons.weight
    w_q = np.bincount(query, weights=w)
    keep = w_q > 0
    wq = w_q[keep]

    def query_errors(wrong):
        return np.bincount(query, weights=w * wrong, minlength=len(w_q))[keep] / wq

    fits = {}  # (p, fold) -> (embedding, objective, wrong per test response, tuned parameters, warnings)
    tuned = {}  # p -> the estimator with the first fold's choice
    tried = []
    with Parallel(n_jobs=n_jobs) as parallel:
        for p in dims:
            out, tuned[p] = _fit_folds(clone(estimator).set_params(n_components=p), comparisons, splits, parallel,
                                       threads_per_fit)
            fits.update({(p, f): o for f, o in enumerate(out)})
            tried.append(p)
            means = [np.average(query_errors(_wrong(fits, q, splits, len(w))), weights=wq) for q in tried]
            if patience is not None and len(means) - 1 - int(np.argmin(means)) >= patience:
                break
        if "init" in estimator.get_params(deep=False):
            _descend(tuned, comparisons, splits, tried, fits, parallel, threads_per_fit)
    warn_counted([(p, fit[4]) for (p, _), fit in fits.items()], "cross-validation fits", label="n_components")
    errors = [query_errors(_wrong(fits, p, splits, len(w))) for p in tried]
    fold_errors = [[float(np.average(fits[p, f][2], weights=w[te])) for f, (_, te) in enumerate(splits)]
                   for p in tried]
    E = np.stack(errors, axis=1)  # (queries, dimensions tried)
    mean = wq @ E / wq.sum()
    one_se, best, se = one_standard_error(E, wq)
    chosen = best if rule == "min" else one_se
    table = pd.DataFrame({"n_components": tried, "error": mean, "se_vs_best": se, "fold_errors": fold_errors})
    table["chosen"] = table.index == chosen
    return DimensionSelection(table, int(tried[chosen]), int(tried[best]), rule)


def _wrong(fits, p, splits, m):
    wrong = np.zeros(m)
    for f, (_, te) in enumerate(splits):
        wrong[te] = fits[p, f][2]
    return wrong


def _descend(estimators, comparisons, splits, tried, fits, parallel, threads):
    """Second pass, downwards: refit each lower dimension (with the parameters it was tuned to) from the principal
    coordinates of the fold's fit one dimension up, keeping whichever fit has the lower *training* objective (no
    held-out data is used)."""
    for p in sorted(tried, reverse=True)[1:]:
        if p + 1 not in tried:
            continue
        out = parallel(delayed(_fold_fit)(estimators[p], comparisons, tr, te, threads,
                                          principal_start(fits[p + 1, f][0], p))
                       for f, (tr, te) in enumerate(splits))
        for f, o in enumerate(out):
            if o[1] < fits[p, f][1]:
                fits[p, f] = o


__all__ = ["select_dimension", "DimensionSelection", "RULES"]
