r"""How sure is this map: uncertainty of a fitted embedding by resampling.

:func:`bootstrap` refits an estimator on ``n_replicates`` bootstrap resamples of the
comparisons and reads off how much each result moves:

1. **Resampling unit** (``unit``): whole *queries* (default: all votes on one comparison,
   both directions, stay together, since they are not independent), whole *annotators*
   (each person's answers together), *objects* (every response is owned by its first
   object -- the anchor of a triplet, the head of a salmon query -- and objects' response
   sets are drawn) or *object sets* (every comparison among the same objects together: an
   odd-one-out answer's two triplets, on THINGS at p = 2 a median dispersion of 0.37 against
   0.42 by query).  A unit drawn ``c`` times enters with its responses' weights times
   ``c`` (rows are never repeated); the responses among objects that no drawn unit compares
   together are the replicate's *out-of-bag* data.
2. **Refit**, warm-started from the full fit (``init=`` the full embedding, for estimators
   that accept an initial embedding; the robust fit sizes that shape for its loss,
   :func:`~roembed.estimators.robust_fit.start_scale`), so every replicate lands in the basin
   of the full fit instead of a relabelled copy of it.
3. **Align** every replicate to the full fit by orthogonal Procrustes with translation and
   scaling (:func:`roembed.metrics.procrustes`): an embedding is only defined up to them.

From the aligned replicates :math:`\hat X^{*b}` (``b = 1..B``):

* per object, the covariance :math:`\Sigma_i` of :math:`\hat x^{*b}_i` and a confidence
  region :math:`\{x : (x - c_i)^T \Sigma_i^{-1} (x - c_i) \le r^2\}` (an ellipse for
  ``p = 2``; for ``p > 2`` an ellipsoid, summarised by its largest and smallest semi-axis,
  its volume-equivalent radius and its shadow on the plotted plane);
* per object a **stability** score: the mean share of its ``k`` nearest neighbours in the
  full fit that are still among its ``k`` nearest in a replicate (1: the neighbourhood never
  changes; about ``k / n`` when it is random), and its **dispersion**, the RMS displacement
  :math:`\sqrt{\mathrm{tr}\,\Sigma_i}` relative to the RMS radius of the embedding;
* per comparison (edge of the full graph), how often it is flagged as an outlier among the
  replicates that contain it (robust estimators);
* per annotator, a percentile interval of the agreement with the replicate embeddings
  (on the replicate's own, resampled responses);
* an interval on the held-out error: the out-of-bag error of each replicate (each fitted on
  about 63% of the distinct units, so slightly pessimistic; scored on the responses whose objects no
  in-bag response compares, so an odd-one-out answer is never half in the bag), percentile
  interval.  Warm-started replicates stay in the full fit's basin, which has seen their out-of-bag
  units: where that basin is a wrong one (scarce data at p = 1 or 2) the interval can be optimistic
  (docs/uncertainty.md, "The out-of-bag error sees the full fit's basin").

Calibration of the regions (``calibration``)
--------------------------------------------
``"hotelling"`` (default)
    Centre :math:`c_i = \hat x_i` (the full fit), shape :math:`\Sigma_i = S_i`, the sample covariance of
    the ``B`` aligned replicates, and radius the quantile of Hotelling's :math:`T^2` with ``B - 1``
    degrees of freedom, :math:`r^2 = \frac{p (B - 1)}{B - p} F_{p, B - p}(1 - \alpha)`: the exact level
    for a normal error whose covariance is estimated from ``B`` draws (the noisy small eigenvalues of
    :math:`S_i` make a plain :math:`\chi^2_p` region too small; the radius tends to it as ``B``
    grows).  It follows from ``B`` and ``p`` alone; no constant is tuned.
``"chi2"``
    The textbook normal region: the plain sample covariance and :math:`r^2 = \chi^2_p(1-\alpha)`.

With ``B <= p`` replicates the covariances are singular and there are no regions (``has_region`` False;
:func:`bootstrap` warns); stability, flags and the intervals are still computed.

Duplicated queries count as copies: a resample that draws a query twice holds it as two draws of that
query (``copies``, see :func:`resample`), not as one query with twice the votes, which majority voting
(the ``majority`` weighting) would count once: replicates fitted that way were too alike, and their
regions too small (measured in docs/uncertainty.md).

What no resampling can see is the estimator's bias: where contamination distorts the
full fit, every replicate is distorted alike.  Measured coverage of nominal 90% regions
(``docs/uncertainty.md``; 100 objects, 10,000 triplets, 20 seeds): 0.89-0.90 at p = 2, 0.96 at p = 10, and at
p = 1 only 0.82-0.84 (3 seeds): there the data are dense enough (about 100 queries a coordinate) for the regions
to shrink faster than the fit's bias, and an interval understates the error by about a quarter of its width.

Without refitting: :func:`roembed.sandwich.local_uncertainty` reads per-object covariances off the
curvature of the fitted objective; its results share :class:`UncertaintyRegions` with
:class:`BootstrapResult`.

Scaling out: the replicates run through joblib (``n_jobs``), with whatever backend is
active (``joblib.parallel_config(backend="dask")`` for a Dask cluster; see ``docs/uncertainty.md``).
Each replicate's seed is drawn from ``random_state`` up front and BLAS runs with
``threads_per_fit`` threads inside every replicate, so the results do not depend on the
backend or the number of workers; with ``store`` they do not depend on interruptions either
(:class:`ReplicateStore`).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs
from scipy.stats import chi2, f as f_dist
from sklearn.base import clone

from ._io import atomic_write
from ._random import draw_seed
from ._threads import limit_threads
from ._warn import warn, warn_counted
from .data import Comparisons, annotator_index, as_comparisons, distinct_values
from .data.diagnostics import DataWarning
from .estimators.base import check_estimator_argument, check_n_jobs, check_param, check_verbose, is_table
from .estimators.robust import tuned_params
from .metrics import Interval, knn_agreement_per_object, procrustes, satisfied
from .model_selection import response_groups, trial_ids
from .projections import principal_axes

UNITS = ("query", "annotator", "object", "object_set", "query+annotator")
MIN_UNITS = 20
"""Fewer units of a factor to resample and :func:`bootstrap` warns: ``U`` units give only ``C(2U - 1, U)`` distinct
resamples (3 for two annotators, 126 for five), and a bootstrap over few clusters is known to mislead (Cameron,
Gelbach & Miller 2008, "Bootstrap-based improvements for inference with clustered errors", from under 30 or so).
A rule from the literature, not measured here."""
_PLURAL = {"query": "queries", "annotator": "annotators", "object": "objects", "object_set": "sets of objects"}
CALIBRATIONS = ("hotelling", "chi2")


def principal_plane(X) -> np.ndarray:
    """The (p, 2) orthonormal basis of the first two principal axes of ``X`` (n x p), signed as
    :func:`roembed.projections.principal_axes` signs them: the plane a map of more than two dimensions is drawn on
    (``embedding.png``, ``uncertainty.png``, the report); for a fitted map, its coordinates 1 and 2."""
    return principal_axes(X)[:, :2]


def resampling_units(comparisons: Comparisons, unit: str = "query") -> np.ndarray:
    """Unit ids per response, (m, f) with one column per crossed factor (0..U-1 in each).

    ``"query"``, ``"annotator"``, ``"object"`` (the first object of the response) give one
    column; ``"query+annotator"`` gives both, resampled independently (a crossed design).
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    columns = []
    for factor in unit.split("+"):
        ids = comparisons.quadruplets[:, 0] if factor == "object" else response_groups(comparisons, factor)
        columns.append(distinct_values(ids)[1])
    return np.stack(columns, axis=1)


def _warn_few_units(units: np.ndarray, unit: str) -> None:
    """A warning per factor of ``unit`` with fewer than ``MIN_UNITS`` units in ``units`` (:func:`resampling_units`)."""
    for factor, column in zip(unit.split("+"), units.T):
        n_units = int(column.max()) + 1 if len(column) else 0
        if n_units < MIN_UNITS:
            warn(f"the bootstrap resamples {n_units} {_PLURAL[factor]} (unit={unit!r}): over fewer than {MIN_UNITS} "
                 "units it has few distinct resamples, and its regions and intervals are unreliable"
                 + ("; resample by query, the default unit" if factor != "query" else ""), UserWarning)


def replicate_seeds(random_state, n_replicates: int) -> list[int]:
    """One independent integer seed per replicate, from ``random_state`` (an int, or None for fresh entropy).

    Seed ``b`` is the ``b``-th child of ``SeedSequence(random_state)``, whatever ``n_replicates`` is, so the
    first ``B`` seeds of a longer run are those of a run of ``B`` (what lets a store grow)."""
    ss = np.random.SeedSequence(draw_seed(random_state))
    return [int(s.generate_state(1)[0]) for s in ss.spawn(n_replicates)]


QUERY_FACTORS = ("query", "object")
"""Factors whose units are whole queries: a unit drawn ``c`` times stands for ``c`` independent draws of
its queries (their ``copies``), not for one query with ``c`` times its votes."""


def resample(comparisons: Comparisons, units: np.ndarray, seed: int, unit: str = "query"):
    """``(sample, in_bag)``: units drawn with replacement, independently per factor (column of ``units``,
    the factors of ``unit``); a response whose units are drawn ``c_1, c_2, ...`` times enters with its
    weight times ``c_1 c_2 ...``.

    The counts of the factors in :data:`QUERY_FACTORS` also become the responses' ``copies`` (see
    :class:`roembed.data.Comparisons`): a query drawn twice weighs twice under majority voting too, as two
    independently drawn queries would, while an annotator drawn twice gives each of their answers twice
    the votes."""
    units = np.asarray(units).reshape(len(units), -1)
    rng = np.random.default_rng(seed)
    mult = np.zeros(len(units), dtype=np.int64)
    while not mult.any():  # crossed factors on tiny data can draw no response at all: draw again
        mult = np.ones(len(units), dtype=np.int64)
        query_mult = np.ones(len(units), dtype=np.int64)
        for column, factor in zip(units.T, unit.split("+"), strict=True):
            n_units = int(column.max()) + 1
            drawn = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)[column]
            mult *= drawn
            if factor in QUERY_FACTORS:
                query_mult *= drawn
    in_bag = mult > 0
    sample = comparisons[in_bag]
    return sample.with_weight(sample.weight * mult[in_bag], copies=query_mult[in_bag] * sample.copies), in_bag


def _warm(estimator, X0: np.ndarray):
    """``estimator`` started from ``X0`` where it takes an initial embedding (``init``), and from it alone
    (``n_init=1``: a restart with a lower objective in another basin would replace the replicate of the
    full fit by a refolded map, whose spread is not the sampling variability of this one)."""
    params = estimator.get_params(deep=False)
    if "init" in params:
        estimator = estimator.set_params(init=np.array(X0))
        if "n_init" in params:
            estimator = estimator.set_params(n_init=1)
    return estimator


def _replicate(estimator, comparisons: Comparisons, units: np.ndarray, seed: int, reference: np.ndarray,
               full_response_edge: np.ndarray, response_set: np.ndarray, annotator_code, k: int, threads: int,
               warm_start: bool, unit: str) -> dict:
    """One bootstrap replicate: resample, refit (warm), align; the per-replicate statistics.  A resample the
    estimator refuses (a ``ValueError``: e.g. ``TwoStageEmbedding`` on one that drew only tied queries, which
    leave nothing after majority voting) gives ``{"seed", "failed": its message}``, counted by :func:`bootstrap`."""
    sample, in_bag = resample(comparisons, units, seed, unit)
    with limit_threads(threads), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", DataWarning)  # a resample is a subset: the full fit warned about the data
        est = clone(estimator)
        try:
            est = (_warm(est, reference) if warm_start else est.set_params(random_state=seed)).fit(sample)
        except ValueError as exc:
            return {"seed": seed, "failed": f"{type(exc).__name__}: {exc}"}
        X = np.asarray(est.embedding_, dtype=np.float64)
        aligned = procrustes(reference, X).apply(X)
        neighbours = knn_agreement_per_object(reference, aligned, k) if k else None
    out = {"aligned": aligned, "stability": neighbours, "seed": seed,
           "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught})}
    mask = getattr(est, "outlier_mask_", None)
    if mask is not None:  # flags mapped back to the edges of the full graph
        edge = np.full(len(est.graph_), -1, dtype=np.int64)
        edge[est.graph_.response_edge] = full_response_edge[in_bag]
        out["edges"], out["flagged"] = edge, np.asarray(mask, bool)
    ok = satisfied(X, sample)
    if annotator_code is not None:
        code, n_ann = annotator_code
        who = code[in_bag]
        out["annotator_num"] = np.bincount(who, weights=sample.weight * ok, minlength=n_ann)
        out["annotator_den"] = np.bincount(who, weights=sample.weight, minlength=n_ann)
    out_of_bag = _out_of_bag(response_set, in_bag)
    oob = comparisons[out_of_bag] if out_of_bag.any() else None
    out["oob_error"] = float(np.average(~satisfied(X, oob), weights=oob.weight)) \
        if oob is not None and oob.weight.sum() > 0 else float("nan")
    return out


def _out_of_bag(response_set: np.ndarray, in_bag: np.ndarray) -> np.ndarray:
    """The responses whose objects no in-bag response compares (``response_set``: the grouping by object set of
    :func:`~roembed.model_selection.response_groups`; for rank trials, those whose trial has no response in the
    bag).  Out of the bag by query, an odd-one-out answer's one triplet was scored while the replicate fitted the
    other: on THINGS at p = 2 (30 replicates by query) the out-of-bag error read 0.33 (interval 0.31-0.35), and
    0.47 (0.43-0.53) by object set, as a hold-out of new triples reads (``roembed.model_selection``)."""
    seen = np.zeros(int(response_set.max()) + 1, dtype=bool)
    seen[response_set[in_bag]] = True
    return ~seen[response_set]


# -- resumable store ---------------------------------------------------------------------------
STORE_FORMAT = 4  # 4: the out-of-bag error on responses whose objects no in-bag response compares (3: not in
#    the bag); 3: replicates start from the full fit's shape sized by the loss (start_scale; 2: its coordinates
#    as they were); 2: a resampled query counts its draws as copies (1: as votes)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _digest(value) -> str:
    """A fingerprint that is the same in every process: arrays by SHA-256 of dtype, shape and bytes (pandas tables
    by their index, columns and cells), estimators by class and parameters, containers item by item, anything else
    by ``repr`` (addresses removed)."""
    if isinstance(value, np.random.RandomState):
        value = value.get_state()
    elif isinstance(value, np.random.Generator):
        value = value.bit_generator.state
    if hasattr(value, "get_params") and not isinstance(value, type):
        return f"{type(value).__module__}.{type(value).__qualname__}{_digest(value.get_params(deep=False))}"
    if is_table(value):  # an ``init`` table
        return "table" + _digest([np.asarray(value.index).astype(str), np.asarray(value.columns).astype(str),
                                  value.to_numpy()])  # every cell, not the repr, which shows the first and last rows
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            value = value.astype(str)
        h = hashlib.sha256(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
        return "sha256:" + h.hexdigest()[:32]
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_digest(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_digest(v) for v in value) + "]"
    if isinstance(value, np.generic):
        value = value.item()
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
    return _ADDRESS.sub("", repr(value))


def _manifest(estimator, comparisons: Comparisons, reference, unit, k, warm_start, threads_per_fit, seeds) -> dict:
    """What determines the replicates; ``verbose`` does not, so it is left out."""
    annotator = None if comparisons.annotator is None else np.asarray(comparisons.annotator).astype(str)
    params = {name: _digest(v) for name, v in estimator.get_params(deep=False).items() if name != "verbose"}
    return {"format": STORE_FORMAT,
            "comparisons": _digest([comparisons.n_objects, comparisons.quadruplets.astype(np.int64),
                                    np.asarray(comparisons.weight, np.float64), comparisons.copies, annotator]),
            "estimator": f"{type(estimator).__module__}.{type(estimator).__qualname__}",
            "estimator_params": params, "unit": unit, "k": int(k), "warm_start": bool(warm_start),
            "threads_per_fit": int(threads_per_fit), "reference": _digest(np.asarray(reference, np.float64)),
            "seeds": [int(s) for s in seeds],
            # rank trials: resampled (by object set) and left out of the bag by trial; absent otherwise, so that
            # stores of other data written before it still match
            **({"groups_by_trial": True} if trial_ids(comparisons) is not None else {})}


class StoreError(ValueError):
    """A bootstrap store that cannot be used: another run's, or not a writable folder."""


class ReplicateStore:
    """A folder of finished replicates: ``manifest.json`` (what determines them, written first) and one
    ``replicate-NNNN.npz`` per replicate; every file is written to a temporary name and renamed into place,
    so a crash leaves whole files or stray temporaries (ignored), and a file that cannot be read is recomputed.

    A stored manifest must agree with this run in every field; its seeds and the run's must agree where both
    have one (seeds are drawn up front, so a longer run extends a shorter one's and the store grows)."""

    def __init__(self, path, manifest: dict):
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"{self.path}: bootstrap store is not a folder")
        target = self.path / "manifest.json"
        if target.exists():
            try:
                stored = json.loads(target.read_text())
            except (OSError, ValueError) as exc:
                raise StoreError(f"{target}: unreadable bootstrap store manifest ({exc})") from None
            if not isinstance(stored, dict) or not isinstance(stored.get("seeds"), list):
                raise StoreError(f"{target}: not a bootstrap store manifest")
            differ = [key for key in manifest if key != "seeds" and stored.get(key) != manifest[key]]
            if "estimator_params" in differ and stored.get("estimator") == manifest["estimator"]:
                old = stored.get("estimator_params") or {}
                names = sorted(n for n in set(old) | set(manifest["estimator_params"])
                               if old.get(n) != manifest["estimator_params"].get(n))
                differ[differ.index("estimator_params")] = f"estimator parameter{'s' * (len(names) > 1)} {', '.join(names)}"
            common = min(len(stored["seeds"]), len(manifest["seeds"]))
            if stored["seeds"][:common] != manifest["seeds"][:common]:
                differ.append("seeds (random_state)")
            if differ:
                raise StoreError(f"{self.path}: bootstrap store of another run (differs in {'; '.join(differ)}); "
                                 "use another folder, or delete this one to start afresh")
            if len(stored["seeds"]) >= len(manifest["seeds"]):
                return
        elif any(self.path.glob("replicate-*.npz")):
            raise StoreError(f"{self.path}: bootstrap store has replicate files but no manifest.json; "
                             "use another folder")
        try:
            with atomic_write(target) as fh:
                json.dump(manifest, fh, indent=1)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the bootstrap store ({exc.strerror or exc})") from None

    def _file(self, index: int) -> Path:
        return self.path / f"replicate-{index:04d}.npz"

    def load(self, index: int, seed: int) -> dict | None:
        """Replicate ``index`` as :func:`_replicate` returned it, or None (missing, unreadable, another seed)."""
        try:
            with np.load(self._file(index), allow_pickle=False) as data:
                out = {key: data[key] for key in data.files}
        except (OSError, ValueError, EOFError, KeyError, AttributeError, zipfile.BadZipFile):
            return None  # torn, truncated or not a replicate: computed again
        if "seed" in out and int(out["seed"]) == seed and "failed" in out:  # a resample the estimator refused
            return {"seed": seed, "failed": str(out["failed"])}
        if "seed" not in out or int(out["seed"]) != seed or "aligned" not in out or "oob_error" not in out:
            return None
        out["seed"], out["oob_error"] = int(out["seed"]), float(out["oob_error"])
        out["warnings"] = [str(m) for m in out.get("warnings", ())]
        out.setdefault("stability", None)
        return out

    def save(self, index: int, result: dict) -> None:
        with atomic_write(self._file(index), "wb") as fh:
            np.savez(fh, **{key: np.asarray(v) for key, v in result.items() if v is not None})


def _numbered(index: int, *args) -> tuple[int, dict]:
    return index, _replicate(*args)


def _run_replicates(tasks: dict, args: tuple, n_jobs, verbose, store: ReplicateStore | None):
    """Runs ``_replicate(*args[:3], seed, *args[3:])`` for each ``index: seed`` of ``tasks``; yields
    ``(index, result)`` as they finish, stored first.  The parent writes (not the tasks): a Dask or Ray
    worker need not see the store's file system.  Backends that cannot stream results (multiprocessing)
    run in batches of twice the workers, each batch stored as it ends."""
    head, tail = args[:3], args[3:]
    jobs = [delayed(_numbered)(i, *head, seed, *tail) for i, seed in tasks.items()]
    try:
        batches = [Parallel(n_jobs=n_jobs, verbose=verbose, return_as="generator_unordered")(jobs)]
    except ValueError:  # the backend returns lists only
        size = 2 * effective_n_jobs(n_jobs)
        batches = (Parallel(n_jobs=n_jobs, verbose=verbose)(jobs[s:s + size]) for s in range(0, len(jobs), size))
    for batch in batches:
        for index, result in batch:
            if store is not None:
                store.save(index, result)
            yield index, result


class UncertaintyRegions:
    """Per-object confidence regions :math:`\\{x : (x - c_i)^T \\Sigma_i^{-1} (x - c_i) \\le r^2\\}` and what is
    read off them; shared by :class:`BootstrapResult` and :class:`LocalUncertaintyResult`.

    A subclass gives ``estimator`` (the full fit), ``embedding``, ``confidence``, ``centres``,
    ``covariances`` (n, p, p) and ``radius2``.  An object whose covariance is not finite has no
    region (``has_region`` False): it is in no region and outside the coverage.
    """

    @property
    def used_objects(self) -> np.ndarray:
        return self.estimator.graph_.comparisons.used_objects

    @property
    def has_region(self) -> np.ndarray:
        """(n,) bool: the object's covariance is finite."""
        return np.isfinite(self.covariances).all(axis=(1, 2))

    def mahalanobis2(self, points) -> np.ndarray:
        """Squared Mahalanobis distance of each object's point (in the reference frame) from its region's centre
        (NaN without a region)."""
        diff = self._points(points) - self.centres
        cov, ok = self.covariances, self.has_region
        out = np.full(len(diff), np.nan)
        ridge = 1e-12 * np.trace(cov[ok], axis1=1, axis2=2)[:, None, None] * np.eye(cov.shape[1]) + 1e-300
        out[ok] = np.einsum("ip,ip->i", diff[ok], np.linalg.solve(cov[ok] + ridge, diff[ok][..., None])[..., 0])
        return out

    def contains(self, points, align: bool = True) -> np.ndarray:
        """Per object: is its point inside its confidence region?  ``align`` first maps ``points``
        (e.g. the true positions) onto the full fit by Procrustes with scaling."""
        points = np.asarray(points, float)
        if align:
            if points.ndim == 2 and points.shape[1] > self.embedding.shape[1]:
                raise ValueError(f"points have {points.shape[1]} coordinates and the map {self.embedding.shape[1]}: "
                                 "the regions cannot hold points of more dimensions than the map")
            points = procrustes(self.embedding, points).apply(points)
        return self.mahalanobis2(points) <= self.radius2

    def _points(self, points) -> np.ndarray:
        """``points`` as (n, p) floats, one row per object of the map (a shape mismatch was numpy's "operands could
        not be broadcast", and one point (p,) was broadcast to every object)."""
        points = np.asarray(points, float)
        if points.shape != self.embedding.shape:
            raise ValueError(f"points must hold one point per object in the map's {self.embedding.shape[1]} "
                             f"coordinates, shape {self.embedding.shape}; got shape {points.shape}")
        return points

    def coverage(self, points, align: bool = True) -> float:
        """Share of the used objects with a region whose (aligned) point lies in it."""
        used = np.intersect1d(self.used_objects, np.flatnonzero(self.has_region))
        return float(self.contains(points, align)[used].mean()) if len(used) else float("nan")

    def _dispersion_covariances(self) -> np.ndarray:
        """The covariances behind ``dispersion`` in :meth:`objects`."""
        return self.covariances

    def _object_columns(self) -> dict:
        """Further columns of :meth:`objects` (the bootstrap's stability)."""
        return {}

    def objects(self) -> pd.DataFrame:
        """One row per object: position, region summary, dispersion, number of comparisons (and what the
        subclass adds, e.g. the bootstrap's stability).

        ``axis_major``/``axis_minor``: the largest and smallest semi-axes of the region;
        ``radius``: the radius of the ball of the same volume; for ``p = 2``, ``angle`` (degrees)
        of the major axis; for ``p > 2``, ``shadow_major``, ``shadow_minor`` and ``shadow_angle``: the same of the
        region's shadow on the :func:`principal_plane` the maps are drawn on; ``dispersion``: the RMS
        displacement :math:`\\sqrt{\\mathrm{tr}\\,\\Sigma_i}` over the RMS radius of the embedding.  Objects
        without comparisons are NaN, so are the region columns of objects without a region.
        """
        X, cov, r2, ok = self.embedding, self.covariances, self.radius2, self.has_region
        n, p = X.shape
        axes = np.full((n, p), np.nan)
        axes[ok] = np.sqrt(r2 * np.clip(np.linalg.eigvalsh(cov[ok]), 0.0, None))
        # a copy: before pandas 3 the frame is a view of X, and the NaN of unused objects below wrote into the
        # fit's embedding_
        table = pd.DataFrame(np.array(X, dtype=np.float64), columns=[f"x{d + 1}" for d in range(p)])
        names = self.estimator.graph_.object_names
        if names is not None:
            table.insert(0, "name", list(names))
        table["axis_major"], table["axis_minor"] = axes[:, -1], axes[:, 0]
        table["radius"] = np.exp(np.log(np.maximum(axes, 1e-300)).mean(axis=1))
        if p == 2:
            angle = np.full(n, np.nan)
            vecs = np.linalg.eigh(cov[ok])[1][:, :, -1]
            angle[ok] = np.degrees(np.arctan2(vecs[:, 1], vecs[:, 0]))
            table["angle"] = angle
        if p > 2:
            shadow = self.ellipses_2d(principal_plane(X))[1][ok]
            vals, vecs = np.linalg.eigh(shadow)
            for column, values in (("shadow_major", np.sqrt(np.clip(vals[:, -1], 0.0, None))),
                                   ("shadow_minor", np.sqrt(np.clip(vals[:, 0], 0.0, None))),
                                   ("shadow_angle", np.degrees(np.arctan2(vecs[:, 1, -1], vecs[:, 0, -1])))):
                filled = np.full(n, np.nan)
                filled[ok] = values
                table[column] = filled
        radius = np.sqrt(np.sum((X - X[self.used_objects].mean(axis=0)) ** 2, axis=1)[self.used_objects].mean())
        table["dispersion"] = np.sqrt(np.trace(self._dispersion_covariances(), axis1=1, axis2=2)) / radius
        for name, values in self._object_columns().items():
            table[name] = values
        counts = np.bincount(self.estimator.graph_.comparisons.quadruplets.reshape(-1), minlength=n)
        table["n_comparisons"] = counts
        unused = np.setdiff1d(np.arange(n), self.used_objects)
        table.loc[unused, [c for c in table.columns if c not in ("name", "n_comparisons")]] = np.nan
        table.index.name = "object"
        return table

    def ellipses_2d(self, basis=None) -> tuple[np.ndarray, np.ndarray]:
        """``(centres, covariances)`` projected on a plane (``basis``: (p, 2), default the first two
        coordinates), scaled so that ``x^T C^{-1} x <= 1`` is the shadow of the region (NaN without one)."""
        p = self.embedding.shape[1]
        V = np.eye(p)[:, :min(2, p)] if basis is None else np.asarray(basis, float)
        if V.ndim != 2 or V.shape[0] != p or not 1 <= V.shape[1] <= 2:
            raise ValueError(f"basis must be ({p}, 2): two directions in the map's {p} coordinates; got shape "
                             f"{V.shape}")
        cov = np.einsum("pa,ipq,qb->iab", V, self.covariances, V) * self.radius2
        return self.centres @ V, cov


@dataclass(repr=False)  # the dataclass's repr printed every replicate's array: ~50 lines in a notebook
class BootstrapResult(UncertaintyRegions):
    """Replicates of a bootstrap, aligned to the full fit, and what they say (see the module docstring).

    ``estimator`` is the full fit, ``embedding`` its embedding (the reference frame),
    ``replicates`` the aligned replicate embeddings (B, n, p).
    """

    estimator: object
    embedding: np.ndarray
    replicates: np.ndarray
    unit: str
    confidence: float
    calibration: str
    seeds: list
    stability_per_replicate: np.ndarray | None = None
    flag_counts: np.ndarray | None = None  # (E,) times flagged
    present_counts: np.ndarray | None = None  # (E,) replicates containing the edge
    annotator_agreement: np.ndarray | None = None  # (B, A), NaN where absent
    annotator_ids: np.ndarray | None = None
    oob_errors: np.ndarray = field(default_factory=lambda: np.empty(0))
    n_from_store: int = 0  # replicates read from ``store`` instead of computed

    @property
    def n_replicates(self) -> int:
        return len(self.replicates)

    def __repr__(self) -> str:
        B, n, p = self.replicates.shape
        error = self.heldout_error()
        oob = "" if np.isnan(error.value) else f"; out-of-bag error {error.value:.4f} [{error.low:.4f}, {error.high:.4f}]"
        return (f"BootstrapResult({B} replicates by {self.unit}, {n} objects in {p} dimension{'s' * (p != 1)}, "
                f"{100 * self.confidence:g}% regions{oob})")

    # -- positions ---------------------------------------------------------------------------
    @property
    def sample_covariances(self) -> np.ndarray:
        """(n, p, p): the sample covariance of each object's aligned replicate positions."""
        R = self.replicates - self.replicates.mean(axis=0)
        return np.einsum("bip,biq->ipq", R, R) / max(self.n_replicates - 1, 1)

    @property
    def covariances(self) -> np.ndarray:
        """(n, p, p): the shape of each object's region, the sample covariance of its replicates (NaN, no
        region, with no more replicates than dimensions: the covariance is singular)."""
        S = self.sample_covariances
        return S if self.n_replicates > S.shape[1] else np.full_like(S, np.nan)

    @property
    def centres(self) -> np.ndarray:
        """(n, p): the centres of the regions: the full fit."""
        return self.embedding

    @property
    def radius2(self) -> float:
        """The squared Mahalanobis radius of the regions (see ``calibration``)."""
        p, B = self.embedding.shape[1], self.n_replicates
        if self.calibration == "hotelling" and B > p:
            return float(p * (B - 1) / (B - p) * f_dist.ppf(self.confidence, p, B - p))
        return float(chi2.ppf(self.confidence, p))

    def stability(self) -> np.ndarray:
        """(n,): mean share of each object's nearest neighbours kept in the replicates (a mean of multiples of
        1/k, rounded to 12 decimals so that it is written as the decimal it is: 0.88, not 0.8800000000000001)."""
        if self.stability_per_replicate is None:
            raise AttributeError("stability was not computed (k=0)")
        return np.round(self.stability_per_replicate.mean(axis=0), 12)

    def _dispersion_covariances(self) -> np.ndarray:
        return self.sample_covariances

    def _object_columns(self) -> dict:
        return {} if self.stability_per_replicate is None else {"stability": self.stability()}

    # -- comparisons, annotators, error -----------------------------------------------------------
    def flag_frequency(self) -> pd.DataFrame:
        """Per edge of the full graph: replicates containing it, times flagged, and the frequency."""
        if self.flag_counts is None:
            raise AttributeError(f"{type(self.estimator).__name__} does not flag comparisons")
        graph = self.estimator.graph_
        table = graph.edge_table()
        table["flagged_in_full_fit"] = np.asarray(self.estimator.outlier_mask_, bool)
        table["n_replicates"] = self.present_counts
        table["n_flagged"] = self.flag_counts
        with np.errstate(invalid="ignore", divide="ignore"):
            table["flag_frequency"] = self.flag_counts / self.present_counts
        return table.sort_values("flag_frequency", ascending=False, kind="stable").reset_index(drop=True)

    def annotators(self) -> pd.DataFrame:
        """Per annotator: median agreement over replicates and its percentile interval (least reliable first)."""
        if self.annotator_agreement is None:
            raise AttributeError("the comparisons have no annotator ids")
        a = self.annotator_agreement
        lo, hi = (1 - self.confidence) / 2, (1 + self.confidence) / 2
        with np.errstate(all="ignore"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                table = pd.DataFrame({
                    "annotator": self.annotator_ids,
                    "n_replicates": np.sum(~np.isnan(a), axis=0),
                    "agreement": np.nanmedian(a, axis=0),
                    "agreement_low": np.nanquantile(a, lo, axis=0),
                    "agreement_high": np.nanquantile(a, hi, axis=0),
                })
        return table.sort_values(["agreement_high", "agreement"], kind="stable").reset_index(drop=True)

    def heldout_error(self) -> Interval:
        """Out-of-bag error: the median over replicates and the percentile interval at ``confidence``."""
        e = self.oob_errors[~np.isnan(self.oob_errors)]
        if not len(e):
            return Interval(float("nan"), float("nan"), float("nan"), self.confidence)
        lo, hi = np.quantile(e, [(1 - self.confidence) / 2, (1 + self.confidence) / 2])
        return Interval(float(np.median(e)), float(lo), float(hi), self.confidence)


def _fitted_on(fitted, comparisons: Comparisons) -> bool:
    """Whether ``fitted`` was fitted on ``comparisons``: the same responses, row for row (their weights may
    differ: an annotator stage reweights them)."""
    seen = getattr(getattr(fitted, "graph_", None), "comparisons", None)
    return seen is not None and np.array_equal(seen.quadruplets, comparisons.quadruplets)


def _fitted_replicates(results: list, seeds: list) -> tuple[list, list]:
    """The replicates that were fitted and their seeds, with a warning counting those the estimator refused (the
    regions rest on the rest: such a resample holds nothing it can fit, e.g. only tied queries); an error where
    fewer than two are left."""
    failed = [r["failed"] for r in results if "failed" in r]
    if not failed:
        return results, seeds
    n, kept = len(results), [(r, s) for r, s in zip(results, seeds) if "failed" not in r]
    if len(kept) < 2:
        raise ValueError(f"{len(failed)} of {n} bootstrap replicates could not be fitted (the first: {failed[0]}): "
                         "the resamples hold too little for this estimator")
    warn(f"{len(failed)} of {n} bootstrap replicates could not be fitted (the first: {failed[0]}); the regions and "
         f"intervals rest on the other {len(kept)}", UserWarning)
    return [r for r, _ in kept], [s for _, s in kept]


def percentile_replicates(confidence: float) -> int:
    """The fewest replicates whose ``confidence`` percentile interval leaves at least one replicate beyond each end:
    ``2 / (1 - confidence)`` (20 for 90%); with fewer, the interval is about the replicates' range."""
    return int(np.ceil(2.0 / (1.0 - confidence) - 1e-9))


def bootstrap(estimator, comparisons, n_replicates: int = 100, *, unit: str = "query", confidence: float = 0.9,
              calibration: str = "hotelling", k: int = 10, warm_start: bool = True, fitted=None, n_jobs=None, threads_per_fit: int = 1,
              random_state=None, verbose: int = 0, store=None, retune: bool = False) -> BootstrapResult:
    """Bootstrap uncertainty of ``estimator`` on ``comparisons`` (see the module docstring).

    Parameters
    ----------
    estimator
        A roembed estimator (cloned; never modified).  One already fitted on ``comparisons`` is the full fit
        (as ``fitted=``), so the regions are around the map one has; fitted on other data, it is refitted.
        With ``n_components="auto"`` the full fit
        chooses the dimension and every replicate fits at it (maps of another dimension cannot be aligned
        to the full fit's, and ``retune`` leaves the dimension alone).
    comparisons : Comparisons or array
    n_replicates : int
    unit : "query", "annotator", "object", "object_set" (every comparison among the same objects together, for
        rank trials each trial: :func:`roembed.model_selection.response_groups`) or "query+annotator"
    confidence : float
        Level of the regions and intervals (0.9: 90%).
    calibration : "hotelling" or "chi2"
    k : int
        Neighbours for the stability score (0 skips it; capped at ``n - 1``).
    fitted : estimator, optional
        The full fit, if already done (fitted on ``comparisons``: the same responses, or a ValueError).
    n_jobs : int
        joblib workers (the active joblib backend is used: processes by default, Dask inside
        ``joblib.parallel_config(backend="dask")``).
    threads_per_fit : int
        Threads inside each replicate: BLAS, OpenMP and the objective's own (default 1: one core per worker).
    random_state : int, RandomState, Generator or None
        Seeds the replicates (:func:`replicate_seeds`); a store needs a fixed one (not None).
    store : path, optional
        A folder keeping each finished replicate (see :class:`ReplicateStore`): a rerun with the same
        arguments reads the stored replicates and computes the rest, with the same result as one
        uninterrupted run; more replicates than stored extend the store.  Needs a fixed ``random_state``;
        a store of another run raises :class:`StoreError` naming what differs.
    retune : bool
        False (default): a self-tuning estimator's replicates keep what the full fit chose for its
        ``"auto"`` parameters (:func:`roembed.estimators.robust.tuned_params`), so the regions show the
        uncertainty of the map *given* that choice, at the cost of one fit per replicate.  True runs the
        whole validation search in every replicate: the regions then also carry the choice's own
        variability (loss or refinement switching between replicates); measured with it, nominal 90%
        regions covered 0.99 of the true positions at p = 10 (see docs/uncertainty.md).
    """
    check_estimator_argument(estimator, "bootstrap(estimator, comparisons, n_replicates)")
    comparisons = as_comparisons(comparisons)
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if not (isinstance(n_replicates, (int, np.integer)) and n_replicates >= 2):
        raise ValueError(f"n_replicates must be an integer >= 2, got {n_replicates!r}")
    check_param("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    check_param("k", k, low=1, integer=True)
    check_param("threads_per_fit", threads_per_fit, low=1, integer=True)
    check_n_jobs("n_jobs", n_jobs)
    check_verbose(verbose)
    if store is not None and (not isinstance(store, (str, os.PathLike)) or not os.fspath(store)):
        # '' was the working folder (manifest.json and replicate files among the user's), 5 Python's TypeError
        raise ValueError(f"store must be a folder path (or None for no store), got {store!r}")
    if store is not None and random_state is None:
        raise ValueError(f"{store}: a bootstrap store needs a fixed random_state (an int); with None "
                         "every call draws other replicates")
    if fitted is not None and not _fitted_on(fitted, comparisons):
        raise ValueError("fitted was not fitted on these comparisons (its responses differ): the replicates would "
                         "be aligned to another data set's map; pass the estimator fitted on them, or none")
    if fitted is None and _fitted_on(estimator, comparisons):  # est.fit(C), then bootstrap(est, C)
        fitted = estimator
    full = fitted if fitted is not None else clone(estimator).fit(comparisons)
    p = np.asarray(full.embedding_).shape[1]
    if n_replicates <= p:
        warn(f"n_replicates={n_replicates} is not more than the {p} dimensions: the per-object "
             "covariances are singular, so there are no confidence regions (stability, flags and "
             "intervals are computed); ask for more replicates than dimensions", UserWarning)
    elif n_replicates < (needed := percentile_replicates(confidence)):
        warn(f"with {n_replicates} replicates the {confidence:.0%} intervals (out-of-bag error, annotators' agreement) "
             f"are about the replicates' range: a percentile interval needs {needed} or more to leave a replicate "
             "beyond each end (the per-object regions allow for few replicates)", UserWarning)
    if not retune:
        estimator = clone(estimator).set_params(**tuned_params(full))
    if estimator.get_params(deep=False).get("n_components") == "auto":  # every replicate at the full fit's dimension
        estimator = clone(estimator).set_params(n_components=p)
    reference = np.asarray(full.embedding_, dtype=np.float64)
    units = resampling_units(comparisons, unit)
    _warn_few_units(units, unit)
    annotator_code, annotator_ids = None, None
    if comparisons.annotator is not None:
        annotator_ids, code = annotator_index(comparisons)
        annotator_code = (code, len(annotator_ids))
    k = min(int(k), len(comparisons.used_objects) - 1)
    seeds = replicate_seeds(random_state, n_replicates)
    full_response_edge = np.asarray(full.graph_.response_edge)
    results = [None] * n_replicates
    if store is not None:
        store = ReplicateStore(store, _manifest(estimator, comparisons, reference, unit, max(k, 0), warm_start,
                                                threads_per_fit, seeds))
        results = [store.load(i, seed) for i, seed in enumerate(seeds)]
    todo = {i: seed for i, seed in enumerate(seeds) if results[i] is None}
    out_of_bag_groups = response_groups(comparisons, "object_set")
    args = (estimator, comparisons, units, reference, full_response_edge, out_of_bag_groups, annotator_code,
            max(k, 0), threads_per_fit, warm_start, unit)
    for i, r in _run_replicates(todo, args, n_jobs, verbose, store):
        results[i] = r
    warn_counted([(i, r.get("warnings", ())) for i, r in enumerate(results)], "bootstrap replicates")
    results, seeds = _fitted_replicates(results, seeds)
    result = BootstrapResult(full, reference, np.stack([r["aligned"] for r in results]), unit, confidence,
                             calibration, seeds, oob_errors=np.array([r["oob_error"] for r in results]),
                             n_from_store=n_replicates - len(todo))
    if k > 0:
        result.stability_per_replicate = np.stack([r["stability"] for r in results])
    if "flagged" in results[0]:
        n_edges = len(full.graph_)
        result.flag_counts, result.present_counts = np.zeros(n_edges, np.int64), np.zeros(n_edges, np.int64)
        for r in results:
            np.add.at(result.present_counts, r["edges"], 1)
            np.add.at(result.flag_counts, r["edges"][r["flagged"]], 1)
    if annotator_code is not None:
        with np.errstate(invalid="ignore", divide="ignore"):
            result.annotator_agreement = np.stack([np.where(r["annotator_den"] > 0, r["annotator_num"]
                                                            / r["annotator_den"], np.nan) for r in results])
        result.annotator_ids = annotator_ids
    return result


__all__ = ["bootstrap", "BootstrapResult", "ReplicateStore", "StoreError", "resample", "resampling_units",
           "replicate_seeds", "UNITS", "CALIBRATIONS", "UncertaintyRegions"]
