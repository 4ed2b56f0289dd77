"""The experiment runner: cells, method registry, validation tuning, resumable result store.

A *cell* is one ``(protocol, model, rate, trial, method)``.  Running it draws the
trial's data (seeded by ``(seed, trial)``, so every method of a trial sees the
same data), fits the method once per point of its hyperparameter grid on
the training split, keeps the point with the lowest **validation** error and
reports that point's test error.  Test errors of the other grid points are
recorded too (for the sensitivity figure) but never used to choose.

Each finished cell is appended at once to a JSON-lines :class:`ResultStore`, so an
interrupted run loses at most the cells in flight; rerunning the same command
skips every stored cell.  Cells run in parallel with joblib (``n_jobs``), which also
accepts joblib's cluster backends (Dask, Ray) through ``joblib.parallel_backend``.

Methods are looked up in a registry of :class:`MethodSpec`; their estimator classes
are imported only when a cell runs, so the registry lists methods whose modules are
still being written without failing.  :func:`available_methods` tells which import.
"""
from __future__ import annotations

import importlib
import itertools
import json
import os
import time
import traceback
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from .. import __version__
from .._io import writing
from ..data import Comparisons
from ..estimators.registry import ESTIMATORS
from ..estimators.robust import tuned_params
from ..metrics import outlier_precision_recall
from .music import MusicProtocol
from .synthetic import Split, SyntheticProtocol


# ---------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class MethodSpec:
    """How to build one method: ``module:cls`` (imported lazily) or a ``factory``.

    ``params`` are fixed keyword arguments; ``grid`` maps a parameter name to the
    values tried (the full product is searched, chosen on validation error).
    """

    name: str
    target: str = ""  # "package.module:ClassName"
    params: tuple = ()  # ((name, value), ...): hashable
    grid: tuple = ()  # ((name, (values...)), ...)
    factory: Callable | None = None  # alternative to target: factory(**params) -> estimator
    description: str = ""

    def estimator_class(self):
        module, _, cls = self.target.partition(":")
        return getattr(importlib.import_module(module), cls)

    def build(self, n_components: int, random_state: int, **hyper):
        kwargs = dict(self.params, n_components=n_components, random_state=random_state, **hyper)
        make = self.factory if self.factory is not None else self.estimator_class()
        return make(**kwargs)

    def grid_points(self) -> list[dict]:
        if not self.grid:
            return [{}]
        names = [name for name, _ in self.grid]
        return [dict(zip(names, values)) for values in itertools.product(*(v for _, v in self.grid))]


LAMBDA_GRID = (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3)  # ROE's lambda: the paper's sensitivity range
# The robust estimator's candidates (benchmarks/bench_robust.py's "full" grid, plus alpha = 0 for music)
ROBUST_GRID = (("lam", (0.5, 2.0, "auto")), ("alpha", (0.0, 3e-6, 3e-5, 3e-4, 1e-3)), ("weighting", ("vote", "net")))

METHODS: dict[str, MethodSpec] = {}


def register_method(spec: MethodSpec) -> MethodSpec:
    """Adds (or replaces) a method in the registry."""
    METHODS[spec.name] = spec
    return spec


_E = ESTIMATORS  # the one estimator table (roembed.estimators.registry)
for _spec in (
    MethodSpec("ROE", _E["roe"], grid=(("lam", LAMBDA_GRID),),
               description="the paper's ROE: squared loss + outlier shifts, PSD rank-p Gram"),
    MethodSpec("GNMDS-p", _E["gnmds"], params=(("solver", "gram"),)),
    MethodSpec("CKL-p", _E["ckl"], params=(("solver", "gram"),), grid=(("mu", (0.05, 0.5)),)),
    MethodSpec("STE-p", _E["ste"], params=(("solver", "gram"),)),
    MethodSpec("SOE", _E["soe"], params=(("solver", "factored"),)),
    MethodSpec("GNMDS", _E["gnmds"], params=(("solver", "factored"),)),
    MethodSpec("CKL", _E["ckl"], params=(("solver", "factored"),), grid=(("mu", (0.05, 0.5)),)),
    MethodSpec("STE", _E["ste"], params=(("solver", "factored"),)),
    MethodSpec("t-STE", _E["tste"], params=(("solver", "factored"),), grid=(("dof", (1.0, 3.0, 10.0)),)),
    MethodSpec("two-stage", _E["two-stage"],
               description="local majority vote, then an embedding of the kept comparisons"),
    # pinned to the estimator the committed stores (docs/data/*_results.jsonl, 22 Nov 2026) were made with: the
    # self-tuning defaults that came later would otherwise mix two estimators in one resumed store
    MethodSpec("robust", _E["robust"], params=(("loss", "soe"), ("refine", None), ("annotators", None)),
               grid=ROBUST_GRID,
               description="roembed's robust estimator (SOE loss + outlier shifts), tuned on validation"),
    MethodSpec("default", _E["robust"],
               description="RobustOrdinalEmbedding() as a user gets it: every parameter at its default, tuned on "
                           "its own hold-out of the training votes (the validation set is not used)"),
):
    register_method(_spec)

PAPER_METHODS = ("ROE", "GNMDS-p", "CKL-p", "STE-p")


def available_methods(names: Iterable[str] | None = None) -> list[str]:
    """The registered methods (or ``names``) whose estimator class imports now."""
    out = []
    for name in (METHODS if names is None else names):
        spec = METHODS[name]
        try:
            if spec.factory is None:
                spec.estimator_class()
        except (ImportError, AttributeError):
            continue
        out.append(name)
    return out


# ---------------------------------------------------------------------------
# cells
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    protocol: str
    model: str
    rate: float
    trial: int
    method: str

    @property
    def key(self) -> str:
        return f"{self.protocol}|{self.model}|{self.rate:g}|{self.trial}|{self.method}"


def trial_seed(seed: int, trial: int) -> int:
    """The recorded seed of a trial's data.

    It depends on the trial only, not on the contamination model or rate: trial ``t``
    has the same points and splits at every ``q`` (common random numbers), and only
    the contamination differs, so error-vs-``q`` curves are paired comparisons.
    """
    return int(np.random.SeedSequence([int(seed), int(trial)]).generate_state(1)[0])


def method_seed(seed: int, trial: int) -> int:
    """The recorded seed of every method's initialisation in a trial.

    It is a different stream from :func:`trial_seed`: with one seed for both, a
    Gaussian start of an estimator would replay the draw of the true points.
    """
    return int(np.random.SeedSequence([int(seed), int(trial), 1]).generate_state(1)[0])


def protocol_settings(protocol) -> dict:
    """The protocol's ``settings()`` as JSON gives them back (``{}`` for a protocol without the method)."""
    own = getattr(protocol, "settings", None)
    return json.loads(json.dumps(own() if own else {}, default=_json_default))


class StoreMismatchError(ValueError):
    """A result store holds cells of the same protocol run under another seed or other settings."""


@lru_cache(maxsize=2)
def _draw(protocol, model: str, rate: float, seed: int) -> Split:
    return protocol.draw(model, rate, seed)


def _error(est, comparisons: Comparisons) -> float:
    """Weighted share of the comparisons the fitted embedding violates."""
    return 1.0 - est.score(comparisons)


def _outlier_scores(est, split: Split) -> dict:
    """Edge-level precision/recall of the flagged edges against the contamination truth
    (:func:`roembed.metrics.outlier_precision_recall`)."""
    mask = getattr(est, "outlier_mask_", None)
    if mask is None:
        return {}
    scores = outlier_precision_recall(mask, split.wrong_edge(est.graph_.edges))
    return {"n_flagged": scores["n_flagged"], "n_wrong_edges": scores["n_true"],
            "true_positives": scores["true_positives"], "precision": scores["precision"],
            "recall": scores["recall"]}


def run_cell(protocol, cell: Cell, seed: int, methods: dict | None = None) -> dict:
    """Runs one cell and returns its record (never raises for a failing method: status='error').  The warnings
    its fits raise are kept in the record (``warnings``, each ``"Category: message"`` once), not printed: a
    run of hundreds of cells printed each one with joblib's source line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record = _run_cell(protocol, cell, seed, methods)
    said = dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught)
    if said:
        record["warnings"] = list(said)
    return record


def _run_cell(protocol, cell: Cell, seed: int, methods: dict | None) -> dict:
    spec = (methods or METHODS)[cell.method]
    tseed, mseed = trial_seed(seed, cell.trial), method_seed(seed, cell.trial)
    record = {"key": cell.key, "protocol": cell.protocol, "model": cell.model, "rate": cell.rate,
              "trial": cell.trial, "method": cell.method, "seed": tseed, "method_seed": mseed, "base_seed": seed,
              "roembed_version": __version__, "settings": protocol_settings(protocol)}
    start = time.perf_counter()
    try:
        split = _draw(protocol, cell.model, cell.rate, tseed)
        grid, best, best_est = [], None, None
        for hyper in spec.grid_points():
            t0 = time.perf_counter()
            est = spec.build(protocol.n_components, mseed, **hyper).fit(split.train)
            point = {"params": hyper, "val_error": _error(est, split.validation),
                     "test_error": _error(est, split.test), "train_error": _error(est, split.train),
                     "fit_seconds": time.perf_counter() - t0}
            if len(spec.grid_points()) > 1:
                point.update(_outlier_scores(est, split))
            grid.append(point)
            if best is None or point["val_error"] < best["val_error"]:  # ties: the first (smallest) value
                best, best_est = point, est
        record.update(status="ok", params=best["params"], val_error=best["val_error"],
                      test_error=best["test_error"], train_error=best["train_error"],
                      n_contaminated=split.n_contaminated, outliers=_outlier_scores(best_est, split),
                      grid=grid if len(grid) > 1 else [])
        chosen = tuned_params(best_est)  # what a self-tuning estimator chose on its own hold-out ("default")
        if chosen:
            record["chosen"] = chosen
    except Exception as exc:  # a broken method must not stop the other cells
        record.update(status="error", error=f"{type(exc).__name__}: {exc}",
                      traceback=traceback.format_exc(limit=5))
    record["seconds"] = time.perf_counter() - start
    return record


# ---------------------------------------------------------------------------
# result store
# ---------------------------------------------------------------------------
class ResultStore:
    """Append-only JSON-lines file of cell records; a torn last line is ignored (and rewritten)."""

    def __init__(self, path):
        self.path = Path(path)

    def records(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        with open(self.path) as fh:
            for line in fh:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line torn by a crash mid-write: that cell is simply run again
        return out

    def done(self, include_errors: bool = False) -> set[str]:
        return {r["key"] for r in self.records() if include_errors or r.get("status") == "ok"}

    def check_settings(self, protocol: str, base_seed: int, settings: dict) -> None:
        """Raises :class:`StoreMismatchError` when a stored cell of ``protocol`` ran under another base seed or
        other protocol settings: resuming would skip those cells and mix two experiments in one table.  Records
        written before the settings were kept are checked by their seed alone."""
        now = {"seed": int(base_seed), **settings}
        for record in self.records():
            if record.get("protocol") != protocol:
                continue
            then = {"seed": record.get("base_seed"), **record.get("settings", {})}
            differ = [k for k in then if k in now and then[k] != now[k]]
            if differ:
                said = "; ".join(f"{k} {_setting(then[k])} there, {_setting(now[k])} now" for k in differ)
                raise StoreMismatchError(
                    f"{self.path}: its {protocol} cells ran under other settings ({said}); continue it with the "
                    "same settings, or write to another store (--out)")

    def append(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, default=_json_default) + "\n"
        with writing(self.path), open(self.path, "a+") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:  # make sure a torn previous line does not swallow this one
                fh.seek(fh.tell() - 1)
                if fh.read(1) != "\n":
                    line = "\n" + line
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _setting(value) -> str:
    return "all" if value is None else str(value)  # n_test None: every remaining query


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def make_cells(protocol, models: Sequence[str], rates: Sequence[float], trials: int | Sequence[int],
               methods: Sequence[str]) -> list[Cell]:
    """Cells ordered trial-major, so the methods of one trial run close together (data cache).

    Clean data (``q = 0``) do not depend on the contamination model: they are run
    once, under the first model.
    """
    trial_ids = range(trials) if isinstance(trials, int) else trials
    cells = (Cell(protocol.name, m, float(r), t, meth)
             for m in models for r in rates if r > 0 or m == models[0] for t in trial_ids for meth in methods)
    return list(dict.fromkeys(cells))  # a name or rate given twice runs its cells once


def run_experiment(protocol, store, *, models: Sequence[str] | None = None, rates: Sequence[float] = (0.0,),
                   trials: int | Sequence[int] = 20, methods: Sequence[str] | None = None, n_jobs: int = 1,
                   seed: int = 0, progress: bool = True, retry_errors: bool = False) -> list[dict]:
    """Runs every cell not yet in ``store`` and returns the new records.

    A store holding cells of ``protocol`` run under another ``seed`` or other protocol settings (``n_test``,
    the music file) raises :class:`StoreMismatchError` before anything runs.

    ``methods=None`` runs the paper's methods that import now.  Records are
    appended as each cell finishes (in completion order), so interrupting the
    run (Ctrl-C, a crash) keeps every finished cell.
    """
    from joblib import Parallel, delayed
    from tqdm.auto import tqdm

    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    store = store if isinstance(store, ResultStore) else ResultStore(store)
    models = tuple(models or protocol.models)
    methods = tuple(methods or available_methods(PAPER_METHODS))
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; registered: {sorted(METHODS)}")
    store.check_settings(protocol.name, seed, protocol_settings(protocol))
    cells = make_cells(protocol, models, rates, trials, methods)
    done = store.done(include_errors=not retry_errors)
    todo = [c for c in cells if c.key not in done]
    registry = {m: METHODS[m] for m in methods}
    new = []
    bar = tqdm(total=len(cells), initial=len(cells) - len(todo), desc=protocol.name, unit="cell",
               disable=not progress)
    try:
        if n_jobs == 1:
            results = (run_cell(protocol, c, seed, registry) for c in todo)
        else:
            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(run_cell)(protocol, c, seed, registry) for c in todo)
        for record in results:
            store.append(record)
            new.append(record)
            bar.update(1)
            if record["status"] != "ok":
                bar.write(f"{record['key']}: {record['error']}")
    finally:
        bar.close()
    return new


__all__ = ["Cell", "LAMBDA_GRID", "METHODS", "MethodSpec", "MusicProtocol", "PAPER_METHODS", "ResultStore",
           "Split", "StoreMismatchError", "SyntheticProtocol", "available_methods", "make_cells", "register_method", "run_cell",
           "run_experiment", "trial_seed", "method_seed"]
