r"""Annotator types estimated jointly with the embedding (an EM over honest, inverting and random workers).

Model.  Every annotator ``a`` is of one latent *type* ``k``: ``follows`` (answers as the
embedding says), ``inverts`` (answers the opposite) or ``random`` (a coin flip; spammers,
and workers who always click the same position, whose answers carry no information about
the objects).  Types are drawn from a crowd-level prior :math:`\pi = (\pi_F, \pi_I, \pi_R)`
with a Dirichlet(``c``) hyper-prior.  Given the type, responses are independent: response
``r`` (weight :math:`w_r`) asserting the comparison of edge ``c`` has probability

.. math::  p_r(X) = e^{-\phi(s_c(X))} \text{ (follows)}, \quad 1 - p_r(X) = e^{-\phi(-s_c(X))}
           \text{ (inverts)}, \quad \tfrac12 \text{ (random)},

where :math:`\phi(s) = \log(1 + e^{-s})` is the penalty of a likelihood loss of
:mod:`roembed.losses` (STE, t-STE, CKL: their margins change sign when the two pairs swap, so
:math:`1 - p_r = e^{-\phi(-s_c)}`).  Other losses (SOE, GNMDS, squared) are not likelihoods;
for them the model uses t-STE (``dof = max(p - 1, 1)``).

Objective (negative log posterior per unit of response weight ``W``):

.. math::  J(X, \pi) = -\frac1W \sum_a \log \sum_k \pi_k L_{ak}(X)
           - \frac1W \sum_k (c_k - 1) \log \pi_k + \alpha \|X\|_F^2,

with :math:`\log L_{aF} = \sum_{r \in a} w_r \log p_r`, :math:`\log L_{aI} = \sum_{r \in a}
w_r \log(1 - p_r)` and :math:`\log L_{aR} = -\log 2 \sum_{r \in a} w_r`.  The type posterior
shrinks an annotator with few answers toward the crowd prior; one with many answers is
decided by them.

Algorithm (generalised EM).  E-step: :math:`q_{ak} \propto \pi_k L_{ak}(X)`.  M-step:
:math:`\pi_k = (\sum_a q_{ak} + c_k - 1) / (A + \sum_k c_k - 3)` in closed form, then
L-BFGS steps on ``X`` from its current value for the weighted loss

.. math::  Q(X) = \frac1W \sum_r w_r \big[q_{a(r)F}\,\phi(s_r) + q_{a(r)I}\,\phi(-s_r)\big] + \alpha\|X\|_F^2,

i.e. a plain fit in which each response counts with its annotator's probability of following,
and once more, reversed, with the probability of inverting.

Why ``J`` decreases monotonically and converges.  For any distribution ``q_a`` over types,
Jensen's inequality gives :math:`-\log \sum_k \pi_k L_{ak} \le -\sum_k q_{ak} \log(\pi_k L_{ak}
/ q_{ak})`, with equality when ``q_a`` is the posterior at :math:`(X, \pi)`.  So the bound
``G(X', pi'; q)`` built at the current point touches ``J`` there and lies above it everywhere.
The M-step minimises ``G`` exactly in ``pi`` and does not increase it in ``X`` (every accepted
L-BFGS step satisfies the Armijo decrease condition, and a failed line search keeps ``X``), so
:math:`J(X', \pi') \le G(X', \pi') \le G(X, \pi) = J(X, \pi)`.  ``J`` is bounded below
(each likelihood is at most 1, :math:`c_k \ge 1`, the ridge is non-negative), so the decreasing
sequence of values converges; the loop stops when its relative decrease falls below ``tol``.
``objective_history`` records ``J`` after every round (tested to be non-increasing).

What the later stages of :class:`~roembed.RobustOrdinalEmbedding` get: the responses
re-weighted by their annotator's probability of following, :math:`w_r q_{a(r)F}`, so random
and inverting annotators drop out of the robust fit that follows (the inverters' answers,
reversed, inform only this stage's embedding).

Known-answer (gold) questions: ``gold`` gives one value per response: 1 (a known-answer
question answered correctly), 0 (answered wrongly) or NaN (an ordinary question).  A gold
response's probability does not depend on the embedding: :math:`1 - \varepsilon` if right and
:math:`\varepsilon` if wrong under ``follows``, the reverse under ``inverts``, 1/2 under
``random`` (:math:`\varepsilon`, ``gold_error``, is the share of honest slips).  So gold answers
anchor the type of their annotator whatever the embedding.  They count by units: one annotator's gold
responses on one set of objects weigh as one (the two triplets of an odd-one-out answer are one answer,
right or wrong).  In the embedding a right gold response counts once, in its direction, whoever gave it
(``J`` gains :math:`\frac1W \sum w_r \phi(s_r)` over them, the same in every type, so the E-step is
unchanged and the M-step on ``X`` minimises exactly the bound's part in ``X``), and a wrong one not
at all: of a wrong odd-one-out answer's two triplets only one is known to be reversed.
With ``gold_error="auto"`` (the default) :math:`\varepsilon` is estimated with the rest: ``J`` gains the term :math:`-\frac1W[\log\varepsilon + 19
\log(1 - \varepsilon)]` (a Beta(2, 20) prior: one slip in twenty, the mode 0.05, worth 20
answers), and each M-step sets it in closed form to the maximiser of the bound,

.. math::  \varepsilon = \frac{\sum_a (q_{aF} V_a + q_{aI} R_a) + 1}{\sum_a (q_{aF} + q_{aI})(R_a + V_a) + 20},

clipped to ``[GOLD_ERROR_MIN, GOLD_ERROR_MAX]`` (``R_a``, ``V_a``: annotator ``a``'s weight of right
and wrong gold responses; the bound is concave in :math:`\varepsilon`, so the clipped value is its
maximiser on that interval and ``J`` still never increases).  Why: a fixed 5% is right for questions
chosen to be unambiguous, but where the "known" answer is itself disputed (e.g. a crowd majority on
odd-one-out triples, which honest THINGS participants match about 70% of the time) it made honest
workers with two or three misses look random: on THINGS (exploration draw 101, 10% of the triples
marked) it doubled the real participants flagged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.special import logsumexp
from scipy.stats import binom

from ._kernels import counting_sort
from .annotators import benjamini_hochberg
from .data import ComparisonGraph, annotator_index, annotator_units
from .losses import Logistic, Loss, TStudent
from .objective import EdgeObjective, PairDistances
from .solvers.lbfgs import minimize_embedding

TYPES = ("follows", "inverts", "random")
GOLD_ERROR_PRIOR = (1.0, 19.0)  # Beta(2, 20) on the honest slip rate, as pseudo-counts (wrong, right)
GOLD_ERROR_START = 0.05  # the prior's mode: where the estimate starts
GOLD_ERROR_MIN, GOLD_ERROR_MAX = 1e-4, 0.45  # the estimate's range: below 1/2, where follows and inverts swap
SWITCH_MIN_SHARE = 0.05  # fit_crowd's second start needs the switched annotators to give this share of the answers
SWITCH_ROUNDS = 2  # fit_crowd decides on the second start after this many rounds of the first
GIVE_UP_ROUNDS = 100  # an EM behind another's final J by this many of its last round's decrease is given up


def gold_unit_share(quadruplets, who, gold) -> np.ndarray:
    """Per response, ``1 / size`` of its unit among the gold responses (0 elsewhere): a unit is one annotator's
    gold responses on one set of objects (:func:`roembed.data.annotator_units`), so the two triplets of one
    odd-one-out answer weigh as one answer in the types' gold likelihood."""
    share = np.zeros(len(gold))
    if gold.any():
        unit = annotator_units(np.asarray(quadruplets)[gold], np.asarray(who)[gold])
        share[gold] = 1.0 / np.bincount(unit)[unit]
    return share


def likelihood_loss(loss: Loss, n_components: int) -> Logistic:
    """The loss itself when it is a likelihood (logistic penalty), else t-STE with ``dof = max(p - 1, 1)``.

    Not capped at 3 as the tuned t-STE is (``TSTE_MAX_DOF`` in :mod:`roembed.estimators.robust`): with the cap
    here the default's error on synthetic crowds at p = 10 (2·10^4 answers, ``bench_annotators_scale.crowd``,
    exploration seeds 101-108) rose by 0.0022 with 10% spammers and 0.0054 with 25% (standard errors 0.0017 and
    0.0046; 7 of 8 worse each; fewer annotators weighted down), and the synthetic protocol's fits did not move
    (docs/tried.md)."""
    if isinstance(loss, Logistic):
        return loss
    return TStudent(alpha=float(max(n_components - 1, 1)))


def switched_share(graph: ComparisonGraph, switched: np.ndarray) -> float:
    """The share of the response weight given by the annotators ``switched`` marks (one flag per sorted id)."""
    _, who = annotator_index(graph.comparisons)
    w = np.asarray(graph.comparisons.weight, dtype=np.float64)
    return float(w[switched[who]].sum() / w.sum())


@dataclass
class AnnotatorTypes:
    """What :func:`fit_annotator_types` returns.

    ``embedding``: the ``X`` of the last round; ``posterior``: one row per annotator (index: id)
    with the probability of each type, the number of responses and the expected agreement weight;
    ``prior``: the crowd-level type probabilities; ``response_weight``: ``w_r q_{a(r)F}`` per
    response; ``objective_history``: ``J`` at the start and after every round; ``gold_error``: the
    honest slip rate on known-answer questions (estimated or given; None without gold answers).
    """

    embedding: np.ndarray
    posterior: pd.DataFrame
    prior: pd.Series
    response_weight: np.ndarray
    objective_history: np.ndarray
    n_rounds: int
    converged: bool
    n_iter: int
    gold_error: float | None = None


def _rows_in_order(rows, columns, values, shape) -> csr_matrix:
    """The sparse matrix with ``values[r]`` at ``(rows[r], columns[r])``, repeated positions kept apart and
    each row's entries in the order of ``r``: its product with a vector sums each row in that order, as
    ``np.bincount(rows, values * v[columns])`` does (the same floats: the E-step's sums per annotator and the
    M-step's per edge: 0.46 -> 0.09 and 0.31 -> 0.09 ms a round on a 45,000-response THINGS cell, 0.7 ms to build
    both; SciPy's constructor would sort and merge the entries)."""
    rows = np.asarray(rows)
    order = counting_sort(rows, np.arange(len(rows), dtype=np.int64), shape[0], np.empty(len(rows), np.int64))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=shape[0]))])
    return csr_matrix((values[order], np.asarray(columns)[order], indptr), shape=shape)


class _TypeModel:
    """The pieces of ``J`` over one comparison graph (per-response bookkeeping, no state between fits)."""

    def __init__(self, graph: ComparisonGraph, loss: Logistic, alpha: float, prior_counts, gold):
        responses = graph.comparisons
        self.graph, self.loss, self.alpha = graph, loss, float(alpha)
        self.ids, self.who = annotator_index(responses)
        self.w = np.asarray(responses.weight, dtype=np.float64)
        self.total = float(self.w.sum())
        self.edge = np.asarray(graph.response_edge)
        self.c = np.asarray(prior_counts, dtype=np.float64)
        self.distances = PairDistances(graph.pairs, graph.n_objects)
        self.objects = None  # the edges' objects, looked up by the first M-step and kept for the next (not on the graph)
        # gold answers: their log-probability under follows / inverts / random does not depend on X
        gold = np.full(len(self.w), np.nan) if gold is None else np.asarray(gold, dtype=np.float64)
        self.gold = ~np.isnan(gold)
        self.w_ordinary = self.w * ~self.gold  # the responses whose probability depends on X
        shape = (len(self.ids), len(graph))
        self.answers = _rows_in_order(self.who, self.edge, self.w_ordinary, shape)  # annotator x edge
        self.answered = _rows_in_order(self.edge, self.who, self.w_ordinary, shape[::-1])  # edge x annotator
        # log L_aR of the ordinary responses: the same in every round
        self.random_loglik = np.bincount(self.who, weights=self.w_ordinary * np.log(0.5), minlength=len(self.ids))
        right, wrong = self.w * (gold == 1), self.w * (gold == 0)
        self.has_gold = bool(self.gold.any())
        share = gold_unit_share(responses.quadruplets, self.who, self.gold)
        self.right = np.bincount(self.who, weights=right * share, minlength=len(self.ids))  # R_a
        self.wrong = np.bincount(self.who, weights=wrong * share, minlength=len(self.ids))  # V_a
        # in the embedding a right gold response counts in its direction; a wrong one not at all (of a wrong
        # odd-one-out answer's two triplets only one is known to be reversed)
        self.gold_fwd = np.bincount(self.edge, weights=right, minlength=len(graph))

    def gold_loglik(self, eps: float) -> np.ndarray:
        """The gold responses' part of ``log L_ak`` (A, 3) at slip rate ``eps``."""
        R, V = self.right, self.wrong
        return np.column_stack([R * np.log1p(-eps) + V * np.log(eps), R * np.log(eps) + V * np.log1p(-eps),
                                (R + V) * np.log(0.5)])

    def gold_error_prior(self, eps: float) -> float:
        """``-log`` of the Beta prior of ``eps`` (0 without gold answers: ``J`` is then that of the plain model)."""
        if not self.has_gold:
            return 0.0
        wrong, right = GOLD_ERROR_PRIOR
        return float(-(wrong * np.log(eps) + right * np.log1p(-eps)))

    def m_step_gold_error(self, q) -> float:
        """The slip rate maximising the bound at type probabilities ``q`` (see the module docstring)."""
        wrong, right = GOLD_ERROR_PRIOR
        slips = np.sum(q[:, 0] * self.wrong + q[:, 1] * self.right) + wrong
        total = np.sum((q[:, 0] + q[:, 1]) * (self.right + self.wrong)) + wrong + right
        return float(np.clip(slips / total, GOLD_ERROR_MIN, GOLD_ERROR_MAX))

    def penalties(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Per edge, ``phi(s_c)`` and ``phi(-s_c)``: ``-log`` of the probability of its direction and of the other."""
        d = self.distances.from_embedding(X)
        s, _, _ = self.loss.margin(d[self.graph.edge_pairs[:, 0]], d[self.graph.edge_pairs[:, 1]])
        value, slope = self.loss.penalty(s)
        return value, self.loss.reversed_penalty(s, value, slope)[0]

    def log_likelihood(self, penalties, eps: float) -> np.ndarray:
        """``log L_ak`` (A, 3) at slip rate ``eps`` from :meth:`penalties`."""
        per = -(self.answers @ np.column_stack(penalties))  # per annotator, sum_r w_r (-phi) of each direction
        ll = np.column_stack([per, self.random_loglik])
        return ll + self.gold_loglik(eps) if self.has_gold else ll

    def evaluate(self, X, prior, eps: float) -> tuple[float, np.ndarray]:
        """``(J, q)``: the objective and the type posterior (the E-step) at ``(X, prior, eps)``, from one
        evaluation of the penalties; the right gold responses' ``phi`` counts in ``J`` too (a known
        direction, whoever answered)."""
        penalties = self.penalties(X)
        ll = self.log_likelihood(penalties, eps) + np.log(prior)
        norm = logsumexp(ll, axis=1, keepdims=True)
        value = -norm.sum() - ((self.c - 1.0) * np.log(prior)).sum() + self.gold_error_prior(eps)
        value += np.dot(self.gold_fwd, penalties[0])
        return float(value / self.total + self.alpha * np.vdot(X, X)), np.exp(ll - norm)

    def m_step_prior(self, q) -> np.ndarray:
        counts = q.sum(axis=0) + self.c - 1.0
        return counts / counts.sum()

    def m_step_embedding(self, X, q, max_iter, tol):
        """L-BFGS on ``Q(X)`` from ``X`` (never increases it); returns ``X, n_iter``.

        Through :func:`~roembed.solvers.minimize_embedding`, as every other fit, so the solve runs with one
        BLAS thread: the two-loop recursion's dot products are memory-bound, and uncapped (OpenBLAS threads
        them from 10^4 numbers, ``n p`` here) they waited on the second core."""
        fwd, rev = (self.answered @ q[:, :2]).T  # per edge, sum_r w_r q_{a(r)F} and sum_r w_r q_{a(r)I}
        fwd = fwd + self.gold_fwd
        objective = EdgeObjective(self.loss, None, None, fwd / self.total, len(self.graph.pairs), graph=self.graph,
                                  reverse_weight=rev / self.total, objects=self.objects)
        result = minimize_embedding(objective, self.distances, np.asarray(X, dtype=np.float64), alpha=self.alpha,
                                    max_iter=max_iter, tol=tol, method="two-loop")
        self.objects = objective.objects
        return result.solution, result.n_iter


def fit_annotator_types(graph: ComparisonGraph, X0, loss: Loss, *, alpha: float = 0.0,
                        prior_counts=(2.0, 1.5, 1.5), max_rounds: int = 30, tol: float = 1e-5,
                        step_iter: int = 30, step_tol: float = 1e-6, gold=None,
                        gold_error="auto", initial_posterior=None, history=None,
                        give_up_above=None) -> AnnotatorTypes:
    """Generalised EM for the annotator-type model (see the module docstring) from the embedding ``X0``.

    Parameters
    ----------
    graph : ComparisonGraph whose responses carry annotator ids.
    X0 : (n, p) starting embedding (e.g. a plain fit).
    loss : a likelihood loss (see :func:`likelihood_loss` for the others).
    alpha : ridge of the embedding.
    prior_counts : Dirichlet counts ``c`` (follows, inverts, random), all >= 1.
    max_rounds, tol : at most ``max_rounds`` EM rounds; stop when ``J`` decreases by less than
        ``tol * |J|`` in a round.
    step_iter, step_tol : L-BFGS iterations and tolerance of each M-step on ``X``.  A partial M-step (30
        iterations; a generalised EM, ``J`` still never increases) moves ``X`` while the type probabilities are
        still changing and lets the next E-step update them: on THINGS with fakes (exploration draws 104-112,
        126 fits) the first rounds had run to the old cap of 100 iterations for weights the next round
        changed; with 30 the fit took 7% less time (spammer and lazy cells with 25% fakes 15-20%), accuracy
        -0.0002 (standard error 0.0003); on the random-triplet crowds of ``bench_annotators_scale.py``, whose
        M-steps were mostly shorter already, 10 of 12 errors stayed bit for bit and the medians did not move
        (docs/annotators.md, "The annotator stage's fixed costs, and shorter M-steps").
    gold : (m,) array of 1 / 0 / NaN, optional: known-answer responses (see the module docstring).
    gold_error : "auto" or float in (0, 0.5): the probability that an annotator who follows still gets a gold
        question wrong; "auto" estimates it in the EM (from 0.05, see the module docstring).
    initial_posterior : (A, 3) array, optional
        Type probabilities (annotators in sorted id order) used instead of the first E-step: another
        starting point for the same objective (``objective_history`` then starts after round 1).
    history : sequence of float, optional
        ``objective_history`` of earlier rounds, to continue an EM: with ``X0`` and ``initial_posterior``
        the embedding and posterior that those rounds ended with, the rounds that follow are those one
        call with more ``max_rounds`` would have run (the convergence test sees the earlier values; the
        returned history includes them, ``n_rounds`` and ``n_iter`` count only the new rounds).
    give_up_above : float, optional
        ``J`` reached by another start: stop, not converged, once ``J`` lies above it by more than
        ``GIVE_UP_ROUNDS`` (100) times the last round's decrease (:func:`hopeless`).
    """
    if graph.comparisons.annotator is None:
        raise ValueError("annotator types need comparisons with annotator ids")
    prior_counts = np.asarray(prior_counts, dtype=np.float64)
    if prior_counts.shape != (3,) or (prior_counts < 1).any():
        raise ValueError(f"prior_counts must be three numbers >= 1, got {prior_counts!r}")
    if gold is not None:
        gold = np.asarray(gold, dtype=np.float64)
        if gold.shape != (len(graph.comparisons),):
            raise ValueError(f"gold must have one value per response ({len(graph.comparisons)}), got shape {gold.shape}")
        if not np.all(np.isnan(gold) | (gold == 0) | (gold == 1)):
            raise ValueError("gold values must be 1 (right), 0 (wrong) or NaN (not a known-answer question)")
    estimate = isinstance(gold_error, str) and gold_error == "auto"
    if not estimate and not (isinstance(gold_error, (int, float)) and 0.0 < gold_error < 0.5):
        raise ValueError(f"gold_error must be 'auto' or in (0, 0.5), got {gold_error!r}")
    model = _TypeModel(graph, loss, alpha, prior_counts, gold)
    eps = GOLD_ERROR_START if estimate else float(gold_error)
    X = np.asarray(X0, dtype=np.float64)
    prior = prior_counts / prior_counts.sum()
    if history is not None and initial_posterior is None:
        raise ValueError("history continues an EM: give the posterior its rounds ended with (initial_posterior)")
    if initial_posterior is not None:  # round 1 starts from these (history then starts after it)
        q = np.array(initial_posterior, dtype=np.float64, order="C")  # C order: the prior sums in the same order
        if q.shape != (len(model.ids), 3):
            raise ValueError(f"initial_posterior must have shape {(len(model.ids), 3)}, got {q.shape}")
        history = [] if history is None else [float(v) for v in history]
    else:
        value, q = model.evaluate(X, prior, eps)
        history = [value]
    converged, n_iter, rounds = False, 0, 0
    for rounds in range(1, max_rounds + 1):
        prior = model.m_step_prior(q)
        if estimate and model.has_gold:
            eps = model.m_step_gold_error(q)
        X, it = model.m_step_embedding(X, q, step_iter, step_tol)
        n_iter += it
        value, q = model.evaluate(X, prior, eps)  # J after the round, and the next round's E-step
        history.append(value)
        if len(history) >= 2 and history[-2] - history[-1] <= tol * max(abs(history[-1]), 1e-12):
            converged = True
            break
        if give_up_above is not None and hopeless(history, give_up_above):
            break
    counts = np.bincount(model.who, minlength=len(model.ids))
    posterior = pd.DataFrame(q, columns=list(TYPES), index=pd.Index(model.ids, name="annotator"))
    posterior.insert(0, "n_votes", counts)
    return AnnotatorTypes(
        embedding=X, posterior=posterior, prior=pd.Series(prior, index=list(TYPES), name="prior"),
        response_weight=model.w * q[model.who, 0], objective_history=np.asarray(history),
        n_rounds=rounds, converged=converged, n_iter=n_iter, gold_error=eps if model.has_gold else None)


def hopeless(history, other: float) -> bool:
    """Whether an EM whose ``J`` values are ``history`` cannot catch up with another start's final ``J``
    ``other``: it lies above it by more than ``GIVE_UP_ROUNDS`` (100) times its last round's decrease.  EM's
    decreases shrink as it converges, so such a run would end above ``other`` unless they grew a
    hundredfold; the caller keeps the other start's result."""
    return len(history) >= 2 and history[-1] - other > GIVE_UP_ROUNDS * (history[-2] - history[-1])


def query_sharers(graph: ComparisonGraph) -> np.ndarray:
    """Per annotator (sorted ids), whether they answered a query that another annotator answered too: the
    only annotators whose :func:`crowd_reliability` can differ from 0 (its denominator sums over such queries)."""
    ids, who = annotator_index(graph.comparisons)
    query = np.asarray(graph.edge_query)[np.asarray(graph.response_edge)]
    # one row per query, one entry per distinct annotator (building the matrix sums repeated entries)
    answered = csr_matrix((np.ones(len(who), np.int32), (query, who)), shape=(max(len(graph), 1), len(ids)))
    per_query = np.diff(answered.indptr)
    out = np.zeros(len(ids), dtype=bool)
    out[answered.indices[np.repeat(per_query >= 2, per_query)]] = True
    return out


def crowd_votes(graph: ComparisonGraph, n_iter: int = 200):
    """``(annotator, M_aq, m_-a,q, number of annotators)`` per entry of ``M`` (one per annotator and query they
    answered): the annotator's signed votes and the others' crowd-signed votes on that query, as
    :func:`crowd_reliability` defines them (its sums over them; ``m_-a,q`` all 0 when ``S`` is 0)."""
    responses = graph.comparisons
    ids, who = annotator_index(responses)
    edge = np.asarray(graph.response_edge)
    query = np.asarray(graph.edge_query)[edge]
    sign = np.where(edge == query, 1.0, -1.0) * np.asarray(responses.weight, float)
    M = csr_matrix((sign, (who, query)), shape=(len(ids), len(graph)))
    M.sum_duplicates()
    diag = np.asarray(M.multiply(M).sum(axis=1)).ravel()
    shift = diag.max() if len(diag) else 0.0
    v = np.ones(len(ids)) / np.sqrt(max(len(ids), 1))
    entries = M.tocoo()  # (annotator a, query q, M_aq): only the queries each annotator answered
    others = np.zeros(len(entries.data))
    for _ in range(n_iter):  # power iteration on S + shift * I (positive semi-definite, same eigenvectors)
        u = M @ (M.T @ v) - diag * v + shift * v
        norm = np.linalg.norm(u)
        if norm == 0:
            return entries.row, entries.data, others, len(ids)
        u /= norm
        converged = np.abs(u - v).max() < 1e-9
        v = u
        if converged:
            break
    counts = np.bincount(who, weights=np.abs(responses.weight), minlength=len(ids))
    signs = np.sign(v)
    if np.dot(counts, signs) < 0:
        signs = -signs
    crowd = np.asarray(M.T @ signs).ravel()  # signed votes per query
    others = crowd[entries.col] - signs[entries.row] * entries.data  # m_{-a,q}
    return entries.row, entries.data, others, len(ids)


def crowd_reliability(graph: ComparisonGraph, n_iter: int = 200) -> np.ndarray:
    r"""Per annotator (sorted ids), a reliability in [-1, 1] from agreement with the other annotators alone.

    With :math:`M_{aq} = \sum_{r \in a, q} \pm w_r` (+ for the query's first direction, - for the
    other) and :math:`S = M M^T - \mathrm{diag}(M M^T)`, one-coin workers with reliability
    :math:`\rho_a` (1 follows, 0 random, -1 inverts) give :math:`E[S_{ab}] = n_{ab}\rho_a\rho_b`
    (``n_ab`` shared queries): a rank-one matrix whose leading eigenvector ``v`` has the signs of
    :math:`\rho` (Ghosh, Kale & McAfee 2011; Dalvi et al. 2013).  Oriented so that most responses
    come from annotators with ``v > 0`` (the crowd is mostly honest), the signs weight the crowd's
    votes, and each annotator's reliability is their agreement with the others' signed votes,
    :math:`\hat\rho_a = \sum_q M_{aq} m_{-a,q} / \sum_q |M_{aq}|\,|m_{-a,q}|` with
    :math:`m_{-a,q} = \sum_{b \ne a} \mathrm{sign}(v_b) M_{bq}` (0 for an annotator who shares no
    query with anybody).  It needs no embedding, so it separates a coordinated group of inverters
    from the crowd even where an embedding fitted to everyone has bent toward them.
    """
    rows, mine, others, n = crowd_votes(graph, n_iter)
    num = np.bincount(rows, weights=mine * others, minlength=n)
    den = np.bincount(rows, weights=np.abs(mine) * np.abs(others), minlength=n)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


CONTRADICTED_FDR = 0.1  # contradicted_share's false-discovery level
HETEROGENEITY_P = 0.01
"""The annotator stage runs when :func:`heterogeneity_test` rejects equal agreement at this level (or when
:func:`contradicted_share` reaches ``SWITCH_MIN_SHARE``)."""


def contradicted_share(graph: ComparisonGraph) -> float:
    """The share of the response weight given by annotators whom the others are shown to contradict: on the queries
    they share, the annotator's vote has the sign of the others' crowd-signed vote (:func:`crowd_votes`) less
    often than half the time, by a one-sided binomial test with Benjamini-Hochberg control at
    ``CONTRADICTED_FDR`` (0.1) over the annotators (a sign alone, ``crowd_reliability < 0``, is noise for
    workers who share few queries: 5% of the answers in a crowd of 20 alike workers on random triplets).  0 when
    the annotators who share a query with another give less than ``SWITCH_MIN_SHARE`` of the weight (the
    power iteration is not run).

    Why beside :func:`heterogeneity_test`: that test reads each annotator's agreement with a plain fit, and a
    coordinated group large enough to pull the plain fit halfway toward it leaves both sides agreeing with it
    about equally.  Odd-one-out crowds of 20 honest workers and 13 fakes answering in concert (40% of the
    answers, ``tests/test_annotator_model.py``'s generator with 200 triples): the test let 5 of 6 seeds through
    (p > 0.01) and the fit scored 0.61-0.67 against the truth, where the annotator stage, run, scores 0.94;
    the test marks exactly the 13 fakes in every seed, and nobody in crowds without fakes."""
    sharers = query_sharers(graph)
    if switched_share(graph, sharers) < SWITCH_MIN_SHARE:
        return 0.0
    rows, mine, others, n = crowd_votes(graph)
    said = (mine != 0) & (others != 0)
    rows, agree = rows[said], np.sign(mine[said]) == np.sign(others[said])
    p = binom.cdf(np.bincount(rows, weights=agree, minlength=n), np.bincount(rows, minlength=n), 0.5)
    return switched_share(graph, benjamini_hochberg(p) <= CONTRADICTED_FDR)


@dataclass(frozen=True)
class Heterogeneity:
    """What :func:`heterogeneity_test` returns: the statistic, its degrees of freedom and the p-value."""

    statistic: float
    df: int
    p_value: float


def heterogeneity_test(graph: ComparisonGraph, X) -> Heterogeneity:
    r"""Do the annotators agree with ``X`` at different rates?  A chi-square test of equal agreement.

    With :math:`k_a = \sum_{r \in a} w_r [X \text{ satisfies } r]`, :math:`n_a = \sum_{r \in a} w_r`
    and the crowd's rate :math:`\bar p = \sum_a k_a / \sum_a n_a`,

    .. math::  T = \sum_a \frac{(k_a - n_a \bar p)^2}{\bar p (1 - \bar p) \sum_{r \in a} w_r^2}
               \sim \chi^2_{A - 1}

    when every annotator's responses are right with the crowd's probability (Pearson's test of
    homogeneity; the variance is that of a weighted sum of Bernoulli draws; questions of mixed
    difficulty drawn from one pool leave each response right with probability :math:`\bar p` a
    priori).  Spammers, inverters and lazy workers agree at rates far from the crowd's and make
    ``T`` large; noise spread evenly over the crowd's answers does not.
    """
    from scipy.stats import chi2

    responses = graph.comparisons
    ids, who = annotator_index(responses)
    w = np.asarray(responses.weight, dtype=np.float64)
    d = PairDistances(graph.pairs, graph.n_objects).from_embedding(np.asarray(X, dtype=np.float64))
    edge_agrees = d[graph.edge_pairs[:, 0]] < d[graph.edge_pairs[:, 1]]  # each response as its edge
    agree = edge_agrees[graph.response_edge].astype(np.float64)
    n = np.bincount(who, weights=w, minlength=len(ids))
    k = np.bincount(who, weights=w * agree, minlength=len(ids))
    w2 = np.bincount(who, weights=w * w, minlength=len(ids))
    keep = n > 0
    rate = k[keep].sum() / n[keep].sum()
    if keep.sum() < 2 or not 0.0 < rate < 1.0:
        return Heterogeneity(0.0, max(int(keep.sum()) - 1, 0), 1.0)
    statistic = float(np.sum((k[keep] - n[keep] * rate) ** 2 / (rate * (1.0 - rate) * w2[keep])))
    df = int(keep.sum()) - 1
    return Heterogeneity(statistic, df, float(chi2.sf(statistic, df)))


def plain_likelihood_fit(graph: ComparisonGraph, loss: Logistic, X0, *, alpha: float = 0.0, max_iter: int = 1000,
                         tol: float = 1e-6):
    """The likelihood ``loss`` fitted with every response counted once (its solver result)."""
    plain = EdgeObjective(loss, graph.edge_pairs[:, 0], graph.edge_pairs[:, 1],
                          np.asarray(graph.votes, float) / float(np.sum(graph.votes)), len(graph.pairs))
    return minimize_embedding(plain, PairDistances(graph.pairs, graph.n_objects), np.asarray(X0, float),
                              alpha=alpha, max_iter=max_iter, tol=tol, method="two-loop")


def fit_crowd(graph: ComparisonGraph, loss: Logistic, X0, *, alpha: float = 0.0, gold=None, max_iter: int = 1000,
              tol: float = 1e-6, max_rounds: int = 30, **em) -> AnnotatorTypes:
    """The annotator stage of :class:`~roembed.RobustOrdinalEmbedding`: the EM of
    :func:`fit_annotator_types` from two starting points, keeping the one with the lower objective ``J`` among
    those whose followers the crowd does not contradict (:func:`crowd_oriented`; without known answers).

    1. A plain fit of the likelihood ``loss`` from ``X0`` (every response counted), then EM.
    2. EM from the same embedding, with the first round's type probabilities those that start 1
       reached after ``SWITCH_ROUNDS`` (2) rounds, except that annotators it found following but whom the
       other annotators contradict (:func:`crowd_reliability` ``rho < 0``) start as inverting, and the others
       with ``rho > 0`` as following (start 1, its map bent toward the fakes, has typed some honest workers
       random; left so, a crowd of 20 honest odd-one-out workers and 13 coordinated fakes ended with nobody
       following and every honest worker suspect).  This start matters when fakes are coordinated and numerous
       enough that the plain fit bends toward them (on THINGS with 25% inverting fakes, start 1 ends in a local
       minimum of ``J`` where the fakes "follow").  It is skipped when there is no such annotator, or when
       they give less than ``SWITCH_MIN_SHARE`` (5%) of the response weight: so few answers cannot bend
       the plain fit toward them, and the ``rho`` of annotators who share few queries with the others is
       noise around 0.  (Starting from ``rho`` itself was tried: there ``J`` preferred an embedding bent to fit
       a third of the random fakes.)

    Then start 1 continues (the same rounds as one uninterrupted EM) unless it is :func:`hopeless` against
    start 2's final ``J`` or, without known answers, follows those the crowd contradicts where start 2 does
    not (:func:`crowd_oriented`: with coordinated fakes giving 40% of the answers, ``J`` preferred following
    them), and gives up once it is hopeless.  Without a second start the result is the single EM's
    to the bit.  Measured (docs/annotators.md, "A coordinated minority taken for the crowd", "Deciding on the
    second start after two rounds"): fewer real participants flagged with every fake still found, and the
    decision after two rounds saves about a seventh of the fit's time on THINGS with 25% inverting fakes.

    ``rho`` is computed only where the second start could run: an annotator who shares no query with another
    has ``rho = 0`` (:func:`query_sharers`), so when the following annotators who share one give less than
    ``SWITCH_MIN_SHARE`` of the weight, the switched ones would too.  Where queries are rarely answered twice
    (random-triplet crowds) that skips a power iteration; the result is the same.
    """
    result = plain_likelihood_fit(graph, loss, X0, alpha=alpha, max_iter=max_iter, tol=tol)
    first = fit_annotator_types(graph, result.solution, loss, alpha=alpha, gold=gold,
                                max_rounds=min(SWITCH_ROUNDS, max_rounds), **em)
    n_iter = result.n_iter + first.n_iter
    q0 = first.posterior[list(TYPES)].to_numpy()
    could = (q0[:, 0] > 0.5) & query_sharers(graph)  # rho < 0 needs a query shared with another annotator
    rho = crowd_reliability(graph) if switched_share(graph, could) >= SWITCH_MIN_SHARE else None
    switch = could & (rho < 0) if rho is not None else np.zeros_like(could)
    other = None
    if switch.any() and switched_share(graph, switch) >= SWITCH_MIN_SHARE:
        q_switched = q0.copy()
        q_switched[switch] = (0.0, 1.0, 0.0)
        q_switched[~switch & (rho > 0)] = (1.0, 0.0, 0.0)  # those the crowd supports start as following
        other = fit_annotator_types(graph, result.solution, loss, alpha=alpha, gold=gold, max_rounds=max_rounds,
                                    initial_posterior=q_switched, **em)
        n_iter += other.n_iter
    best = first
    J_other = None if other is None else float(other.objective_history[-1])
    rounds_left = max_rounds - first.n_rounds
    # without known answers, a start following those the crowd contradicts loses to one that does not (and
    # is not continued): the rank of a result is (against the crowd, J)
    rank = lambda t: (gold is None and not crowd_oriented(graph, t.posterior, rho),  # noqa: E731
                      float(t.objective_history[-1]))
    behind = other is not None and (rank(first)[0] > rank(other)[0] or hopeless(first.objective_history, J_other))
    if not first.converged and rounds_left > 0 and not behind:
        best = fit_annotator_types(graph, first.embedding, loss, alpha=alpha, gold=gold, max_rounds=rounds_left,
                                   initial_posterior=q0, history=first.objective_history, give_up_above=J_other,
                                   **em)
        n_iter += best.n_iter
        best.n_rounds += first.n_rounds
    if other is not None and rank(other) < rank(best):
        best = other
    best.n_iter = n_iter
    return best


def crowd_oriented(graph: ComparisonGraph, posterior: pd.DataFrame, rho: np.ndarray) -> bool:
    r"""Whether the annotators an EM result has following the map are, on balance, those the other annotators
    agree with: :math:`\sum_a W_a (q_{aF} - q_{aI}) \rho_a > 0` (``W_a``: annotator ``a``'s response weight;
    ``rho``: :func:`crowd_reliability`, oriented so that most of the weight agrees with the crowd).

    Why ``J`` alone cannot decide: a coordinated group that answers consistently (every fake inverting the
    crowd's majority the same way) fits its own map better than noisy honest workers fit theirs, and the types
    are symmetric: "the group follows, the crowd inverts or guesses" scores as well or better than the
    truth.  On THINGS with inverting fakes giving 40% of the answers (draws 121-122, rate 0.35), the first
    start ended at ``J`` 0.356-0.362 following the fakes against the crowd start's 0.380-0.381, and the map
    scored 0.51 accuracy on held-out real answers (0.72 plain; with this rule 0.71 and 0.74; six draws with
    45% of the answers: 0.722 against 0.494).  The majority of the answers is what tells
    the honest side without known answers (the assumption of every one-coin crowd model); with known
    answers ``J`` decides, as they anchor the types."""
    _, who = annotator_index(graph.comparisons)
    weight = np.bincount(who, weights=graph.comparisons.weight, minlength=len(posterior))
    q = posterior[["follows", "inverts"]].to_numpy(dtype=np.float64)
    return bool(np.dot(weight * (q[:, 0] - q[:, 1]), rho) > 0)


__all__ = ["AnnotatorTypes", "HETEROGENEITY_P", "Heterogeneity", "contradicted_share", "crowd_oriented",
           "crowd_reliability", "crowd_votes", "fit_annotator_types", "fit_crowd", "heterogeneity_test", "hopeless", "likelihood_loss",
           "plain_likelihood_fit", "query_sharers", "TYPES"]
