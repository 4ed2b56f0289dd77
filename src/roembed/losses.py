r"""Losses of one comparison, written once and shared by every solver.

A comparison ``c`` says that the near pair is closer than the far pair:
``d_near = d(i, j) < d_far = d(l, k)``, with squared Euclidean distances
``d(a, b) = G_aa - 2 G_ab + G_bb = ||x_a - x_b||^2``.  Every loss here is a
scalar penalty :math:`\phi` of a *margin* :math:`s(d_{near}, d_{far})` that is
positive when the comparison is satisfied:

=============  ===================================================  ============================
name           margin ``s``                                          penalty ``phi(s)``
=============  ===================================================  ============================
squared (ROE)  ``d_far - d_near``                                    ``(1 - s)^2 / 2``
hinge (GNMDS)  ``d_far - d_near``                                    ``max(0, 1 - s)``
squared_hinge  ``sqrt(d_far) - sqrt(d_near)`` (Euclidean, SOE)       ``max(0, 1 - s)^2``
sigmoid [#]_   ``sqrt(d_far) - sqrt(d_near)``                        ``1 / (1 + exp(slope s))``
logistic (STE) ``d_far - d_near``                                    ``log(1 + exp(-s))``
tstudent       ``(a+1)/2 * log((1 + d_far/a) / (1 + d_near/a))``     ``log(1 + exp(-s))``
ckl            ``log((mu + d_far) / (mu + d_near))``                 ``log(1 + exp(-s))``
=============  ===================================================  ============================

.. [#] Only as the refinement stage of the robust estimator (see :class:`Sigmoid`).

The logistic rows are exactly the negative log-likelihoods of STE, t-STE (dof
``a``) and the crowd kernel (CKL, regulariser ``mu``): e.g. for t-STE
``p = k(d_near) / (k(d_near) + k(d_far))`` with ``k(d) = (1 + d/a)^(-(a+1)/2)``
gives ``-log p = softplus(-s)``.  For quadruplets the same formulas apply to
``d(i, j)`` and ``d(l, k)``; for the kernel losses that is the natural
generalisation (the literature defines them on triplets only).

Outliers.  ROE adds a sparse shift ``gamma_c`` to each margin and penalises it:
``min_gamma  phi(s + gamma) + cap * |gamma|``.  For a convex penalty this is
available in closed form (:func:`robust_penalty`): the loss is unchanged while
``-phi'(s) <= cap`` and continues *linearly* with slope ``-cap`` below the knee
``s*`` where ``-phi'(s*) = cap``, with ``gamma = s* - s`` there (a Huber-type
loss).  ``gamma > 0`` marks the comparison as an outlier.

Second derivatives (``curvature`` and ``margin_curvature``, and :func:`robust_curvature`) serve
the local (sandwich) uncertainty of :mod:`roembed.sandwich`.  Every margin here is a difference
of a function of ``d_far`` and a function of ``d_near``, so its mixed second derivative is zero.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._array import ops_for


@dataclass(frozen=True)
class Loss:
    """Base class: a margin transform and a penalty of the margin."""

    name = "loss"

    # --- margin: override for non-linear transforms -------------------------
    def margin(self, d_near, d_far):
        """Returns ``s, ds/dd_near, ds/dd_far`` (elementwise)."""
        return d_far - d_near, -1.0, 1.0

    def margin_curvature(self, d_near, d_far):
        """Returns ``d^2 s / d d_near^2, d^2 s / d d_far^2`` (the mixed derivative is zero)."""
        return 0.0, 0.0

    # --- penalty -------------------------------------------------------------
    def penalty(self, s):
        """Returns ``phi(s), phi'(s)``."""
        raise NotImplementedError

    def curvature(self, s):
        """Returns ``phi''(s)`` (0 on the flat side of a kink, the one-sided value at it)."""
        raise NotImplementedError

    def reversed_penalty(self, s, value, slope):
        """Returns ``phi(-s), d phi(-s) / ds``, given ``value, slope = penalty(s)``: the comparison reversed."""
        value, slope = self.penalty(-s)
        return value, -slope

    def knee(self, cap):
        """Margin ``s*`` with ``-phi'(s*) = cap`` (``-inf`` where the slope never reaches ``cap``)."""
        raise NotImplementedError

    # Only the non-monotone squared loss has an upper knee (``gamma < 0``).
    def upper_knee(self, cap):
        return None


@dataclass(frozen=True)
class Squared(Loss):
    """ROE's regression of the margin to 1: ``phi(s) = (1 - s)^2 / 2``."""

    name = "squared"

    def penalty(self, s):
        r = 1.0 - s
        return 0.5 * r * r, -r

    def curvature(self, s):
        return s * 0.0 + 1.0

    def knee(self, cap):
        return 1.0 - cap

    def upper_knee(self, cap):
        return 1.0 + cap


@dataclass(frozen=True)
class Hinge(Loss):
    """GNMDS: ``phi(s) = max(0, 1 - s)``.  Its outlier envelope only rescales it (cap < 1)."""

    name = "hinge"

    def penalty(self, s):
        ops = ops_for(s)
        r = 1.0 - s
        return ops.relu(r), ops.where(r > 0, -1.0, 0.0)

    def curvature(self, s):
        return s * 0.0

    def knee(self, cap):
        ops = ops_for(cap)
        return ops.where(cap < 1.0, 1.0, -np.inf)


@dataclass(frozen=True)
class SquaredHinge(Loss):
    """SOE (Terada & von Luxburg 2014): squared hinge on *Euclidean* distances."""

    name = "squared_hinge"
    eps: float = 1e-12

    def margin(self, d_near, d_far):
        ops = ops_for(d_near)
        rn, rf = ops.sqrt(d_near + self.eps), ops.sqrt(d_far + self.eps)
        return rf - rn, -0.5 / rn, 0.5 / rf

    def margin_curvature(self, d_near, d_far):
        ops = ops_for(d_near)
        rn, rf = ops.sqrt(d_near + self.eps), ops.sqrt(d_far + self.eps)
        return 0.25 / (rn * rn * rn), -0.25 / (rf * rf * rf)

    def penalty(self, s):
        r = ops_for(s).relu(1.0 - s)
        return r * r, -2.0 * r

    def curvature(self, s):
        return ops_for(s).where(s < 1.0, 2.0, 0.0)

    def knee(self, cap):
        return 1.0 - 0.5 * cap


@dataclass(frozen=True)
class Sigmoid(SquaredHinge):
    """Symmetric sigmoid loss on SOE's Euclidean margin: ``phi(s) = 1 / (1 + exp(slope * s))``.

    Bounded and non-convex, with ``phi(s) + phi(-s) = 1``: a symmetric loss, whose
    risk minimiser is unchanged by label flips at a uniform rate below 1/2 (Ghosh,
    Manwani & Sastry 2015).  It refines a robust fit (``refine`` of
    :class:`~roembed.RobustOrdinalEmbedding`) and is not a choice of ``loss``: being
    non-convex, it has no closed-form outlier envelope.
    """

    name = "sigmoid"
    slope: float = 2.0

    def penalty(self, s):
        p = ops_for(s).sigmoid(-self.slope * s)
        return p, -self.slope * p * (1.0 - p)

    def curvature(self, s):
        p = ops_for(s).sigmoid(-self.slope * s)
        return self.slope * self.slope * p * (1.0 - p) * (1.0 - 2.0 * p)

    def knee(self, cap):
        raise NotImplementedError("the sigmoid loss has no closed-form outlier envelope (it is not convex)")


@dataclass(frozen=True)
class Logistic(Loss):
    """STE: ``-log p``, ``p = 1 / (1 + exp(d_near - d_far))``."""

    name = "logistic"

    def penalty(self, s):
        value, p = ops_for(s).softplus_sigmoid(-s)
        return value, -p

    def curvature(self, s):
        p = ops_for(s).sigmoid(-s)
        return p * (1.0 - p)

    def reversed_penalty(self, s, value, slope):
        """``phi(-s) = phi(s) + s`` and ``-phi'(-s) = sigmoid(s) = 1 + phi'(s)``: no second softplus."""
        return value + s, 1.0 + slope

    def knee(self, cap):
        ops = ops_for(cap)
        c = ops.where(cap < 1.0, cap, 0.5)  # keeps the log finite where unused
        return ops.where(cap < 1.0, ops.log1p(-c) - ops.log(c), -np.inf)


@dataclass(frozen=True)
class TStudent(Logistic):
    """t-STE (van der Maaten & Weinberger 2012) with ``alpha`` degrees of freedom."""

    name = "tstudent"
    alpha: float = 1.0

    def margin(self, d_near, d_far):
        ops, a = ops_for(d_near), self.alpha
        h = 0.5 * (a + 1.0)
        return h * (ops.log1p(d_far / a) - ops.log1p(d_near / a)), -h / (a + d_near), h / (a + d_far)

    def margin_curvature(self, d_near, d_far):
        a, h = self.alpha, 0.5 * (self.alpha + 1.0)
        return h / ((a + d_near) * (a + d_near)), -h / ((a + d_far) * (a + d_far))


@dataclass(frozen=True)
class CrowdKernel(Logistic):
    """CKL (Tamuz et al. 2011): ``p = (mu + d_far) / (2 mu + d_near + d_far)``."""

    name = "ckl"
    mu: float = 0.1

    def margin(self, d_near, d_far):
        ops = ops_for(d_near)
        a, b = self.mu + d_near, self.mu + d_far
        return ops.log(b) - ops.log(a), -1.0 / a, 1.0 / b

    def margin_curvature(self, d_near, d_far):
        a, b = self.mu + d_near, self.mu + d_far
        return 1.0 / (a * a), -1.0 / (b * b)


LOSSES = {cls.name: cls for cls in (Squared, Hinge, SquaredHinge, Logistic, TStudent, CrowdKernel)}
ALIASES = {"roe": "squared", "gnmds": "hinge", "soe": "squared_hinge", "ste": "logistic",
           "tste": "tstudent", "t-ste": "tstudent"}


def get_loss(loss, **params) -> Loss:
    """A :class:`Loss` from an instance or a name (``"soe"``, ``"logistic"``, ...)."""
    if isinstance(loss, Loss):
        return loss
    key = ALIASES.get(str(loss).lower(), str(loss).lower())
    if key not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; choose one of {sorted(LOSSES) + sorted(ALIASES)}")
    return LOSSES[key](**params)


def robust_penalty(loss: Loss, s, cap, two_sided: bool = False):
    """``min_gamma phi(s + gamma) + cap * |gamma|`` in closed form.

    Returns ``value, slope, gamma`` (elementwise; ``slope`` is d value / d s).
    ``gamma >= 0`` only, unless ``two_sided`` (meaningful for the squared loss,
    whose penalty also grows for margins above 1).
    """
    ops = ops_for(s)
    value, slope = loss.penalty(s)
    knee = loss.knee(cap)
    low = s < knee
    knee_safe = ops.where(ops.isfinite(knee), knee, 0.0)
    knee_value, _ = loss.penalty(knee_safe)
    value = ops.where(low, knee_value + cap * (knee_safe - s), value)
    slope = ops.where(low, -cap, slope)
    gamma = ops.where(low, knee_safe - s, 0.0)
    upper = loss.upper_knee(cap) if two_sided else None
    if upper is not None:
        high = s > upper
        upper_value, _ = loss.penalty(upper)
        value = ops.where(high, upper_value + cap * (s - upper), value)
        slope = ops.where(high, cap, slope)
        gamma = ops.where(high, upper - s, gamma)
    return value, slope, gamma


def robust_curvature(loss: Loss, s, cap, two_sided: bool = False):
    """``d^2/ds^2`` of :func:`robust_penalty`: ``phi''(s)`` where ``gamma = 0``, 0 on the linear parts
    (beyond the knee, and beyond the upper knee when ``two_sided``)."""
    ops = ops_for(s)
    curvature = ops.where(s < loss.knee(cap), 0.0, loss.curvature(s))
    upper = loss.upper_knee(cap) if two_sided else None
    if upper is not None:
        curvature = ops.where(s > upper, 0.0, curvature)
    return curvature
