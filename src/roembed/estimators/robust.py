r"""The flagship estimator: :class:`RobustOrdinalEmbedding`, ordinal embedding with sparse outlier shifts for
any margin loss (ROE, Ma, Xu & Cao 2019), which tunes itself; and :class:`RobustOrdinalEmbeddingCV`.

The objective, the weightings, the ``lam="auto"`` rule and the stages of one fit (plain -> penalty -> robust ->
refine -> shifts) are in :mod:`roembed.estimators.robust_fit`; this module chooses their parameters and runs them.

The self-tuning default (``loss``, ``weighting``, ``refine`` = ``"auto"``; :meth:`RobustOrdinalEmbedding._choose`):
20% of the *queries* (both directions, every vote; :func:`roembed.model_selection.holdout_mask`) are held out;
candidates are fitted on the rest (at p <= 2 from restarts of their own on it) and scored by the share of
held-out votes they satisfy, greedily and cheapest first: the weightings ``consensus`` and ``vote`` with SOE
(ridge 3e-6); t-STE (dof ``min(max(p - 1, 1), 3)``, ridge 1e-9) with the better weighting and with ``vote``;
then the refinement stage continued from the best ``consensus`` fit (rescaled to the sigmoid's best scale,
:func:`refinement_scale`) with (slope, ridge) = (2, 1e-4) and (1.5, 1e-5) (every ridge times ``100 / n`` on
``n > 100`` objects).  A fit whose robust stage shifts less than 1% of the loss weight is not refined
(``REFINE_MIN_OUTLIERS``: no evidence of contamination); from 2% (``REFINE_FORCE_SHARE``) a winning unrefined
fit gives way to its best refinement (:func:`chosen_candidate`); a refinement more than 0.02 below the best
candidate after 200 iterations is given up (:func:`refine_candidate`).  Then the winner is refitted on
everything (``chosen_params_``; ``tuning_results_`` lists every candidate's score).  Where the comparisons
cannot pin the map down (fewer distinct queries than free coordinates; ``fit`` warns) nothing is tuned: CKL
with ridge 1e-4 on every vote, one start, CKL's tolerance 1e-6 (:meth:`RobustOrdinalEmbedding._loose`); where
they have fewer than 6 queries per free coordinate the choice meets a stronger ridge on five folds
(:meth:`RobustOrdinalEmbedding._check_ridge`).  From ``CONTINUE_EDGES`` (2^16) edges the candidates are
screens stopped at ``SCREEN_TOL`` and the final fit continues the winner (:func:`continue_fit`).  Below 50
queries nothing is held out and the first candidates are used, with a warning.

Each rule's measurement (exploration data only) is in docs/default.md; the ideas measured and dropped in
docs/tried.md.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils.validation import check_is_fitted

from .._warn import warn, warn_counted
from ..annotator_model import (HETEROGENEITY_P, SWITCH_MIN_SHARE, contradicted_share, fit_crowd, heterogeneity_test,
                               likelihood_loss, plain_likelihood_fit)
from ..data import ComparisonGraph, annotator_index, as_comparisons
from ..data.diagnostics import DataWarning, free_coordinates, too_few_queries
from ..data.validation import InvalidComparisonsError
from ..losses import CrowdKernel, Loss, TStudent, get_loss
from ..metrics import edge_agreement
from ..model_selection import GroupedKFold, holdout_mask
from ..projections import orient_embedding
from ..solvers import STOPPABLE
from ..solvers.progress import phase
from ..solvers.torch_lbfgs import dtype_name  # (torch itself is imported by solver='torch' alone)
from .base import check_init, check_n_jobs, check_param, given_start, is_table, table_rows, training_comparisons
from .embedding import LossEmbedding
from .outliers import OutlierReportMixin
from .robust_fit import (AUTO_RESTARTS, MIN_DECIDED_SHARE, RIVAL_ERROR, RIVAL_GAP, SAME_OBJECTIVE, STAGES, WEIGHTINGS,
                         FitState, RobustProblem, RobustSettings, auto_cap, continue_fit, decided_fraction,
                         decided_share, edge_weights, fit_robust, is_auto, lifted_start, lowest_final, outlier_share,
                         restart_agreement, reverse_weights, stage_plain, stage_refine, stage_shifts)

INITS = ("random", "plain")


def known_answers(comparisons, used: bool):
    """The comparisons' known-answer marks (``Comparisons.gold``), or None when no response is marked.

    Warns when marks are given but cannot anchor annotator types (no annotator ids, fewer than two annotators,
    or ``annotators=None``): they would otherwise be dropped without a word."""
    gold = comparisons.gold
    if gold is None or np.isnan(gold).all():
        return None
    ids = comparisons.annotator
    why = ("annotators=None" if not used else "the comparisons have no annotator ids" if ids is None
           else "there is only one annotator" if len(annotator_index(comparisons)[0]) < 2 else None)
    if why is not None:
        warn(f"known-answer (gold) marks are not used: {why}; they anchor annotator types only",
             DataWarning)
    return gold


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
RESTART_AGREE = 5  # n_init="auto": the restarts stop once this many converged starts agree (restarts_settled)
PLACED_ALONE = 0.5  # n_init="auto": a given start placing at least this share of the objects runs alone
SAME_WEIGHTING = 1e-3  # weightings closer than this in total variation are one candidate
MIN_TUNING_QUERIES = 50  # fewer queries: no validation split, the first candidate of each list
CONTINUE_EDGES = 1 << 16  # from this many edges on, the final fit continues the chosen candidate (continue_fit)
SCREEN_TOL = 1e-6  # ... and the candidates' robust fits stop at this tolerance (or tol, if looser; see _choose)
HOPELESS_AFTER, HOPELESS_MARGIN = 200, 0.02  # a refinement candidate given up (see refine_candidate)
REFINE_MIN_OUTLIERS = 0.01  # a fit whose robust stage flags less of the loss weight is not refined (see _choose)
REFINE_FORCE_SHARE = 0.02  # from this share on, a winning unrefined fit gives way to its refinement (chosen_candidate)
RIDGE_CHECK_QUERIES = 6  # fewer queries per free coordinate: the chosen fit meets a stronger ridge (ridge_check)
RIDGE_CHECK_ALPHA = 1e-3  # ... that ridge, times the ridge scale 100 / n
RIDGE_CHECK_FOLDS = 5  # ... over this many folds of whole queries


def _loss_of(name, n_components: int) -> Loss:
    """The loss named ``name``; t-STE with ``min(max(p - 1, 1), TSTE_MAX_DOF)`` degrees of freedom.

    Why the cap: a heavier tail bounds what a reversed comparison can pull (docs/default.md, "t-STE's degrees
    of freedom capped at 3")."""
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
        Outlier penalty :math:`\lambda` (the ``"auto"`` rule: :mod:`roembed.estimators.robust_fit`).  With
        ``"auto"`` the flags are SOE's margins beyond the rule's knee at the final map, whatever the loss
        (:func:`stage_shifts`).
    nonneg : bool
        Only :math:`\gamma_c \ge 0` (an outlier can only make a comparison look violated); False lets the
        squared (ROE) loss shift margins both ways (other losses are monotone, so it makes no difference).
    weighting : "auto", "vote", "paper", "net", "majority" or "consensus"
        See :func:`~roembed.estimators.robust_fit.edge_weights`; ``"auto"`` chooses between ``"consensus"`` and
        ``"vote"`` on validation.
    solver : "lbfgs" (factored, NumPy), "torch" (any torch device) or "gram" (see :mod:`roembed.solvers`)
    device, dtype : torch device (default CUDA if available) and "float32" / "float64" (torch solver only)
    alpha : float or "auto"
        Ridge penalty :math:`\alpha\|X\|_F^2`.  ``"auto"``: 3e-6 for SOE, 1e-9 for t-STE, else ``default_alpha``
        = 1e-4, times ``100 / n`` on ``n > 100`` objects: the loss is a *mean* over comparisons, so each
        object's share of it falls as ``1 / n`` while its ridge term does not, and with a fixed ``alpha`` the
        ridge wins as ``n`` grows (docs/default.md, "Losses and ridges").
        Where the data cannot pin the map down, the self-tuning default fits CKL with ridge 1e-4, unscaled
        (:meth:`_loose`); where they have fewer than 6 queries per free coordinate, the tuning's choice meets
        the ridge 1e-3 (times ``100 / n``) on five folds of whole queries and the better is fitted
        (:meth:`_check_ridge`; ``chosen_params_["ridge_check_gain"]``).
    init : "plain", "random", an (n, p) array or a table of coordinates
        "plain" starts from a fit of the loss without outliers (always done for ``lam="auto"``, whose
        margins it needs); at p = 2 random starts fell into local minima that the plain start avoided
        (docs/default.md, "The plain start").  A start of one's own (its only start, unless it places under half
        of the objects: see ``n_init``): an array in object order, or a pandas table matched to the objects by
        name or number -- an earlier fit's ``transform()`` after ``set_output(transform="pandas")`` or its
        ``embedding.csv`` -- where objects the table lacks start near its centre; either is taken as a shape
        (:func:`~roembed.estimators.base.given_start`) and sized for each loss fitted
        (:func:`~roembed.estimators.robust_fit.start_scale`).
    refine : "auto", None or float > 0
        Slope of the sigmoid refinement stage (:func:`~roembed.estimators.robust_fit.stage_refine`); None skips
        it; ``"auto"`` continues the best fit of each candidate weighting (with ``weighting="auto"``:
        ``consensus``; ``vote`` only when set by name) with the pairs ``AUTO_REFINES`` (when the fit's robust
        stage shifts at least ``REFINE_MIN_OUTLIERS`` of the loss weight) and keeps one where validation
        prefers it.  A number is kept as set: where other parameters are tuned, their
        candidates are judged unrefined and the final fit is refined at that slope (with ``refine_alpha``).
    refine_ensemble : tuple of float
        The final fit's refinement runs at the chosen slope times each of these multiples (the first is 1),
        from the same robust fit, and the map is their mean after Procrustes alignment onto the first
        (:func:`stage_refine_ensemble`).  ``(1,)``: the single refinement, a
        minimiser of its objective.  The tuning's candidates are single refinements, and graphs of
        ``CONTINUE_EDGES`` edges or more continue the chosen candidate's single refinement (:func:`continue_fit`).
    refine_alpha : "auto" or float >= 0
        Ridge of the refinement stage (``"auto"``: 1e-4, or the chosen pair's with ``refine="auto"``; both
        times ``100 / n`` on ``n > 100`` objects, as ``alpha="auto"``).  A number is used as it is; with
        ``refine="auto"`` the slopes of ``AUTO_REFINES`` are then tried with that ridge.
    n_init : "auto" or int >= 1
        Starts of the plain fit, run on every comparison before the tuning (with the first candidate's loss and
        weighting); the lowest objective is kept and starts the final fit.  The tuning runs the same starts on its
        training part, whose best starts its candidates (:meth:`_choose`: a start fitted to the held-out queries had
        favoured SOE on them).  ``"auto"``: up to 20 at p = 1, up to 10 at p = 2 as cblearn's SOE, else 1, and 1
        where the data cannot pin the map down (:meth:`_loose`) or where ``init`` is given -- a start given is
        the start used, as in scikit-learn's MDS, unless it places under ``PLACED_ALONE`` = half of the objects
        (a table of another map's, or of few of these objects), which then is the first of the restarts;
        stopping once ``RESTART_AGREE`` = 5 converged starts agree on the lowest objective
        (:func:`restarts_settled`; an explicit number always runs every start); screened, see :func:`stage_plain`
        (docs/default.md, "Restarts in low dimensions").  At p = 1 the first start is not
        random but the line through the plain fit's restarts in two dimensions (:func:`lifted_start`): where the
        queries are few every random start can end in a wrong order.  When the tuning chooses another loss
        (t-STE), the final fit restarts that loss from the best start and the same random ones and keeps its
        lowest objective, the objective it minimises.  With several starts the final fit's stages also run from up
        to ``MAX_BASINS - 1`` other distinct minima of the restarts, and the lowest final objective is kept where
        it is clearly lower (:func:`lowest_final`). ``restart_objectives_`` are those of the first
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
    max_iter : int
        The iteration limit of each solve (each stage of each restart, candidate and the final fit).  3,000:
        at 1,000 the final robust stage stopped unconverged, with a warning, in 5 of 12 fits of 1,500 or 3,000
        music triplets at p = 2 (t-STE with its faint ridge, objects in few comparisons still moving), and
        every one converged by 3,000 (in up to twice the time); fits that converge stop at ``tol`` (the
        synthetic protocol, 80% of the music set and 10^5-10^8 comparisons end at the same maps), so only such
        fits take longer (docs/default.md, "The iteration limit").
    init_scale, random_state, verbose : see :class:`LossEmbedding`

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
                 device=None, dtype="float32", alpha="auto", max_iter=3000, tol="auto", init="plain", init_scale="auto",
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
        if not is_auto(self.loss):
            get_loss(self.loss)
        if not is_auto(self.lam):
            check_param("lam", self.lam, low=0, low_open=True)
        if not is_auto(self.weighting) and self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be 'auto' or one of {WEIGHTINGS}, got {self.weighting!r}")
        check_init(self.init, INITS)
        if not isinstance(self.nonneg, (bool, np.bool_)):
            raise ValueError(f"nonneg must be True or False, got {self.nonneg!r}")
        if self.refine is not None and not is_auto(self.refine):
            check_param("refine", self.refine, low=0, low_open=True)
        if not is_auto(self.refine_alpha):
            check_param("refine_alpha", self.refine_alpha, low=0)
        ensemble = self.refine_ensemble
        numbers = isinstance(ensemble, (tuple, list)) and all(
            isinstance(m, (int, float, np.number)) and not isinstance(m, bool) for m in ensemble)
        if not (numbers and len(ensemble) >= 1 and ensemble[0] == 1 and min(ensemble) > 0):
            raise ValueError("refine_ensemble must be a tuple of slope multiples > 0 starting with 1, "
                             f"got {ensemble!r}")
        if not is_auto(self.n_init):
            check_param("n_init", self.n_init, low=1, integer=True)
        check_param("validation_fraction", self.validation_fraction, low=0, low_open=True, high=0.9)
        if self.annotators not in ("auto", None):
            raise ValueError(f"annotators must be 'auto' or None, got {self.annotators!r}")
        dtype_name(self.dtype)  # checked whatever the solver ("float16" went through the default's unchecked)
        if self.refine is None and self.refine_alpha is not None and not is_auto(self.refine_alpha):  # not used
            warn(f"refine_alpha={self.refine_alpha!r} is the refinement's ridge, and refine=None skips the "
                 "refinement: it is not used", UserWarning)
        if self.device is not None and self.solver != "torch":  # device="cuda" ran on the CPU without a word
            warn(f"device={self.device!r} applies to solver='torch' only: solver={self.solver!r} runs on the CPU "
                 "(set solver='torch' to fit on the device)", UserWarning)
        if self.solver == "torch":
            from ..solvers.torch_lbfgs import import_torch

            import_torch()

    @property
    def two_sided(self) -> bool:
        return not self.nonneg

    def _n_init(self, graph: ComparisonGraph) -> int:
        if not is_auto(self.n_init):
            return int(self.n_init)
        if self._init_given() and self._placed_share(graph) >= PLACED_ALONE:
            return 1
        return LOOSE_CHOICE["n_init"] if self._loose(graph) else AUTO_RESTARTS.get(self.n_components, 1)

    def _tol(self, graph: ComparisonGraph) -> float:
        if not is_auto(self.tol):
            return float(self.tol)
        return LOOSE_CHOICE["tol"] if self._loose(graph) else DEFAULT_TOL

    def _check_tol(self) -> None:
        if not is_auto(self.tol):
            super()._check_tol()

    def _settings(self, graph: ComparisonGraph, loss: Loss, refine, alpha, refine_alpha) -> RobustSettings:
        if is_auto(alpha):
            alpha = AUTO_ALPHA.get(loss.name, self.default_alpha) * self._ridge_scale()
        if refine_alpha is None or is_auto(refine_alpha):
            refine_alpha = DEFAULT_REFINE_ALPHA * self._ridge_scale()
        options = dict(device=self.device, dtype=dtype_name(self.dtype)) if self.solver == "torch" else {}
        return RobustSettings(
            lam=self.lam, alpha=float(alpha), plain_start=isinstance(self.init, str) and self.init == "plain",
            n_init=1, restart_agree=RESTART_AGREE if is_auto(self.n_init) else None,
            refine=None if refine is None else float(refine),
            refine_alpha=float(refine_alpha), refine_ensemble=tuple(float(m) for m in self.refine_ensemble),
            random_state=self.random_state,
            init_scale=self._init_scale(),
            scale_start=self._init_given(),
            solve=dict(solver=self.solver, max_iter=self.max_iter, tol=self._tol(graph), callback=self._progress(),
                       **options))

    def _init_given(self) -> bool:
        """Whether ``init`` is a start of the user's (an array or a table) rather than "plain" or "random"."""
        return not isinstance(self.init, str)

    def _placed_share(self, graph: ComparisonGraph) -> float:
        """The share of the objects a given start places (an array: all; a table: the rows it matches)."""
        if not is_table(self.init):
            return 1.0
        objects, _ = table_rows(self.init, graph.n_objects, self.n_components, graph.comparisons.object_names)
        return len(objects) / graph.n_objects

    def _start(self, graph: ComparisonGraph) -> np.ndarray:
        if self._init_given():
            return given_start(self.init, graph.n_objects, self.n_components, graph.comparisons.object_names,
                               self.random_state, self._init_scale())
        return self._initial_embedding(graph)

    # -- fitting -----------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None, gold=None):
        """Fits to comparisons ``X``; ``gold`` (one value per response: 1 right, 0 wrong, NaN not a
        known-answer question) anchors the annotator types (see :mod:`roembed.annotator_model`).
        Without ``gold``, the comparisons' own marks (``Comparisons.gold``, a file's ``gold`` column) are used."""
        comparisons = training_comparisons(X, y, sample_weight)
        return super().fit(comparisons if gold is None else comparisons.with_gold(gold))

    def _fit_graph(self, graph: ComparisonGraph) -> None:
        """Annotator types (when ids exist); the "auto" parameters chosen on a validation split;
        then the stages on every comparison."""
        with phase("annotator types"):
            graph, self.annotator_types_, annotator_iter, heterogeneity_p, gold_error = self._annotator_stage(graph)
        start = self._start(graph)
        restarts, restarted = self._restarts(graph, start)
        X0 = restarts.X
        chosen, self.tuning_results_, candidate = self._choose(graph, X0, start)
        chosen, ridge_gain = self._check_ridge(graph, start, chosen, tuned=bool(self.tuning_results_))
        if not is_auto(self.weighting) and chosen["weighting"] != self.weighting:
            warn(f"weighting={self.weighting!r} decides no comparison here (every query's votes cancel out): "
                 "fitted with weighting='vote', which keeps the votes and gives a map with no order in it",
                 UserWarning)
        loss = _loss_of(chosen["loss"], self.n_components)
        problem = RobustProblem.build(graph, loss, chosen["weighting"], self.two_sided)
        settings = self._settings(graph, loss, chosen["refine"], chosen["alpha"], chosen["refine_alpha"])
        if restarted is not None and restarted != chosen["loss"]:
            # another loss than the restarts' (t-STE after SOE's restarts): its own restarts, from the best of
            # theirs and the same random starts, keeping its lowest objective (see the n_init parameter)
            settings = dataclasses.replace(settings, n_init=self._n_init(graph))
        continued = candidate is not None and len(graph) >= CONTINUE_EDGES
        basins, final_start = (), 0
        with phase("final fit"):
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
        self._warn_if_held_at_a_point()

    def _shrinking_params(self) -> dict:
        """The ridges and the refinement's slope, where the user set them (a shallow slope is close to linear, and
        its ridge then holds the map near a point)."""
        return {k: getattr(self, k) for k in ("alpha", "refine", "refine_alpha")
                if not is_auto(getattr(self, k)) and getattr(self, k) is not None}

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
        queries: the fit nearer that map, the unridged one, would score that memory.

        It runs where the tuning ran (``tuned``), ``alpha`` is "auto", the graph has fewer than ``RIDGE_CHECK_QUERIES``
        distinct queries per free coordinate and fewer than ``CONTINUE_EDGES`` edges (on larger graphs ten more
        fits were not measured).  Why: where the queries are few against the coordinates, how strongly to pull
        the map towards the origin decides much of the error, and the tuning's single 20% hold-out is too noisy
        to see it; five folds' paired differences are steadier.  Above 6 queries a coordinate it gained nothing or
        cost; it costs ten fits on four fifths of the data (docs/default.md, "The ridge check")."""
        free = free_coordinates(len(graph.comparisons.used_objects), self.n_components)
        if not (tuned and is_auto(self.alpha) and len(graph) < CONTINUE_EDGES
                and graph.n_voted_queries < RIDGE_CHECK_QUERIES * free):
            return chosen, None
        loss = _loss_of(chosen["loss"], self.n_components)
        ridged = dict(chosen, alpha=RIDGE_CHECK_ALPHA * self._ridge_scale(),
                      **(dict(refine=None, refine_alpha=None) if is_auto(self.refine) else {}))
        settings = [self._settings(graph, loss, c["refine"], c["alpha"], c["refine_alpha"]) for c in (chosen, ridged)]
        folds = GroupedKFold(RIDGE_CHECK_FOLDS, groups=graph.response_query, random_state=self.random_state)
        with phase("ridge check"):
            gains = ridge_check(graph, loss, chosen["weighting"], self.two_sided, settings, start,
                                folds.split(graph.comparisons))
        if len(gains) == 0:
            return chosen, None
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
        if self.n_components == 1 and not self._init_given():  # a start the user gave is kept
            start = lifted_start(problem, settings, X0)
        with phase("restarts"):
            return stage_plain(problem, settings, start), losses[0]

    def _candidate_lists(self, graph: ComparisonGraph):
        """The candidate losses, weightings (distinct on this graph) and (refine, refine_alpha) pairs, and the
        ridge ``alpha`` they share; where the data cannot pin the map down (:meth:`_loose`) one candidate,
        ``LOOSE_CHOICE`` without refinement."""
        if not is_auto(self.refine):
            refines = [(self.refine, self.refine_alpha)]
        elif is_auto(self.refine_alpha):
            refines = [(None, None), *((slope, ridge * self._ridge_scale()) for slope, ridge in AUTO_REFINES)]
        else:  # the slopes tried, each with the ridge set by the user
            slopes = dict.fromkeys(slope for slope, _ in AUTO_REFINES)
            refines = [(None, None), *((slope, self.refine_alpha) for slope in slopes)]
        if self._loose(graph):
            return [LOOSE_CHOICE["loss"]], [LOOSE_CHOICE["weighting"]], refines[:1], LOOSE_CHOICE["alpha"]
        losses = list(AUTO_LOSSES) if is_auto(self.loss) else [self.loss]
        weightings = list(AUTO_WEIGHTINGS) if is_auto(self.weighting) else [self.weighting]
        # a weighting set by the user (or pinned by bootstrap / select_dimension on a resample) that decides no
        # query is replaced by "vote", as "auto" does; _fit_graph warns
        return losses, _distinct_weightings(graph, weightings), refines, self.alpha

    def _loose(self, graph: ComparisonGraph) -> bool:
        """Whether the comparisons cannot pin the map down: fewer distinct queries than the coordinates that
        shift and rotation leave free (:func:`roembed.data.diagnostics.too_few_queries`; ``fit`` warns then),
        with ``loss``, ``weighting`` and ``alpha`` all ``"auto"``.  Then nothing is tuned: the fit is
        ``LOOSE_CHOICE``, CKL with its own ridge 1e-4 (unscaled) on every vote, and no refinement unless asked.
        Why: flat directions remain that only a prior fixes, and the query-grouped hold-out cannot rank the
        candidates there (held-out queries mostly involve objects that the rest barely constrains).
        That fit runs from one start (``n_init="auto"``) to CKL's own tolerance 1e-6 (``tol="auto"``): the
        restarts keep the lowest objective, and along flat directions a lower objective is not a better map
        (docs/default.md, "One fit where the data cannot pin the map down")."""
        if not (is_auto(self.loss) and is_auto(self.weighting) and is_auto(self.alpha)):
            return False
        return too_few_queries(graph, self.n_components)

    def _annotator_stage(self, graph: ComparisonGraph):
        """``(graph, annotator_types, n_iter, heterogeneity p-value, gold error)``: with annotator ids (and
        ``annotators="auto"``) whose agreement with a plain fit differs between annotators
        (:func:`roembed.annotator_model.heterogeneity_test` at ``HETEROGENEITY_P``), or of whom some giving at
        least ``SWITCH_MIN_SHARE`` of the answers are contradicted by the others
        (:func:`roembed.annotator_model.contradicted_share`), and always with gold answers: the graph of the
        responses re-weighted by their annotator's probability of following the embedding
        (:func:`roembed.annotator_model.fit_crowd`); else ``graph`` itself, and ``graph`` itself too where the
        stage has no annotator following (a followers' share of the answers at most ``MIN_DECIDED_SHARE``: weights
        of 1e-44 decide nothing but rounding).  Only the weights change: the later stages start where they would
        without the stage, so a crowd whose annotators all follow gets the fit it would get without ids."""
        ids = graph.comparisons.annotator
        gold = known_answers(graph.comparisons, self.annotators is not None)
        if self.annotators is None or ids is None or len(annotator_index(graph.comparisons)[0]) < 2:
            return graph, None, 0, None, None
        loss = likelihood_loss(get_loss("soe") if is_auto(self.loss) else get_loss(self.loss), self.n_components)
        alpha = likelihood_alpha(loss) if is_auto(self.alpha) else self.alpha
        stage = unit_weighted(graph)
        plain = plain_likelihood_fit(stage, loss, self._start(graph), alpha=alpha)
        test = heterogeneity_test(stage, plain.solution)
        if gold is None and test.p_value > HETEROGENEITY_P and contradicted_share(stage) < SWITCH_MIN_SHARE:
            return graph, None, plain.n_iter, test.p_value, None
        crowd = fit_crowd(stage, loss, plain.solution, alpha=alpha, gold=gold)
        share = float(crowd.response_weight.sum() / stage.comparisons.weight.sum())
        warn_minority_follows(share)
        weighted = graph if share <= MIN_DECIDED_SHARE else follow_weighted(graph, crowd.posterior)
        return weighted, crowd.posterior, plain.n_iter + crowd.n_iter, test.p_value, crowd.gold_error

    def _store_state(self, state: FitState) -> None:
        for name, message in state.unconverged:  # each stage's own reason, not the last stage's
            warn(f"{type(self).__name__}: the {name} stage did not converge in {self.max_iter} "
                 f"iterations ({message}); increase max_iter", ConvergenceWarning)
        values = state.restart_objectives
        self.restart_objectives_ = values
        if values is not None and len(values) >= 3:
            reached, elsewhere = restart_agreement(values, state.restart_converged)
            if reached < 2 and elsewhere >= 2:
                warn(f"{type(self).__name__}: only {reached} of {len(values)} starts reached the best "
                     f"objective (within 1% + {SAME_OBJECTIVE:g}) and {elsewhere} converged to worse ones; "
                     f"the fit may be a local minimum -- raise n_init", UserWarning)
        rivals = [(gap, error) for gap, error in state.rivals if gap <= RIVAL_GAP and error > RIVAL_ERROR]
        if rivals:
            gap, error = max(rivals, key=lambda rival: rival[1])
            where = f"{gap:.2%} above" if gap >= 0 else f"{-gap:.2%} below"
            p = state.X.shape[1]
            warn(f"{type(self).__name__}: another start's map fits the comparisons about as well (its final objective "
                 f"{where} this map's) but has another shape (Procrustes error {error:.2f} against this map): in "
                 f"{p} dimension{'s' * (p > 1)} these comparisons do not single out one map, and another random_state "
                 "(roembed fit --seed) may draw the other; a bootstrap (roembed.bootstrap, roembed fit --bootstrap) "
                 "shows which objects keep their place", DataWarning)  # as the data's: a fold or resample is silent
        self.embedding_ = orient_embedding(state.X)
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
        Why the training part's own restarts (at p = 1 and 2, where ``n_init="auto"`` restarts): restarts on every
        comparison have fitted the held-out queries, and a candidate that stays near their map (SOE, the restarts'
        own loss) scored that memory.  The final fit keeps the restarts on every comparison (from the training
        part's it ended in worse minima at p = 1).  Large graphs keep ``X0``: there the candidates are screens the
        final fit continues (:func:`continue_fit`), and one set of restarts costs most.
        Why ``vote`` too: t-STE is a likelihood, whose natural data are the responses themselves, and the first
        loss's best weighting is a noisy pick.
        A weighting whose loss weights (nearly) equal an earlier one's (e.g. every query answered once) is
        skipped (:func:`_distinct_weightings`).
        On graphs of ``CONTINUE_EDGES`` edges or more the candidates' plain, penalty and robust stages are a
        screen: they stop at ``SCREEN_TOL`` (1e-6) when ``tol`` is tighter; the refinements run from them to
        ``tol``, and the final fit continues the winner to ``tol`` (:func:`continue_fit`): there the held-out
        scores moved far less than the gaps that decided.  Each rule's measurement: docs/default.md, "The tuning's
        own restarts", "t-STE with vote as well", "Candidates as a screen".
        """
        p = self.n_components
        losses, weightings, refines, alpha = self._candidate_lists(graph)
        chosen = dict(loss=losses[0], weighting=weightings[0], refine=refines[0][0], refine_alpha=refines[0][1],
                      alpha=alpha)
        if len(losses) == 1 and len(weightings) == 1 and len(refines) == 1:
            return chosen, [], None
        try:
            if graph.n_voted_queries < MIN_TUNING_QUERIES:
                raise InvalidComparisonsError("too few queries")
            held_out = holdout_mask(graph.comparisons, self.validation_fraction, self.random_state,
                                    groups=graph.response_query)
            inner, held_edges = split_edges(graph, held_out)
            del held_out
            weightings = _deciding(inner, weightings)  # the training part may have drawn only tied queries
            if not weightings:
                raise InvalidComparisonsError("no decided query in the training part")
        except InvalidComparisonsError:
            warn(f"{type(self).__name__}: too few queries to choose the 'auto' parameters on validation; "
                 f"using loss={losses[0]!r}, weighting={chosen['weighting']!r}, refine={refines[0][0]!r}",
                 UserWarning)
            return chosen, [], None
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
            with phase(f"choosing {loss_name}, {weighting}"):
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
        to_refine = [w for w in weightings if w != "vote"] if is_auto(self.weighting) else weightings
        for weighting in to_refine or weightings:  # refine the best fit of each weighting (but "vote")
            top = max((r for r in unrefined if r["weighting"] == weighting), key=lambda r: r["score"])
            if top["outlier_share"] < REFINE_MIN_OUTLIERS:
                continue  # no evidence of contamination: the refinement is a robustness device
            problem, settings, state = states[top["loss"], weighting]
            for slope, ridge in refines[1:]:
                with phase(f"choosing {top['loss']}, {weighting}, refined at slope {slope:g}"):
                    score, given_up, refined = refine_candidate(
                        problem, dataclasses.replace(settings, refine=slope, refine_alpha=ridge), state,
                        held_out_score, max(r["score"] for r in results))
                record(dict(top, refine=slope, refine_alpha=ridge, score=score, given_up=given_up), refined)
        best = chosen_candidate(results)
        # a refinement set by the user is not tuned: the candidates are judged unrefined, the final fit refines
        refine, refine_alpha = (best["refine"], best["refine_alpha"]) if is_auto(self.refine) else refines[0]
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
    that helped (docs/default.md, "Forced where the contamination is evident")."""
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
    :data:`roembed.solvers.STOPPABLE` nothing is given up.  Why 200 and 0.02: docs/default.md, "Hopeless
    candidates".
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
    ``settings[0]``, each fitted from ``X0`` on the fold's training part; a fold whose training part ``weighting``
    decides nothing in (:func:`_deciding`: it drew only tied queries) gives none."""
    gains = []
    for _, held_rows in folds:
        held_out = np.zeros(len(graph.comparisons), dtype=bool)
        held_out[held_rows] = True
        inner, held_edges = split_edges(graph, held_out)
        if not _deciding(inner, [weighting]):
            continue  # the fold's training part drew only tied queries: it judges nothing
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
    return {k: chosen[k] for k in TUNED if k in chosen and is_auto(params.get(k))
            and (chosen[k] is not None or k == "refine")}


def warn_minority_follows(share: float) -> None:
    """A ``DataWarning`` when the annotators the stage has following the map give less than half of the response
    weight (``share``, of the responses' weight times their annotator's probability of following): the rest
    answer at random or against it, so the map rests on a minority, and who is honest was read from the
    majority of the answers (:func:`roembed.annotator_model.crowd_oriented`) or from too few (the shares
    measured: docs/default.md, "Annotators"); another where nobody follows (at most ``MIN_DECIDED_SHARE``), whose
    answers the fit then takes as they are (:meth:`RobustOrdinalEmbedding._annotator_stage`)."""
    if share <= MIN_DECIDED_SHARE:  # weights of 1e-60 would let rounding choose whose answers count
        warn("the annotator stage finds no annotator who follows the map (all answer at random, as it reads them), "
             "so the map is fitted to every answer as it is, as without annotator ids: known-answer questions (a "
             "gold column) would show who is honest", DataWarning)
    elif share < 0.5:
        warn(f"the annotators who follow the map give only {share:.0%} of the answers; the others answer at random "
             "or against it (the annotator table says who), so the map rests on a minority: known-answer "
             "questions (a gold column) would show who is honest", DataWarning)


def unit_weighted(graph: ComparisonGraph) -> ComparisonGraph:
    """``graph`` with its response weights divided by their mean per draw (their sum over the sum of
    ``copies`` of the responses that weigh anything: a weight of 0 leaves a response out, it does not make the others
    count more), or ``graph`` itself where that mean is 1 (every weight 1 or 0; a bootstrap's resample).

    The annotator stage counts weights as answers (an annotator's evidence for a type is the sum of their
    responses' weighted log-likelihoods, against a prior of a few answers), while the rest of the fit divides them by
    their total.  Read as they are, weights that sum to 1 (``sample_weight = w / w.sum()``) made each of the
    synthetic protocol's 325,507 answers count as 3e-6 of one: with 25% spammers every one of the 100 annotators
    came out suspect (25 with the same weights times 1, 0.1 or 10) and the fit warned that the followers give only
    45% of the answers.  Divided so, a scale common to all weights changes nothing anywhere, and their ratios stay."""
    responses = graph.comparisons
    weight = np.asarray(responses.weight)
    draws = float(np.sum(responses.copies[weight > 0]))
    unit = float(np.sum(weight)) / draws if draws > 0 else 1.0
    if unit == 1.0 or not np.isfinite(unit):
        return graph
    return responses.with_weight(weight / unit).aggregate()


def follow_weighted(graph: ComparisonGraph, posterior) -> ComparisonGraph:
    """The graph of the responses re-weighted by their annotator's probability of following,
    :math:`w_r q_{a(r), follows}` (``posterior``: one row per annotator id, sorted, with ``follows``), with the
    share of each query that is left for the ``majority`` and ``consensus`` weightings and the weight taken off,
    which the ``vote`` weighting counts half each way (:meth:`ComparisonGraph.scaled`, :func:`reverse_weights`).
    Why the share: a majority vote reads only which side has more, so a query answered once, by a spammer weighted to
    nothing, counted once under ``majority`` (docs/default.md, "Annotators")."""
    _, who = annotator_index(graph.comparisons)
    follows = posterior["follows"].to_numpy(dtype=np.float64)
    return graph.scaled(np.clip(follows[who], 0.0, 1.0))


def _deciding(graph: ComparisonGraph, weightings: list) -> list:
    """``weightings`` without those that decide no comparison on ``graph`` (:func:`decided_share`): a tie decides
    nothing under ``consensus`` or ``net``, and a graph whose queries are all ties (or a training part, fold or
    bootstrap resample that drew only tied queries) has nothing left to fit under them."""
    return [w for w in weightings if decided_share(graph, w) > MIN_DECIDED_SHARE]


def _distinct_weightings(graph: ComparisonGraph, weightings: list) -> list:
    """``weightings`` without those whose normalised loss weights are all zero (``net`` on pure
    contradiction) or differ from an earlier one's by at most ``SAME_WEIGHTING`` in total variation
    (``0.5 * sum |a - b|``: the share of the loss weight that moves); ``["vote"]`` when none is left.
    A tolerance, not equality: 10^6 random triplets repeat a handful of queries, and two candidates
    that differ in those few edges fit the same embedding at twice the cost.  ``vote`` is compared by its decided
    votes, without the halves of the undecided weight (:func:`reverse_weights`): where every query is answered
    once it is ``net`` plus a pull towards ties on the annotator stage's doubtful answers (docs/default.md,
    "Weightings that coincide")."""
    kept, seen = [], []
    for w in weightings:
        a, b = edge_weights(graph, w), reverse_weights(graph, w)  # one pass over the edges (10^7: 0.03 s each)
        if decided_fraction(a.sum(), 0.0 if b is None else b.sum()) <= MIN_DECIDED_SHARE:
            continue  # decides nothing here (_deciding)
        a = np.asarray(graph.votes, dtype=np.float64) if w == "vote" else a
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


def search_results(candidates: list[dict], scores: np.ndarray) -> dict:
    """``cv_results_`` in scikit-learn's layout from the candidates and their scores (candidates x splits):
    ``param_<name>`` masked where a candidate does not set it (the first round's, under a refinement)."""
    results = {"params": candidates}
    for name in dict.fromkeys(k for c in candidates for k in c):
        values = np.empty(len(candidates), dtype=object)
        values[:] = [c.get(name) for c in candidates]
        results[f"param_{name}"] = np.ma.MaskedArray(values, mask=[name not in c for c in candidates])
    for k in range(scores.shape[1]):
        results[f"split{k}_test_score"] = scores[:, k]
    mean = scores.mean(axis=1)
    results["mean_test_score"], results["std_test_score"] = mean, scores.std(axis=1)
    order = np.argsort(-np.nan_to_num(mean, nan=-np.inf), kind="stable")  # the best first; ties keep their order
    rank = np.empty(len(mean), dtype=np.int32)
    rank[order] = np.arange(1, len(mean) + 1)
    results["rank_test_score"] = rank
    return results


def _fit_score(estimator, train, validation) -> tuple[float, list[str]]:
    """The validation score of ``estimator`` fitted on ``train``, and the warnings that fit gave, as text: said
    by :func:`warn_counted` in the caller's process (from joblib's worker processes they were printed straight
    to stderr, out of reach of the caller's filters).  A fold is a subset: the full fit warns about the data once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", DataWarning)
        score = clone(estimator).fit(train).score(validation)
    return score, [str(w.message) for w in caught]


class RobustOrdinalEmbeddingCV(RobustOrdinalEmbedding):
    """:class:`RobustOrdinalEmbedding` with ``lam`` (and optionally loss, ridge, weighting) chosen by validation.

    Parameters (besides those of :class:`RobustOrdinalEmbedding`, which fix what is not searched)
    ---------------------------------------------------------------------------------------------
    lams : sequence of float or "auto", or None
        Candidate penalties.  None (the default): the ``lam="auto"`` rule alone, not searched (see below).
    losses, alphas, weightings : sequence or None
        Further candidates for ``loss``, ``alpha`` and ``weighting`` (None: keep the single value).
    refines : sequence of float or None
        Slopes of the sigmoid refinement (``refine``), tried in a second round on the best
        candidate of the first; it is kept only if it scores better (None: no second round; a None among
        the slopes is that best candidate unrefined).
    cv : int or splitter
        Folds when no ``validation`` set is given; an integer means that many folds of whole sets of objects
        (every comparison among the same objects on one side, so whole queries too) in a seeded shuffled order
        (:class:`~roembed.model_selection.GroupedKFold` with ``groups="object_set"``, as ``--holdout`` and
        :func:`~roembed.dimension.select_dimension` split): by query, an odd-one-out answer's two triplets fell on
        both sides and ``best_score_`` scored halves of answers the fit had seen (docs/default.md, "The
        cross-validated estimator").  For triplets asked one query at a time the sets are nearly the queries.
    validation : Comparisons or array, optional
        A held-out set (e.g. clean, expert-checked comparisons) scored instead of cross-validation;
        the final model is refitted on all training data either way.
    n_jobs : int
        joblib workers over (candidate, fold) pairs.

    The parameters left ``"auto"`` and not searched (``loss``, ``weighting``, ``refine``, ``refine_alpha``,
    ``alpha``, as by default) are what :class:`RobustOrdinalEmbedding` chooses on all the training comparisons,
    found by one self-tuned fit first and held fixed for every candidate (``pinned_params_``; with ``refines``
    searched the first round is unrefined and ``refine_alpha`` left to its rule or as set).  With every default,
    then, the fit is the default's own (``best_estimator_`` is that first fit) and ``best_score_`` the
    cross-validated agreement of its choice.  ``lam`` is not searched by default: validation cannot tell the
    penalties apart by error (they move the flags), and the old fixed SOE / ``vote`` grid erred a third more than
    the default (measurements: docs/default.md, "The cross-validated estimator").  Searching is for a grid of
    one's own, or a clean ``validation`` set.

    Fitted: ``best_params_``, ``best_score_``, ``best_index_``, ``cv_results_`` (as scikit-learn's
    ``GridSearchCV`` has it: ``params``, ``param_<name>``, ``split<k>_test_score``, ``mean_test_score``,
    ``std_test_score``, ``rank_test_score``; ``pandas.DataFrame(cv_results_)`` is the table),
    ``pinned_params_``, ``best_estimator_`` and its fitted attributes (``embedding_``, ``gamma_``, ...).
    """

    def __init__(self, n_components=2, *, lams=None, losses=None, alphas=None, weightings=None,
                 refines=None, cv=3, validation=None, n_jobs=None, loss="auto", nonneg=True, weighting="auto",
                 solver="lbfgs", device=None, dtype="float32", alpha="auto", max_iter=3000, tol="auto", init="plain",
                 init_scale="auto", refine="auto", refine_alpha="auto", refine_ensemble=(1.0, 1.5), n_init="auto",
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

    SEARCHED = (("lams", "lam"), ("losses", "loss"), ("alphas", "alpha"), ("weightings", "weighting"),
                ("refines", "refine"))

    def _candidates(self) -> list[dict]:
        """The first round's grid (``lams=None``: ``lam="auto"`` alone)."""
        grid = {} if self.lams is not None else {"lam": ["auto"]}
        for option, name in self.SEARCHED:
            values = getattr(self, option)
            if values is not None and (isinstance(values, (str, bytes, dict)) or not np.iterable(values)):
                raise ValueError(f"{option} must be a list of candidates (e.g. [{values!r}]), got {values!r}")
            if values is not None and name != "refine":
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

    def _pinned(self, comparisons) -> tuple[dict, RobustOrdinalEmbedding | None, list]:
        """The default's choice of the ``"auto"`` parameters that are not searched, from one self-tuned fit on
        ``comparisons`` (none where nothing is left to it), that fit (None without one) and its warnings."""
        searched = {name for option, name in self.SEARCHED if getattr(self, option) is not None}
        searched |= {"refine_alpha"} if "refine" in searched else set()  # the default's ridge goes with its slope
        left = [k for k in TUNED if k not in searched and is_auto(getattr(self, k))]
        # with refines searched, the first round is unrefined (the second sets each slope)
        pinned = {"refine": None} if "refine" in searched and is_auto(self.refine) else {}
        if not left:
            return pinned, None, []
        with warnings.catch_warnings(record=True) as caught:  # said once, by the fit the user gets
            warnings.simplefilter("always")
            fitted = self._base().fit(comparisons)
        pinned.update({k: v for k, v in tuned_params(fitted).items() if k in left})
        return pinned, fitted, list(caught)

    def _dimension_estimator(self):
        """``n_components="auto"`` is chosen with the default (``self._base()``): a search inside every fold of
        every dimension would nest the candidates' folds in the dimension's."""
        return self._base()

    def fit(self, X, y=None, sample_weight=None):
        """Searches the candidates (see the class docstring) and refits the best on ``X``; ``n_components="auto"``
        first chooses the dimension with :class:`RobustOrdinalEmbedding` as :meth:`OrdinalEmbedding.fit` does."""
        comparisons = training_comparisons(X, y, sample_weight)
        if isinstance(self.n_components, str) and self.n_components == "auto":
            return self._fit_auto_dimension(comparisons)
        candidates = self._candidates()  # checked before any fit
        check_n_jobs("n_jobs", self.n_jobs)
        validation = self._validation_comparisons()
        if validation is None and not (hasattr(self.cv, "split") or np.iterable(self.cv)):
            check_param("cv", self.cv, low=2, integer=True)
        pinned, default, default_warnings = self._pinned(comparisons)
        if validation is not None:
            splits = [(comparisons, validation)]
        else:
            cv = GroupedKFold(self.cv, groups="object_set", random_state=self.random_state) \
                if isinstance(self.cv, (int, np.integer)) else check_cv(self.cv)
            splits = [(comparisons[tr], comparisons[te]) for tr, te in cv.split(comparisons)]
        scores = self._scores(candidates, splits, pinned)
        if self.refines is not None:  # second round: the refinement of the first round's best
            first = candidates[int(np.nanargmax(scores.mean(axis=1)))]
            # None (no refinement, as refine=None) was float()'s TypeError; it scores as the first round's best
            refined = [{**first, "refine": None if r is None else float(r)} for r in self.refines]
            candidates = candidates + refined
            scores = np.vstack([scores, self._scores(refined, splits, pinned)])
        mean = scores.mean(axis=1)
        best = int(np.nanargmax(mean))
        self.cv_results_ = search_results(candidates, scores)
        self.best_index_, self.best_params_, self.best_score_ = best, candidates[best], float(mean[best])
        if candidates == [{"lam": "auto"}] and default is not None:  # nothing searched: the default's own fit
            self.best_estimator_ = default
            for caught in default_warnings:  # the data's warnings (unlinked groups, ...), as the final fit gives them
                warnings.warn(caught.message, stacklevel=2)
        else:
            self.best_estimator_ = self._base(**{**pinned, **self.best_params_}).fit(comparisons)
        for key, value in vars(self.best_estimator_).items():
            if key.endswith("_") and not key.startswith("_"):
                setattr(self, key, value)
        self.pinned_params_ = pinned
        return self

    def _validation_comparisons(self):
        """``validation`` read as comparisons (None when not given); a bad one is refused naming the parameter."""
        if self.validation is None:
            return None
        try:
            return as_comparisons(self.validation)
        except InvalidComparisonsError as exc:
            raise InvalidComparisonsError(f"validation: {exc}") from None

    def _scores(self, candidates, splits, pinned) -> np.ndarray:
        """Validation scores, (candidates, splits), each candidate fitted with the ``pinned`` parameters."""
        jobs = [(c, tr, te) for c in candidates for tr, te in splits]
        fits = Parallel(n_jobs=self.n_jobs)(delayed(_fit_score)(self._base(**{**pinned, **c}), tr, te)
                                            for c, tr, te in jobs)
        warn_counted([(str(c), said) for (c, _, _), (_, said) in zip(jobs, fits)], "validation fits", label="candidate")
        return np.asarray([score for score, _ in fits], dtype=float).reshape(len(candidates), len(splits))


__all__ = ["RobustOrdinalEmbedding", "RobustOrdinalEmbeddingCV", "TUNED", "auto_cap", "edge_weights", "tuned_params"]
