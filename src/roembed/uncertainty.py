r"""How sure is this map: uncertainty of a fitted embedding by resampling.

:func:`bootstrap` refits an estimator on ``n_replicates`` bootstrap resamples of the
comparisons and reads off how much each result moves:

1. **Resampling unit** (``unit``): whole *queries* (default: all votes on one comparison,
   both directions, stay together, since they are not independent), whole *annotators*
   (each person's answers together), or *objects* (every response is owned by its first
   object -- the anchor of a triplet, the head of a salmon query -- and objects' response
   sets are drawn).  A unit drawn ``c`` times enters with its responses' weights times
   ``c`` (rows are never repeated); units not drawn are the replicate's *out-of-bag* data.
2. **Refit**, warm-started from the full fit (``init=`` the full embedding, for estimators
   that accept an initial embedding), so every replicate lands in the basin of the full
   fit instead of a relabelled copy of it.
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
  about 63% of the distinct units, so slightly pessimistic), percentile interval.

Calibration of the regions (``calibration``)
--------------------------------------------
``"hotelling"`` (default)
    Centre :math:`c_i = \hat x_i` (the full fit).  The shape is the covariance of the ``B``
    replicates shrunk towards its isotropic part,
    :math:`\Sigma_i = (1 - \delta_i) S_i + \delta_i \frac{\mathrm{tr} S_i}{p} I`, with the
    Ledoit--Wolf intensity :math:`\delta_i` (estimated from the replicates themselves: a
    ``p x p`` covariance from 100 replicates in 10 dimensions has noisy small eigenvalues,
    which a plain inverse turns into too-small regions), and the radius is the Hotelling
    prediction quantile for a new draw when mean and covariance are estimated from ``B``
    draws, :math:`r^2 = \frac{p (B - 1)(B + 1)}{B (B - p)} F_{p, B - p}(1 - \alpha)` (it tends
    to :math:`\chi^2_p` as ``B`` grows).  Both corrections follow from the number of
    replicates and dimensions alone; neither has a tuned constant.
``"chi2"``
    The textbook normal region: the plain sample covariance and :math:`r^2 = \chi^2_p(1-\alpha)`.

What no resampling can see is the estimator's bias: where contamination distorts the
full fit, every replicate is distorted alike.  Measured coverage is in ``docs/uncertainty.md``.

Without refitting: :func:`local_uncertainty` reads per-object covariances off the curvature of the
fitted objective (the sandwich :math:`H^{-1} B H^{-1}`, the infinitesimal jackknife of the query
bootstrap), with every other object fixed (``others="fixed"``) or with the whole map moving and the
similarity directions projected out as the Procrustes alignment does (``others="free"``).  Its results
share :class:`UncertaintyRegions` with :class:`BootstrapResult`.  It agrees with the bootstrap only
with many queries per coordinate (measured in ``docs/uncertainty.md``).

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
from ._threads import limit_threads
from .data import Comparisons, as_comparisons
from .data.diagnostics import DataWarning
from .estimators.robust import tuned_params
from .losses import robust_curvature, robust_penalty
from .metrics import Interval, knn_agreement_per_object, procrustes, satisfied
from .model_selection import response_groups

UNITS = ("query", "annotator", "object", "query+annotator")
CALIBRATIONS = ("hotelling", "chi2")


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
        columns.append(np.unique(ids, return_inverse=True)[1].reshape(-1))
    return np.stack(columns, axis=1)


def replicate_seeds(random_state, n_replicates: int) -> list[int]:
    """One independent integer seed per replicate, from ``random_state`` (an int, or None for fresh entropy).

    Seed ``b`` is the ``b``-th child of ``SeedSequence(random_state)``, whatever ``n_replicates`` is, so the
    first ``B`` seeds of a longer run are those of a run of ``B`` (what lets a store grow)."""
    if isinstance(random_state, np.random.RandomState):
        random_state = int(random_state.randint(2 ** 31))
    ss = np.random.SeedSequence(random_state)
    return [int(s.generate_state(1)[0]) for s in ss.spawn(n_replicates)]


def resample(comparisons: Comparisons, units: np.ndarray, seed: int):
    """``(sample, in_bag)``: units drawn with replacement, independently per factor (column of ``units``);
    a response whose units are drawn ``c_1, c_2, ...`` times enters with its weight times ``c_1 c_2 ...``."""
    units = np.asarray(units).reshape(len(units), -1)
    rng = np.random.default_rng(seed)
    mult = np.ones(len(units), dtype=np.int64)
    for column in units.T:
        n_units = int(column.max()) + 1
        mult *= np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)[column]
    in_bag = mult > 0
    sample = comparisons[in_bag]
    return sample.with_weight(sample.weight * mult[in_bag]), in_bag


def _warm(estimator, X0: np.ndarray):
    """``estimator`` started from ``X0`` where it takes an initial embedding (``init``)."""
    if "init" in estimator.get_params(deep=False):
        return estimator.set_params(init=np.array(X0))
    return estimator


def _replicate(estimator, comparisons: Comparisons, units: np.ndarray, seed: int, reference: np.ndarray,
               full_response_edge: np.ndarray, annotator_code, k: int, threads: int, warm_start: bool) -> dict:
    """One bootstrap replicate: resample, refit (warm), align; the per-replicate statistics."""
    sample, in_bag = resample(comparisons, units, seed)
    with limit_threads(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # a resample is a subset: the full fit warned about the data
        est = clone(estimator)
        est = (_warm(est, reference) if warm_start else est.set_params(random_state=seed)).fit(sample)
        X = np.asarray(est.embedding_, dtype=np.float64)
        aligned = procrustes(reference, X).apply(X)
        neighbours = knn_agreement_per_object(reference, aligned, k) if k else None
    out = {"aligned": aligned, "stability": neighbours, "seed": seed}
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
    oob = comparisons[~in_bag] if (~in_bag).any() else None
    out["oob_error"] = float(np.average(~satisfied(X, oob), weights=oob.weight)) \
        if oob is not None and oob.weight.sum() > 0 else float("nan")
    return out


# -- resumable store ---------------------------------------------------------------------------
STORE_FORMAT = 1
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _digest(value) -> str:
    """A fingerprint that is the same in every process: arrays by SHA-256 of dtype, shape and bytes,
    estimators by class and parameters, containers item by item, anything else by ``repr`` (addresses removed)."""
    if isinstance(value, np.random.RandomState):
        value = value.get_state()
    elif isinstance(value, np.random.Generator):
        value = value.bit_generator.state
    if hasattr(value, "get_params") and not isinstance(value, type):
        return f"{type(value).__module__}.{type(value).__qualname__}{_digest(value.get_params(deep=False))}"
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
                                    np.asarray(comparisons.weight, np.float64), annotator]),
            "estimator": f"{type(estimator).__module__}.{type(estimator).__qualname__}",
            "estimator_params": params, "unit": unit, "k": int(k), "warm_start": bool(warm_start),
            "threads_per_fit": int(threads_per_fit), "reference": _digest(np.asarray(reference, np.float64)),
            "seeds": [int(s) for s in seeds]}


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
        if "seed" not in out or int(out["seed"]) != seed or "aligned" not in out or "oob_error" not in out:
            return None
        out["seed"], out["oob_error"] = int(out["seed"]), float(out["oob_error"])
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
        diff = np.asarray(points, float) - self.centres
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
            points = procrustes(self.embedding, points).apply(points)
        return self.mahalanobis2(points) <= self.radius2

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
        of the major axis; ``dispersion``: the RMS displacement :math:`\\sqrt{\\mathrm{tr}\\,\\Sigma_i}` over the
        RMS radius of the embedding.  Objects without comparisons are NaN, so are the region columns of
        objects without a region.
        """
        X, cov, r2, ok = self.embedding, self.covariances, self.radius2, self.has_region
        n, p = X.shape
        axes = np.full((n, p), np.nan)
        axes[ok] = np.sqrt(r2 * np.clip(np.linalg.eigvalsh(cov[ok]), 0.0, None))
        table = pd.DataFrame(X, columns=[f"x{d + 1}" for d in range(p)])
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
        cov = np.einsum("pa,ipq,qb->iab", V, self.covariances, V) * self.radius2
        return self.centres @ V, cov


@dataclass
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

    # -- positions ---------------------------------------------------------------------------
    @property
    def sample_covariances(self) -> np.ndarray:
        """(n, p, p): the sample covariance of each object's aligned replicate positions."""
        R = self.replicates - self.replicates.mean(axis=0)
        return np.einsum("bip,biq->ipq", R, R) / max(self.n_replicates - 1, 1)

    @property
    def shrinkage(self) -> np.ndarray:
        """(n,): the Ledoit--Wolf intensity of each object's covariance (0 for ``calibration="chi2"``)."""
        n, p = self.embedding.shape
        if self.calibration == "chi2" or p == 1:
            return np.zeros(n)
        R = self.replicates - self.replicates.mean(axis=0)
        B = self.n_replicates
        S = np.einsum("bip,biq->ipq", R, R) / B
        mu = np.trace(S, axis1=1, axis2=2) / p
        delta2 = np.sum((S - mu[:, None, None] * np.eye(p)) ** 2, axis=(1, 2)) / p
        beta2 = (np.sum(np.sum(R ** 2, axis=2) ** 2, axis=0) - B * np.sum(S ** 2, axis=(1, 2))) / (B * B * p)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(delta2 > 0, np.minimum(beta2, delta2) / delta2, 1.0)

    @property
    def covariances(self) -> np.ndarray:
        """(n, p, p): the shape of each object's region (see ``calibration``)."""
        S = self.sample_covariances
        p = S.shape[1]
        d = self.shrinkage[:, None, None]
        return (1 - d) * S + d * (np.trace(S, axis1=1, axis2=2) / p)[:, None, None] * np.eye(p)

    @property
    def centres(self) -> np.ndarray:
        """(n, p): the centres of the regions: the full fit."""
        return self.embedding

    @property
    def radius2(self) -> float:
        """The squared Mahalanobis radius of the regions (see ``calibration``)."""
        p, B = self.embedding.shape[1], self.n_replicates
        if self.calibration == "hotelling" and B > p:
            return float(p * (B - 1) * (B + 1) / (B * (B - p)) * f_dist.ppf(self.confidence, p, B - p))
        return float(chi2.ppf(self.confidence, p))

    def stability(self) -> np.ndarray:
        """(n,): mean share of each object's nearest neighbours kept in the replicates."""
        if self.stability_per_replicate is None:
            raise AttributeError("stability was not computed (k=0)")
        return self.stability_per_replicate.mean(axis=0)

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


def bootstrap(estimator, comparisons, n_replicates: int = 100, *, unit: str = "query", confidence: float = 0.9,
              calibration: str = "hotelling", k: int = 10, warm_start: bool = True, fitted=None, n_jobs=None, threads_per_fit: int = 1,
              random_state=None, verbose: int = 0, store=None, retune: bool = False) -> BootstrapResult:
    """Bootstrap uncertainty of ``estimator`` on ``comparisons`` (see the module docstring).

    Parameters
    ----------
    estimator
        An unfitted roembed estimator (cloned; never modified).
    comparisons : Comparisons or array
    n_replicates : int
    unit : "query", "annotator" or "object"
    confidence : float
        Level of the regions and intervals (0.9: 90%).
    calibration : "hotelling" or "chi2"
    k : int
        Neighbours for the stability score (0 skips it; capped at ``n - 1``).
    fitted : estimator, optional
        The full fit, if already done (must have been fitted on ``comparisons``).
    n_jobs : int
        joblib workers (the active joblib backend is used: processes by default, Dask inside
        ``joblib.parallel_config(backend="dask")``).
    threads_per_fit : int
        Threads inside each replicate: BLAS, OpenMP and the objective's own (default 1: one core per worker).
    random_state : int or None
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
    comparisons = as_comparisons(comparisons)
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if not (isinstance(n_replicates, (int, np.integer)) and n_replicates >= 2):
        raise ValueError(f"n_replicates must be an integer >= 2, got {n_replicates!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if store is not None and random_state is None:
        raise ValueError(f"{store}: a bootstrap store needs a fixed random_state (an int); with None "
                         "every call draws other replicates")
    full = fitted if fitted is not None else clone(estimator).fit(comparisons)
    if not retune:
        estimator = clone(estimator).set_params(**tuned_params(full))
    reference = np.asarray(full.embedding_, dtype=np.float64)
    n = len(reference)
    units = resampling_units(comparisons, unit)
    annotator_code, annotator_ids = None, None
    if comparisons.annotator is not None:
        annotator_ids, code = np.unique(np.asarray(comparisons.annotator), return_inverse=True)
        annotator_code = (code.reshape(-1), len(annotator_ids))
    k = min(int(k), len(comparisons.used_objects) - 1)
    seeds = replicate_seeds(random_state, n_replicates)
    full_response_edge = np.asarray(full.graph_.response_edge)
    results = [None] * n_replicates
    if store is not None:
        store = ReplicateStore(store, _manifest(estimator, comparisons, reference, unit, max(k, 0), warm_start,
                                                threads_per_fit, seeds))
        results = [store.load(i, seed) for i, seed in enumerate(seeds)]
    todo = {i: seed for i, seed in enumerate(seeds) if results[i] is None}
    args = (estimator, comparisons, units, reference, full_response_edge, annotator_code, max(k, 0),
            threads_per_fit, warm_start)
    for i, r in _run_replicates(todo, args, n_jobs, verbose, store):
        results[i] = r
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
    del n
    return result


# -- the local (sandwich) approximation ----------------------------------------------------------------------
def _group_sum(inverse: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """(size, p): the rows of ``values`` summed by group ``inverse``."""
    return np.stack([np.bincount(inverse, weights=v, minlength=size) for v in values.T], axis=1)


def _outer_sum(index: np.ndarray, vectors: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    r"""(size, p, p): :math:`\sum_{e: index_e = o} w_e v_e v_e^T` per ``o`` (one bincount per entry of the
    upper triangle; no (entries, p, p) temporary)."""
    p = vectors.shape[1]
    out = np.empty((size, p, p))
    for a in range(p):
        wa = weights * vectors[:, a]
        for b in range(a, p):
            out[:, a, b] = out[:, b, a] = np.bincount(index, weights=wa * vectors[:, b], minlength=size)
    return out


def _query_chunks(edge_query: np.ndarray, size: int):
    """Edge indices sorted by query, in chunks of about ``size`` edges that never split a query."""
    order = np.argsort(edge_query, kind="stable")
    q = edge_query[order]
    start = 0
    while start < len(order):
        stop = min(start + size, len(order))
        while stop < len(order) and q[stop] == q[stop - 1]:
            stop += 1
        yield order[start:stop]
        start = stop


def _edge_terms(objective, X: np.ndarray, edges: np.ndarray):
    """For ``edges``: their objects (k, 4), near and far difference vectors ``x_i - x_j``, ``x_l - x_k`` (k, p),
    the margin's first and second derivatives in ``d_near`` and ``d_far``, and ``a_c psi'(s_c)``,
    ``a_c psi''(s_c)`` (the loss, or its outlier envelope where the objective has caps)."""
    loss, k = objective.loss, len(edges)
    obj = np.asarray(objective.objects)[edges].astype(np.int64)
    vn, vf = X[obj[:, 0]] - X[obj[:, 1]], X[obj[:, 2]] - X[obj[:, 3]]
    dn, df = np.einsum("ep,ep->e", vn, vn), np.einsum("ep,ep->e", vf, vf)
    s, sn, sf = (np.broadcast_to(np.asarray(v, float), (k,)) for v in loss.margin(dn, df))
    snn, sff = (np.broadcast_to(np.asarray(v, float), (k,)) for v in loss.margin_curvature(dn, df))
    cap = objective.cap
    if cap is None:
        slope, curvature = loss.penalty(s)[1], loss.curvature(s)
    else:
        c = cap if np.ndim(cap) == 0 else np.asarray(cap)[edges]
        slope, curvature = robust_penalty(loss, s, c, objective.two_sided)[1], \
            robust_curvature(loss, s, c, objective.two_sided)
    w = np.asarray(objective.loss_weight, float)[edges]
    t1 = w * np.broadcast_to(slope, (k,))  # d F / d s_c
    t2 = w * np.broadcast_to(curvature, (k,))  # d^2 F / d s_c^2
    return obj, vn, vf, sn, sf, snn, sff, t1, t2


def local_curvature(objective, X: np.ndarray, alpha: float, edge_query: np.ndarray, chunk: int = 1 << 16):
    r"""Per object ``o``, with every other object fixed: the Hessian ``H_o``, the scatter of the query
    gradients ``B_o`` and the gradient, of :math:`F(X) = \sum_c a_c \psi_c(s_c) + \alpha \|X\|_F^2`
    (``objective``: an :class:`~roembed.objective.EdgeObjective` with its ``objects``).

    For edge ``c`` and an object ``o`` in it, with :math:`u = \partial d / \partial x_o` of the near or far
    distance it is in (:math:`\pm 2 (x_a - x_b)`) and :math:`G_{co} = \partial s_c / \partial x_o`:

    .. math::
        \nabla_o = \sum_c a_c \psi'_c\, G_{co}, \qquad
        H_o = 2\alpha I + \sum_c a_c \big[\psi''_c\, G_{co} G_{co}^T + \psi'_c \textstyle\sum_{\text{pair}}
              (s_{dd}\, u u^T + 2 s_d I)\big], \qquad
        B_o = \sum_q g_{qo} g_{qo}^T - \tfrac1Q S_o S_o^T

    with :math:`g_{qo}` the gradient of query ``q``'s edges (both directions), :math:`S_o = \sum_q g_{qo}`
    and ``Q`` the number of queries (the centring makes ``B`` the covariance of the query multiplicities of
    a bootstrap, multinomial with :math:`\mathrm{Cov} = I - 11^T/Q`).  The Hessian is exact where the loss
    is twice differentiable (the losses' ``curvature`` and ``margin_curvature``; on a kink, one side's value).
    Vectorised over edges (``chunk`` at a time, whole queries per chunk).
    Returns ``H, B, gradient``: (n, p, p), (n, p, p), (n, p).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, p = X.shape
    H = np.zeros((n, p, p))
    B = np.zeros((n, p, p))
    S = np.zeros((n, p))
    diag = np.zeros(n)
    edge_query = np.asarray(edge_query)
    for edges in _query_chunks(edge_query, chunk):
        k = len(edges)
        obj, vn, vf, sn, sf, snn, sff, t1, t2 = _edge_terms(objective, X, edges)
        # one entry per (edge, slot): object, d distance / d x (u), d s / d x through that distance
        slot_obj = obj.T.reshape(-1)
        u = 2.0 * np.concatenate([vn, -vn, vf, -vf])
        ds, dds = np.concatenate([sn, sn, sf, sf]), np.concatenate([snn, snn, sff, sff])
        edge = np.tile(np.arange(k), 4)
        grad = ds[:, None] * u
        coef = np.tile(t1, 4)
        # the margin gradient of each (edge, object): an object may sit in both pairs (a triplet's anchor)
        eo, eo_inverse = np.unique(edge * n + slot_obj, return_inverse=True)
        G = _group_sum(eo_inverse.reshape(-1), grad, len(eo))
        H += _outer_sum(np.concatenate([slot_obj, eo % n]), np.concatenate([u, G]),
                        np.concatenate([coef * dds, t2[eo // n]]), n)
        diag += np.bincount(slot_obj, weights=2.0 * coef * ds, minlength=n)
        # the gradient of each (query, object): both directions of the query together
        qo, qo_inverse = np.unique(edge_query[edges][edge] * n + slot_obj, return_inverse=True)
        g = _group_sum(qo_inverse.reshape(-1), coef[:, None] * grad, len(qo))
        B += _outer_sum(qo % n, g, np.ones(len(qo)), n)
        S += _group_sum(qo % n, g, n)
    H += (diag + 2.0 * alpha)[:, None, None] * np.eye(p)
    n_queries = len(np.unique(edge_query))
    B -= np.einsum("op,oq->opq", S, S) / max(n_queries, 1)
    return H, B, S + 2.0 * alpha * X


def sandwich(H: np.ndarray, B: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    r""":math:`H_o^{-1} B_o H_o^{-1}` per object; NaN where ``H_o`` is not positive definite or ``B_o`` is
    singular (relative to its largest eigenvalue, ``rtol``): there the comparisons do not pin every
    coordinate of ``x_o`` and a region would be unbounded or flat."""
    n, p, _ = H.shape
    eig_h, eig_b = np.linalg.eigvalsh(H), np.linalg.eigvalsh(B)
    ok = (eig_h[:, 0] > rtol * np.abs(eig_h[:, -1])) & (eig_b[:, 0] > rtol * eig_b[:, -1]) & (eig_b[:, -1] > 0)
    cov = np.full((n, p, p), np.nan)
    if ok.any():
        Hinv = np.linalg.inv(H[ok])
        cov[ok] = Hinv @ B[ok] @ Hinv
        cov[ok] = 0.5 * (cov[ok] + np.swapaxes(cov[ok], 1, 2))
    return cov


JOINT_MAX_COORDINATES = 5000
"""``others="free"`` holds dense (n p) x (n p) matrices: about 200 MB each at this many coordinates."""


def joint_curvature(objective, X: np.ndarray, alpha: float, edge_query: np.ndarray):
    r"""The Hessian ``H`` and the centred query scatter ``B`` of the whole embedding, dense (n p, n p), with the
    gradient (n p,); coordinate ``a`` of object ``o`` at ``o p + a``.  The terms of :func:`local_curvature`
    with every object free: :math:`H = J_s^T \mathrm{diag}(a\psi'') J_s + \sum_D J_D^T \mathrm{diag}(a\psi' s_{DD})
    J_D + (L \otimes I_p) + 2\alpha I`, ``J_s`` and ``J_D`` the sparse Jacobians of the margins and of the near
    and far distances, ``L`` the graph Laplacian of the pairs weighted by :math:`2 a\psi' s_D`."""
    from scipy import sparse

    X = np.ascontiguousarray(X, dtype=np.float64)
    n, p = X.shape
    E = len(objective.loss_weight)
    obj, vn, vf, sn, sf, snn, sff, t1, t2 = _edge_terms(objective, X, np.arange(E))
    rows, dims = np.repeat(np.arange(E), p), np.arange(p)

    def jacobian(a, b, v):  # d ||x_a - x_b||^2 / dX: 2 v at a, -2 v at b
        cols = np.concatenate([(a[:, None] * p + dims).ravel(), (b[:, None] * p + dims).ravel()])
        data = np.concatenate([2.0 * v.ravel(), -2.0 * v.ravel()])
        return sparse.csr_matrix((data, (np.concatenate([rows, rows]), cols)), shape=(E, n * p))

    Jn, Jf = jacobian(obj[:, 0], obj[:, 1], vn), jacobian(obj[:, 2], obj[:, 3], vf)
    Js = sparse.diags(np.asarray(sn)) @ Jn + sparse.diags(np.asarray(sf)) @ Jf
    H = (Js.T @ sparse.diags(t2) @ Js + Jn.T @ sparse.diags(t1 * snn) @ Jn
         + Jf.T @ sparse.diags(t1 * sff) @ Jf).toarray()
    a, b = np.concatenate([obj[:, 0], obj[:, 2]]), np.concatenate([obj[:, 1], obj[:, 3]])
    w = 2.0 * np.concatenate([t1 * sn, t1 * sf])
    L = np.bincount(np.concatenate([a * n + a, b * n + b, a * n + b, b * n + a]),
                    weights=np.concatenate([w, w, -w, -w]), minlength=n * n).reshape(n, n)
    H += np.kron(L, np.eye(p)) + 2.0 * alpha * np.eye(n * p)
    queries, inverse = np.unique(np.asarray(edge_query), return_inverse=True)
    G = Js.T @ sparse.csr_matrix((t1, (np.arange(E), inverse.reshape(-1))), shape=(E, len(queries)))
    S = np.asarray(G.sum(axis=1)).reshape(-1)
    B = (G @ G.T).toarray() - np.outer(S, S) / len(queries)
    return H, B, S + 2.0 * alpha * X.reshape(-1)


def similarity_directions(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases (n p, .) of the directions in which a similarity transform moves ``X`` to first
    order: ``(rotations, all)``, ``all`` adding translations and scaling -- what Procrustes alignment removes."""
    n, p = X.shape
    rotations = []
    for k in range(p):
        for l in range(k + 1, p):
            V = np.zeros_like(X)
            V[:, k], V[:, l] = X[:, l], -X[:, k]
            rotations.append(V.reshape(-1))
    translations = [np.tile(np.eye(p)[k], n) for k in range(p)]
    rot = np.linalg.qr(np.array(rotations).T)[0] if rotations else np.zeros((n * p, 0))
    every = np.linalg.qr(np.array(rotations + translations + [X.reshape(-1)]).T)[0]
    return rot, every


def joint_sandwich(H: np.ndarray, B: np.ndarray, X: np.ndarray) -> np.ndarray:
    r"""Per-object blocks (n, p, p) of :math:`P H^+ B H^+ P`: the sandwich of the whole embedding, projected off
    the similarity directions (:math:`P`), as the bootstrap's Procrustes alignment removes them.  ``H`` is
    singular along the rotations (the objective does not see them); :math:`H^+` there is
    :math:`(H + c\,T T^T)^{-1}` restricted by ``P`` (``T``: the rotations, ``c``: the mean curvature)."""
    n, p = X.shape
    rot, every = similarity_directions(X)
    c = np.trace(H) / len(H)
    M = np.linalg.solve(H + c * rot @ rot.T, np.eye(len(H)))
    A = M - every @ (every.T @ M)  # P M
    C = A @ B @ A.T
    idx = np.arange(n)
    return C.reshape(n, p, n, p)[idx, :, idx, :]


@dataclass
class LocalUncertaintyResult(UncertaintyRegions):
    """Per-object regions from the local sandwich (see :func:`local_uncertainty`).

    ``covariances`` (n, p, p): :math:`H_i^{-1} B_i H_i^{-1}`, NaN for objects without a region;
    ``hessians`` and ``query_scatter``: the ``H_i`` and ``B_i`` behind them; ``gradient``: the
    objective's gradient at the fit (about zero when the fit converged); ``n_queries``: ``Q``.
    """

    estimator: object
    embedding: np.ndarray
    covariances: np.ndarray
    hessians: np.ndarray
    query_scatter: np.ndarray
    gradient: np.ndarray
    n_queries: int
    confidence: float = 0.9

    @property
    def centres(self) -> np.ndarray:
        """(n, p): the centres of the regions: the fit."""
        return self.embedding

    @property
    def radius2(self) -> float:
        """:math:`\\chi^2_p(\\text{confidence})`: the normal region of the sandwich covariance."""
        return float(chi2.ppf(self.confidence, self.embedding.shape[1]))


OTHERS = ("fixed", "free")


def local_uncertainty(estimator, comparisons=None, *, confidence: float = 0.9,
                      others: str = "fixed") -> LocalUncertaintyResult:
    r"""Per-object uncertainty from the curvature of the objective at the fit, without refitting.

    For each object ``i``, with every other object fixed at the fit, the infinitesimal jackknife of the
    query bootstrap (the sandwich estimator of an M-estimator whose units are queries):

    .. math::  \Sigma_i = H_i^{-1} B_i H_i^{-1},

    ``H_i`` the Hessian of the objective in ``x_i`` (loss and ridge; exact where the loss is smooth),
    ``B_i`` the scatter of the gradients in ``x_i`` of the queries (all votes on one comparison, both
    directions; :func:`local_curvature`).  The regions are normal:
    :math:`(x - \hat x_i)^T \Sigma_i^{-1} (x - \hat x_i) \le \chi^2_p(\text{confidence})`.  No constant is
    tuned.  What it leaves out, by construction (measured in ``docs/uncertainty.md``):

    * the other objects' uncertainty: ``x_i``'s region is conditional on the rest of the map, where the
      bootstrap refits everything and aligns each replicate to the fit by Procrustes.  Here there is no
      gauge to remove (the others fix rotation, translation and scale), and nothing of the others'
      movement reaches ``x_i``;
    * everything the linearisation misses: non-smooth or non-convex losses far from the fit, the choice
      of the "auto" parameters (fixed at the fit's), the annotator weights (fixed), and for the
      ``majority`` weighting the bootstrap's counting of a query drawn ``c`` times as one vote
      (the sandwich scores a query as a unit of data either way).

    Parameters
    ----------
    estimator
        A fitted :class:`~roembed.RobustOrdinalEmbedding` (or CV), or a fitted factored estimator
        (SOE, STE, t-STE, CKL, GNMDS); an unfitted one is cloned and fitted on ``comparisons``.
    comparisons : Comparisons or array, optional
        Needed for an unfitted estimator; for a fitted one, if given, they must be those it was fitted on.
    confidence : float
        Level of the regions (0.9: 90%).

    Objects whose comparisons do not pin all ``p`` coordinates (fewer informative queries than
    dimensions, or a flat loss: a hinge with every comparison satisfied beyond the margin) get NaN
    covariances and no region, with a :class:`~roembed.data.diagnostics.DataWarning`.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if others not in OTHERS:
        raise ValueError(f"others must be one of {OTHERS}, got {others!r}")
    if hasattr(estimator, "embedding_"):
        fitted = estimator
        if comparisons is not None:
            given, used = as_comparisons(comparisons), fitted.graph_.comparisons
            if not (given.quadruplets.shape == used.quadruplets.shape and np.array_equal(given.quadruplets,
                    used.quadruplets) and np.array_equal(given.weight, used.weight)):
                raise ValueError("comparisons differ from those the estimator was fitted on (leave them out, "
                                 "or pass an unfitted estimator to fit on them)")
    elif comparisons is None:
        raise ValueError("the estimator is not fitted: pass the comparisons to fit it on")
    else:
        fitted = clone(estimator).fit(as_comparisons(comparisons))
    if not hasattr(fitted, "_fitted_objective"):
        raise TypeError(f"local_uncertainty needs an estimator defined by a loss (RobustOrdinalEmbedding, SOE, "
                        f"STE, TSTE, CKL, GNMDS), got {type(fitted).__name__}; use bootstrap()")
    graph, objective, alpha = fitted._fitted_objective()
    X = np.asarray(fitted.embedding_, dtype=np.float64)
    H, B, gradient = local_curvature(objective, X, alpha, np.asarray(graph.edge_query))
    cov = sandwich(H, B)
    if others == "free":
        if X.size > JOINT_MAX_COORDINATES:
            raise ValueError(f"others='free' holds ({X.size} x {X.size}) matrices; above {JOINT_MAX_COORDINATES} "
                             "coordinates use others='fixed' or bootstrap()")
        defined = np.isfinite(cov).all(axis=(1, 2))
        cov = joint_sandwich(*joint_curvature(objective, X, alpha, np.asarray(graph.edge_query))[:2], X)
        cov[~defined] = np.nan
    result = LocalUncertaintyResult(fitted, X, cov, H, B, gradient, len(np.unique(graph.edge_query)), confidence)
    missing = np.setdiff1d(fitted.graph_.comparisons.used_objects, np.flatnonzero(result.has_region))
    if len(missing):
        names = fitted.graph_.object_names
        shown = ", ".join(str(names[o] if names is not None else o) for o in missing[:5])
        warnings.warn(f"local_uncertainty: {len(missing)} of {len(fitted.graph_.comparisons.used_objects)} objects "
                      f"have no region (their comparisons do not pin all {X.shape[1]} coordinates: too few "
                      f"informative queries, or a flat loss there): {shown}{', ...' if len(missing) > 5 else ''}; "
                      "their rows are NaN", DataWarning, stacklevel=2)
    return result


__all__ = ["bootstrap", "BootstrapResult", "ReplicateStore", "StoreError", "resample", "resampling_units", "replicate_seeds", "UNITS",
           "CALIBRATIONS", "UncertaintyRegions", "local_uncertainty", "LocalUncertaintyResult", "local_curvature",
           "sandwich", "joint_curvature", "joint_sandwich", "similarity_directions", "OTHERS"]
