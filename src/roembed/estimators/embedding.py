r"""Embedding by minimising a comparison loss: the shared core of the estimators.

``LossEmbedding`` minimises

.. math::  \frac{1}{\sum_c w_c} \sum_c w_c\, \psi_c(s_c) \;+\; \alpha\, \mathrm{tr}(G),
           \qquad G = X X^T,\ \mathrm{tr}(G) = \|X\|_F^2,

where ``w_c`` are the votes of edge ``c`` of the comparison graph (real-valued
weights enter the gradient; rows are never repeated), ``s_c`` the loss's margin
and ``psi_c`` the loss's penalty, optionally with outlier caps (the robust
estimators).  Two solvers share this objective:

``solver="factored"`` (alias ``"lbfgs"``)
    ``X`` in ``R^{n x p}``, full-batch L-BFGS with analytic gradients
    (:func:`roembed.solvers.minimize_embedding` with the lean two-loop L-BFGS:
    one evaluation costs well under a millisecond here, and SciPy's L-BFGS-B
    spends ten times that per iteration on its own bookkeeping).  The fast path.
``solver="gram"``
    The "-p" form of Jain, Jamieson & Nowak (2016): projected gradient with
    Armijo backtracking on ``G``, projected onto the rank-``p`` PSD matrices
    (:func:`roembed.solvers.minimize_gram`).  ``O(n^3)`` per step.
``solver="torch"``
    The factored objective with L-BFGS on a torch device (optional extra;
    ``device``/``dtype`` attributes are used where a subclass defines them).

Every solver is reached through :func:`roembed.solvers.solve` (registry
``roembed.solvers.SOLVERS``).  Subclasses choose the loss (``_loss``), the caps
(``_outlier_caps``) and the starting point (``_initial_embedding``).
"""
from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._warn import warn
from ..data import ComparisonGraph
from ..losses import Loss
from ..objective import PairDistances
from ..projections import center_gram, orient_embedding
from ..solvers import SOLVERS, solve
from .base import OrdinalEmbedding, check_param, edge_objective, random_embedding


LOOSE_TOL = 1e-3
"""Above this ``tol`` a fit warns that it may stop early: on 1,500 noisy answers over 30 objects at p = 2, SOE, STE,
CKL and the default robust fit end within 0.003 of their held-out error at tol 1e-9 up to tol 1e-3, and at 1e-2
STE's error is 0.372 against 0.097 (SOE 0.092 against 0.081, CKL 0.101 against 0.083, robust 0.071 against 0.056)."""

UNINFORMATIVE = 0.01
"""A change of an objective by less than this share of it counts as none: from the start
(:meth:`LossEmbedding._fit_graph`) or from every object at one point (:meth:`LossEmbedding._warn_if_held_at_a_point`).
A fit at a loss's own scale lowers both by tens of percent."""


class LossEmbedding(OrdinalEmbedding):
    """Base for estimators defined by a loss; not used directly.

    Parameters
    ----------
    n_components : int
        Dimension ``p`` of the embedding.
    solver : {"factored", "lbfgs", "gram", "torch"}
        See the module docstring.
    alpha : float or "auto"
        Ridge ``alpha tr(G)`` on the vote-normalised objective; ``"auto"`` takes the
        estimator's default (``default_alpha``, tuned on validation data).
    max_iter : int
    tol : float
        Relative decrease of the objective below which the solver stops (above ``LOOSE_TOL``, 1e-3, the fit warns
        that it may stop early).
    init_scale : float or "auto"
        Standard deviation of the seeded Gaussian start (``"auto"``: ``default_init_scale``).  A start far from
        the loss's scale can leave the solver where it began (STE, t-STE, CKL and GNMDS from 1e-4, every loss
        from 1e6): the fit then warns (``ConvergenceWarning``, "stopped next to its start"), as it does when a
        ridge ``alpha`` holds the map near a point.
    random_state : int, RandomState, Generator or None
        Seeds every random choice of a fit: the same seed gives the same result on the same machine with the
        same number of threads (another count splits the sums over edges otherwise; the last digits move).
    verbose : int
        Print the objective every ``verbose`` iterations (0: silent).

    Subclasses with extra parameters list all of them in their own ``__init__``
    and call ``super().__init__`` (scikit-learn reads the signature).
    """

    default_alpha = 0.0
    alpha_reference_objects = None  # see _alpha
    default_init_scale = 1e-2

    def __init__(self, n_components=2, *, solver="factored", alpha="auto", max_iter=2000, tol=1e-6,
                 init_scale="auto", random_state=None, verbose=0):
        self.n_components = n_components
        self.solver = solver
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.init_scale = init_scale
        self.random_state = random_state
        self.verbose = verbose

    # -- hooks ---------------------------------------------------------------
    def _loss(self) -> Loss:  # pragma: no cover - abstract
        raise NotImplementedError

    def _outlier_caps(self, graph: ComparisonGraph):
        """Per-edge caps ``kappa_c`` (None: plain loss)."""
        return None

    def _check_params(self) -> None:
        super()._check_params()
        if not isinstance(self.solver, str) or self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {sorted(SOLVERS)}, got {self.solver!r}")
        if self.alpha != "auto":
            check_param("alpha", self.alpha, low=0)
        if self.init_scale != "auto":
            check_param("init_scale", self.init_scale, low=0, low_open=True)
        check_param("max_iter", self.max_iter, low=1, integer=True)
        self._check_tol()

    def _check_tol(self) -> None:
        check_param("tol", self.tol, low=0)
        if self.tol > LOOSE_TOL:
            warn(f"tol={self.tol!r} stops the solver once an iteration lowers the objective by under that share of it, "
                 f"which mid-fit iterations often do: the fit may stop far from its minimum (tol=0.01: STE's held-out "
                 f"error 0.37 against 0.10); use tol <= {LOOSE_TOL:g}", UserWarning)

    def _alpha(self) -> float:
        """The ridge actually used: ``alpha``, or for ``"auto"`` :meth:`_default_alpha`."""
        if self.alpha != "auto":
            return float(self.alpha)
        return self._default_alpha()

    def _default_alpha(self) -> float:
        """``alpha="auto"``: ``default_alpha`` times :meth:`_ridge_scale`."""
        return float(self.default_alpha) * self._ridge_scale()

    def _ridge_scale(self) -> float:
        """``alpha_reference_objects / n`` on more objects than that when the class sets it, else 1."""
        n, reference = getattr(self, "n_objects_", None), self.alpha_reference_objects
        if reference is None or n is None or n <= reference:
            return 1.0
        return reference / n

    # -- fitting -------------------------------------------------------------
    def _objective(self, graph: ComparisonGraph):
        total = graph.votes.sum()
        if total <= 0:
            raise ValueError("all comparison weights are zero")
        return edge_objective(graph, self._loss(), graph.votes / total, self._outlier_caps(graph),
                              getattr(self, "two_sided", False))

    def _fitted_objective(self):
        """``(graph, objective, alpha)``: the objective the fit minimised last, over the edges of ``graph``,
        with ridge ``alpha`` -- ``embedding_`` is its minimiser (read by
        :func:`roembed.sandwich.local_uncertainty`)."""
        check_is_fitted(self, "embedding_")
        model = self
        if isinstance(self.n_components, str):  # n_components="auto": the losses that read it need the number
            model = clone(self).set_params(n_components=self.n_components_)
            model.n_objects_ = self.n_objects_
        return self.graph_, model._objective(self.graph_), model._alpha()

    def _init_scale(self) -> float:
        """``init_scale`` resolved: the standard deviation of the seeded Gaussian start."""
        return self.default_init_scale if self.init_scale == "auto" else float(self.init_scale)

    def _initial_embedding(self, graph: ComparisonGraph) -> np.ndarray:
        return random_embedding(graph.n_objects, self.n_components, self.random_state, self._init_scale())

    def _fit_graph(self, graph: ComparisonGraph) -> None:
        objective = self._objective(graph)
        distances = PairDistances(graph.pairs, graph.n_objects)
        X0 = self._initial_embedding(graph)
        start = self._start_objective(objective, distances, X0) if self.init_scale != "auto" else None
        result = self._solve(objective, distances, X0)
        self._store_result(result)
        if start is not None and start - result.objective <= UNINFORMATIVE * abs(start):
            # a start far below a loss's scale sits by the saddle at the origin, one far above it is beyond the
            # solver's steps: STE, t-STE, CKL and GNMDS from 1e-4 and every loss from 1e6 stopped after an
            # iteration, training error 0.48-0.50 on 300 triplets that starts of 1e-3 to 1e5 fit
            warn(f"{type(self).__name__} stopped next to its start: the objective fell from {start:.6g} to "
                 f"{result.objective:.6g} in {result.n_iter} iteration(s), so the map is about the random start of "
                 f"init_scale={self.init_scale!r}, far from this loss's scale; use init_scale='auto' "
                 f"({self.default_init_scale:g})", ConvergenceWarning)
        else:
            self._warn_if_held_at_a_point()

    def _start_objective(self, objective, distances, X0) -> float:
        """The objective (with the ridge) at a start of the user's ``init_scale``; refused where it is not finite."""
        with np.errstate(over="ignore", invalid="ignore"):
            value = objective.embedding_value_and_grad(X0, distances)[0] + self._alpha() * float(np.vdot(X0, X0))
        if not np.isfinite(value):
            raise ValueError(f"init_scale={self.init_scale!r} is too large: the start's squared distances overflow "
                             f"(use init_scale='auto', {self.default_init_scale:g})")
        return float(value)

    def _shrinking_params(self) -> dict:
        """The parameters the user set that pull the map towards a point (here the ridge ``alpha``)."""
        return {} if self.alpha == "auto" else {"alpha": self.alpha}

    def _warn_if_held_at_a_point(self) -> None:
        """Warns where parameters the user set (:meth:`_shrinking_params`) held the map near a point: the loss of
        the fitted objective (:meth:`_fitted_objective`, without its ridge) within ``UNINFORMATIVE`` of its value
        with every object at one place.  A ridge that outweighs the comparisons does it (STE, ``alpha=1``:
        coordinates 3e-7, training error 0.37), and so do a refinement's ridge or a shallow slope
        (:class:`~roembed.RobustOrdinalEmbedding` with ``refine_alpha=1``: coordinates 0.0035, held-out error 0.19
        against the default's 0.056).  The defaults never come near it (their loss is 40-90% below)."""
        params = self._shrinking_params()
        if not params:
            return
        graph, objective, _ = self._fitted_objective()
        distances = PairDistances(graph.pairs, graph.n_objects)
        X = self.embedding_
        with np.errstate(invalid="ignore", divide="ignore"):
            at_point = objective.embedding_value_and_grad(np.zeros_like(X), distances)[0]
        fitted = objective.embedding_value_and_grad(X, distances)[0]
        if at_point - fitted > UNINFORMATIVE * abs(at_point):
            return
        named = ", ".join(f"{k}={v!r}" for k, v in params.items())
        warn(f"{type(self).__name__}'s map is held near a point: its loss on the comparisons, {fitted:.6g}, is within "
             f"{UNINFORMATIVE:.0%} of the {at_point:.6g} of every object at one place (coordinates of about "
             f"{np.sqrt(np.mean(X ** 2)):.2g}): with {named} the comparisons barely pull the objects apart; leave "
             f"{'it' if len(params) == 1 else 'them'} 'auto'", ConvergenceWarning)

    def _solve(self, objective, distances, X0, alpha=None):
        """:func:`roembed.solvers.solve` with this estimator's solver settings (``alpha``: default ``self._alpha()``)."""
        options = {}
        if self.solver == "torch":
            options = dict(device=getattr(self, "device", None), dtype=getattr(self, "dtype", "float64"))
        return solve(objective, distances, X0, solver=self.solver, alpha=self._alpha() if alpha is None else alpha,
                     max_iter=self.max_iter, tol=self.tol, callback=self._progress(), **options)

    def _store_result(self, result) -> None:
        if not result.converged:
            warn(f"{type(self).__name__} did not converge in {self.max_iter} iterations "
                 f"({result.message}); increase max_iter", ConvergenceWarning)
        self.embedding_ = orient_embedding(result.solution)
        self.objective_ = result.objective
        self.n_iter_ = result.n_iter
        self.history_ = np.asarray(result.history)
        if result.gram is not None:
            self.gram_ = center_gram(result.gram)  # the Gram matrix of the centred embedding_: the same distances
        else:
            self.__dict__.pop("gram_", None)  # only the gram solver sets it
