r"""The robust fit: the problem (graph, pair distances, loss weights) and the stages that solve it.

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

Refinement (``refine=slope``; ``"auto"``, the default, tries it on validation): a third stage minimises the
symmetric sigmoid loss :class:`~roembed.losses.Sigmoid` of SOE's Euclidean margins (whatever ``loss`` is), with
the same loss weights, from the robust solution and with its own ridge ``refine_alpha``; the outlier shifts are
then evaluated at the refined embedding.  It helps where whole comparisons are reversed at random, which no vote
count reveals.

The fit is a straight sequence of stages over one :class:`RobustProblem` (graph, pair
distances, loss weights; objectives built once each), ``STAGES``: plain (``n_init`` starts,
lowest objective kept; the final fit also runs on from other distinct minima, :func:`lowest_final`) -> penalty
(``lam``) -> robust -> refine (in the final fit the mean of the refinements at the slope and 1.5 times it,
``refine_ensemble``: :func:`stage_refine_ensemble`) -> shifts, each a function ``(problem, settings, state) ->
state`` (:func:`fit_robust`); a new stage is one more entry.

The estimator that composes these stages and tunes their parameters is
:class:`~roembed.estimators.robust.RobustOrdinalEmbedding`; the measurements behind each rule are in
docs/default.md.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize_scalar

from .._random import draw_seed
from ..data import ComparisonGraph
from ..losses import Loss, Sigmoid, get_loss, robust_penalty
from ..metrics import procrustes, procrustes_disparity, procrustes_error, weighted_median
from ..objective import EdgeObjective, PairDistances
from ..solvers import SolverResult, shifts, solve
from .base import edge_objective

WEIGHTINGS = ("vote", "paper", "net", "majority", "consensus")
AUTO_CAP_EDGES = 1 << 21
"""``lam="auto"`` reads the margins of at most this many edges (every k-th beyond): the weighted median
and MAD of 2 million margins are as good as those of all, without sorting 10^7 or 10^8 of them."""
AUTO = "auto"
AUTO_RESTARTS = {1: 20, 2: 10}  # the estimator's n_init="auto" by n_components (else 1); lifted_start's plane: [2]
RESTART_SCREEN = 100  # iterations of each start before the lowest objective goes on (see stage_plain)
SAME_OBJECTIVE = 1e-4  # restarts' objectives closer than this (or 1%) reached the same minimum (restart_agreement)
FLAG_KNEE_EDGES = 1 << 16  # the flags' knee (stage_shifts) reads the margins of at most this many edges
REFINE_SCALE_EDGES = 1 << 16  # refinement_scale and start_scale read at most this many edges (every k-th beyond)
MAX_BASINS = 3  # the final fit runs from this many distinct restart minima at most (lowest_final)
BASIN_DISPARITY = 0.02  # screened restart maps further apart than this are distinct minima (distinct_basins)
BASIN_MARGIN = 0.005  # ... and another minimum's final fit must end this much lower (relative) to be kept
RIVAL_GAP, RIVAL_ERROR = 0.01, 0.3
"""Another start's final map within ``RIVAL_GAP`` (relative) of the kept one's objective, and further from it
than Procrustes error ``RIVAL_ERROR``, is an equally good map of another shape: the estimator warns that the data
do not single out one map.  Measured (seventy-second session, default fits at p = 2, four to twelve per data set,
exploration data): seeds of one data set gave maps this far apart from each other (median Procrustes error) 0.68
on music, 0.37-0.42 on 200 simulated objects with 3,000 triplets 15% flipped, 0.20 on a third such draw,
0.16 on the material set and under 0.09 on 30 objects with 1,000 triplets (data seeds 4000-4002); the rule fired
on 2 of 4, 2 of 6, 0 of 3, 0 of 4 and 0 of 12 of those fits (docs/default.md, "Equally good maps of another
shape")."""


def is_auto(value) -> bool:
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
    times the number of votes, which is noise where that number says nothing of the answer's reliability;
    ``majority`` keeps a query whose votes are split nearly evenly as much as one where all agree.  Measured:
    docs/default.md, "consensus"."""
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
    nothing (measured: docs/default.md, "Undecided answers counted half each way")."""
    if weighting != "vote" or graph.undecided is None or not np.any(graph.undecided > 0):
        return None  # (nothing taken off: the objective without a reversed term, bit for bit as before)
    return 0.5 * np.asarray(graph.undecided, dtype=np.float64)


def decided_share(graph: ComparisonGraph, weighting: str) -> float:
    """The share of a weighting's loss weight that says which way a query goes: ``(sum a - sum b) / (sum a +
    sum b)`` (:func:`edge_weights`, :func:`reverse_weights`; 1 for every weighting but ``vote`` after the
    annotator stage), 0 when the votes of every query cancel out (a tie decides nothing under ``consensus``,
    ``net`` and ``majority``'s halves) or the annotator stage left no answer to trust."""
    a, b = edge_weights(graph, weighting), reverse_weights(graph, weighting)
    return decided_fraction(a.sum(), 0.0 if b is None else b.sum())


def decided_fraction(total_a: float, total_b: float) -> float:
    """:func:`decided_share` from the totals of ``a`` and ``b`` (``total_b`` 0 without reversed weights)."""
    return (total_a - total_b) / (total_a + total_b) if total_a + total_b > 0 else 0.0


MIN_DECIDED_SHARE = 1e-9
"""Below this share of decided weight a weighting fits nothing: the halves of the undecided weight alone (or
rounding) would only pull every query to a tie (:func:`decided_share`)."""


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
    def build(cls, graph: ComparisonGraph, loss, weighting: str, two_sided: bool = False) -> RobustProblem:
        a, b = edge_weights(graph, weighting), reverse_weights(graph, weighting)
        if b is None and not graph.votes.sum() > 0:  # (the line below blamed the votes: none was cast)
            raise ValueError("all comparison weights are zero")
        undecided = 0.0 if b is None else b.sum()
        if decided_fraction(a.sum(), undecided) <= MIN_DECIDED_SHARE:
            raise ValueError(f"weighting={weighting!r} decides no comparison: every query's votes cancel out")
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
    scale_start: bool = False  # the first start is a map given as ``init``: sized by the loss first (start_scale)
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
    unconverged: tuple = ()  # (stage name, its solver's message) of each stage that did not converge
    basins: tuple = ()  # screened maps of other starts' minima, lowest objective first (see distinct_basins)
    rivals: tuple = ()  # (objective gap, Procrustes error) of the final fit's other starts' maps (lowest_final)


def _solve(state: FitState, objective, settings: RobustSettings, alpha: float, problem: RobustProblem,
           name: str) -> FitState:
    result = solve(objective, problem.distances, state.X, alpha=alpha, **settings.solve)
    return dataclasses.replace(state, X=result.solution, objective=objective, result=result,
                               n_iter=state.n_iter + result.n_iter,
                               unconverged=state.unconverged + (() if result.converged else ((name, result.message),)))


def restart_starts(n_objects: int, n_components: int, random_state, n_init: int, scale: float):
    """Starts ``1 .. n_init - 1`` of the plain stage (start 0 is the estimator's own): seeded Gaussians."""
    base = draw_seed(random_state)  # the restarts' own streams
    for k in range(1, n_init):
        seed = None if base is None else np.random.SeedSequence([base, 2, k])
        yield scale * np.random.default_rng(seed).standard_normal((n_objects, n_components))


def lifted_start(problem: RobustProblem, settings: RobustSettings, X0: np.ndarray) -> FitState:
    """Start 0 of the restarts at p = 1: the plain stage's restarts in two dimensions (from ``X0`` beside a seeded
    Gaussian column, ``AUTO_RESTARTS[2]`` starts), then the top principal component of their best map, scaled to
    the random starts' size.  Why: on a line the objects cannot pass one another, so where the queries are few
    every random start can end in a wrong order; in the plane they can go round (measured: docs/default.md, "The
    lifted start at p = 1")."""
    base = draw_seed(settings.random_state)
    rng = np.random.default_rng(None if base is None else np.random.SeedSequence([base, 3]))
    X2 = np.column_stack([X0[:, :1], settings.init_scale * rng.standard_normal(len(X0))])
    plane = stage_plain(problem, dataclasses.replace(settings, n_init=AUTO_RESTARTS[2]), FitState(X=X2))
    Y = plane.X - plane.X.mean(axis=0)
    line = Y @ np.linalg.svd(Y, full_matrices=False)[2][0]
    rms = np.sqrt(np.mean(line ** 2))
    return FitState(X=(line * (settings.init_scale / rms if rms > 0 else 1.0))[:, None], n_iter=plane.n_iter)


def stage_plain(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    """The loss without outliers, from ``n_init`` starts, keeping the lowest objective.

    It is the warm start of the robust stage and gives the margins for ``lam="auto"``.  A map given as ``init``
    (``settings.scale_start``) is first sized for this loss (:func:`start_scale`).
    With several starts each runs at most ``RESTART_SCREEN`` iterations; the lowest objective
    then goes on to convergence (``restart_objectives`` are the screened values).  With
    ``restart_agree`` (``n_init="auto"``) the starts stop once that many converged near the lowest
    objective so far (:func:`restarts_settled`).  Against ten full fits the screened maps were as good or
    better (docs/default.md, "Screened at 100 iterations").
    """
    if settings.scale_start:
        scale = start_scale(problem.plain(), problem.distances, state.X, settings.alpha)
        state = dataclasses.replace(state, X=scale * state.X)
    if not (settings.plain_start or is_auto(settings.lam)):
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
    if not np.isfinite(values).any():
        raise ValueError(f"the objective is not finite from any start: are the coordinates of size "
                         f"{settings.init_scale:g} (init_scale) far too large?")
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
    are far apart as maps, and its lowest is often not the right one; the robust and refined stages, which
    discount the contradicted comparisons, tell them apart better.  The margin keeps minima whose final
    objectives tie from being picked by coin flip (docs/default.md, "The final fit from several minima")."""
    single = dataclasses.replace(settings, n_init=1, restart_agree=None)
    best, rank, n_iter = state, 0, state.n_iter
    bar = state.result.objective - BASIN_MARGIN * abs(state.result.objective)
    ends = [state]
    for k, X in enumerate(basins, 1):
        other = fit_robust(problem, single, X, STAGES[:-1])
        n_iter += other.n_iter
        ends.append(other)
        if other.result.objective < min(bar, best.result.objective):
            best, rank = other, k
    return dataclasses.replace(best, n_iter=n_iter, restart_objectives=state.restart_objectives,
                               restart_converged=state.restart_converged, basins=(),
                               rivals=rival_maps(problem, best, [s for k, s in enumerate(ends) if k != rank])), rank


def rival_maps(problem: RobustProblem, kept: FitState, others: list) -> tuple:
    """``((gap, error), ...)`` of ``others`` (final fits from other starts) against ``kept``: the relative gap of
    their final objective above ``kept``'s, and the Procrustes error of their map against ``kept``'s (the objects
    with comparisons: :func:`~roembed.metrics.procrustes_error`).  The estimator warns where one is within
    ``RIVAL_GAP`` and further than ``RIVAL_ERROR`` (:data:`RIVAL_GAP`)."""
    used = problem.graph.comparisons.used_objects
    best = kept.result.objective
    return tuple((float((o.result.objective - best) / abs(best)) if best else 0.0,
                  procrustes_error(kept.X[used], o.X[used])) for o in others)


def restarts_settled(results, agree: int) -> bool:
    """Whether ``agree`` of the screened starts so far converged within 1% (plus ``SAME_OBJECTIVE``) of the
    lowest objective among them: the starts that remain would most likely reach it again (why five:
    docs/default.md, "Stopped once five agree")."""
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
    starts settled in worse ones.  A start stopped by the screen has not settled anywhere (its objective is an
    upper bound of where it was going), so only converged starts count as disagreeing; ``converged`` None
    (unknown): every start counts as converged.  The objectives are means of per-comparison losses of order
    one, and where every start fits perfectly they all end near zero: ``SAME_OBJECTIVE`` is the absolute floor of
    "reached" (docs/default.md, "The restart warning").
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
    if not is_auto(settings.lam):
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
    once, of every ``k``-th edge beyond ``REFINE_SCALE_EDGES`` (docs/default.md, "Its start, rescaled").
    """
    step, weights, reverse = _sampled_edges(objective)
    margins = objective.embedding_margins(X, distances, step)
    ridge = alpha * float(np.sum(np.square(X, dtype=np.float64)))

    def value(log_scale):
        s = np.exp(log_scale)
        return _sampled_value(objective.loss, s * margins, weights, reverse, ridge * s * s)

    best = minimize_scalar(value, bounds=(-7.0, 7.0), method="bounded", options=dict(xatol=1e-2))
    return float(np.exp(best.x)) if best.fun < value(0.0) else 1.0


def _sampled_edges(objective: EdgeObjective) -> tuple[int, np.ndarray, np.ndarray | None]:
    """``(k, weights, reverse weights)`` of every ``k``-th edge, ``k`` the least that keeps at most
    ``REFINE_SCALE_EDGES``, the weights times ``k`` (the scale searches' sample of the objective)."""
    step = -(-len(objective) // REFINE_SCALE_EDGES)
    reverse = None if objective.reverse_weight is None else objective.reverse_weight[::step] * step
    return step, objective.loss_weight[::step] * step, reverse


def _sampled_value(loss, margins: np.ndarray, weights: np.ndarray, reverse: np.ndarray | None, ridge: float) -> float:
    """The sampled objective at ``margins``: the weighted penalty, the ``ridge`` term, each edge's reverse."""
    total = float(np.dot(weights, loss.penalty(margins)[0])) + ridge
    return total if reverse is None else total + float(np.dot(reverse, loss.penalty(-margins)[0]))


def start_scale(objective: EdgeObjective, distances: PairDistances, X: np.ndarray, alpha: float) -> float:
    r"""The factor :math:`s \in [e^{-5}, e^{12}]` minimising the objective at :math:`sX` plus the ridge
    :math:`\alpha s^2 \|X\|_F^2`, on the squared distances of every ``k``-th edge beyond ``REFINE_SCALE_EDGES``,
    read once (any loss: its margin is taken at :math:`s^2 d`).

    For a map given as ``init``, which :func:`~roembed.estimators.base.given_start` hands over centred at the
    random starts' size: its shape is the user's, its size the loss's.  A map at its own size can be the wrong
    size for the stage it starts: a refined SOE map spans tens of units, where SOE's margin of 1 leaves the
    plain stage only the violated comparisons to work with (a fit started from its own map erred 0.125 on
    held-out triplets against 0.069), while a t-STE map wants its tens to hundreds (started small, bootstrap
    replicates of the music map drifted: dispersion 0.33 against 0.28).  Sized so, both stay (docs/default.md,
    "A start of one's own")."""
    step, weights, reverse = _sampled_edges(objective)
    objects = objective.objects_of(distances)[::step]
    X = np.asarray(X, dtype=np.float64)
    d_near = np.sum(np.square(X[objects[:, 0]] - X[objects[:, 1]]), axis=1)
    d_far = np.sum(np.square(X[objects[:, 2]] - X[objects[:, 3]]), axis=1)
    ridge = alpha * float(np.sum(np.square(X)))
    loss = objective.loss

    def value(log_scale):
        s2 = np.exp(2.0 * log_scale)
        return _sampled_value(loss, loss.margin(s2 * d_near, s2 * d_far)[0], weights, reverse, ridge * s2)

    best = minimize_scalar(value, bounds=(-5.0, 12.0), method="bounded", options=dict(xatol=1e-2))
    return float(np.exp(best.x)) if best.fun < value(0.0) else 1.0


def stage_refine_ensemble(problem: RobustProblem, settings: RobustSettings, state: FitState) -> FitState:
    r"""The final fit's refinement: :func:`stage_refine` from the same robust solution at the slope times each
    multiple in ``settings.refine_ensemble`` (the first is 1), each map aligned onto the first by Procrustes with
    scaling, and their mean.  One multiple: the refinement itself.

    The mean is no minimiser of anything (the stored objective is the first slope's at the mean).  Why average:
    each slope's minimum fits some of the flipped comparisons, a steeper one more and differently, and the mean
    of the maps cancels part of that (docs/default.md, "The final map").  The tuning judges single slopes
    (:func:`refine_candidate`).
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
        unconverged += () if other.result.converged else ((f"refine (slope x {multiple:g})", other.result.message),)
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
    changed, so the flags followed the tuning's noisy choice of loss.  The knee reads the margins of at most
    ``FLAG_KNEE_EDGES`` edges (every k-th beyond); measured: docs/default.md, "The flags"."""
    if is_auto(settings.lam):
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
    """The final fit of a large graph (the estimator's ``CONTINUE_EDGES``): the chosen tuning candidate, fitted on the
    training part of the queries, continued on every comparison -- its last stage (refine when chosen, else
    robust) from its embedding, with its ``lam`` -- then the shifts.

    The plain and robust stages are not run again from the start: on large graphs they are most of the
    iterations and change nothing measurable; on small ones continuing moved low-dimension fits to other
    basins (docs/default.md, "Candidates as a screen, and the final fit continued").
    """
    state = FitState(X=candidate.X, lam=candidate.lam)
    for stage in (stage_refine if settings.refine is not None else stage_robust, stage_shifts):
        state = stage(problem, settings, state)
    return state
