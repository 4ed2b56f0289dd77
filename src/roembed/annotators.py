r"""Which annotators to distrust: reliability scores from a fitted robust model.

For every annotator ``a`` with responses ``R_a`` (weights ``w_r``), a fitted
robust estimator gives two kinds of evidence:

* **flagged share**: the share of ``R_a`` that sits on edges the model flagged
  as outliers (``gamma_c != 0``), by count and by weight;
* **agreement**: the weighted share of ``R_a`` that the fitted embedding
  satisfies, :math:`\hat p_a = \sum_{r \in R_a} w_r [d(i_r, j_r) < d(l_r, k_r)] / \sum_r w_r`,
  with a Wilson score interval at confidence ``1 - alpha`` computed with the
  effective number of votes :math:`n_a = (\sum w_r)^2 / \sum w_r^2` (the vote
  count when all weights are 1), so annotators with few votes get wide intervals.

An annotator is *suspect* when their agreement is *shown below* a reference rate, with a
false-discovery control (the null hypothesis is "this annotator is as reliable as the crowd's
typical worker"), or shown below chance (*inverts*).  Responses of one annotator on the same
objects (the two triplets of an odd-one-out answer) form one *unit* scored by its mean agreement;
annotator ``a`` has ``n_a`` units with score sum ``S_a`` and rate :math:`\hat r_a = S_a / n_a`.

* **Reference.** :math:`\rho = (1/2 + m) / 2`, midway between chance and the crowd's median rate
  :math:`m` (the median of :math:`\hat r_a` weighted by :math:`n_a`, i.e. over units), so
  "suspect" reads "shown closer to chance than to the typical worker".  The median is robust to
  any minority of bad workers; the midpoint rather than the median itself, because honest workers
  differ (on THINGS the real participants' quartiles are 0.76 and 0.86 around a median of 0.81) and a
  test against the median would flag the honest lower half of the crowd once they give enough answers.
* **Test.** :math:`H_0: r_a \ge \rho` against :math:`r_a < \rho`, p-value
  :math:`P(\mathrm{Bin}(n_a, \rho) \le \lceil S_a \rceil)` (exact for one response per unit; a unit
  score in [0, 1] with mean r has variance at most r(1 - r), so the binomial tail is the
  conservative side otherwise), Benjamini-Hochberg q-values over all annotators, suspect where
  ``q_below_reference <= fdr``: in expectation at most a share ``fdr`` of the suspects (flagged by
  this test) are as reliable as the reference -- approximately, as the reference and the embedding
  come from the same answers.  Power: at :math:`\rho = 0.65` a worker at chance is shown below it
  with about 100 units, not reliably with 50; with the annotator types fitted (below), 50-answer
  spammers are found through them.
* **Chance.** The same test at :math:`\rho = 1/2` in both directions (under "answers at random"
  every response agrees with any embedding with probability 1/2, also for odd-one-out answers,
  whose two triplets agree 0, 1 or 2 times with probability 1/3 each; :func:`chance_tests`):
  ``inverts`` where the lower tail's q <= fdr (suspect too); ``unproven`` where agreement is *not shown
  above* chance (the upper tail's q > fdr).  ``unproven`` is reported, not flagged: it is mostly a
  matter of few answers (a worker with 18 answers at 0.7 agreement is unproven, not bad).
* When the estimator fitted the annotator types, an annotator whose posterior probability of
  following the embedding is below 1/2 is suspect too (that part has no error-rate guarantee: the
  benchmark ``bench_annotators_real.py`` measures the share of real annotators flagged).

The ``reason`` column says why each suspect was flagged, with the numbers (workers who always
click the same position are found by :func:`position_bias` when positions are known);
``table.attrs`` holds the rule (``suspect_rule``), the crowd's median rate and the reference
(``crowd_agreement``, ``reference_agreement``).  The table is ranked by the upper end of the interval, so
confidently unreliable annotators come first.  When the estimator fitted the annotator
types (:mod:`roembed.annotator_model`), their posterior probabilities are columns too.

:func:`fit_with_annotator_reweighting` turns the scores into per-annotator
weights and refits, for a few rounds.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binom
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from .data import annotator_index, annotator_units, as_comparisons, distinct_values
from .data.validation import RowLocator, check_annotators, check_positions, check_weights
from .metrics import weighted_median, wilson_interval
from .objective import quadruplet_distances

logger = logging.getLogger(__name__)

CHANCE_AGREEMENT = 0.5
SUSPECT_FDR = 0.1


def suspect_threshold(agreement, weight=None) -> float:
    """The reference rate of the suspect rule: midway between chance agreement and the crowd's median
    agreement (with ``weight``, e.g. each annotator's number of units, the weighted median: the smallest
    value with at least half the weight at or below it).  NaN agreements are left out."""
    agreement = np.asarray(agreement, dtype=np.float64)
    w = np.ones_like(agreement) if weight is None else np.asarray(weight, dtype=np.float64)
    keep = ~np.isnan(agreement) & (w > 0)
    median = float(np.median(agreement[keep])) if weight is None else weighted_median(agreement[keep], w[keep])
    return 0.5 * (CHANCE_AGREEMENT + median)


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini-Hochberg q-values (adjusted p-values) of independent tests: reject where ``q <= level``."""
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(p)
    scaled = p[order] * len(p) / np.arange(1, len(p) + 1)
    q = np.empty_like(p)
    q[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return q


def chance_tests(quadruplets, who, agrees, n_annotators: int, units=None):
    """Per annotator: ``n_units``, unit score sum, and the one-sided p-values of agreement above
    and below chance (see the module docstring).

    ``quadruplets`` (m, 4), ``who`` (m,) annotator index in ``[0, n_annotators)``, ``agrees`` (m,) bool.
    A unit is one annotator's responses on one set of objects; ``units`` (m,), when given, are those units'
    numbers (:func:`roembed.data.annotator_units`, e.g. a ``Comparisons``' cached ``answer_units``).
    """
    unit = annotator_units(quadruplets, who) if units is None else np.asarray(units)
    size = np.bincount(unit)
    score = np.bincount(unit, weights=np.asarray(agrees, float)) / size
    unit_who = np.zeros(len(size), dtype=np.int64)
    unit_who[unit] = who
    n_units = np.bincount(unit_who, minlength=n_annotators)
    total = np.bincount(unit_who, weights=score, minlength=n_annotators)
    return (n_units, total, binomial_tail(total, n_units, CHANCE_AGREEMENT, "above"),
            binomial_tail(total, n_units, CHANCE_AGREEMENT, "below"))


def binomial_tail(total, n_units, rate: float, side: str) -> np.ndarray:
    """One-sided p-values of unit score sums ``total`` over ``n_units`` against ``Binomial(n_units, rate)``:
    ``P(X >= floor(total))`` (``side="above"``) or ``P(X <= ceil(total))`` (``"below"``), the conservative
    rounding of a fractional sum; 1 where ``n_units`` is 0."""
    total, n_units = np.asarray(total, dtype=np.float64), np.asarray(n_units)
    if side == "above":
        p = binom.sf(np.floor(total + 1e-9) - 1, n_units, rate)
    elif side == "below":
        p = binom.cdf(np.ceil(total - 1e-9), n_units, rate)
    else:
        raise ValueError(f"side must be 'above' or 'below', got {side!r}")
    return np.where(n_units > 0, p, 1.0)


def _reasons(table: pd.DataFrame, fdr: float, crowd: float, reference: float) -> list:
    """Why each annotator is suspect ("" if not), with the numbers behind it."""
    out = []
    for row in table.to_dict(orient="records"):
        numbers = (f"agreement {row['agreement']:.2f} [{row['agreement_low']:.2f}, {row['agreement_high']:.2f}] "
                   f"over {row['n_units']} units")
        why = []
        if row["q_below_chance"] <= fdr:
            why.append(f"{numbers} below chance 0.5 (q = {row['q_below_chance']:.2g}): inverts")
        elif row["q_below_reference"] <= fdr:
            why.append(f"{numbers} below the reference {reference:.2f}, midway between chance and the crowd's "
                       f"median {crowd:.2f} (q = {row['q_below_reference']:.2g})")
        if row.get("p_follows", 1.0) < 0.5:
            kind = "inverts" if row["p_inverts"] > row["p_random"] else "random"
            why.append(f"annotator model: P({kind}) = {row['p_' + kind]:.2f}")
        if why and row.get("position_biased", False):
            why.append(f"picks screen position {row['top_position']} in {row['top_position_answers']} of "
                       f"{row['n_units']} answers (q = {row['q_position']:.2g})")
        if why and row.get("gold_answers", 0) > 0:
            why.append(f"known-answer responses: {row['gold_right']} of {row['gold_answers']} right")
        out.append("; ".join(why))
    return out


def position_test(counts):
    """``(top, c, n, p)`` per row of ``counts`` (annotators x ``k`` positions, answers at each): the most picked
    position, how often, the answers in all, and the p-value of that count under ``Binomial(n, 1/k)`` times ``k``
    (Bonferroni over the positions; 1 without answers)."""
    counts = np.asarray(counts)
    k = counts.shape[1]
    n, top, c = counts.sum(axis=1), counts.argmax(axis=1), counts.max(axis=1)
    return top, c, n, np.where(n > 0, np.minimum(binom.sf(c - 1, n, 1.0 / k) * k, 1.0), 1.0)


def position_bias(position, annotator, *, n_positions: int | None = None, fdr: float = SUSPECT_FDR) -> pd.DataFrame:
    """"Lazy" annotators: who picks the same screen position far more often than chance.

    ``position`` and ``annotator``: one value per *answer* (e.g. the 0-based position of the odd
    one out, not one per derived triplet).  Per annotator with ``n`` answers, the count ``c`` of
    their most frequent position is tested against ``Binomial(n, 1/k)`` (``k`` positions), the
    p-value times ``k`` (Bonferroni over the positions, so conservative), then Benjamini-Hochberg
    over annotators: ``lazy`` where ``q <= fdr``.  This needs no embedding, and finds position
    pickers whose answers look merely random to :func:`annotator_reliability`.

    Returns one row per annotator: ``annotator, n_answers, top_position, top_share, p_position,
    q_position, lazy, reason``, most biased first.
    """
    position = np.asarray(position)
    annotator = np.asarray(annotator)
    if position.shape != annotator.shape or position.ndim != 1:
        raise ValueError(f"position and annotator must be 1-d and of one length, got {position.shape} and "
                         f"{annotator.shape}")
    if not 0.0 < fdr < 1.0:
        raise ValueError(f"fdr must be in (0, 1), got {fdr!r}")
    # the checks Comparisons makes: a missing id (NaN) was one more annotator, "nan"; -1 or 0.5 a position
    position = check_positions(position, len(position), RowLocator())
    annotator = check_annotators(annotator, len(annotator), RowLocator())
    positions, pos = np.unique(position, return_inverse=True)
    k = int(n_positions or len(positions))
    if k < 2 or len(positions) > k:
        raise ValueError(f"need at least 2 positions and at most n_positions={k}, got {len(positions)}")
    ids, who = distinct_values(annotator)
    counts = np.zeros((len(ids), k), dtype=np.int64)
    np.add.at(counts, (who.reshape(-1), pos.reshape(-1)), 1)
    top, c, n, p = position_test(counts)
    q = benjamini_hochberg(p)
    table = pd.DataFrame({"annotator": ids, "n_answers": n, "top_position": positions[top], "top_share": c / n,
                          "p_position": p, "q_position": q, "lazy": q <= fdr})
    table["reason"] = [f"picks position {t} in {cc} of {nn} answers (chance 1/{k}), q = {qq:.2g}" if lazy else ""
                       for t, cc, nn, qq, lazy in zip(table["top_position"], c, n, q, table["lazy"])]
    return table.sort_values(["p_position", "top_share"], ascending=[True, False], kind="stable").reset_index(drop=True)


def annotator_reliability(estimator, *, weight=None, confidence: float = 0.95, fdr: float = SUSPECT_FDR) -> pd.DataFrame:
    """Per-annotator reliability table of a fitted robust estimator, least reliable first.

    Parameters
    ----------
    estimator
        Fitted, with ``graph_`` (responses with annotator ids), ``embedding_`` and
        ``outlier_mask_`` (one flag per edge, see ``OutlierReportMixin``).
    weight : (m,) array, optional
        Response weights to score with (default: the weights the model was fitted
        with).  Reweighting passes the original weights here.
    confidence : float
        Level of the Wilson interval of the agreement.
    fdr : float
        False-discovery rate of the chance tests (see the module docstring).

    Returns
    -------
    DataFrame with columns ``annotator, n_votes, weight, flagged_votes,
    flagged_share, weighted_flagged_share, mean_abs_gamma, agreement,
    agreement_low, agreement_high, n_units, p_below_reference, q_below_reference,
    p_above_chance, q_above_chance, p_below_chance, q_below_chance, inverts, unproven,
    suspect, reason`` (and ``gold_answers, gold_right`` when the responses carry known-answer marks,
    ``top_position, top_position_answers, p_position, q_position, position_biased`` when they carry screen
    positions (:func:`position_test` on each annotator's answers; ``position_biased`` is reported, not flagged:
    an honest worker may favour a position, and a lazy worker's answers look random to the tests and the model
    anyway, whose reason then names the position), ``p_follows, p_inverts, p_random`` when the estimator has
    ``annotator_types_``), one row per
    annotator, sorted by ``agreement_high`` (ascending), then
    ``weighted_flagged_share`` (descending).  ``attrs["suspect_rule"]`` states the rule,
    ``attrs["reference_agreement"]`` is its reference rate.
    """
    if not 0.0 < fdr < 1.0:
        raise ValueError(f"fdr must be in (0, 1), got {fdr!r}")
    if not 0.0 < confidence < 1.0:  # 2 or NaN went through to the intervals
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if hasattr(estimator, "embedding_") and not hasattr(estimator, "outlier_mask_"):  # fitted, but flags nothing
        raise ValueError(f"annotator reliability needs a robust estimator's flags (RobustOrdinalEmbedding or ROE); "
                         f"{type(estimator).__name__} flags no comparison")
    check_is_fitted(estimator, ["graph_", "embedding_", "outlier_mask_"])
    graph = estimator.graph_
    responses = graph.comparisons
    if responses.annotator is None:
        raise ValueError("annotator reliability needs comparisons with annotator ids")
    # checked as Comparisons checks weights: -1 was a weight of -50 in the table
    w = responses.weight if weight is None else check_weights(weight, len(responses))
    ids, who = annotator_index(responses)
    n_ann = len(ids)

    def per_annotator(values):
        return np.bincount(who, weights=values, minlength=n_ann)

    on_flagged = np.asarray(estimator.outlier_mask_, bool)[graph.response_edge]
    gamma = getattr(estimator, "gamma_", None)
    abs_gamma = np.zeros(len(responses)) if gamma is None else np.abs(np.asarray(gamma))[graph.response_edge]
    d_near, d_far = quadruplet_distances(estimator.embedding_, responses.quadruplets)
    agrees = (d_near < d_far).astype(float)

    n_votes = np.bincount(who, minlength=n_ann)
    w_sum, w_sq = per_annotator(w), per_annotator(w * w)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.where(w_sq > 0, w_sum ** 2 / w_sq, 0.0)
        agreement = per_annotator(w * agrees) / w_sum
        weighted_flagged = per_annotator(w * on_flagged) / w_sum
    low, high = wilson_interval(np.nan_to_num(agreement) * n_eff, n_eff, confidence)
    table = pd.DataFrame({
        "annotator": ids,
        "n_votes": n_votes,
        "weight": w_sum,
        "flagged_votes": per_annotator(on_flagged.astype(float)).astype(np.int64),
        "flagged_share": per_annotator(on_flagged.astype(float)) / n_votes,
        "weighted_flagged_share": weighted_flagged,
        "mean_abs_gamma": per_annotator(abs_gamma) / n_votes,
        "agreement": agreement,
        "agreement_low": low,
        "agreement_high": high,
    })
    n_units, total, p_above, p_below = chance_tests(responses.quadruplets, who, agrees, n_ann,
                                                    units=responses.answer_units)  # cached: the position counts
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = total / n_units
    reference = suspect_threshold(rate, n_units)
    crowd = 2.0 * reference - CHANCE_AGREEMENT
    p_reference = binomial_tail(total, n_units, reference, "below")
    table["n_units"] = n_units
    table["p_below_reference"], table["q_below_reference"] = p_reference, benjamini_hochberg(p_reference)
    table["p_above_chance"], table["q_above_chance"] = p_above, benjamini_hochberg(p_above)
    table["p_below_chance"], table["q_below_chance"] = p_below, benjamini_hochberg(p_below)
    table["inverts"] = table["q_below_chance"] <= fdr
    table["unproven"] = table["q_above_chance"] > fdr
    table["suspect"] = table["inverts"] | (table["q_below_reference"] <= fdr)
    if responses.gold is not None:  # known-answer questions: how many each annotator got, and got right
        marked = ~np.isnan(responses.gold)
        table["gold_answers"] = np.bincount(who, weights=marked, minlength=n_ann).astype(np.int64)
        table["gold_right"] = np.bincount(who, weights=responses.gold == 1, minlength=n_ann).astype(np.int64)
    if responses.position is not None:  # per answer (unit): the most picked screen position, and the position test
        top, c, _, p = position_test(responses.position_counts)
        table["top_position"], table["top_position_answers"] = top, c
        table["p_position"], table["q_position"] = p, benjamini_hochberg(p)
        table["position_biased"] = table["q_position"] <= fdr
    types = getattr(estimator, "annotator_types_", None)
    if types is not None:
        for kind in ("follows", "inverts", "random"):
            table[f"p_{kind}"] = types[kind].reindex(ids).to_numpy()
        table["suspect"] |= table["p_follows"] < 0.5
    table["reason"] = _reasons(table, fdr, crowd, reference)
    table = table.sort_values(["agreement_high", "weighted_flagged_share"], ascending=[True, False], kind="stable")
    table = table.reset_index(drop=True)
    table.attrs["suspect_rule"] = (f"suspect: agreement shown below {reference:.3f} (midway between chance 0.5 and "
                                   f"the crowd's median {crowd:.3f}) or below chance (one-sided binomial tests "
                                   f"over units, Benjamini-Hochberg FDR {fdr:g})"
                                   + ("; or the annotator model's P(follows) < 0.5" if types is not None else "")
                                   + "; unproven (reported, not flagged): not shown above chance"
                                   + ("; position_biased (reported, not flagged): picks one screen position more "
                                      f"often than chance (binomial test, Benjamini-Hochberg FDR {fdr:g})"
                                      if responses.position is not None else ""))
    table.attrs["crowd_agreement"], table.attrs["reference_agreement"] = crowd, reference
    return table


def reliability_weights(table: pd.DataFrame, min_weight: float = 1e-3) -> pd.Series:
    r"""Per-annotator weights from a reliability table.

    :math:`v_a = \mathrm{clip}\big((u_a - 0.5) / (\tilde p - 0.5),\ \text{min\_weight},\ 1\big)`
    with ``u_a`` the upper end of the agreement interval and ``p~`` the median
    agreement: typical annotators keep weight 1, annotators at chance level (or
    worse: systematic flippers) drop to ``min_weight``; few votes -> wide interval
    -> benefit of the doubt.
    """
    missing = [c for c in ("annotator", "agreement", "agreement_high") if c not in getattr(table, "columns", ())]
    if missing:  # was KeyError 'agreement'
        raise ValueError(f"table must be annotator_reliability's table; it lacks {', '.join(missing)}")
    if not 0.0 <= min_weight <= 1.0:  # NaN weighted every annotator NaN
        raise ValueError(f"min_weight must be in [0, 1], got {min_weight!r}")
    ref = float(np.nanmedian(table["agreement"]))
    if ref <= CHANCE_AGREEMENT:
        logger.warning("median annotator agreement %.3f is at chance level: no reweighting", ref)
        return pd.Series(1.0, index=table["annotator"].to_numpy(), name="weight")
    v = (table["agreement_high"].to_numpy() - CHANCE_AGREEMENT) / (ref - CHANCE_AGREEMENT)
    return pd.Series(np.clip(v, min_weight, 1.0), index=table["annotator"].to_numpy(), name="weight")


@dataclass(repr=False)
class ReweightingResult:
    """Outcome of :func:`fit_with_annotator_reweighting`.

    ``estimator`` is the kept fit, ``annotator_weight`` the weights it was fitted
    with, ``reliability`` its reliability table (scored with the original
    weights), ``history`` one row per round.
    """

    estimator: object
    annotator_weight: pd.Series
    reliability: pd.DataFrame
    history: pd.DataFrame

    @property
    def n_rounds(self) -> int:
        return len(self.history)

    def __repr__(self) -> str:  # the dataclass's repr printed the estimator and three tables whole
        down = int((self.annotator_weight < 1).sum())
        return (f"ReweightingResult({self.n_rounds} rounds, {down} of {len(self.annotator_weight)} annotators "
                f"weighted below 1, estimator {type(self.estimator).__name__})")


def fit_with_annotator_reweighting(estimator, comparisons, *, max_rounds: int = 4, tol: float = 0.05,
                                   min_weight: float = 1e-3, validation=None, confidence: float = 0.95,
                                   log=None) -> ReweightingResult:
    """Fits, scores annotators, down-weights unreliable ones and refits.

    Round 0 fits ``clone(estimator)`` on ``comparisons`` as given.  Each later round
    sets every response's ``sample_weight`` to its annotator's weight from
    :func:`reliability_weights` (scored on the previous round's fit) and refits.

    Stopping rule: stop after ``max_rounds`` refits, or when no annotator weight
    changed by more than ``tol``.  With ``validation`` comparisons, each round is
    also scored on them, the loop stops as soon as the validation score drops,
    and the best round is kept (otherwise the last one).

    ``log`` (a callable taking a string, default the module logger at INFO)
    receives one line per round.
    """
    from .estimators.outliers import OutlierReportMixin

    if not isinstance(estimator, OutlierReportMixin):  # it scores annotators by the fit's flags
        raise ValueError(f"annotator reweighting needs a robust estimator, whose flags score the annotators "
                         f"(RobustOrdinalEmbedding or ROE), got {type(estimator).__name__}")
    comparisons = as_comparisons(comparisons)
    if comparisons.annotator is None:
        raise ValueError("annotator reweighting needs comparisons with annotator ids")
    if not (isinstance(max_rounds, (int, np.integer)) and max_rounds >= 0):
        raise ValueError(f"max_rounds must be a non-negative integer, got {max_rounds!r}")
    if not 0.0 <= tol < np.inf:  # NaN or -1 never stopped early: every round ran
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if not 0.0 <= min_weight <= 1.0:
        raise ValueError(f"min_weight must be in [0, 1], got {min_weight!r}")
    log = log or logger.info
    base_weight = comparisons.weight
    annotators = np.asarray(comparisons.annotator)
    ann_weight = pd.Series(1.0, index=distinct_values(annotators)[0], name="weight")
    rows, best = [], None
    for rnd in range(max_rounds + 1):
        fitted = clone(estimator).fit(comparisons, sample_weight=ann_weight.loc[annotators].to_numpy())
        table = annotator_reliability(fitted, weight=base_weight, confidence=confidence)
        new_weight = reliability_weights(table, min_weight).reindex(ann_weight.index)
        change = float(np.abs(new_weight - ann_weight).max())
        row = {"round": rnd, "objective": float(getattr(fitted, "objective_", np.nan)),
               "n_suspect": int(table["suspect"].sum()),
               "n_downweighted": int((ann_weight < 1).sum()),
               "train_score": fitted.score(comparisons),
               "max_weight_change": change}
        if validation is not None:
            row["validation_score"] = fitted.score(validation)
        rows.append(row)
        log("annotator reweighting round {round}: {n_downweighted} annotators down-weighted, "
            "{n_suspect} suspect, objective {objective:.6g}, train score {train_score:.4f}".format(**row)
            + (f", validation score {row['validation_score']:.4f}" if validation is not None else "")
            + f", next weights change by {change:.3f}")
        if validation is None or best is None or row["validation_score"] >= best[0]:
            best = (row.get("validation_score", 0.0), rnd, (fitted, ann_weight.copy(), table))
        else:
            log(f"validation score dropped in round {rnd}: stopping, keeping round {best[1]}")
            break
        if change <= tol:
            log(f"annotator weights converged (change {change:.3f} <= tol {tol}) after round {rnd}")
            break
        ann_weight = new_weight
    fitted, weights, table = best[2]
    return ReweightingResult(fitted, weights, table, pd.DataFrame(rows))


__all__ = ["annotator_reliability", "fit_with_annotator_reweighting", "reliability_weights",
           "wilson_interval", "suspect_threshold", "ReweightingResult", "benjamini_hochberg", "chance_tests",
           "binomial_tail", "position_bias", "position_test", "SUSPECT_FDR"]
