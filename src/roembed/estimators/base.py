"""What every roembed estimator shares: input handling, prediction and scoring.

Subclasses store their parameters in ``__init__`` (nothing else), and implement
``_fit_graph(graph)`` which sets at least ``embedding_`` (n x p), oriented by
:func:`roembed.projections.orient_embedding` (centred, on its principal axes).  ``fit``
accepts :class:`~roembed.data.Comparisons`, a
:class:`~roembed.data.ComparisonGraph` or an (m, 3) / (m, 4) array of
triplets / quadruplets (optionally with cblearn-style responses ``y``).
"""
from __future__ import annotations

import re

import numpy as np
from sklearn import get_config
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted

from .._random import as_random_state, check_random_state_type
from .._warn import warn
from ..data import ComparisonGraph, as_comparisons
from ..data.convert import ZERO_PADDED
from ..data.diagnostics import warn_data_problems, warn_unfitted_objects
from ..data.validation import InvalidComparisonsError
from ..losses import Loss
from ..metrics import agreement
from ..objective import EdgeObjective, PairDistances, quadruplet_distances


def check_param(name: str, value, *, low=None, high=None, low_open=False, integer=False) -> None:
    """Raises ``ValueError`` naming the parameter when ``value`` is outside its range."""
    if integer and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if not integer and (isinstance(value, bool) or not isinstance(value, (int, float, np.number))):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not isinstance(value, (int, np.integer)) and not np.isfinite(value):  # (NumPy cannot test Python's big ints)
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if low is not None and (value <= low if low_open else value < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}")


def check_n_jobs(name: str, value) -> None:
    """joblib's ``n_jobs``: None, or an integer other than 0 (-1: all cores)."""
    if value is not None:
        check_param(name, value, integer=True)
        if value == 0:
            raise ValueError(f"{name} must be 1 or more processes, -1 for all cores, or None, got 0")


def check_estimator_argument(value, call: str) -> None:
    """Raises ``TypeError`` where ``value``, a function's first argument, is no estimator (no ``fit`` and
    ``get_params``), showing ``call``, the argument order: comparisons given first are the commonest slip, and
    without this check they met a later test that blamed the wrong argument ("the estimator is not fitted")."""
    if not (hasattr(value, "fit") and hasattr(value, "get_params")):
        raise TypeError(f"the first argument is the estimator (e.g. roembed.RobustOrdinalEmbedding()), got "
                        f"{type(value).__name__}: call {call}")


def check_verbose(value) -> None:
    """``verbose``: True or False, or an integer >= 0 (a period, in iterations or replicates)."""
    if not isinstance(value, (bool, np.bool_)):
        check_param("verbose", value, low=0, integer=True)


def edge_objective(graph: ComparisonGraph, loss: Loss, loss_weight, cap=None, two_sided=False,
                   reverse_weight=None) -> EdgeObjective:
    """The objective of ``loss`` over the edges of ``graph`` (each also counted reversed with ``reverse_weight``)."""
    return EdgeObjective(loss, None, None, np.asarray(loss_weight, float), len(graph.pairs), cap, two_sided,
                         objects=graph.edge_objects, graph=graph,  # near/far read from the graph if needed
                         reverse_weight=reverse_weight)


NEW_OBJECT_SPREAD = 0.1  # objects a given start lacks begin this share of its size away from its centre


def random_embedding(n_objects: int, n_components: int, random_state, scale: float = 1e-2) -> np.ndarray:
    """Seeded Gaussian start, ``N(0, scale^2)`` per coordinate.

    An integer seed drives its own stream (PCG64 from ``SeedSequence([seed, 1])``), not
    ``RandomState(seed)``: data drawn with ``RandomState(seed).standard_normal`` (as
    :func:`~roembed.experiments.make_synthetic` does) would otherwise be replayed as the
    start, scaled, whenever the same integer seeds both.
    """
    if random_state is None or isinstance(random_state, (int, np.integer)):
        seed = None if random_state is None else np.random.SeedSequence([int(random_state), 1])
        return scale * np.random.default_rng(seed).standard_normal((n_objects, n_components))
    return scale * as_random_state(random_state).standard_normal((n_objects, n_components))


def is_table(value) -> bool:
    """Whether ``value`` is a pandas table (duck-typed: pandas is imported only where one is read)."""
    return hasattr(value, "columns") and hasattr(value, "index") and hasattr(value, "select_dtypes")


def check_init(init, names: tuple) -> None:
    """``init``: one of ``names``, a 2-d numeric array-like or a pandas table (checked against the objects by
    :func:`given_start`); ``ValueError`` naming the type otherwise (an array's repr would fill the screen)."""
    expected = f"init must be one of {names}, an (n, p) array or a table of coordinates"
    if isinstance(init, str):
        if init not in names:
            raise ValueError(f"{expected}, got {init!r}")
        return
    if is_table(init):
        return
    try:
        ndim = np.asarray(init, dtype=np.float64).ndim
    except (TypeError, ValueError):
        ndim = None
    if ndim != 2:
        raise ValueError(f"{expected}, got {f'a {ndim}-d array' if ndim else type(init).__name__}")


def given_start(init, n_objects: int, n_components: int, object_names, random_state, scale: float) -> np.ndarray:
    """The (n, p) start a user gave as ``init``: an array-like in object order, or a pandas table of coordinates
    (its columns ``x1, x2, ...``, or else its numeric ones, p of them) whose rows name their objects -- by a
    ``name`` or ``object`` column (``pd.read_csv("embedding.csv")`` of an earlier run), else by the index
    (``transform()`` after ``set_output(transform="pandas")``): names where the objects are named, numbers where
    the index holds them.

    The start is taken as a shape: centred and scaled to the random starts' size (``scale`` per coordinate, root
    mean square), whatever its units; the robust fit then sizes it for each loss it fits
    (:func:`~roembed.estimators.robust_fit.start_scale`; docs/default.md, "A start of one's own").
    A table is matched row by row: objects it lacks (new since that fit) start near its centre (the seeded
    Gaussian start :func:`random_embedding` at a tenth of ``scale``), and rows of objects these comparisons no
    longer have are left out.  Why: refitting as responses accrue (salmon, NEXT) starts where the last map
    ended, and a new object is then unknown to it.  An array has no names, so its shape must be (n, p).
    A start that spans fewer dimensions than the map (:func:`spans_fewer_dimensions`) gets that Gaussian added
    to every object, so that the fit can leave its span."""
    if not is_table(init):
        X = np.asarray(init, dtype=np.float64)
        if X.shape != (n_objects, n_components):
            hint = (": give a table of coordinates indexed by object name (the fit's transform() after "
                    "set_output(transform='pandas')) to start objects it lacks at the map's centre"
                    if X.ndim == 2 and X.shape[1] == n_components else "")
            raise ValueError(f"init has shape {X.shape}, expected {(n_objects, n_components)}{hint}")
        if not np.isfinite(X).all():
            raise ValueError(f"init row {int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])}: a coordinate that "
                             "is not a finite number")
        X = as_start_shape(X, scale)
    else:
        objects, given = table_rows(init, n_objects, n_components, object_names)
        X = random_embedding(n_objects, n_components, random_state, NEW_OBJECT_SPREAD * scale)
        X[objects] = as_start_shape(given, scale)
    if spans_fewer_dimensions(X):
        X += random_embedding(n_objects, n_components, random_state, NEW_OBJECT_SPREAD * scale)
    return X


def as_start_shape(X: np.ndarray, scale: float) -> np.ndarray:
    """``X`` centred and scaled to root mean square ``scale`` per coordinate (all at the centre where its rows
    are one point)."""
    Y = X - X.mean(axis=0)
    rms = float(np.sqrt(np.mean(np.square(Y))))
    return Y * (scale / rms) if rms > 0 else Y


def spans_fewer_dimensions(X: np.ndarray) -> bool:
    """Whether the rows of ``X`` span fewer than its columns' dimensions about their mean (a point, a line in
    the plane, a map of two dimensions padded with zeros).  Such a start cannot leave its span: the loss's
    gradient has no part across it, so the fit stays there (measured: every object at one point stayed there,
    held-out error 1.0; a line in the plane erred 0.30 against 0.13)."""
    if len(X) < 2:
        return False
    singular = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)
    return bool(len(singular) < X.shape[1] or singular[-1] <= 1e-9 * max(singular[0], np.finfo(float).tiny))


def table_rows(table, n_objects: int, n_components: int, object_names, numbers=None) -> tuple[np.ndarray, np.ndarray]:
    """``(objects, coordinates)``: the rows of a table of coordinates that are objects of the comparisons, as
    :func:`given_start` matches them (``numbers``: each object's number in the table where it numbers them, by
    default 0..n-1); ``ValueError`` where none is, where the table has not p coordinate columns, names an object
    twice or gives one a coordinate that is not a finite number."""
    import pandas as pd

    if not len(table):
        raise ValueError("init has no rows")
    keys = ("name" if "name" in table.columns and object_names is not None
            else "object" if "object" in table.columns else None)
    coords = sorted((c for c in table.columns if re.fullmatch(r"x[1-9][0-9]*", str(c))), key=lambda c: int(c[1:]))
    if coords and coords != [f"x{d + 1}" for d in range(len(coords))]:
        raise ValueError(f"init's coordinate columns are {', '.join(coords)}: expected x1..x{n_components}")
    coords = coords or [c for c in table.select_dtypes("number").columns if c not in ("object", "n_responses")]
    if len(coords) != n_components:
        raise ValueError(f"init has {len(coords)} coordinate column{'' if len(coords) == 1 else 's'} "
                         f"({', '.join(map(str, coords)) or 'none'}), expected {n_components} (x1..x{n_components})")
    labels = pd.Series(table[keys] if keys is not None else table.index)
    by_number = keys == "object" or (keys is None and pd.api.types.is_integer_dtype(labels.dtype))
    if not by_number and object_names is None:
        raise ValueError("init names its rows, but the comparisons number their objects: give an (n, p) array "
                         "or a table indexed by object number")
    twice = labels.duplicated() & labels.notna()
    if twice.any():
        raise ValueError(f"init names an object twice: {labels[twice].iloc[0]!r}")
    index = (np.arange(n_objects) if numbers is None else np.asarray(numbers)) if by_number else [
        str(name) for name in object_names]
    lookup = pd.Series(np.arange(n_objects), index=index)
    found = (labels if by_number else labels.astype(str)).map(lookup).to_numpy(dtype=np.float64)
    rows = np.flatnonzero(~np.isnan(found))
    if not len(rows):
        padded = not by_number and pd.api.types.is_numeric_dtype(labels.dtype) and any(
            re.fullmatch(ZERO_PADDED, str(name)) for name in object_names)
        raise ValueError(f"none of init's {len(labels)} rows is an object of these comparisons "
                         f"(matched by {'number' if by_number else 'name'})" + (
                             "; its names are numbers, the objects' are written with leading zeros (007), which "
                             "pandas drops: read the table with pd.read_csv(path, dtype={'name': str})" if padded
                             else ""))
    values = table[coords].iloc[rows].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    finite = np.isfinite(values).all(axis=1)
    if not finite.all():
        row = int(rows[np.argmin(finite)])
        label = labels.iloc[row]
        shown = ", ".join(f"{c} = {v if str(v).strip() else 'empty'}" for c, v in zip(coords, table[coords].iloc[row]))
        raise ValueError(f"init's row of object {label if by_number else repr(str(label))}: a coordinate that is not "
                         f"a finite number ({shown})")
    return found[rows].astype(np.int64), values


OUTPUT_CONTAINERS = ("default", "pandas", "polars")


def training_comparisons(X, y=None, sample_weight=None):
    """:func:`~roembed.data.as_comparisons` for a fit, refused in one line where no response weighs anything
    (``sample_weight`` all zero): such data have no objective, and the fit got as far as the annotator stage
    before saying so, after a dozen of NumPy's division warnings."""
    comparisons = as_comparisons(X, y, sample_weight)
    if len(comparisons) and not comparisons.weight.sum() > 0:
        raise ValueError("all comparison weights are zero")
    return comparisons


class OrdinalEmbedding(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Base class: ``fit`` -> ``embedding_``; ``predict``/``score`` on comparisons.

    ``auto_wrap_output_keys=None``: ``transform`` returns the objects' coordinates, not one row per row of
    ``X``, so scikit-learn's ``set_output`` wrapper (which would index the output by the rows of ``X`` and
    make ``X`` required) is left off; :meth:`set_output` here keeps its promise with the objects as rows."""

    def fit(self, X, y=None, sample_weight=None):
        """Fits the embedding to comparisons ``X`` (see the module docstring).

        ``n_components="auto"`` first chooses the dimension with
        :func:`roembed.dimension.select_dimension` (grouped 5-fold cross-validation of this
        estimator, one-standard-error rule), stored in ``n_components_`` and ``dimension_selection_``;
        inside ``joblib.parallel_config(n_jobs=2)`` its folds run on two processes (the same result).
        Per-response metadata (annotator ids, known-answer marks) travels with the comparisons.
        """
        comparisons = training_comparisons(X, y, sample_weight)
        if isinstance(self.n_components, str) and self.n_components == "auto":
            return self._fit_auto_dimension(comparisons)
        self._check_params()
        if self.n_components >= max(comparisons.n_objects, 2):
            n = comparisons.n_objects
            raise ValueError(f"n_components={self.n_components} must be below the number of objects, {n}: {n} points "
                             f"fit in {max(n - 1, 1)} dimension{'s' if n > 2 else ''}")
        self.n_components_ = self.n_components
        self.n_objects_ = comparisons.n_objects
        self.object_names_ = comparisons.object_names
        self.graph_ = comparisons.aggregate(device=self._graph_device())
        warn_data_problems(self.graph_, self.n_components)
        self._fit_graph(self.graph_)
        return self

    def _fit_auto_dimension(self, comparisons):
        from ..dimension import select_dimension

        if not isinstance(getattr(self, "init", "random"), str):
            raise ValueError("init is a start in one dimension, and n_components='auto' tries several: give "
                             "n_components (or init='plain')")
        selection = select_dimension(self._dimension_estimator(), comparisons,
                                     random_state=getattr(self, "random_state", None))
        fitted = clone(self).set_params(n_components=selection.n_components).fit(comparisons)
        for key, value in vars(fitted).items():
            if key.endswith("_") and not key.startswith("_"):
                setattr(self, key, value)
        self.dimension_selection_ = selection
        return self

    def _dimension_estimator(self):
        """The estimator whose held-out error chooses ``n_components="auto"``: this one (a search over
        candidates, :class:`~roembed.estimators.RobustOrdinalEmbeddingCV`, uses the estimator it searches)."""
        return self

    def _check_params(self) -> None:
        if not (isinstance(self.n_components, str) and self.n_components == "auto"):
            check_param("n_components", self.n_components, low=1, integer=True)
        check_verbose(getattr(self, "verbose", 0))  # True is 1: print every iteration
        check_random_state_type(getattr(self, "random_state", None))

    def _graph_device(self):
        """Where to aggregate comparisons into the graph: the torch solver's device when it is a GPU
        (``torch.unique`` there), else None (compiled counting sorts on the CPU, faster than torch's).  The torch
        solver left to find a device and finding no GPU warns: on the CPU the default solver is faster."""
        if getattr(self, "solver", None) != "torch":
            return None
        from ..solvers.torch_lbfgs import resolve_device

        device = resolve_device(getattr(self, "device", None))
        if device.type == "cpu" and getattr(self, "device", None) is None:
            warn(f"{type(self).__name__}: solver='torch' found no GPU and runs on the CPU, where the default "
                 "solver='lbfgs' is about ten times faster (the music set at p = 9: 31 s against 3.1 s)"
                 + ("; device='cpu' runs torch there without this warning" if "device" in self.get_params() else ""),
                 UserWarning)
        return device if device.type == "cuda" else None

    def _fit_graph(self, graph: ComparisonGraph) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _progress(self):
        """A solver callback printing the objective every ``verbose`` iterations (None when silent), with the
        name of the solve it belongs to where a fit runs several (:func:`~roembed.solvers.progress.phase`)."""
        if not self.verbose:
            return None
        every = int(self.verbose)
        from ..solvers.progress import current_phase

        def report(iteration, value):
            if iteration % every == 0:
                phase = current_phase()
                print(f"[{type(self).__name__}{': ' + phase if phase else ''}] iteration {iteration}: "
                      f"objective {value:.6g}")
        return report

    def fit_transform(self, X, y=None, sample_weight=None):
        """Fits to ``X`` and returns the embedding, as :meth:`transform` does."""
        return self.fit(X, y, sample_weight).transform()

    def transform(self, X=None):
        """The fitted embedding (n_objects x n_components); ``X`` is ignored.

        The array ``embedding_`` itself, or, after ``set_output(transform="pandas")`` (or under
        ``sklearn.set_config(transform_output="pandas")``), a DataFrame of it: columns ``x1..xp`` (as
        ``embedding.csv`` has them), one row per object indexed by the object names (index ``name``) or
        numbers (``object``); ``"polars"``: the same columns, rows in object order (polars has no index)."""
        check_is_fitted(self, "embedding_")
        container = getattr(self, "_sklearn_output_config", {}).get("transform") or get_config().get(
            "transform_output", "default")
        if container == "default":
            return self.embedding_
        columns = list(self.get_feature_names_out())
        if container == "polars":
            from .._optional import import_optional

            pl = import_optional("polars", 'transform output "polars"', "pip install polars")
            return pl.DataFrame(np.array(self.embedding_), schema=columns, orient="row")
        import pandas as pd

        names = getattr(self, "object_names_", None)
        index = (pd.Index(list(names), name="name") if names is not None
                 else pd.RangeIndex(len(self.embedding_), name="object"))
        return pd.DataFrame(np.array(self.embedding_), index=index, columns=columns)  # a copy: no view of the fit

    def set_output(self, *, transform=None):
        """scikit-learn's output switch: ``transform="pandas"`` or ``"polars"`` makes :meth:`transform` and
        :meth:`fit_transform` return a table of the coordinates (see :meth:`transform`), ``"default"`` the
        array; None leaves the setting as it is.  Returns the estimator."""
        if transform is None:
            return self
        if transform not in OUTPUT_CONTAINERS:
            raise ValueError(f"set_output(transform=...) must be one of {', '.join(map(repr, OUTPUT_CONTAINERS))} "
                             f"or None, got {transform!r}")
        self._sklearn_output_config = {**getattr(self, "_sklearn_output_config", {}), "transform": transform}
        return self

    def get_feature_names_out(self, input_features=None):
        """The coordinates' names, ``x1..xp`` (``input_features`` is ignored: comparisons have no features)."""
        check_is_fitted(self, "embedding_")
        return np.array([f"x{d + 1}" for d in range(self.embedding_.shape[1])], dtype=object)

    def _query(self, X, y=None, sample_weight=None):
        """Comparisons to score or predict, numbered as the fit's objects: named objects are matched
        by name (a test file's names are numbered in its own sorted order, not the fit's)."""
        check_is_fitted(self, "embedding_")
        comparisons = as_comparisons(X, y, sample_weight)
        fitted_names = getattr(self, "object_names_", None)
        if comparisons.object_names is not None and comparisons.object_names != fitted_names:
            if fitted_names is None:
                raise InvalidComparisonsError("these comparisons name their objects, but the embedding was fitted "
                                              "on object indices: pass indices")
            comparisons = comparisons.renumbered(fitted_names)
        if comparisons.quadruplets.max() >= self.n_objects_:
            r = int(np.flatnonzero(comparisons.quadruplets.max(axis=1) >= self.n_objects_)[0])
            raise InvalidComparisonsError(
                f"row {r}: object index out of range for an embedding of {self.n_objects_} objects "
                "(pass Comparisons with n_objects set when fitting on a subset)")
        return comparisons

    def decision_function(self, X):
        """``d(l, k) - d(i, j)`` per query: positive when the first pair is predicted closer.  Warns
        (``DataWarning``) where a comparison has an object the fit saw in no comparison, as :meth:`score` does."""
        comparisons = self._query(X)
        warn_unfitted_objects(self.graph_.comparisons, comparisons, "predicted")
        d_near, d_far = quadruplet_distances(self.embedding_, comparisons.quadruplets)
        return d_far - d_near

    def predict(self, X):
        """True where ``d(i, j) < d(l, k)`` in the embedding (for triplets: i is closer to j than to k), as a
        boolean array whatever the encoding of a ``y`` given to ``fit``: against cblearn's +-1 responses compare
        ``predict(X) == (y > 0)``, or take ``score(X, y)``."""
        return self.decision_function(X) > 0

    def score(self, X, y=None, sample_weight=None):
        """Weighted share of the responses the embedding satisfies (1 - triplet error).

        A comparison of an object that no comparison of the fit showed counts too (its coordinates are the
        start's, so the embedding's answer on it is arbitrary), with a ``DataWarning`` that counts them: a
        split by rows or by query can leave an object's every comparison on the scored side."""
        comparisons = self._query(X, y, sample_weight)  # first: unfitted, it raises NotFittedError
        if not comparisons.weight.sum() > 0:  # was NaN, silently
            raise ValueError("score: every comparison's weight is zero, so there is nothing to score")
        warn_unfitted_objects(self.graph_.comparisons, comparisons, "scored")
        return agreement(self.embedding_, comparisons)

    def _more_tags(self):  # scikit-learn < 1.6
        return {"requires_y": False, "X_types": ["2darray"]}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.input_tags.two_d_array = True
        return tags


__all__ = ["OrdinalEmbedding", "check_init", "check_param", "edge_objective", "given_start", "is_table",
           "table_rows", "random_embedding", "PairDistances"]
