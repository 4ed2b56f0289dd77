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
The plain fit is also the warm start of the robust fit.

Weightings ``"net"`` (votes minus the votes of the opposite comparison,
clipped at 0) and ``"majority"`` (one vote for the majority side) are also
offered: when contamination is spread over many votes of the same query
(spammers) they beat per-vote weighting.

Refinement (``refine=slope``, off by default): a third stage minimises the
symmetric sigmoid loss :class:`~roembed.losses.Sigmoid` of SOE's Euclidean margins
(whatever ``loss`` is), with the same loss weights, from the robust solution and
with its own ridge ``refine_alpha``.  The outlier shifts
are then evaluated at the refined embedding.  It helps where whole comparisons
are reversed at random, which no vote count reveals: on the synthetic protocol
with 25% of the triplets flipped unanimously, validation chose it on all of ten
exploration draws and the test error fell from 0.215 to 0.204 (medians).
"""
from __future__ import annotations

import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import check_cv

from ..annotator_model import fit_crowd, likelihood_loss
from ..data import ComparisonGraph, as_comparisons
from ..data.diagnostics import DataWarning
from ..losses import CrowdKernel, Sigmoid, TStudent, get_loss
from ..model_selection import GroupedKFold
from ..objective import PairDistances
from .base import check_param, edge_objective
from .embedding import LossEmbedding
from .outliers import OutlierReportMixin

WEIGHTINGS = ("vote", "paper", "net", "majority")
AUTO_CAP_EDGES = 1 << 21
"""``lam="auto"`` reads the margins of at most this many edges (every k-th beyond): the weighted median
and MAD of 2 million margins are as good as those of all, without sorting 10^7 or 10^8 of them."""
INITS = ("random", "plain")


def edge_weights(graph: ComparisonGraph, weighting: str) -> np.ndarray:
    """Loss weights ``a_c`` from the votes ``w_c`` (and ``w_rev(c)``, the votes of the opposite comparison)."""
    w = np.asarray(graph.votes, dtype=np.float64)
    if weighting == "vote":
        return w
    if weighting == "paper":
        return w * w
    rev = np.asarray(graph.reverse_edge)
    net = w - np.where(rev >= 0, w[np.maximum(rev, 0)], 0.0)
    if weighting == "net":
        return np.maximum(net, 0.0)
    return (net > 0) + 0.5 * (net == 0)  # majority vote (ties: half a vote each way)


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, 0.5 * cum[-1])])


def auto_cap(loss, margins: np.ndarray, weights: np.ndarray, width: float = 2.0) -> float:
    """The loss slope ``-phi'(s*)`` at the knee ``s* = min(med_w(s) - width * 1.4826 MAD_w(s), 0)``."""
    med = weighted_median(margins, weights)
    scale = 1.4826 * weighted_median(np.abs(margins - med), weights)
    _, slope = loss.penalty(np.asarray([min(med - width * scale, 0.0)]))
    return float(max(-slope[0], 1e-6))


class RobustOrdinalEmbedding(OutlierReportMixin, LossEmbedding):
    r"""Robust ordinal embedding: any margin loss plus sparse per-comparison outlier shifts.

    Parameters
    ----------
    n_components : int
    loss : str or Loss
        Any loss of :mod:`roembed.losses` (``"soe"``, ``"ste"``, ``"tste"``, ``"gnmds"``, ``"ckl"``, ``"roe"``).
    lam : "auto" or float > 0
        Outlier penalty :math:`\lambda` (see the module docstring for the ``"auto"`` rule).
    nonneg : bool
        Only :math:`\gamma_c \ge 0` (an outlier can only make a comparison look violated); False lets the
        squared (ROE) loss shift margins both ways (other losses are monotone, so it makes no difference).
        Measured with the squared loss (synthetic, q = 0.25): no difference beyond 0.002 in test error.
    weighting : "vote", "paper", "net" or "majority" (see the module docstring)
    solver : "lbfgs" (factored, NumPy/SciPy), "torch" (any torch device) or "gram" (see :class:`LossEmbedding`)
    device, dtype : torch device (default CUDA if available) and "float32" / "float64" (torch solver only)
    alpha : float or "auto"
        Ridge penalty :math:`\alpha\|X\|_F^2`.  ``"auto"``: ``default_alpha`` = 1e-4 (chosen on validation
        data of the paper's synthetic protocol, 100 objects), times ``100 / n`` on ``n > 100`` objects.  The
        loss is a *mean* over comparisons, so each object's share of it falls as ``1 / n`` while its ridge
        term does not: with a fixed ``alpha`` the ridge wins as ``n`` grows, the embedding shrinks (RMS norm
        1.0, 0.57, 0.24 at n = 10^3, 3 x 10^3, 10^4 with 100 random triplets per object, 10% flipped) until
        every margin sits in the hinge's linear part, the held-out error rises (0.137, 0.170, 0.212) and
        L-BFGS needs ever more iterations (105 at 10^4, 256 at 3 x 10^4 objects).  Scaled, the error
        stays at 0.12 (``benchmarks/bench_scale.py``).
    init : "plain", "random" or an (n, p) array
        "plain" starts from a fit of the loss without outliers (always done for ``lam="auto"``, whose
        margins it needs).  Measured: at p = 10 (synthetic protocol, majority / unanimous, q = 0.25) the
        same error as a random start at about 1.7x the iterations; at p = 2 (30 objects, 10% unanimous
        flips) random starts fell into a local minimum for 2 of 3 seeds (test error 0.109 vs 0.056) and
        the plain start never did -- hence the default.
    refine : None or float > 0
        Slope of the sigmoid refinement stage (see the module docstring); None skips it.
    refine_alpha : float >= 0
        Ridge of the refinement stage.
    annotators : "auto" or None
        "auto": when the responses carry ids of two or more annotators, a first stage estimates each
        annotator's type (follows the embedding, inverts it, answers at random) jointly with an
        embedding (:func:`roembed.annotator_model.fit_crowd`); the later stages weight each response
        by its annotator's probability of following (``annotator_types_``).
        None ignores annotator ids in the fit (they are still reported in ``annotators_``).  The stage runs
        on NumPy whatever the ``solver``; ``fit(..., gold=...)`` passes known-answer flags to it.
    init_scale, max_iter, tol, random_state, verbose : see :class:`LossEmbedding`

    With ``refine``, ``objective_`` and ``history_`` are those of the refinement stage and
    ``n_iter_`` counts every stage.
    """

    default_alpha = 1e-4
    alpha_reference_objects = 100
    default_init_scale = 0.1

    def __init__(self, n_components=2, *, loss="soe", lam="auto", nonneg=True, weighting="vote", solver="lbfgs",
                 device=None, dtype="float32", alpha="auto", max_iter=1000, tol=1e-9, init="plain", init_scale="auto",
                 refine=None, refine_alpha=1e-4, annotators="auto", random_state=None, verbose=0):
        super().__init__(n_components, solver=solver, alpha=alpha, max_iter=max_iter, tol=tol, init_scale=init_scale,
                         random_state=random_state, verbose=verbose)
        self.annotators = annotators
        self.loss = loss
        self.lam = lam
        self.nonneg = nonneg
        self.weighting = weighting
        self.device = device
        self.dtype = dtype
        self.init = init
        self.refine = refine
        self.refine_alpha = refine_alpha

    # -- parameters ------------------------------------------------------------
    def _check_params(self) -> None:
        super()._check_params()
        self._loss()
        if not (isinstance(self.lam, str) and self.lam == "auto"):
            check_param("lam", self.lam, low=0, low_open=True)
        if self.weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {self.weighting!r}")
        if not isinstance(self.init, np.ndarray) and self.init not in INITS:
            raise ValueError(f"init must be one of {INITS} or an array, got {self.init!r}")
        if not isinstance(self.nonneg, (bool, np.bool_)):
            raise ValueError(f"nonneg must be True or False, got {self.nonneg!r}")
        if self.refine is not None:
            check_param("refine", self.refine, low=0, low_open=True)
        check_param("refine_alpha", self.refine_alpha, low=0)
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

    def _loss(self):
        return get_loss(self.loss)

    # -- the objective -----------------------------------------------------------
    def _loss_weight(self, graph: ComparisonGraph) -> np.ndarray:
        a = edge_weights(graph, self.weighting)
        if a.sum() <= 0:
            raise ValueError("all comparison weights are zero")
        return a / a.sum()

    def _outlier_caps(self, graph: ComparisonGraph):
        """``kappa_c = lam / w_c`` for the paper weighting, else ``kappa_c = lam``."""
        w = np.asarray(graph.votes, dtype=np.float64)
        if self.weighting == "paper":
            return self.lam_ / np.maximum(w, 1e-12)
        return float(self.lam_)  # the same for every edge: a scalar, not an array per comparison

    def _objective(self, graph: ComparisonGraph, caps="robust"):
        a = self._loss_weight(graph)
        cap = self._outlier_caps(graph) if caps == "robust" else None
        return edge_objective(graph, self._loss(), a, cap, self.two_sided)

    # -- fitting -----------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None, gold=None):
        """Fits to comparisons ``X``; ``gold`` (one value per response: 1 right, 0 wrong, NaN not a
        known-answer question) anchors the annotator types (see :mod:`roembed.annotator_model`)."""
        self._gold = gold
        try:
            return super().fit(X, y, sample_weight)
        finally:
            del self._gold

    def _fit_graph(self, graph: ComparisonGraph) -> None:
        """Annotator types (when ids exist), plain fit (warm start, and the margins for ``lam="auto"``),
        then the robust fit from there."""
        distances = PairDistances(graph.pairs, graph.n_objects)
        graph = self._annotator_stage(graph)
        self._warm_start = self._start(graph)
        auto, plain_iter = isinstance(self.lam, str), 0
        if auto or (isinstance(self.init, str) and self.init == "plain"):
            plain = self._objective(graph, caps=None)
            self._warm_start, result = getattr(self, self._SOLVERS[self.solver])(plain, distances, self._warm_start)
            plain_iter = result.n_iter
        if auto:
            step = -(-len(graph) // AUTO_CAP_EDGES)  # a strided sample of the edges beyond AUTO_CAP_EDGES
            cap = auto_cap(self._loss(), plain.embedding_margins(self._warm_start, distances, step),
                           plain.loss_weight[::step])
            self.lam_ = cap * (weighted_median(graph.votes, plain.loss_weight) if self.weighting == "paper" else 1.0)
        else:
            self.lam_ = float(self.lam)
        plain = None  # frees its loss weights before the robust stage allocates its own
        super()._fit_graph(graph)  # the robust objective from self._initial_embedding() = the warm start
        del self._warm_start
        self.n_iter_ += plain_iter + self.__dict__.pop("_stage_iter", 0)  # every stage
        if self.refine is not None:
            self._refine(graph, distances)
        self._store_outliers(self._objective(graph).embedding_shifts(self.embedding_, distances))

    def _annotator_stage(self, graph: ComparisonGraph) -> ComparisonGraph:
        """The graph the later stages fit: with annotator ids (and ``annotators="auto"``), the responses
        re-weighted by their annotator's probability of following the embedding
        (:func:`roembed.annotator_model.fit_crowd`); else ``graph`` itself.  Only the weights change: the
        later stages start where they would without the stage, so a crowd whose annotators all follow
        gets the fit it would get without ids."""
        self.annotator_types_ = None
        ids = graph.comparisons.annotator
        if self.annotators is None or ids is None or len(np.unique(ids)) < 2:
            return graph
        loss = likelihood_loss(self._loss(), self.n_components)
        crowd = fit_crowd(graph, loss, self._start(graph), alpha=likelihood_alpha(loss) if self.alpha == "auto"
                          else self.alpha, gold=self._gold)
        self.annotator_types_ = crowd.posterior
        self._stage_iter = crowd.n_iter
        return graph.comparisons.with_weight(crowd.response_weight).aggregate()

    def _refine(self, graph: ComparisonGraph, distances: PairDistances) -> None:
        """Third stage: the symmetric sigmoid loss with slope ``refine``, from the robust solution."""
        objective = edge_objective(graph, Sigmoid(slope=float(self.refine)), self._loss_weight(graph))
        solve = getattr(self, self._SOLVERS[self.solver])
        X, result = solve(objective, distances, self.embedding_, alpha=float(self.refine_alpha))
        earlier_iter = self.n_iter_
        self._store_result(X, result, objective, distances)
        self.n_iter_ += earlier_iter

    def _initial_embedding(self, graph: ComparisonGraph) -> np.ndarray:
        return self._warm_start

    def _start(self, graph: ComparisonGraph) -> np.ndarray:
        if isinstance(self.init, np.ndarray):
            X = np.asarray(self.init, dtype=np.float64)
            if X.shape != (graph.n_objects, self.n_components):
                raise ValueError(f"init has shape {X.shape}, expected {(graph.n_objects, self.n_components)}")
            return X.copy()
        return super()._initial_embedding(graph)


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
                 solver="lbfgs", device=None, dtype="float32", alpha="auto", max_iter=1000, tol=1e-9, init="plain",
                 init_scale="auto", refine=None, refine_alpha=1e-4, annotators="auto", random_state=None, verbose=0):
        self.n_components = n_components
        self.annotators = annotators
        self.lams, self.losses, self.alphas, self.weightings = lams, losses, alphas, weightings
        self.refines, self.refine, self.refine_alpha = refines, refine, refine_alpha
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
        fixed = {k: getattr(self, k) for k in RobustOrdinalEmbedding._get_param_names() if k != "lam"}
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


__all__ = ["RobustOrdinalEmbedding", "RobustOrdinalEmbeddingCV", "auto_cap", "edge_weights"]
