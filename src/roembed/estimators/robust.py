r"""The flagship estimator: ordinal embedding with sparse outlier shifts, for any margin loss.

ROE (Ma, Xu & Cao 2019) adds a shift :math:`\gamma_c` to the margin of each
comparison and penalises it with a weighted l1 norm.  Here the loss is any
margin loss of :mod:`roembed.losses` and the shifts are minimised out in closed
form (:func:`roembed.losses.robust_penalty`):

.. math::
    \min_X \frac{1}{Z}\sum_c a_c\,\psi_c(s_c(X)) + \alpha\|X\|_F^2, \qquad
    \psi_c(s) = \min_{\gamma \ge 0} \phi(s + \gamma) + \kappa_c\,\gamma,

a Huber-type envelope: the loss while its slope is below the cap
:math:`\kappa_c`, linear with slope :math:`\kappa_c` beyond the knee.  At the
solution :math:`\gamma_c = \max(0, s^*_c - s_c)` (``gamma_``); edges with
:math:`\gamma_c > 0` are the outliers.

Weightings (``w_c`` = votes of edge ``c``):

* ``"vote"``: :math:`a_c = w_c`, penalty :math:`\lambda w_c|\gamma_c|`, i.e.
  :math:`\kappa_c = \lambda` (every vote is one noisy observation).
* ``"paper"``: ROE's :math:`a_c = w_c^2`, penalty :math:`\lambda w_c|\gamma_c|`,
  i.e. :math:`\kappa_c = \lambda / w_c`.

``lam="auto"`` (documented rule): fit the plain loss (no outliers), take the
margins :math:`s_c` and their robust scale
:math:`\sigma = 1.4826\,\mathrm{MAD}_w(s)` (vote-weighted), put the knee at
:math:`s^* = \min(\mathrm{med}_w(s) - 2\sigma, 0)` (never above 0: only violated
comparisons can be outliers) and set :math:`\lambda` to the loss slope there,
:math:`-\phi'(s^*)` (for ``weighting="paper"`` at the median vote count).
The plain fit is also the warm start of the robust fit.  With ``lam="auto"`` the flags (``gamma_``) are read
at the final embedding off SOE's envelope with the same rule, whatever the loss (:func:`stage_shifts`); a
``lam`` given flags by the envelope solved.

Weightings ``"net"`` (votes minus the votes of the opposite comparison,
clipped at 0), ``"majority"`` (one vote for the majority side) and ``"consensus"``
(the majority side's net votes over all the query's votes, 1 where all agree; see
:func:`edge_weights`) are also offered, the last two scaled after the annotator stage by
the whole responses' worth of the query left (:meth:`~roembed.data.ComparisonGraph.scaled`):
when contamination is spread over many votes of the same query (spammers) they beat
per-vote weighting.

Refinement (``refine=slope``; ``"auto"``, the default, tries it on validation, see below): a third
stage minimises the symmetric sigmoid loss :class:`~roembed.losses.Sigmoid` of SOE's Euclidean margins
(whatever ``loss`` is), with the same loss weights, from the robust solution and
with its own ridge ``refine_alpha``.  The outlier shifts
are then evaluated at the refined embedding.  It helps where whole comparisons
are reversed at random, which no vote count reveals: on the synthetic protocol
with 25% of the triplets flipped unanimously, validation chose it on all of ten
exploration draws and the test error fell from 0.215 to 0.204 (medians).

The fit is a straight sequence of stages over one :class:`RobustProblem` (graph, pair
distances, loss weights; objectives built once each), ``STAGES``: plain (``n_init`` starts,
lowest objective kept; the final fit also runs on from other distinct minima, :func:`lowest_final`) -> penalty
(``lam``) -> robust -> refine (in the final fit the mean of the refinements at the slope and 1.5 times it,
``refine_ensemble``: :func:`stage_refine_ensemble`) -> shifts, each a function ``(problem, settings, state) ->
state`` (:func:`fit_robust`); a new stage is one more entry.

The self-tuning default (``loss``, ``weighting``, ``refine`` = ``"auto"``): 20% of the
*queries* (both directions, every vote; :func:`roembed.model_selection.holdout_mask`) are
held out; candidates are fitted on the rest (at p <= 2 from restarts of their own on it) and scored by
the share of held-out votes they satisfy, greedily and cheapest first: the weightings ``consensus`` and
``vote`` with SOE; t-STE (dof ``min(max(p - 1, 1), 3)``, ridge 1e-9) with the better weighting and with
``vote``; then the refinement stage continued from the best ``consensus`` fit (rescaled to the sigmoid's best scale,
:func:`refinement_scale`) with (slope, ridge) = (2, 1e-4) and (1.5, 1e-5)
(both ridges times ``100 / n`` on ``n > 100`` objects, as ``alpha``).  Where the comparisons cannot pin
the map down (fewer distinct queries than its free coordinates; ``fit`` warns) nothing is tuned: the fit is
CKL with ridge 1e-4 on every vote, without refinement, from one start and to CKL's own tolerance 1e-6
(``LOOSE_CHOICE``, :meth:`RobustOrdinalEmbedding._loose`).
Losing losses are not refined, nor is a fit whose robust stage puts an outlier shift on less than 1% of the
loss weight (``REFINE_MIN_OUTLIERS``, :func:`outlier_share`: no evidence of contamination); from 2%
(``REFINE_FORCE_SHARE``) a winning unrefined fit gives way to its best refinement (:func:`chosen_candidate`);
a refinement more than 0.02 below the best candidate after 200
iterations is given up (:func:`refine_candidate`), so a default fit costs three or four robust fits
and up to two refinement stages plus the refit on everything with the winner (a refinement refitted at two
slopes, ``refine_ensemble``; ``chosen_params_``;
``tuning_results_`` lists every candidate's score); from ``CONTINUE_EDGES`` (2^16) edges on, the candidates'
robust fits stop at tolerance ``SCREEN_TOL`` (1e-6) and the refit continues the winner's last stage to ``tol``
instead of starting over (:func:`continue_fit`).  Below 50 queries nothing is held out and the first candidates
are used, with a warning.  The rules, measured on exploration draws (seeds 5001-5004, test
subsets of 50,000 triplets; the benchmark uses 1000 + r), each candidate refitted on all votes:

* ``consensus`` (fortieth session; exploration trials 4001-4012, 6-12 per setting) replaced ``net`` and
  ``majority`` as candidates: with the default's other choices as before, the test error fell by 0.0126
  under majority flips (8 of 8 trials; standard error 0.0023), 0.0029 under unanimous flips (4 of 12 better,
  none worse: the hold-out had picked ``net``, whose refinement is 0.007-0.013 worse there, on a noisy score),
  0.0017 under vote flips, 0.0002 with spammers; clean data and music (single votes: all three weightings are
  equal) did not move, and the material set's real votes moved by -0.0008 (p = 2) and -0.0006 (p = 3).
  Before it: ``net`` was never far from the best weighting and far better than ``vote`` under vote flips
  (0.048 vs 0.091) and spammers (0.045 vs 0.082); ``majority`` won under unanimous flips
  with the refinement (0.206 vs 0.217) and lost badly under majority flips (0.258 vs 0.174).
* ``vote`` (every vote its own weight) was added after a real crowd set: on THINGS odd-one-out
  answers (about 16 answers per triple, p = 2, exploration draw 101 of
  ``benchmarks/bench_annotators_real.py``; the benchmark reports draws 0-4) the minority answers say how close a comparison is,
  and SOE scored 0.695 on validation with ``vote`` against 0.658 with ``net``; the default's test
  accuracy rose from 0.690 to 0.704 (no fakes), 0.680 to 0.702 (25% inverters) and 0.685 to
  0.710 (25% spammers).  On the synthetic exploration draws validation never chose it and the
  errors did not change.  It is not refined: on THINGS the refined ``vote`` fits scored 0.648 and
  0.672 on validation against 0.698 unrefined.
* Ridge: SOE at 3e-6 (clean 0.044) beats 3e-5 (0.054), 3e-4 (0.082) and 0 (0.055);
  t-STE at 1e-9: without a ridge it has no minimum (once most comparisons are satisfied its objective falls
  as the embedding grows, to 10^3-10^6 in 1,000 iterations), so the fit ended wherever ``max_iter`` stopped
  it and at p = 2 warned that it had not converged.  Of 0, 1e-9, 1e-8, 1e-7 and 1e-6, 1e-9 did best on
  the real exploration data (music at p = 9 and 2, THINGS), 3e-5 had cost 0.007 on music; on small
  synthetic sets the choice moved fits either way (docs/results.md, "A ridge for t-STE").
  These are the ``alpha="auto"`` values.
* t-STE wins on music (0.167 vs 0.173 for the best SOE) and loses on synthetic (0.070 vs
  0.044); validation picked the better of the two on every exploration draw.
* The refinement: (2, 1e-4) 0.206 under unanimous flips, (1.5, 1e-5) 0.132 under majority
  flips (vs 0.174 without); on clean data it costs 0.02-0.07 and validation never chose it.  The final fit
  averages it with the refinement at 1.5 times the slope (-0.0026 and -0.0020 on exploration trials; see
  :func:`stage_refine_ensemble`).
* Its gate, the robust stage's outlier share of at least 1%: the fits it starts from flagged 0-0.24% of the
  loss weight on clean data, under vote flips and spammers (``net`` and ``majority`` discount those), on
  music (p = 9) and on THINGS, and 1.4-8.6% under majority and unanimous flips, at n = 30 with 20% of the
  answers flipped (p = 1 and 2) and on the material set's repeated votes (exploration draws; twentieth
  session in docs/results.md).  On music validation had chosen two refinements on 1,000 held-out queries
  that lost on test (0.185 against 0.166 unrefined, 0.177 against 0.173); no other choice changed.
"""
from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed
from scipy.optimize import minimize_scalar
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from .._warn import warn
from ..annotator_model import (HETEROGENEITY_P, SWITCH_MIN_SHARE, contradicted_share, fit_crowd, heterogeneity_test,
                               likelihood_loss, plain_likelihood_fit)
from ..data import ComparisonGraph, annotator_index, as_comparisons
from ..data.diagnostics import DataWarning, free_coordinates, too_few_queries
from ..data.validation import InvalidComparisonsError
from ..losses import CrowdKernel, Loss, Sigmoid, TStudent, get_loss, robust_penalty
from ..metrics import edge_agreement, procrustes, procrustes_disparity, weighted_median
from ..model_selection import GroupedKFold, holdout_mask
from ..objective import EdgeObjective, PairDistances
from ..solvers import STOPPABLE, SolverResult, shifts, solve
from .base import check_param, edge_objective
from .embedding import LossEmbedding
from .outliers import OutlierReportMixin

WEIGHTINGS = ("vote", "paper", "net", "majority", "consensus")
AUTO_CAP_EDGES = 1 << 21
"""``lam="auto"`` reads the margins of at most this many edges (every k-th beyond): the weighted median
and MAD of 2 million margins are as good as those of all, without sorting 10^7 or 10^8 of them."""
INITS = ("random", "plain")
AUTO = "auto"


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == AUTO


def edge_weights(graph: ComparisonGraph, weighting: str) -> np.ndarray:
    r"""Loss weights ``a_c`` from the votes ``w_c`` (and ``w_rev(c)``, the votes of the opposite comparison).

    The votes are those of one draw of the query, ``votes / copies``, and ``a_c`` counts ``copies``
    draws (:attr:`ComparisonGraph.copies`: 1 unless a bootstrap drew the query several times), so a query
    drawn twice weighs twice under every weighting (majority voting would otherwise count it once).
    ``majority`` and ``consensus`` count a query for :attr:`ComparisonGraph.query_share` of a vote when the graph
    has one (after the annotator stage: the whole responses' worth of the query left), and ``vote`` adds half of
    :attr:`ComparisonGraph.undecided` (the other half counts reversed: :func:`reverse_weights`).

    ``consensus`` gives the majority side of a query :math:`(w_c - w_{rev})/(w_c + w_{rev})`, its net votes
    over all its votes (a tie nothing): 1 where every vote agrees, whatever their number.  Why: if a query's
    majority answer is wrong with probability :math:`\varepsilon_q`, a symmetric loss's expected value on it is
    :math:`(1 - 2\varepsilon_q)\,\phi(s) + \varepsilon_q`: its pull on the map is :math:`1 - 2\varepsilon_q`
    times a clean query's, at the same noise, and weights proportional to the signal minimise the variance of a
    weighted sum of equally noisy terms.  The consensus is the estimate of :math:`1 - 2\varepsilon_q` from the
    query's own votes (it cannot see a query whose votes were all reversed together).  ``net`` is the consensus
    times the number of votes, which is noise where that number says nothing of the answer's reliability
    (it varies 15-50 per query on the synthetic protocol); ``majority`` keeps a query whose votes are split
    nearly evenly as much as one where all agree.  Measured in docs/results.md, "Fortieth session: the
    consensus weighting"."""
    if weighting == "vote":
        votes = np.asarray(graph.votes, dtype=np.float64)
        return votes if graph.undecided is None else votes + 0.5 * graph.undecided
    copies = graph.copies
    w = np.asarray(graph.votes, dtype=np.float64) / copies
    if weighting == "paper":
        return w * w * copies
    rev = np.asarray(graph.reverse_edge)
    has = rev >= 0
    net = w  # w - w_rev in place: no edge-long temporaries when no query has votes both ways
    if has.any():
        net = w.copy()
        net[has] -= w[rev[has]]
    if weighting == "net":
        np.maximum(net, 0.0, out=net)
        net *= copies
        return net
    if weighting == "consensus":  # (w - w_rev) / (w + w_rev) on the majority side: 1 where every vote agrees
        total = w.copy()  # w + w_rev
        total[has] += w[rev[has]]
        share = np.divide(np.maximum(net, 0.0), total, out=np.zeros_like(w), where=total > 0) * copies
    else:  # majority vote (ties: half a vote each way)
        share = ((net > 0) + 0.5 * (net == 0)) * copies
    # after the annotator stage, a query counts for the whole responses' worth of it left (ComparisonGraph.scaled)
    return share if graph.query_share is None else share * graph.query_share


def reverse_weights(graph: ComparisonGraph, weighting: str) -> np.ndarray | None:
    r"""The weights ``b_c`` of each edge counted reversed, :math:`b_c \phi(-s_c)`: half of the weight the annotator
    stage took off the edge's responses (:attr:`ComparisonGraph.undecided`, :math:`\sum_r w_r (1 - q_{a(r)})`)
    under the ``vote`` weighting; None otherwise (``net`` and ``majority`` read only the difference of the two
    directions, which the halves leave as it is, and ``consensus`` that difference over the decided votes,
    :math:`\sum_r w_r q_{a(r)}` each way).

    So a response whose annotator follows the map with probability ``q`` counts ``q`` for its answer and
    ``(1 - q) / 2`` each way: an answer the model cannot trust says the question is undecided, instead of
    nothing.  Where the data cannot pin the map down (the ``vote`` weighting of ``LOOSE_CHOICE``), dropping
    such answers had cost accuracy (THINGS, exploration draws 121-129, 63 fits: +0.0021 accuracy with the
    halves, standard error 0.0008); on synthetic crowds as loose with flipping spammers the halves changed
    the test error by -0.0028 to +0.0014 (four settings, 8 seeds each, standard errors 0.004-0.008), where
    ignoring the annotators instead cost 0.019-0.039 (docs/annotators.md, "Undecided answers counted half
    each way")."""
    if weighting != "vote" or graph.undecided is None or not np.any(graph.undecided > 0):
        return None  # (nothing taken off: the objective without a reversed term, bit for bit as before)
    return 0.5 * np.asarray(graph.undecided, dtype=np.float64)


def auto_cap(loss, margins: np.ndarray, weights: np.ndarray, width: float = 2.0) -> float:
    """The loss slope ``-phi'(s*)`` at the knee ``s* = min(med_w(s) - width * 1.4826 MAD_w(s), 0)``."""
    med = weighted_median(margins, weights)
    scale = 1.4826 * weighted_median(np.abs(margins - med), weights)
    _, slope = loss.penalty(np.asarray([min(med - width * scale, 0.0)]))
    return float(max(-slope[0], 1e-6))


def outlier_share(objective: EdgeObjective, distances: PairDistances, X: np.ndarray) -> float:
    """The share of the loss weight on the edges with an outlier shift (``gamma_c > 0``) of the robust
    ``objective`` at ``X``, read from the margins of at most ``AUTO_CAP_EDGES`` edges (every k-th beyond,
    as ``lam="auto"``): the self-tuning default's evidence of contamination (``REFINE_MIN_OUTLIERS``)."""
    step = -(-len(objective) // AUTO_CAP_EDGES)
    margins = objective.embedding_margins(X, distances, step)
    cap = objective.cap if np.ndim(objective.cap) == 0 else objective.cap[::step]
    gamma = robust_penalty(objective.loss, margins, cap, objective.two_sided)[2]
    weight = objective.loss_weight[::step]
    total = weight.sum()
    return float(weight[gamma != 0].sum() / total) if total > 0 else 0.0


# -- the problem, built once per fit ------------------------------------------------------------------------
@dataclass
class RobustProblem:
    """A comparison graph with its pair distances, loss and loss weights: everything the stages share.

    The objectives are built from it once each: :meth:`plain` (the loss alone), :meth:`robust`
    (with the outlier caps of a penalty ``lam``) and :meth:`refined` (the sigmoid stage).
    """

    graph: ComparisonGraph
    distances: PairDistances
    loss: Loss
    weighting: str
    loss_weight: np.ndarray  # a_c, normalised with b_c to sum 1
    two_sided: bool = False
    reverse_weight: np.ndarray | None = None  # b_c: the edge counted reversed (reverse_weights)

    @classmethod
    def build(cls, graph: ComparisonGraph, loss, weighting: str, two_sided: bool = False) -> "RobustProblem":
        a, b = edge_weights(graph, weighting), reverse_weights(graph, weighting)
        undecided = 0.0 if b is None else b.sum()
        if a.sum() - undecided <= 0:  # nothing decided (the halves alone would only pull every query to a tie)
            raise ValueError("all comparison weights are zero")
        total = a.sum() + undecided
        return cls(graph, PairDistances(graph.pairs, graph.n_objects), get_loss(loss), weighting, a / total,
                   two_sided, None if b is None else b / total)

    def caps(self, lam: float):
        """``kappa_c = lam / w_c`` for the paper weighting, else ``kappa_c = lam`` (a scalar, not an array
        per comparison)."""
        if self.weighting == "paper":
            return lam / np.maximum(np.asarray(self.graph.votes, dtype=np.float64) / self.graph.copies, 1e-12)
        return float(lam)

    def plain(self) -> EdgeObjective:
        return edge_objective(self.graph, self.loss, self.loss_weight, reverse_weight=self.reverse_weight)

    def robust(self, lam: float) -> EdgeObjective:
        return edge_objective(self.graph, self.loss, self.loss_weight, self.caps(lam), self.two_sided,
                              self.reverse_weight)

    def refined(self, slope: float) -> EdgeObjective:
        return edge_objective(self.graph, Sigmoid(slope=float(slope)), self.loss_weight,
                              reverse_weight=self.reverse_weight)


@dataclass(frozen=True)
class RobustSettings:
    """What the stages need besides the problem: the resolved parameters and the solver's settings."""

    lam: object = AUTO  # "auto" or a float
    alpha: float = 1e-4
    plain_start: bool = True
    n_init: int = 1
    restart_agree: int | None = None  # stop the restarts once this many converged starts agree (None: run all)
    refine: float | None = None
    refine_alpha: float = 1e-4
    refine_ensemble: tuple = (1.0,)  # the final fit's refinement: these multiples of the slope, averaged
    random_state: object = None
    init_scale: float = 0.1
    solve: dict = field(default_factory=dict)  # solver, max_iter, tol, callback, options


@dataclass
class FitState:
    """What one stage hands to the next."""

    X: np.ndarray
    lam: float | None = None
    objective: EdgeObjective | None = None  # the last objective solved
    result: SolverResult | None = None  # its solver result
    n_iter: int = 0
    gamma: np.ndarray | None = None
    restart_objectives: np.ndarray | None = None
    restart_converged: np.ndarray | None = None  # whether each start converged within the screen
    unconverged: tuple = ()
    basins: tuple = ()  # screened maps of other starts' minima, lowest objective first (see distinct_basins)


def _solve(state: FitState, objective, settings: RobustSettings, alpha: float, problem: RobustProblem,
           name: str) -> FitState:
    result = solve(objective, problem.distances, state.X, alpha=alpha, **settings.solve)
    return dataclasses.replace(state, X=result.solution, objective=objective, result=result,
                               n_iter=state.n_iter + result.n_iter,
                               unconverged=state.unconverged + (() if result.converged else (name,)))


def known_answers(comparisons, used: bool):
    """The comparisons' known-answer marks (``Comparisons.gold``), or None when no response is marked.

    Warns when marks are given but cannot anchor annotator types (no annotator ids, fewer than two annotators,
    or ``annotators=None``): they would otherwise be dropped without a word."""
    gold = comparisons.gold
    if gold is None or np.isnan(gold).all():
        return None
    ids = comparisons.annotator
    why = ("annotators=None" if not used else "the comparisons have no annotator ids" if ids is None
           else "there is only one annotator" if len(np.unique(ids)) < 2 else None)
    if why is not None:
        warn(f"known-answer (gold) marks are not used: {why}; they anchor annotator types only",
             DataWarning)
    return gold


def _seed_base(random_state) -> int | None:
    """One integer from ``random_state`` (None stays None; an integer is itself; a ``RandomState`` gives its next
    draw) that seeds the restarts' own streams."""
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return None if random_state is None else int(random_state)
    return int(check_random_state(random_state).randint(2**31))


def restart_starts(n_objects: int, n_components: int, random_state, n_init: int, scale: float):
    """Starts ``1 .. n_init - 1`` of the plain stage (start 0 is the estimator's own): seeded Gaussians."""
    base = _seed_base(random_state)
    for k in range(1, n_init):
        seed = None if base is None else np.random.SeedSequence([base, 2, k])
        yield scale * np.random.default_rng(seed).standard_normal((n_objects, n_components))


def lifted_start(problem: RobustProblem, settings: RobustSettings, X0: np.ndarray) -> FitState:
    """Start 0 of the restarts at p = 1: the plain stage's restarts in two dimensions (from ``X0`` beside a seeded
    Gaussian column, ``AUTO_RESTARTS[2]`` starts), then the top principal component of their best map, scaled to
    the random starts' size.  Why: on a line the objects cannot pass one another, so where the queries are few
    every random start can end in a wrong order; in the plane they can go round.  Measured against the same code
    without it (forty-sixth session, docs/results.md): 60 objects with 300 single answers, 10% flipped,
    exploration seeds 5001-5016, test error -0.042 (standard error 0.014; 8 better, 2 worse; median rank
    correlation with the truth 0.69 -> 0.81), 18% more time; the dense low-dimension data (30 objects, 1,000
    answers, seeds 4000-4019) +0.0002 (0.0003), every rank correlation still >= 0.95."""
    base = _seed_base(settings.random_state)
    rng = np.random.default_rng(None if base is None else np.random.SeedSequence([base, 3]))
    X2 = np.column_stack([X0[:, :1], settings.init_scale * rng.standard_normal(len(X0))])
    plane = stage_plain(problem, dataclasses.replace(settings, n_init=AUTO_RESTARTS[2]), FitState(X=X2))
    Y = plane.X - plane.X.mean(axis=0)
    line = Y @ np.linalg.svd(Y, full_matrices=False)[2][0]
    rms = np.sqrt(np.mean(line ** 2))
    return FitState(X=(line * (settings.init_scale / rms if rms > 0 else 1.0))[:, None], n_iter=plane.n_iter)


def stage_plain(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    """The loss without outliers, from ``n_init`` starts, keeping the lowest objective.

    It is the warm start of the robust stage and gives the margins for ``lam="auto"``.
    With several starts each runs at most ``RESTART_SCREEN`` iterations; the lowest objective
    then goes on to convergence (``restart_objectives`` are the screened values).  With
    ``restart_agree`` (``n_init="auto"``) the starts stop once that many converged near the lowest
    objective so far (:func:`restarts_settled`).  Measured:
    at p = 1 and 2 (n = 30, 20% flips, exploration data seeds 4000-4009) the rank correlation or
    Procrustes disparity of ten full fits within 0.005 in 19 of 20 cases and better in the last
    (0.220 -> 0.135); see docs/results.md for THINGS, where every full start ran to ``max_iter``.
    """
    if not (settings.plain_start or _is_auto(settings.lam)):
        return state
    plain = problem.plain()
    starts = [state.X, *restart_starts(*state.X.shape, settings.random_state, settings.n_init, settings.init_scale)]
    screen = dict(settings.solve, max_iter=min(RESTART_SCREEN, settings.solve.get("max_iter", RESTART_SCREEN))) \
        if len(starts) > 1 else settings.solve
    results = []
    for X0 in starts:
        results.append(solve(plain, problem.distances, X0, alpha=settings.alpha, **screen))
        if settings.restart_agree is not None and restarts_settled(results, settings.restart_agree):
            break
    values = np.array([r.objective for r in results])
    # the first start within rounding of the lowest: equal minima reached from several starts must not be
    # told apart by the last bits (they differ between processes and BLAS builds)
    best = results[int(np.flatnonzero(values <= values.min() + 1e-9 * max(abs(values.min()), 1e-12))[0])]
    basins = distinct_basins(results, best)
    n_iter = sum(r.n_iter for r in results)
    if screen is not settings.solve and not best.converged:
        best = solve(plain, problem.distances, best.solution, alpha=settings.alpha, **settings.solve)
        n_iter += best.n_iter
    return dataclasses.replace(state, X=best.solution, objective=plain, result=best,
                               n_iter=state.n_iter + n_iter, restart_objectives=values,
                               restart_converged=np.array([r.converged for r in results]), basins=basins)


def distinct_basins(results, best, limit: int | None = None) -> tuple:
    """The screened maps of up to ``limit - 1`` (``MAX_BASINS``) starts other than ``best``, lowest objective first,
    each further than ``BASIN_DISPARITY`` (Procrustes disparity) from ``best`` and from those kept before."""
    limit = MAX_BASINS if limit is None else limit
    kept = [best.solution]
    for r in sorted(results, key=lambda r: r.objective):
        if len(kept) >= limit:
            break
        if all(procrustes_disparity(X, r.solution) > BASIN_DISPARITY for X in kept):
            kept.append(r.solution)
    return tuple(kept[1:])


def lowest_final(problem: RobustProblem, settings: RobustSettings, state: FitState, basins) -> tuple[FitState, int]:
    r"""``(state, rank)``: ``state`` (the stages up to the refinement, from the best start; rank 0) or the same
    stages from one of ``basins`` (other starts' minima, :func:`distinct_basins`; rank ``k`` for ``basins[k - 1]``),
    whichever ends at the lowest final objective, provided it is lower than ``state``'s by more than
    ``BASIN_MARGIN`` (relative).

    Why: at p = 1 and 2 a noisy plain objective has minima within a fraction of a percent of each other that
    are far apart as maps, and its lowest is often not the right one (30 objects, 1,000 triplets, 20% flipped,
    data seed 4037: the truth's basin ends 0.3% higher in SOE's objective than a wrong one); the robust and
    refined stages, which discount the contradicted comparisons, tell them apart better.  Measured on
    exploration data (that shape, data seeds 4000-4039 and 6000-6039, the default as it was otherwise): at
    p = 2, 38 and 37 of 40 fits within 10% of the best of ten SOE starts' Procrustes disparity instead of 35
    and 35, held-out error -0.0052 and -0.0053 (standard errors 0.0038); at p = 1 80 of 80 both ways (-0.0007,
    0.0000).  The margin: on the material set at p = 2 (seeds 101-118) the minima's final objectives lie within
    0.3% of each other, and taking the lowest without one changed 12 of 18 fits by coin flip (+0.0005, 8
    worse) for one more low-dimension pass (38 and 38) (docs/results.md, "Forty-fourth session")."""
    single = dataclasses.replace(settings, n_init=1, restart_agree=None)
    best, rank, n_iter = state, 0, state.n_iter
    bar = state.result.objective - BASIN_MARGIN * abs(state.result.objective)
    for k, X in enumerate(basins, 1):
        other = fit_robust(problem, single, X, STAGES[:-1])
        n_iter += other.n_iter
        if other.result.objective < min(bar, best.result.objective):
            best, rank = other, k
    return dataclasses.replace(best, n_iter=n_iter, restart_objectives=state.restart_objectives,
                               restart_converged=state.restart_converged, basins=()), rank


def restarts_settled(results, agree: int) -> bool:
    """Whether ``agree`` of the screened starts so far converged within 1% (plus ``SAME_OBJECTIVE``) of the
    lowest objective among them: the starts that remain would most likely reach it again.

    Measured on exploration data (30 objects, 1,000 triplets, 20% flipped, data seeds 4000-4039 and
    6000-6039, replaying the screened objectives of the default fits): with five agreeing starts the restarts
    stopped after 6.5-6.7 of 10 at p = 2 and 14.0-15.2 of 20 at p = 1 and never missed the lowest basin
    of all the starts; with three (four) they stopped after 4.1-4.3 (5.2-5.6) of 10 at p = 2 and missed it
    in 2 (1) of 80.  On large crowds, where every start reaches the same objective, five starts of ten run
    (docs/annotators.md, "Restarts that stop once five agree")."""
    converged = np.array([r.converged for r in results])
    return int((near_lowest(np.array([r.objective for r in results])) & converged).sum()) >= agree


def near_lowest(values: np.ndarray) -> np.ndarray:
    """Which restart objectives reached the lowest one's minimum: within 1% of it plus ``SAME_OBJECTIVE``."""
    best = values.min()
    return values <= best + 0.01 * abs(best) + SAME_OBJECTIVE


def restart_agreement(values: np.ndarray, converged: np.ndarray | None) -> tuple[int, int]:
    """``(reached, elsewhere)`` of screened restarts: how many starts came within 1% of the lowest objective
    plus ``SAME_OBJECTIVE``, and how many of the others converged (within the screen) to a higher
    one -- a worse local minimum.

    The estimators warn when ``reached < 2 <= elsewhere``: the best basin was found once while at least two
    starts settled in worse ones.  A start stopped by the screen has not settled anywhere: its objective is an
    upper bound of where it was going, and counting it as a disagreement made the warning fire on 9 of 10
    default fits of the music data at p = 2 (exploration splits, data seeds 5001-5010), where 40 starts
    instead of 10 left the test error unchanged (mean 0.2238 against 0.2232, t-STE's ridge at 1e-7 in that
    run): "raise n_init" did not help.
    ``converged`` None (unknown): every start counts as converged.
    The objectives are means of per-comparison losses of order one; on data every start fits perfectly (four
    triplets over four objects) they all end near zero, at 3e-5 to 4e-5, where 1% of the lowest told them apart
    and the warning fired on ten equally good fits: ``SAME_OBJECTIVE`` is the absolute floor of "reached".
    """
    values = np.asarray(values, dtype=np.float64)
    near = near_lowest(values)
    settled = np.ones(len(values), dtype=bool) if converged is None else np.asarray(converged, dtype=bool)
    return int(near.sum()), int((settled & ~near).sum())


def auto_lam(problem: RobustProblem, plain: EdgeObjective, X: np.ndarray, max_edges: int = AUTO_CAP_EDGES) -> float:
    """The ``lam="auto"`` rule (:func:`auto_cap`) on the margins of ``problem``'s loss at ``X`` (of at most
    ``max_edges`` edges, every k-th beyond); ``plain`` is the problem's :meth:`RobustProblem.plain`."""
    step = -(-len(problem.graph) // max_edges)  # a strided sample of the edges beyond max_edges
    cap = auto_cap(problem.loss, plain.embedding_margins(X, problem.distances, step), plain.loss_weight[::step])
    if problem.weighting == "paper":
        cap *= weighted_median(problem.graph.votes / problem.graph.copies, plain.loss_weight)
    return cap


def stage_penalty(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    """``lam``: the given number, or the ``"auto"`` rule on the plain fit's margins."""
    if not _is_auto(settings.lam):
        return dataclasses.replace(state, lam=float(settings.lam))
    return dataclasses.replace(state, lam=auto_lam(problem, state.objective, state.X))


def stage_robust(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    """The loss with the outlier envelope of penalty ``lam``."""
    return _solve(state, problem.robust(state.lam), settings, settings.alpha, problem, "robust")


def stage_refine(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    """The symmetric sigmoid loss with slope ``refine``, from the robust solution rescaled to the sigmoid's
    best scale (:func:`refinement_scale`; skipped when ``refine`` is None)."""
    if settings.refine is None:
        return state
    objective = problem.refined(settings.refine)
    scale = refinement_scale(objective, problem.distances, state.X, settings.refine_alpha)
    return _solve(dataclasses.replace(state, X=scale * state.X), objective, settings, settings.refine_alpha, problem,
                  "refine")


def refinement_scale(objective: EdgeObjective, distances: PairDistances, X: np.ndarray, alpha: float) -> float:
    r"""The factor :math:`s \in [e^{-7}, e^7]` minimising the refinement objective at :math:`sX`,
    :math:`\sum_c a_c \phi(s\, m_c) + \alpha s^2 \|X\|_F^2` (1 when none does better).

    The sigmoid is not scale-invariant: a slope of 2 on margins of 100 is flat, and the refinement shrinks
    such a start for hundreds of iterations before it moves anything.  SOE's Euclidean margins :math:`m_c`
    are (up to their ``eps``) of degree one in the scale, so the search is one-dimensional on margins read
    once, of every ``k``-th edge beyond ``REFINE_SCALE_EDGES`` (a sample of 2^21 edges added 5 bytes per
    comparison to the peak of a 10^7-triplet fit).  Measured on exploration data in docs/results.md,
    "The refinement's start".
    """
    step = -(-len(objective) // REFINE_SCALE_EDGES)
    margins = objective.embedding_margins(X, distances, step)
    weights = objective.loss_weight[::step] * step
    reverse = None if objective.reverse_weight is None else objective.reverse_weight[::step] * step
    ridge = alpha * float(np.sum(np.square(X, dtype=np.float64)))

    def value(log_scale):
        s = np.exp(log_scale)
        total = float(np.dot(weights, objective.loss.penalty(s * margins)[0])) + ridge * s * s
        return total if reverse is None else total + float(np.dot(reverse, objective.loss.penalty(-s * margins)[0]))

    best = minimize_scalar(value, bounds=(-7.0, 7.0), method="bounded", options=dict(xatol=1e-2))
    return float(np.exp(best.x)) if best.fun < value(0.0) else 1.0


def stage_refine_ensemble(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    r"""The final fit's refinement: :func:`stage_refine` from the same robust solution at the slope times each
    multiple in ``settings.refine_ensemble`` (the first is 1), each map aligned onto the first by Procrustes with
    scaling, and their mean.  One multiple: the refinement itself.

    The mean is no minimiser of anything (the stored objective is the first slope's at the mean).  Why average:
    each slope's minimum fits some of the flipped comparisons, a steeper one more and differently, and the mean
    of the maps cancels part of that.  On exploration trials 4001-4016 of the synthetic protocol (q = 0.25) with
    the default's choice held fixed, (1, 1.5) lowered the test error by 0.0026 under ``unanimous`` and 0.0020
    under ``majority`` flips (standard errors 0.0007; 12 and 14 of 16 trials better), while the 1.5 slope alone
    gave +0.0002 and -0.0012; (1, 1.5, 2.25) gave the same means with larger errors for one more refinement, and
    the mixture loss of the two slopes (which stays a minimiser) -0.0008 and -0.0015 (docs/results.md,
    "Forty-first session").  The tuning judges single slopes (:func:`refine_candidate`): with the mixture in
    its candidates too, the hold-out moved half the majority trials to the worse refinement family.
    """
    multiples = settings.refine_ensemble
    first = stage_refine(problem, settings, state)
    if settings.refine is None or len(multiples) == 1:
        return first
    maps, n_iter, unconverged = [first.X], first.n_iter, first.unconverged
    for multiple in multiples[1:]:
        other = stage_refine(problem, dataclasses.replace(settings, refine=settings.refine * multiple), state)
        maps.append(procrustes(first.X, other.X).apply(other.X))
        n_iter += other.n_iter - state.n_iter
        unconverged += () if other.result.converged else (f"refine (slope x {multiple:g})",)
    X = np.mean(maps, axis=0)
    value = float(first.objective.embedding_value_and_grad(X, problem.distances)[0]) + \
        settings.refine_alpha * float(np.sum(np.square(X)))
    return dataclasses.replace(first, X=X, n_iter=n_iter, unconverged=unconverged,
                               result=dataclasses.replace(first.result, solution=X, objective=value))


def stage_shifts(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    r"""The outlier shifts ``gamma`` at the final embedding: with ``lam`` given, those of the robust envelope
    solved; with ``lam="auto"``, those of SOE's envelope (the squared hinge on the Euclidean margins
    :math:`s_c = d_{far} - d_{near}`), whatever the loss, with the ``"auto"`` rule read at the final embedding:
    :math:`\gamma_c = \max(0, s^* - s_c)`, :math:`s^* = \min(\mathrm{med}_w(s) - 2\sigma, 0)`.  So the flags mean
    one thing for every loss and stage: the comparisons the final map contradicts far beyond the typical margin.

    Why: the envelope of the loss solved flagged by that loss's knee, on a map whose scale the refinement had
    changed, so the flags followed the tuning's noisy choice of loss: where it chose t-STE (whose slope
    flattens beyond its knee), precision / recall under majority flips were 0.98 / 0.36, now 0.95 / 0.52
    (exploration trials; every map unchanged).  The width stays the rule's 2: 1.5 raised every recall but
    flagged 2.4-3.4% of the clean music triplets.  The knee reads the margins of at most ``FLAG_KNEE_EDGES``
    edges (every k-th beyond): on 10^6 triplets 58,002 flagged against 58,191 reading all, without the 7 bytes
    per comparison that 2^21 margins added to the fit's peak (docs/results.md, "Forty-third session: one rule
    for the flags")."""
    if _is_auto(settings.lam):
        flagging = dataclasses.replace(problem, loss=get_loss("soe"))
        objective = flagging.robust(auto_lam(flagging, flagging.plain(), state.X, FLAG_KNEE_EDGES))
    else:
        objective = problem.robust(state.lam)
    gamma = shifts(objective, problem.distances, state.X, **settings.solve)  # where it solved
    return dataclasses.replace(state, gamma=gamma)


STAGES = (stage_plain, stage_penalty, stage_robust, stage_refine_ensemble, stage_shifts)


def fit_robust(problem: RobustProblem, settings: RobustSettings, X0: np.ndarray, stages=STAGES) -> FitState:
    """The robust fit: ``stages`` in order (plain -> penalty -> robust -> refine -> shifts), each a function
    ``(problem, settings, state) -> state``."""
    state = FitState(X=np.asarray(X0, dtype=np.float64))
    for stage in stages:
        state = stage(problem, settings, state)
    return state


def continue_fit(problem: RobustProblem, settings: RobustSettings, candidate: FitState) -> FitState:
    """The final fit of a large graph (:data:`CONTINUE_EDGES`): the chosen tuning candidate, fitted on the
    training part of the queries, continued on every comparison -- its last stage (refine when chosen, else
    robust) from its embedding, with its ``lam`` -- then the shifts.

    The plain and robust stages are not run again from the start: on 3 x 10^6 random triplets they were
    109 of the final fit's 178 iterations, and the continued refinement took 76 iterations where the one
    after those stages took 69; the held-out error was the same to 10^-4 (docs/results.md, "Continuing
    the chosen candidate").  Why from 2^16 edges: on crowds of 10^5 and 2 x 10^5 random triplets the default
    at p = 10 took 5-15% less time, errors within 10^-4 (on sparser data, 10^5 triplets over 5,000 objects with
    a refinement chosen, 10% less time and +0.0003 error, standard error 0.0002); on small graphs it saves a
    few percent and at n = 30, p = 1 and 2, it moved fits to other basins either way (docs/results.md, "The
    continued final fit from 2^16 edges").  Every accuracy benchmark's graph lies below (at most 3.5 x 10^4
    edges).
    """
    state = FitState(X=candidate.X, lam=candidate.lam)
    for stage in (stage_refine if settings.refine is not None else stage_robust, stage_shifts):
        state = stage(problem, settings, state)
    return state


# -- the self-tuning default ------------------------------------------------------------------------------------
AUTO_LOSSES = ("soe", "tste")  # tried in this order (t-STE with dof min(max(p - 1, 1), TSTE_MAX_DOF))
TSTE_MAX_DOF = 3.0  # t-STE's degrees of freedom: p - 1 (cblearn's, van der Maaten's) up to this (see _loss_of)
AUTO_WEIGHTINGS = ("consensus", "vote")
AUTO_REFINES = ((2.0, 1e-4), (1.5, 1e-5))  # (refine, refine_alpha) pairs tried on the best fit
# the one fit where the data cannot pin the map down: one start, stopped at CKL's own tolerance (see _loose)
LOOSE_CHOICE = dict(loss="ckl", weighting="vote", alpha=1e-4, n_init=1, tol=1e-6)
DEFAULT_TOL = 1e-9  # tol="auto" elsewhere
DEFAULT_REFINE_ALPHA = 1e-4  # refine_alpha="auto" with an explicit refine
AUTO_ALPHA = {"squared_hinge": 3e-6, "tstudent": 1e-9}  # per loss; others: RobustOrdinalEmbedding.default_alpha
AUTO_RESTARTS = {1: 20, 2: 10}  # n_init="auto" by n_components (else 1); see the n_init parameter
RESTART_SCREEN = 100  # iterations of each start before the lowest objective goes on (see stage_plain)
RESTART_AGREE = 5  # n_init="auto": the restarts stop once this many converged starts agree (restarts_settled)
SAME_OBJECTIVE = 1e-4  # restarts' objectives closer than this (or 1%) reached the same minimum (restart_agreement)
SAME_WEIGHTING = 1e-3  # weightings closer than this in total variation are one candidate
MIN_TUNING_QUERIES = 50  # fewer queries: no validation split, the first candidate of each list
FLAG_KNEE_EDGES = 1 << 16  # the flags' knee (stage_shifts) reads the margins of at most this many edges
REFINE_SCALE_EDGES = 1 << 16  # refinement_scale reads the margins of at most this many edges (every k-th beyond)
CONTINUE_EDGES = 1 << 16  # from this many edges on, the final fit continues the chosen candidate (continue_fit)
SCREEN_TOL = 1e-6  # ... and the candidates' robust fits stop at this tolerance (or tol, if looser; see _choose)
HOPELESS_AFTER, HOPELESS_MARGIN = 200, 0.02  # a refinement candidate given up (see refine_candidate)
REFINE_MIN_OUTLIERS = 0.01  # a fit whose robust stage flags less of the loss weight is not refined (see _choose)
MAX_BASINS = 3  # the final fit runs from this many distinct restart minima at most (lowest_final)
BASIN_DISPARITY = 0.02  # screened restart maps further apart than this are distinct minima (distinct_basins)
BASIN_MARGIN = 0.005  # ... and another minimum's final fit must end this much lower (relative) to be kept
REFINE_FORCE_SHARE = 0.02  # from this share on, a winning unrefined fit gives way to its refinement (chosen_candidate)
RIDGE_CHECK_QUERIES = 6  # fewer queries per free coordinate: the chosen fit meets a stronger ridge (ridge_check)
RIDGE_CHECK_ALPHA = 1e-3  # ... that ridge, times the ridge scale 100 / n
RIDGE_CHECK_FOLDS = 5  # ... over this many folds of whole queries


def _loss_of(name, n_components: int) -> Loss:
    """The loss named ``name``; t-STE with ``min(max(p - 1, 1), TSTE_MAX_DOF)`` degrees of freedom.

    Why the cap: a heavier tail bounds what a reversed comparison can pull.  On the music triplets at p = 9
    with a quarter of the training triplets reversed (single answers; exploration trials 4001-4008) the
    default's error fell from 0.320 to 0.295 (mean -0.0251, standard error 0.0023, 8 of 8 trials) with dof 3
    instead of 8; on clean music it moved by +0.0003 (0.0020); on the synthetic protocol at p = 10 (trials
    4001-4016) only through the choice between SOE and t-STE, unanimous +0.0003 and majority +0.0012 (standard
    errors about 0.0018 and 0.0013); below p = 5 nothing changes (docs/results.md, "Forty-second session")."""
    if isinstance(name, str) and name.lower() in ("tste", "t-ste", "tstudent"):
        return get_loss(name, alpha=float(min(max(n_components - 1, 1), TSTE_MAX_DOF)))
    return get_loss(name)


class RobustOrdinalEmbedding(OutlierReportMixin, LossEmbedding):
    r"""Robust ordinal embedding: any margin loss plus sparse per-comparison outlier shifts.

    With its defaults it tunes itself (see the module docstring, "The self-tuning default"):
    ``loss``, ``weighting``, ``alpha`` and ``refine`` are chosen on a validation split of whole
    queries, and ``n_init`` restarts guard the low dimensions; ``chosen_params_`` reports the choice.

    Parameters
    ----------
    n_components : int
    loss : "auto", str or Loss
        Any loss of :mod:`roembed.losses` (``"soe"``, ``"ste"``, ``"tste"``, ``"gnmds"``, ``"ckl"``, ``"roe"``);
        ``"auto"`` chooses between SOE and t-STE (dof ``min(max(p - 1, 1), 3)``: :func:`_loss_of`) on
        validation.  ``"tste"`` by name has the same degrees of freedom; pass ``get_loss("tste", alpha=...)`` for
        others.
    lam : "auto" or float > 0
        Outlier penalty :math:`\lambda` (see the module docstring for the ``"auto"`` rule).  With ``"auto"`` the
        flags are SOE's margins beyond the rule's knee at the final map, whatever the loss (:func:`stage_shifts`).
    nonneg : bool
        Only :math:`\gamma_c \ge 0` (an outlier can only make a comparison look violated); False lets the
        squared (ROE) loss shift margins both ways (other losses are monotone, so it makes no difference).
        Measured with the squared loss (synthetic, q = 0.25): no difference beyond 0.002 in test error.
    weighting : "auto", "vote", "paper", "net", "majority" or "consensus"
        See the module docstring; ``"auto"`` chooses between ``"consensus"`` and ``"vote"`` on validation.
    solver : "lbfgs" (factored, NumPy), "torch" (any torch device) or "gram" (see :mod:`roembed.solvers`)
    device, dtype : torch device (default CUDA if available) and "float32" / "float64" (torch solver only)
    alpha : float or "auto"
        Ridge penalty :math:`\alpha\|X\|_F^2`.  ``"auto"``: 3e-6 for SOE, 1e-9 for t-STE, else ``default_alpha``
        = 1e-4 (chosen on validation data of the paper's synthetic protocol, 100 objects; the SOE and t-STE
        values: the module docstring), times ``100 / n``
        on ``n > 100`` objects.  The loss is a *mean* over comparisons, so each object's share of it falls
        as ``1 / n`` while its ridge term does not: with a fixed ``alpha`` the ridge wins as ``n`` grows, the
        embedding shrinks (RMS norm 1.0, 0.57, 0.24 at n = 10^3, 3 x 10^3, 10^4 with 100 random triplets
        per object, 10% flipped) until every margin sits in the hinge's linear part, the held-out error
        rises (0.137, 0.170, 0.212) and L-BFGS needs ever more iterations (105 at 10^4, 256 at 3 x 10^4
        objects).  Scaled, the error stays at 0.12 (``benchmarks/bench_scale.py``, with ``alpha=1e-4``).
        Where the data cannot pin the map down, the self-tuning default fits CKL with ridge 1e-4, unscaled
        (:meth:`_loose`); where they have fewer than 6 queries per free coordinate, the tuning's choice meets
        the ridge 1e-3 (times ``100 / n``) on five folds of whole queries and the better is fitted
        (:meth:`_check_ridge`; ``chosen_params_["ridge_check_gain"]``).
    init : "plain", "random" or an (n, p) array
        "plain" starts from a fit of the loss without outliers (always done for ``lam="auto"``, whose
        margins it needs).  Measured: at p = 10 (synthetic protocol, majority / unanimous, q = 0.25) the
        same error as a random start at about 1.7x the iterations; at p = 2 (30 objects, 10% unanimous
        flips) random starts fell into a local minimum for 2 of 3 seeds (test error 0.109 vs 0.056) and
        the plain start never did -- hence the default.
    refine : "auto", None or float > 0
        Slope of the sigmoid refinement stage (see the module docstring); None skips it; ``"auto"``
        continues the best fit of each candidate weighting (with ``weighting="auto"``: ``consensus``; ``vote``
        only when set by name) with the pairs ``AUTO_REFINES``
        (when the fit's robust stage shifts at least ``REFINE_MIN_OUTLIERS`` of the loss weight) and keeps one
        where validation prefers it.  A number is kept as set: where other parameters are tuned, their
        candidates are judged unrefined and the final fit is refined at that slope (with ``refine_alpha``).
    refine_ensemble : tuple of float
        The final fit's refinement runs at the chosen slope times each of these multiples (the first is 1),
        from the same robust fit, and the map is their mean after Procrustes alignment onto the first
        (:func:`stage_refine_ensemble`; the default (1, 1.5) lowered the error under ``unanimous`` and
        ``majority`` flips by 0.002-0.003 on exploration data).  ``(1,)``: the single refinement, a
        minimiser of its objective.  The tuning's candidates are single refinements, and graphs of
        ``CONTINUE_EDGES`` edges or more continue the chosen candidate's single refinement (:func:`continue_fit`).
    refine_alpha : "auto" or float >= 0
        Ridge of the refinement stage (``"auto"``: 1e-4, or the chosen pair's with ``refine="auto"``; both
        times ``100 / n`` on ``n > 100`` objects, as ``alpha="auto"``: unscaled, the refinement at 10^6
        random triplets over 10^4 objects shrank the embedding, scored 0.67-0.70 on validation against
        0.78 unrefined and ran 870-907 iterations, 70% of the fit's time).  A number is used as it is; with
        ``refine="auto"`` the slopes of ``AUTO_REFINES`` are then tried with that ridge.
    n_init : "auto" or int >= 1
        Starts of the plain fit, run on every comparison before the tuning (with the first candidate's loss and
        weighting); the lowest objective is kept and starts the final fit.  The tuning runs the same starts on its
        training part, whose best starts its candidates (:meth:`_choose`: a start fitted to the held-out queries had
        favoured SOE on them).  ``"auto"``: up to 20 at p = 1, up to 10 at p = 2 as cblearn's SOE, else 1, and 1
        where the data cannot pin the map down (:meth:`_loose`) or where ``init`` is an array -- a start given is
        the start used, as in scikit-learn's MDS; stopping once ``RESTART_AGREE`` = 5 converged starts agree on the
        lowest objective (:func:`restarts_settled`; an explicit number always runs every start); screened, see
        :func:`stage_plain`.  At p = 1, on exploration data -- 30 objects, 1,000 triplets, 20% flipped, data seeds
        4000-4039 -- 10 screened starts left 4 of 40 fits below rank correlation 0.95 with the truth, 20 left 1.  At
        p = 1 the first start is not random but the line through the plain fit's restarts in two dimensions
        (:func:`lifted_start`): where the queries are few every random start can end in a wrong order.  When the
        tuning chooses another loss (t-STE), the final fit restarts that loss from the best start and the same
        random ones and keeps its lowest objective, the objective it minimises (measured in docs/results.md, "Low
        dimensions": the worst case and the test error improve).  With several starts the final fit's stages also
        run from up to ``MAX_BASINS - 1`` other distinct minima of the restarts, and the lowest final objective is
        kept where it is clearly lower (:func:`lowest_final`). ``restart_objectives_`` are those of the first
        restarts on every comparison (as many as ran), whose random starts are on an equal footing (the chosen
        loss's first start is SOE's converged best), and a warning says when fewer than two of them reach the best
        objective (within 1% of it plus ``SAME_OBJECTIVE``) while two or more converged to worse ones
        (:func:`restart_agreement`).
    validation_fraction : float in (0, 1)
        Share of the queries held out (whole queries) to choose the ``"auto"`` parameters.
    annotators : "auto" or None
        "auto": when the responses carry ids of two or more annotators whose agreement with a plain fit
        differs by more than chance (:func:`roembed.annotator_model.heterogeneity_test`, p < 0.01; always
        with gold answers), a first stage estimates each
        annotator's type (follows the embedding, inverts it, answers at random) jointly with the
        embedding (:func:`roembed.annotator_model.fit_crowd`); the later stages (and the choice of the
        "auto" parameters) weight each response by its annotator's probability of following
        (``annotator_types_``).  It runs once, before the tuning: it costs an
        EM and does not depend on the candidate losses (it uses t-STE for SOE).
        None ignores annotator ids in the fit (they are still reported in ``annotators_``).
    tol : "auto" or float >= 0
        The solver's tolerance (:class:`LossEmbedding`); ``"auto"``: 1e-9, or CKL's own 1e-6 where the data
        cannot pin the map down (:meth:`_loose`).  On graphs of ``CONTINUE_EDGES`` edges or more the tuning's
        robust candidates stop at ``max(tol, SCREEN_TOL)``; the final fit runs to ``tol``.
    init_scale, max_iter, random_state, verbose : see :class:`LossEmbedding`

    Fitted attributes besides :class:`LossEmbedding`'s and the outlier report: ``lam_``, ``chosen_params_``
    (the parameters used, "auto" resolved, ``n_init`` and ``tol`` too; ``too_few_queries``, true where
    :meth:`_loose` fixed them without tuning; ``final_starts``, the distinct restart minima the final fit ran
    from, and ``final_start``, the one kept, 0 for the lowest plain objective: :func:`lowest_final`),
    ``tuning_results_`` (each candidate tried: its ``loss``,
    ``weighting``, ``refine`` and ``refine_alpha``, its validation
    score, ``given_up``, true for a refinement stopped as hopeless, and ``outlier_share``, the share of the
    loss weight with an outlier shift in the robust fit, for a refinement that of the fit it started from;
    empty when nothing was tuned) and
    ``restart_objectives_``.
    With ``refine``, ``objective_`` and ``history_`` are those of the refinement stage and
    ``n_iter_`` counts every stage (and every start) of the final fit; on graphs of ``CONTINUE_EDGES`` edges
    or more that fit is the chosen candidate continued (:func:`continue_fit`), and ``lam_`` the candidate's.
    """

    default_alpha = 1e-4
    alpha_reference_objects = 100
    default_init_scale = 0.1

    def __init__(self, n_components=2, *, loss="auto", lam="auto", nonneg=True, weighting="auto", solver="lbfgs",
                 device=None, dtype="float32", alpha="auto", max_iter=1000, tol="auto", init="plain", init_scale="auto",
                 refine="auto", refine_alpha="auto", refine_ensemble=(1.0, 1.5), n_init="auto",
                 validation_fraction=0.2, annotators="auto", random_state=None, verbose=0):
        super().__init__(n_components, solver=solver, alpha=alpha, max_iter=max_iter, tol=tol, init_scale=init_scale,
                         random_state=random_state, verbose=verbose)
        self.loss = loss
        self.lam = lam
        self.nonneg = nonneg
        self.weighting = weighting
        self.device = device
        self.dtype = dtype
        self.init = init
        self.refine = refine
        self.refine_alpha = refine_alpha
        self.refine_ensemble = refine_ensemble
        self.n_init = n_init
        self.validation_fraction = validation_fraction
        self.annotators = annotators

    # -- parameters ------------------------------------------------------------
    def _check_params(self) -> None:
        super()._check_params()
        if not _is_auto(self.loss):
            get_loss(self.loss)
        if not _is_auto(self.lam):
            check_param("lam", self.lam, low=0, low_open=True)
        if not _is_auto(self.weighting) and self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be 'auto' or one of {WEIGHTINGS}, got {self.weighting!r}")
        if not isinstance(self.init, np.ndarray) and self.init not in INITS:
            raise ValueError(f"init must be one of {INITS} or an array, got {self.init!r}")
        if not isinstance(self.nonneg, (bool, np.bool_)):
            raise ValueError(f"nonneg must be True or False, got {self.nonneg!r}")
        if self.refine is not None and not _is_auto(self.refine):
            check_param("refine", self.refine, low=0, low_open=True)
        if not _is_auto(self.refine_alpha):
            check_param("refine_alpha", self.refine_alpha, low=0)
        ensemble = self.refine_ensemble
        numbers = isinstance(ensemble, (tuple, list)) and all(
            isinstance(m, (int, float, np.number)) and not isinstance(m, bool) for m in ensemble)
        if not (numbers and len(ensemble) >= 1 and ensemble[0] == 1 and min(ensemble) > 0):
            raise ValueError("refine_ensemble must be a tuple of slope multiples > 0 starting with 1, "
                             f"got {ensemble!r}")
        if not _is_auto(self.n_init):
            check_param("n_init", self.n_init, low=1, integer=True)
        check_param("validation_fraction", self.validation_fraction, low=0, low_open=True, high=0.9)
        if self.annotators not in ("auto", None):
            raise ValueError(f"annotators must be 'auto' or None, got {self.annotators!r}")
        if self.solver == "torch":
            from ..solvers.torch_lbfgs import DTYPES, import_torch

            import_torch()
            if str(self.dtype) not in DTYPES:
                raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")

    @property
    def two_sided(self) -> bool:
        return not self.nonneg

    def _n_init(self, graph: ComparisonGraph) -> int:
        if not _is_auto(self.n_init):
            return int(self.n_init)
        if isinstance(self.init, np.ndarray):
            return 1
        return LOOSE_CHOICE["n_init"] if self._loose(graph) else AUTO_RESTARTS.get(self.n_components, 1)

    def _tol(self, graph: ComparisonGraph) -> float:
        if not _is_auto(self.tol):
            return float(self.tol)
        return LOOSE_CHOICE["tol"] if self._loose(graph) else DEFAULT_TOL

    def _check_tol(self) -> None:
        if not _is_auto(self.tol):
            super()._check_tol()

    def _settings(self, graph: ComparisonGraph, loss: Loss, refine, alpha, refine_alpha) -> RobustSettings:
        if _is_auto(alpha):
            alpha = AUTO_ALPHA.get(loss.name, self.default_alpha) * self._ridge_scale()
        if refine_alpha is None or _is_auto(refine_alpha):
            refine_alpha = DEFAULT_REFINE_ALPHA * self._ridge_scale()
        options = dict(device=self.device, dtype=self.dtype) if self.solver == "torch" else {}
        return RobustSettings(
            lam=self.lam, alpha=float(alpha), plain_start=isinstance(self.init, str) and self.init == "plain",
            n_init=1, restart_agree=RESTART_AGREE if _is_auto(self.n_init) else None,
            refine=None if refine is None else float(refine),
            refine_alpha=float(refine_alpha), refine_ensemble=tuple(float(m) for m in self.refine_ensemble),
            random_state=self.random_state,
            init_scale=self.default_init_scale if self.init_scale == "auto" else float(self.init_scale),
            solve=dict(solver=self.solver, max_iter=self.max_iter, tol=self._tol(graph), callback=self._progress(),
                       **options))

    def _start(self, graph: ComparisonGraph) -> np.ndarray:
        if isinstance(self.init, np.ndarray):
            X = np.asarray(self.init, dtype=np.float64)
            if X.shape != (graph.n_objects, self.n_components):
                raise ValueError(f"init has shape {X.shape}, expected {(graph.n_objects, self.n_components)}")
            return X.copy()
        return self._initial_embedding(graph)

    # -- fitting -----------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None, gold=None):
        """Fits to comparisons ``X``; ``gold`` (one value per response: 1 right, 0 wrong, NaN not a
        known-answer question) anchors the annotator types (see :mod:`roembed.annotator_model`).
        Without ``gold``, the comparisons' own marks (``Comparisons.gold``, a file's ``gold`` column) are used."""
        comparisons = as_comparisons(X, y, sample_weight)
        return super().fit(comparisons if gold is None else comparisons.with_gold(gold))

    def _fit_graph(self, graph: ComparisonGraph) -> None:
        """Annotator types (when ids exist); the "auto" parameters chosen on a validation split;
        then the stages on every comparison."""
        graph, self.annotator_types_, annotator_iter, heterogeneity_p, gold_error = self._annotator_stage(graph)
        start = self._start(graph)
        restarts, restarted = self._restarts(graph, start)
        X0 = restarts.X
        chosen, self.tuning_results_, candidate = self._choose(graph, X0, start)
        chosen, ridge_gain = self._check_ridge(graph, start, chosen, tuned=bool(self.tuning_results_))
        loss = _loss_of(chosen["loss"], self.n_components)
        problem = RobustProblem.build(graph, loss, chosen["weighting"], self.two_sided)
        settings = self._settings(graph, loss, chosen["refine"], chosen["alpha"], chosen["refine_alpha"])
        if restarted is not None and restarted != chosen["loss"]:
            # another loss than the restarts' (t-STE after SOE's restarts): its own restarts, from the best of
            # theirs and the same random starts, keeping its lowest objective (see the n_init parameter)
            settings = dataclasses.replace(settings, n_init=self._n_init(graph))
        continued = candidate is not None and len(graph) >= CONTINUE_EDGES
        basins, final_start = (), 0
        if continued:
            state = continue_fit(problem, settings, candidate)
        else:
            state = fit_robust(problem, settings, X0, STAGES[:-1])
            basins = state.basins or restarts.basins  # the chosen loss's own restarts' minima, else the first's
            state, final_start = lowest_final(problem, settings, state, basins)
            state = stage_shifts(problem, settings, state)
        # the per-edge arrays of the solve (loss weights, the graph's edge objects) are freed before the outlier
        # table is built; the edge objects are computed again if something asks
        state, problem = dataclasses.replace(state, objective=None), None
        graph.forget("edge_objects")
        if restarts.restart_objectives is not None:
            state = dataclasses.replace(state, restart_objectives=restarts.restart_objectives,
                                        restart_converged=restarts.restart_converged)
        self._store_state(dataclasses.replace(state, n_iter=state.n_iter + annotator_iter + restarts.n_iter))
        self.chosen_params_ = {**chosen, "alpha": settings.alpha, "lam": self.lam_, "n_init": self._n_init(graph),
                               "tol": settings.solve["tol"],
                               "final_starts": 1 + len(basins), "final_start": final_start,
                               "ridge_check_gain": ridge_gain,
                               "too_few_queries": self._loose(graph),
                               "refine_alpha": settings.refine_alpha if settings.refine is not None else None,
                               "refine_ensemble": None if settings.refine is None or continued
                               else settings.refine_ensemble,
                               "annotators": None if self.annotator_types_ is None else "types",
                               "annotator_heterogeneity_p": heterogeneity_p,
                               "gold_answers": 0 if graph.comparisons.gold is None
                               else int(np.count_nonzero(~np.isnan(graph.comparisons.gold))),
                               "gold_error": gold_error}

    def _fitted_objective(self):
        """``(graph, objective, alpha)`` of the last stage of the final fit: the robust envelope of the chosen
        loss and weighting with penalty ``lam_`` and ridge ``alpha``, or, when the refinement was chosen, the
        sigmoid with ``refine_alpha``; over the graph the stages saw (responses weighted by their annotator's
        probability of following, when the annotator stage ran)."""
        check_is_fitted(self, "chosen_params_")
        graph, chosen = self.graph_, self.chosen_params_
        if self.annotator_types_ is not None:
            graph = follow_weighted(graph, self.annotator_types_)
        problem = RobustProblem.build(graph, _loss_of(chosen["loss"], self.n_components_), chosen["weighting"],
                                      self.two_sided)
        if chosen["refine"] is None:
            return graph, problem.robust(self.lam_), chosen["alpha"]
        return graph, problem.refined(chosen["refine"]), chosen["refine_alpha"]

    def _check_ridge(self, graph: ComparisonGraph, start: np.ndarray, chosen: dict, tuned: bool):
        """``(chosen, gain)``: where the data are scarce, the tuning's choice against the same loss and weighting,
        unrefined, with the stronger ridge ``RIDGE_CHECK_ALPHA`` x 100 / n, over ``RIDGE_CHECK_FOLDS`` folds of
        whole queries (:func:`ridge_check`); the ridged fit is kept when its mean held-out agreement is higher.
        ``gain`` is that mean difference, None where the check did not run.  Every fold's fits run from ``start``,
        the estimator's own start, not from the restarts' best map (p <= 2), which has fitted the fold's held-out
        queries: the fit nearer that map, the unridged one, scored that memory (forty-eighth session; single
        answers at p = 1 and 2 with 2.5-5.1 queries per free coordinate, exploration seeds 5001-5024, 168 fits:
        -0.0045 in mean test error, standard error 0.0019; the three p = 1 cells -0.0055, -0.0080 and -0.0152,
        28 fits better and 10 worse, the ridge kept in 46 of 72 fits instead of 18; the four
        p = 2 cells -0.0029 to +0.0008, the ridge kept in 66 of 96 instead of 60; time +0-10% at p = 1, +25-30%
        at p = 2 with 600 answers).

        It runs where the tuning ran (``tuned``), ``alpha`` is "auto", the graph has fewer than ``RIDGE_CHECK_QUERIES``
        distinct queries per free coordinate and fewer than ``CONTINUE_EDGES`` edges (on larger graphs ten more
        fits were not measured).  Why: where the queries are few against the coordinates, how strongly to pull
        the map towards the origin decides much of the error, and the tuning's single 20% hold-out is too noisy
        to see it (music with a quarter of the triplets reversed: it preferred the ridge in 2 of 8 trials); five
        folds' paired differences are steadier.  Measured on exploration data (docs/results.md, "Forty-fifth
        session" and "Forty-sixth session"): music with a quarter of the triplets reversed (1.4 queries per
        free coordinate) -0.0117 in mean test error (standard error 0.0026; 14 of 20 fits better, none worse),
        clean music unchanged (every check lost); synthetic data with 4.4-6 queries per free coordinate (p = 1-10;
        single answers 0-20% flipped, repeated votes 25% flipped; 24 cells of 8 fits) -0.0068 (standard error
        0.0012; 81 fits better, 32 worse; worst cell clean p = 5, +0.0117).  Hence the limit of 6 (4 until the
        forty-sixth session): at 7.7-8 a coordinate the check gained nothing on average (+0.0002), at 10-12 it
        cost +0.0024, and at the synthetic protocol's 10 a coordinate unanimous flips fooled it once in six.
        Cost: ten fits on four fifths of the data (music: 1 s -> 2.5 s)."""
        free = free_coordinates(len(graph.comparisons.used_objects), self.n_components)
        if not (tuned and _is_auto(self.alpha) and len(graph) < CONTINUE_EDGES
                and graph.n_queries < RIDGE_CHECK_QUERIES * free):
            return chosen, None
        loss = _loss_of(chosen["loss"], self.n_components)
        ridged = dict(chosen, alpha=RIDGE_CHECK_ALPHA * self._ridge_scale(),
                      **(dict(refine=None, refine_alpha=None) if _is_auto(self.refine) else {}))
        settings = [self._settings(graph, loss, c["refine"], c["alpha"], c["refine_alpha"]) for c in (chosen, ridged)]
        folds = GroupedKFold(RIDGE_CHECK_FOLDS, groups=graph.response_query, random_state=self.random_state)
        gains = ridge_check(graph, loss, chosen["weighting"], self.two_sided, settings, start,
                            folds.split(graph.comparisons))
        gain = round(float(np.mean(gains)), 12)  # folds that tie (+x and -x) keep the choice, whatever the last bit
        return (ridged if gain > 0 else chosen), gain

    def _restarts(self, graph: ComparisonGraph, X0: np.ndarray, problem: RobustProblem | None = None):
        """``(state, loss)``: the plain stage of the first candidate (e.g. SOE, ``net``) from ``n_init`` starts
        on every comparison, whose best embedding starts the final fit, and that candidate's loss (``(state of
        X0, None)`` with one start).  ``problem``: that candidate's problem on other comparisons, fitted instead
        (the tuning's training part, :meth:`_choose`); ``n_init`` is still that of ``graph``."""
        n_init = self._n_init(graph)
        if n_init == 1:
            return FitState(X=X0), None
        losses, weightings, _, alpha = self._candidate_lists(graph)
        loss = _loss_of(losses[0], self.n_components)
        if problem is None:
            problem = RobustProblem.build(graph, loss, weightings[0], self.two_sided)
        settings = dataclasses.replace(self._settings(graph, loss, None, alpha, None), n_init=n_init, plain_start=True)
        start = FitState(X=X0)
        if self.n_components == 1 and not isinstance(self.init, np.ndarray):  # a start the user gave is kept
            start = lifted_start(problem, settings, X0)
        return stage_plain(problem, settings, start), losses[0]

    def _candidate_lists(self, graph: ComparisonGraph):
        """The candidate losses, weightings (distinct on this graph) and (refine, refine_alpha) pairs, and the
        ridge ``alpha`` they share; where the data cannot pin the map down (:meth:`_loose`) one candidate,
        ``LOOSE_CHOICE`` without refinement."""
        if not _is_auto(self.refine):
            refines = [(self.refine, self.refine_alpha)]
        elif _is_auto(self.refine_alpha):
            refines = [(None, None), *((slope, ridge * self._ridge_scale()) for slope, ridge in AUTO_REFINES)]
        else:  # the slopes tried, each with the ridge set by the user
            slopes = dict.fromkeys(slope for slope, _ in AUTO_REFINES)
            refines = [(None, None), *((slope, self.refine_alpha) for slope in slopes)]
        if self._loose(graph):
            return [LOOSE_CHOICE["loss"]], [LOOSE_CHOICE["weighting"]], refines[:1], LOOSE_CHOICE["alpha"]
        losses = list(AUTO_LOSSES) if _is_auto(self.loss) else [self.loss]
        weightings = list(AUTO_WEIGHTINGS) if _is_auto(self.weighting) else [self.weighting]
        if _is_auto(self.weighting):
            weightings = _distinct_weightings(graph, weightings)
        return losses, weightings, refines, self.alpha

    def _loose(self, graph: ComparisonGraph) -> bool:
        """Whether the comparisons cannot pin the map down: fewer distinct queries than the coordinates that
        shift and rotation leave free (:func:`roembed.data.diagnostics.too_few_queries`; ``fit`` warns then),
        with ``loss``, ``weighting`` and ``alpha`` all ``"auto"``.  Then nothing is tuned: the fit is
        ``LOOSE_CHOICE``, CKL with its own ridge 1e-4 (unscaled) on every vote, and no refinement unless asked.
        Why: flat directions remain that only a prior fixes, and the query-grouped hold-out cannot rank the
        candidates there (held-out queries mostly involve objects that the rest barely constrains, so it
        scores how much of the restarts' fit on every query a candidate keeps).  On THINGS at p = 2 (2,400
        training queries against 3,000 free coordinates; exploration draws 104-106, 21 fits) the default's
        test accuracy rose from 0.7145 to 0.7243 (+0.0098, standard error 0.0018; 19 of 21 fits up) in a
        quarter of the time; on synthetic data with 400 queries on 100 objects at p = 5 (485 free
        coordinates; seeds 4001-4003, four contamination settings) the test error fell from 0.4226 to 0.4055
        (10 of 12 fits). With 700 queries, above the count, the tuned default and this fit were level
        (0.3618 against 0.3595): no cliff at the boundary (docs/annotators.md, "One fit where the data
        cannot pin the map down").
        That fit runs from one start (``n_init="auto"``) to CKL's own tolerance 1e-6 (``tol="auto"``): the
        restarts keep the lowest objective, and along flat directions a lower objective is not a better map.
        THINGS draws 104-112 (72 fits): one start +0.0023 accuracy (standard error 0.0009), with the tolerance
        too +0.0026 (0.0008), 0.44 s -> 0.15 s a fit; draws 101-103 (24 fits) +0.0007 (0.0025); loose
        synthetic data at p = 1, 2 and 5 (12 fits per shape) within 0.003 either way, none beyond 1.3
        standard errors.  On the THINGS benchmark's own draws (35, four seeds each) accuracy stayed level
        (-0.0003, standard error 0.0005) and the fit took 0.18 s instead of 0.50 s (docs/annotators.md, "One
        start where the data cannot pin the map down")."""
        if not (_is_auto(self.loss) and _is_auto(self.weighting) and _is_auto(self.alpha)):
            return False
        return too_few_queries(graph, self.n_components)

    def _annotator_stage(self, graph: ComparisonGraph):
        """``(graph, annotator_types, n_iter, heterogeneity p-value, gold error)``: with annotator ids (and
        ``annotators="auto"``) whose agreement with a plain fit differs between annotators
        (:func:`roembed.annotator_model.heterogeneity_test` at ``HETEROGENEITY_P``), or of whom some giving at
        least ``SWITCH_MIN_SHARE`` of the answers are contradicted by the others
        (:func:`roembed.annotator_model.contradicted_share`), and always with gold answers: the graph of the
        responses re-weighted by their annotator's probability of following the embedding
        (:func:`roembed.annotator_model.fit_crowd`); else ``graph`` itself.  Only the weights change: the
        later stages start where they would without the stage, so a crowd whose annotators all follow
        gets the fit it would get without ids."""
        ids = graph.comparisons.annotator
        gold = known_answers(graph.comparisons, self.annotators is not None)
        if self.annotators is None or ids is None or len(np.unique(ids)) < 2:
            return graph, None, 0, None, None
        loss = likelihood_loss(get_loss("soe") if _is_auto(self.loss) else get_loss(self.loss), self.n_components)
        alpha = likelihood_alpha(loss) if _is_auto(self.alpha) else self.alpha
        plain = plain_likelihood_fit(graph, loss, self._start(graph), alpha=alpha)
        test = heterogeneity_test(graph, plain.solution)
        if gold is None and test.p_value > HETEROGENEITY_P and contradicted_share(graph) < SWITCH_MIN_SHARE:
            return graph, None, plain.n_iter, test.p_value, None
        crowd = fit_crowd(graph, loss, plain.solution, alpha=alpha, gold=gold)
        warn_minority_follows(float(crowd.response_weight.sum() / graph.comparisons.weight.sum()))
        return (follow_weighted(graph, crowd.posterior), crowd.posterior,
                plain.n_iter + crowd.n_iter, test.p_value, crowd.gold_error)

    def _store_state(self, state: FitState) -> None:
        for name in state.unconverged:
            warn(f"{type(self).__name__}: the {name} stage did not converge in {self.max_iter} "
                 f"iterations ({state.result.message}); increase max_iter", ConvergenceWarning)
        values = state.restart_objectives
        self.restart_objectives_ = values
        if values is not None and len(values) >= 3:
            reached, elsewhere = restart_agreement(values, state.restart_converged)
            if reached < 2 and elsewhere >= 2:
                warn(f"{type(self).__name__}: only {reached} of {len(values)} starts reached the best "
                     f"objective (within 1% + {SAME_OBJECTIVE:g}) and {elsewhere} converged to worse ones; "
                     f"the fit may be a local minimum -- raise n_init", UserWarning)
        self.embedding_ = state.X
        self.objective_ = float(state.result.objective) if state.result is not None else float("nan")
        self.n_iter_ = state.n_iter
        self.history_ = np.asarray(state.result.history if state.result is not None else [])
        self.lam_ = state.lam
        self._store_outliers(state.gamma)

    def _choose(self, graph: ComparisonGraph, X0: np.ndarray, start: np.ndarray):
        """``(chosen, tuning_results, candidate)``: the "auto" parameters resolved on a hold-out of whole queries,
        and the chosen candidate's :class:`FitState` on the training part (None when nothing was tuned).

        Greedy, cheapest first: the weightings with the first loss; the other losses with the best
        weighting and with ``vote``; then the refinement stage continued from the best fit of each weighting but
        ``vote``, when that fit's robust stage shifts at least ``REFINE_MIN_OUTLIERS`` of the loss weight.  Every
        candidate starts from the best of the restarts (:meth:`_restarts`, from ``start``) run on the training
        part alone; on graphs of ``CONTINUE_EDGES`` edges or more, from ``X0``, the best of the restarts on every
        comparison (which start the final fit).
        Why the training part's own restarts (forty-eighth session; at p = 1 and 2, where ``n_init="auto"``
        restarts): restarts on every comparison have fitted the held-out queries, and a candidate that stays near
        their map (SOE, the restarts' own loss) scored that memory.  Where the queries are scarce the hold-out then
        picked SOE over t-STE: 60 objects, 300 single answers, 20% flipped, p = 2 (exploration seeds 5001-5012),
        t-STE chosen in 2 of 12 fits with the leak and 10 of 12 without, test error 0.4431 -> 0.4237; seven cells of
        single answers at p = 1 and 2 (2.5-5.1 queries per free coordinate, 84 fits) -0.0047 (standard error
        0.0025); 30 objects with 1,000 triplets, 20% flipped (data seeds 4000-4039 and 6000-6039) -0.0012 (0.0006)
        at p = 2 with the same passes (76 of 80), at p = 1 +0.0007 (0.0009), 40 of 40 both ways; music and the
        material set at p = 2 +0.0004 (0.0010, 24 fits).  The final fit keeps the restarts on every comparison:
        started from the training part's restarts it ended in worse minima at p = 1 (+0.0048, standard error 0.0059;
        +0.007 to +0.023 in the three p = 1 cells).  Cost: the restarts again on four fifths of the data (n = 30, p
        = 1: 0.20 s -> 0.35 s a fit; the material set at p = 2: 1.0 s -> 1.3 s). Large graphs keep ``X0``: there the
        candidates are screens the final fit continues (:func:`continue_fit`), and one set of restarts costs most.
        Why ``vote`` too: t-STE is a likelihood, whose natural data are the responses themselves, and the first
        loss's best weighting is a noisy pick.  On THINGS (exploration draws 101-103, 48 fits) SOE with
        ``majority`` or ``net`` twice won the hold-out by chance, t-STE was then tried with that weighting only,
        and the final fits scored 0.620 and 0.672; with t-STE/``vote`` among the candidates it won both times
        (0.708 and 0.720) and the other 46 fits were unchanged, as were the synthetic protocol's, music's and
        the low-dimension data's (docs/results.md, "t-STE with every vote").
        A weighting whose loss weights (nearly) equal an earlier one's (e.g. every query answered once) is
        skipped (:func:`_distinct_weightings`).
        On graphs of ``CONTINUE_EDGES`` edges or more the candidates' plain, penalty and robust stages are a
        screen: they stop at ``SCREEN_TOL`` (1e-6) when ``tol`` is tighter; the refinements run from them to
        ``tol``, and the final fit continues the winner to ``tol`` (:func:`continue_fit`).  Why: there the
        held-out scores moved by at most 5e-4, far under the gaps that decided, and every choice stayed, while
        the fit took 10-35% less time (exploration data: crowds of 10^5-2 x 10^5 answers, 3 x 10^5-10^6 random
        triplets with 10% flipped, errors within 5e-5; 10^5 triplets over 5,000 objects, 12 seeds, errors
        +0.00001, standard error 0.00017).  Refinements stopped at 1e-6 as well cost 0.003 in error there, and
        on small graphs a looser tolerance had moved the choice (THINGS); docs/results.md, "Candidates as a
        screen on large graphs".
        """
        p = self.n_components
        losses, weightings, refines, alpha = self._candidate_lists(graph)
        chosen = dict(loss=losses[0], weighting=weightings[0], refine=refines[0][0], refine_alpha=refines[0][1],
                      alpha=alpha)
        if len(losses) == 1 and len(weightings) == 1 and len(refines) == 1:
            return chosen, [], None
        try:
            if graph.n_queries < MIN_TUNING_QUERIES:
                raise InvalidComparisonsError("too few queries")
            held_out = holdout_mask(graph.comparisons, self.validation_fraction, self.random_state,
                                    groups=graph.response_query)
        except InvalidComparisonsError:
            warn(f"{type(self).__name__}: too few queries to choose the 'auto' parameters on validation; "
                 f"using loss={losses[0]!r}, weighting={weightings[0]!r}, refine={refines[0][0]!r}",
                 UserWarning)
            return chosen, [], None
        inner, held_edges = split_edges(graph, held_out)
        del held_out
        problems = {}  # one problem per weighting, its loss swapped: the candidates share its loss weights
        if len(graph) < CONTINUE_EDGES:  # the candidates' start has not seen the held-out queries (see above)
            first = problems[weightings[0]] = RobustProblem.build(inner, _loss_of(losses[0], p), weightings[0],
                                                                  self.two_sided)
            X0 = self._restarts(graph, start, first)[0].X
        graph.forget("edge_query")  # read by the split only; 4 bytes an edge (computed again if asked)

        def held_out_score(X):  # agreement, read through the full graph's edges (no copy of the responses)
            return edge_agreement(X, graph, held_edges)

        results, states, kept = [], {}, [None]  # kept: the state of the best candidate so far

        def record(result, state):
            if kept[0] is None or result["score"] > max(r["score"] for r in results):  # the first of equals
                kept[0] = state
            results.append(result)

        def run(loss_name, weighting):
            loss = _loss_of(loss_name, p)
            if weighting not in problems:
                problems[weighting] = RobustProblem.build(inner, loss, weighting, self.two_sided)
            problem = dataclasses.replace(problems[weighting], loss=loss)
            settings = screened = self._settings(graph, loss, None, alpha, None)
            if len(graph) >= CONTINUE_EDGES:  # a screen: the final fit continues the winner to tol (continue_fit)
                screened = dataclasses.replace(settings, solve=dict(settings.solve,
                                                                    tol=max(settings.solve["tol"], SCREEN_TOL)))
            state = fit_robust(problem, screened, X0, STAGES[:-2])  # plain, penalty, robust
            states[loss_name, weighting] = (problem, settings, state)  # its refinements run to tol
            record(dict(loss=loss_name, weighting=weighting, refine=None, refine_alpha=None,
                        score=held_out_score(state.X), given_up=False,
                        outlier_share=outlier_share(state.objective, problem.distances, state.X)), state)
            return results[-1]

        best = max((run(losses[0], w) for w in weightings), key=lambda r: r["score"])
        for loss_name in losses[1:]:
            for weighting in dict.fromkeys([best["weighting"]] + (["vote"] if "vote" in weightings else [])):
                r = run(loss_name, weighting)
                best = r if r["score"] > best["score"] else best
        unrefined = list(results)
        to_refine = [w for w in weightings if w != "vote"] if _is_auto(self.weighting) else weightings
        for weighting in to_refine or weightings:  # refine the best fit of each weighting (but "vote")
            top = max((r for r in unrefined if r["weighting"] == weighting), key=lambda r: r["score"])
            if top["outlier_share"] < REFINE_MIN_OUTLIERS:
                continue  # no evidence of contamination: the refinement is a robustness device
            problem, settings, state = states[top["loss"], weighting]
            for slope, ridge in refines[1:]:
                score, given_up, refined = refine_candidate(problem, dataclasses.replace(settings, refine=slope,
                                                                                         refine_alpha=ridge),
                                                            state, held_out_score, max(r["score"] for r in results))
                record(dict(top, refine=slope, refine_alpha=ridge, score=score, given_up=given_up), refined)
        best = chosen_candidate(results)
        # a refinement set by the user is not tuned: the candidates are judged unrefined, the final fit refines
        refine, refine_alpha = (best["refine"], best["refine_alpha"]) if _is_auto(self.refine) else refines[0]
        chosen = dict(loss=best["loss"], weighting=best["weighting"], refine=refine, refine_alpha=refine_alpha,
                      alpha=alpha)
        # only the embedding and lam: the state's objective would keep the training graph alive in the final fit.
        # It is the best score's: where chosen_candidate preferred a refinement (or the user set one), a continued
        # final fit (continue_fit) refines from the unrefined fit that refinement started from
        return chosen, results, FitState(X=kept[0].X, lam=kept[0].lam)


def chosen_candidate(results: list) -> dict:
    """The tuning's choice: the best held-out score (the first of equals: the cheaper candidate), except that a
    winning unrefined fit whose robust stage shifted at least ``REFINE_FORCE_SHARE`` (2%) of the loss weight gives
    way to its best refinement (one not given up): where the contamination is that evident the hold-out picks the
    slope, not whether to refine.

    Why: the hold-out's votes are contaminated too, and on a few hundred held-out queries it rejected refinements
    that helped.  On exploration data (forty-third session) the rule changed 22 of 80 low-dimension fits (n = 30,
    p = 1 and 2, 20% of single answers flipped, seeds 4000-4039), every one for the better (test error -0.001 to
    -0.085, mean -0.0064 at p = 1 and -0.0150 at p = 2 over all 40 fits each; Procrustes disparity down in 13 of
    the 14 changed p = 2 fits, the same in one), and 2 of 80 synthetic fits at q = 0.25 (majority trial 4039
    -0.024, unanimous 4029 -0.048); music, music with reversed triplets, clean data, vote flips, spammers and the crowds of
    ``bench_annotators_scale`` did not change.  It costs on the material set's repeated votes, whose real
    disagreement the robust stage also shifts (2.9-3.7%): 3 of 8 fits (p = 2 and 3, seeds 101-104) +0.0010 to
    +0.0024.  At 1% (the refinement's gate, ``REFINE_MIN_OUTLIERS``) music with reversed triplets, whose fits shift
    1.0-1.6%, lost in 7 of 16 trials (+0.001 to +0.040).  docs/results.md, "Forty-third session: the
    refinement where the contamination is evident"."""
    best = max(results, key=lambda r: r["score"])
    if best["refine"] is not None or best["outlier_share"] < REFINE_FORCE_SHARE:
        return best
    refined = [r for r in results if r["refine"] is not None and not r["given_up"]
               and (r["loss"], r["weighting"]) == (best["loss"], best["weighting"])]
    return max(refined, key=lambda r: r["score"]) if refined else best


def refine_candidate(problem: RobustProblem, settings: RobustSettings, state: FitState, score, best: float):
    """``(score(X), given up, state)`` of the refinement stage from ``state``, a tuning candidate; ``score`` is
    the held-out agreement of an embedding.

    At its iteration ``HOPELESS_AFTER`` a refinement whose agreement is below the ``best`` candidate's by
    more than ``HOPELESS_MARGIN`` is given up (the solver's ``stop``; scored where it stopped); any other
    runs on the iterates it would have without the check.  With a solver outside
    :data:`roembed.solvers.STOPPABLE` nothing is given up.  Why 200 and 0.02 (no logged refinement rose
    by more than 0.02 after its 200th iteration; at 50 one would have been given up that went on to win):
    docs/results.md, "Hopeless refinements".
    """
    def hopeless(iteration, X):
        return iteration == HOPELESS_AFTER and score(X) < best - HOPELESS_MARGIN

    if settings.solve.get("solver", "lbfgs") in STOPPABLE:
        settings = dataclasses.replace(settings, solve=dict(settings.solve, stop=hopeless))
    state = stage_refine(problem, settings, state)
    return score(state.X), bool(state.result.stopped), state


def split_edges(graph: ComparisonGraph, held_out: np.ndarray) -> tuple[ComparisonGraph, np.ndarray]:
    """``(inner, held_edges)``: the graph of the responses outside the boolean mask ``held_out`` (whole queries,
    so whole edges) and the indices of the edges of ``graph`` it left out, which
    :func:`~roembed.metrics.edge_agreement` scores without a copy of the held-out responses."""
    inner = graph.subgraph(~held_out)
    return inner, np.flatnonzero(~inner.kept_edges).astype(graph.pairs.dtype)


def ridge_check(graph: ComparisonGraph, loss: Loss, weighting: str, two_sided: bool, settings: list, X0: np.ndarray,
                folds) -> np.ndarray:
    """Per fold of ``folds`` (``(train_rows, held_out_rows)`` of the responses, whole queries): the held-out
    agreement of the final fit's stages (up to the refinement) under ``settings[1]`` minus that under
    ``settings[0]``, each fitted from ``X0`` on the fold's training part."""
    gains = []
    for _, held_rows in folds:
        held_out = np.zeros(len(graph.comparisons), dtype=bool)
        held_out[held_rows] = True
        inner, held_edges = split_edges(graph, held_out)
        problem = RobustProblem.build(inner, loss, weighting, two_sided)
        scores = [edge_agreement(fit_robust(problem, s, X0, STAGES[:-1]).X, graph, held_edges) for s in settings]
        gains.append(scores[1] - scores[0])
    return np.array(gains)


TUNED = ("loss", "weighting", "refine", "refine_alpha", "alpha")
"""The parameters the self-tuning default resolves on validation (``chosen_params_``)."""


def tuned_params(fitted) -> dict:
    """What a fitted self-tuning estimator chose for its ``"auto"`` parameters in ``TUNED`` (empty for other
    estimators): set on a clone, it fits the same way without searching again (:func:`roembed.select_dimension`
    on the other folds, :func:`roembed.bootstrap` in every replicate)."""
    chosen = getattr(fitted, "chosen_params_", None) or {}
    params = fitted.get_params(deep=False)
    return {k: chosen[k] for k in TUNED if k in chosen and _is_auto(params.get(k))
            and (chosen[k] is not None or k == "refine")}


def warn_minority_follows(share: float) -> None:
    """A ``DataWarning`` when the annotators the stage has following the map give less than half of the response
    weight (``share``, of the responses' weight times their annotator's probability of following): the rest answer at random or against it, so the map rests on a minority, and who is honest was
    read from the majority of the answers (:func:`roembed.annotator_model.crowd_oriented`) or from too few.
    The benchmark's crowds give 0.67-0.95 (THINGS with and without fakes, draw 104) and synthetic crowds with
    25% spammers 0.75; with half the workers spammers 0.50, with 60% 0.40."""
    if share < 0.5:
        warn(f"the annotators who follow the map give only {share:.0%} of the answers; the others answer at random "
             "or against it (the annotator table says who), so the map rests on a minority: known-answer "
             "questions (a gold column) would show who is honest", DataWarning)


def follow_weighted(graph: ComparisonGraph, posterior) -> ComparisonGraph:
    """The graph of the responses re-weighted by their annotator's probability of following,
    :math:`w_r q_{a(r), follows}` (``posterior``: one row per annotator id, sorted, with ``follows``), with the
    share of each query that is left for the ``majority`` and ``consensus`` weightings and the weight taken off,
    which the ``vote`` weighting counts half each way (:meth:`ComparisonGraph.scaled`, :func:`reverse_weights`).
    Why the share: a majority vote reads only which side has more, so a query answered once, by a spammer weighted to
    nothing, counted once under ``majority``; at n = 30, p = 1 with single answers and 20% spammers
    (exploration seeds 4000-4039) validation picked ``majority`` in 8 of 40 fits, and one of them ended at
    rank correlation 0.86 (docs/annotators.md, "A majority vote of what the annotator stage kept")."""
    _, who = annotator_index(graph.comparisons)
    follows = posterior["follows"].to_numpy(dtype=np.float64)
    return graph.scaled(np.clip(follows[who], 0.0, 1.0))


def _distinct_weightings(graph: ComparisonGraph, weightings: list) -> list:
    """``weightings`` without those whose normalised loss weights are all zero (``net`` on pure
    contradiction) or differ from an earlier one's by at most ``SAME_WEIGHTING`` in total variation
    (``0.5 * sum |a - b|``: the share of the loss weight that moves); ``["vote"]`` when none is left.
    A tolerance, not equality: 10^6 random triplets repeat a handful of queries, and two candidates
    that differ in those few edges fit the same embedding at twice the cost.  ``vote`` is compared by its decided
    votes, without the halves of the undecided weight (:func:`reverse_weights`): where every query is answered
    once it is ``net`` plus a pull towards ties on the annotator stage's doubtful answers, and as a candidate of
    its own it was never chosen and cost 40% more time (crowds of 2*10^4 random triplets, p = 10)."""
    kept, seen = [], []
    for w in weightings:
        a = np.asarray(graph.votes, dtype=np.float64) if w == "vote" else edge_weights(graph, w)
        if a.sum() <= 0:
            continue
        a = a / a.sum()
        if not any(0.5 * np.abs(a - b).sum() <= SAME_WEIGHTING for b in seen):
            kept.append(w)
            seen.append(a)
    return kept or ["vote"]


def likelihood_alpha(loss) -> float:
    """The default ridge of the plain estimator with this likelihood loss (t-STE 0: a ridge tuned for
    SOE shrinks a t-STE embedding until its probabilities say nothing about the annotators)."""
    from .competitors import CKL, STE, TSTE

    return {TStudent: TSTE, CrowdKernel: CKL}.get(type(loss), STE).default_alpha


def _fit_score(estimator, train, validation):
    with warnings.catch_warnings():  # a fold is a subset: the full fit warns about the data once
        warnings.simplefilter("ignore", DataWarning)
        return clone(estimator).fit(train).score(validation)


class RobustOrdinalEmbeddingCV(RobustOrdinalEmbedding):
    """:class:`RobustOrdinalEmbedding` with ``lam`` (and optionally loss, ridge, weighting) chosen by validation.

    Parameters (besides those of :class:`RobustOrdinalEmbedding`, which fix what is not searched)
    ---------------------------------------------------------------------------------------------
    lams : sequence of float or "auto"
        Candidate penalties.
    losses, alphas, weightings : sequence or None
        Further candidates for ``loss``, ``alpha`` and ``weighting`` (None: keep the single value).
    refines : sequence of float or None
        Slopes of the sigmoid refinement (``refine``), tried in a second round on the best
        candidate of the first; it is kept only if it scores better (None: no second round).
    cv : int or splitter
        Folds when no ``validation`` set is given; an integer means that many folds of whole
        queries in a seeded shuffled order (:class:`~roembed.model_selection.GroupedKFold`).
    validation : Comparisons or array, optional
        A held-out set (e.g. clean, expert-checked comparisons) scored instead of cross-validation;
        the final model is refitted on all training data either way.
    n_jobs : int
        joblib workers over (candidate, fold) pairs.

    Fitted: ``best_params_``, ``best_score_``, ``cv_results_`` (scores per candidate and split),
    ``best_estimator_`` and its fitted attributes (``embedding_``, ``gamma_``, ...).
    """

    def __init__(self, n_components=2, *, lams=(0.1, 0.3, 1.0, 3.0), losses=None, alphas=None, weightings=None,
                 refines=None, cv=3, validation=None, n_jobs=None, loss="soe", nonneg=True, weighting="vote",
                 solver="lbfgs", device=None, dtype="float32", alpha="auto", max_iter=1000, tol="auto", init="plain",
                 init_scale="auto", refine=None, refine_alpha=1e-4, refine_ensemble=(1.0, 1.5), n_init="auto",
                 annotators="auto", random_state=None, verbose=0):
        self.n_components = n_components
        self.n_init, self.annotators = n_init, annotators
        self.lams, self.losses, self.alphas, self.weightings = lams, losses, alphas, weightings
        self.refines, self.refine, self.refine_alpha = refines, refine, refine_alpha
        self.refine_ensemble = refine_ensemble
        self.cv, self.validation, self.n_jobs = cv, validation, n_jobs
        self.loss, self.nonneg, self.weighting, self.solver = loss, nonneg, weighting, solver
        self.device, self.dtype, self.alpha, self.max_iter, self.tol = device, dtype, alpha, max_iter, tol
        self.init, self.init_scale, self.random_state, self.verbose = init, init_scale, random_state, verbose

    def _candidates(self) -> list[dict]:
        grid = dict(lam=list(self.lams))
        for name, values in (("loss", self.losses), ("alpha", self.alphas), ("weighting", self.weightings)):
            if values is not None:
                grid[name] = list(values)
        for name, values in grid.items():
            if not values:
                raise ValueError(f"the candidate list for {name} must not be empty")
        from sklearn.model_selection import ParameterGrid

        candidates = list(ParameterGrid(grid))
        for c in candidates + [dict(refine=r) for r in self.refines or ()]:
            self._base(**c)._check_params()
        if self.refines is not None and not list(self.refines):
            raise ValueError("the candidate list for refine must not be empty")
        return candidates

    def _base(self, **params) -> RobustOrdinalEmbedding:
        fixed = {k: getattr(self, k) for k in RobustOrdinalEmbedding._get_param_names()
                 if k not in ("lam", "validation_fraction")}
        return RobustOrdinalEmbedding(**fixed).set_params(**params)

    def fit(self, X, y=None, sample_weight=None):
        comparisons = as_comparisons(X, y, sample_weight)
        candidates = self._candidates()
        if self.validation is not None:
            splits = [(comparisons, as_comparisons(self.validation))]
        else:
            cv = GroupedKFold(self.cv, random_state=self.random_state) if isinstance(self.cv, (int, np.integer)) \
                else check_cv(self.cv)
            splits = [(comparisons[tr], comparisons[te]) for tr, te in cv.split(comparisons)]
        scores = self._scores(candidates, splits)
        if self.refines is not None:  # second round: the refinement of the first round's best
            first = candidates[int(np.nanargmax(scores.mean(axis=1)))]
            refined = [{**first, "refine": float(r)} for r in self.refines]
            candidates = candidates + refined
            scores = np.vstack([scores, self._scores(refined, splits)])
        mean = scores.mean(axis=1)
        best = int(np.nanargmax(mean))
        self.cv_results_ = dict(params=candidates, mean_score=mean, scores=scores)
        self.best_params_, self.best_score_ = candidates[best], float(mean[best])
        self.best_estimator_ = self._base(**self.best_params_).fit(comparisons)
        for key, value in vars(self.best_estimator_).items():
            if key.endswith("_") and not key.startswith("_"):
                setattr(self, key, value)
        return self

    def _scores(self, candidates, splits) -> np.ndarray:
        """Validation scores, (candidates, splits)."""
        jobs = [(c, tr, te) for c in candidates for tr, te in splits]
        scores = Parallel(n_jobs=self.n_jobs)(delayed(_fit_score)(self._base(**c), tr, te) for c, tr, te in jobs)
        return np.asarray(scores, dtype=float).reshape(len(candidates), len(splits))


__all__ = ["RobustOrdinalEmbedding", "RobustOrdinalEmbeddingCV", "TUNED", "auto_cap", "edge_weights", "tuned_params"]
