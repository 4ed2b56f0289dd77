"""What a report shows, gathered from a fitted estimator or from a ``roembed fit`` output folder.

Both sources give the same :class:`ReportData`: one row per object (position,
name, label, number of responses, and stability or an uncertainty ellipse when
bootstrap results exist), one row per comparison of the fitted graph (votes,
opposing votes, gamma, flag, whether the embedding agrees), the annotators of
each comparison as ``(comparison, annotator)`` pairs, the annotator table, the
outlier table and the run's summary.

An output folder is readable when it holds a *finished* run: ``summary.json``
is written last, and names the output format; a folder without it, or from a
version of roembed that did not write ``comparisons.csv``, is refused with one
line (:class:`RunFolderError`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from .._factorize import factorize
from .._io import run_folder_problem
from .._kernels import first_of_each_object
from ..data import annotator_index
from ..data.diagnostics import data_problems

#: Version of the output folder layout; 2 added ``comparisons.csv`` and the ``label`` column.
OUTPUT_FORMAT = 2
#: Required files of a run folder (besides ``summary.json``).
REQUIRED = ("embedding.csv", "comparisons.csv")


class RunFolderError(ValueError):
    """A folder that holds no finished, readable ``roembed fit`` run."""


@dataclass(frozen=True)
class ReportData:
    """Tables behind one report.

    objects : ``object, name, label, n_responses, n_comparisons, x1..xp`` and, from a bootstrap,
        ``stability, dispersion, axis_major, axis_minor, angle`` (``OBJECT_EXTRAS``).
    comparisons : ``edge, i, j, l, k, votes, opposing_votes, gamma, flagged`` (``d(i, j) < d(l, k)``;
        ``i, j, l, k`` are rows of ``objects``) and, from a bootstrap, ``flag_frequency``.
    edge_annotators : ``edge, annotator`` pairs (position in ``comparisons``, annotator id as text), or None.
    annotators : the per-annotator table (``annotators.csv``), or None.
    summary : the run's ``summary.json`` (or what is known about an in-memory fit).
    dimension_curve : error against dimension, when a selection was run, or None.
    notes : sentences shown at the top of the report (e.g. that comparisons were summarised).
    """

    objects: pd.DataFrame
    comparisons: pd.DataFrame
    edge_annotators: pd.DataFrame | None = None
    annotators: pd.DataFrame | None = None
    summary: dict = field(default_factory=dict)
    dimension_curve: pd.DataFrame | None = None
    notes: tuple = ()

    @property
    def n_dimensions(self) -> int:
        return sum(1 for c in self.objects.columns if c.startswith("x") and c[1:].isdigit())

    @property
    def coordinates(self) -> np.ndarray:
        return self.objects[[f"x{d + 1}" for d in range(self.n_dimensions)]].to_numpy(dtype=np.float64)


# ----------------------------------------------------------------------------- from an estimator


def responses_per_object(estimator) -> np.ndarray:
    """How many fitted responses mention each object (0: its position is arbitrary)."""
    q = estimator.graph_.comparisons.quadruplets
    new = np.ones(q.shape, dtype=bool)  # count an object once per response (a triplet's anchor is i and l)
    for c in (2, 3):
        new[:, c] = (q[:, c] != q[:, 0]) & (q[:, c] != q[:, 1])
    return np.bincount(q[new], minlength=estimator.n_objects_)


def total_weight(comparisons) -> float | None:
    """The responses' weights summed, as votes where a file gives counts (the material set's ``agreement``: 34,183
    rows carry 92,892 answers); None where every weight is 1, so the count of responses says it."""
    weight = comparisons.weight
    return None if np.all(weight == 1) else float(weight.sum())


def embedding_frame(estimator, object_ids=None, groups=None, labels=None) -> pd.DataFrame:
    """``object, name, [label,] n_responses, [group,] x1..xp`` (name empty when the objects have none).

    ``object_ids``: the input's id of each fitted object (when only the used ones were fitted);
    ``groups``: each object's connected group, written when there is more than one;
    ``labels``: one category per object (the ``label`` column), when given.
    """
    X = estimator.embedding_
    names = estimator.object_names_ or [""] * len(X)
    frame = pd.DataFrame({"object": np.arange(len(X)) if object_ids is None else np.asarray(object_ids),
                          "name": list(names)})
    if labels is not None:
        frame["label"] = labels_column(labels, estimator.object_names_, frame["object"].tolist())
    frame["n_responses"] = responses_per_object(estimator)
    if groups is not None and groups.max() > 0:
        frame["group"] = groups
    for d in range(X.shape[1]):
        frame[f"x{d + 1}"] = X[:, d]
    return frame


def comparison_table(estimator, edges=None) -> pd.DataFrame:
    """Every comparison (edge) of a fitted estimator's graph, or those ``edges``, with its votes, gamma and flag.

    This is ``comparisons.csv`` of an output folder: :meth:`ComparisonGraph.edge_table`
    plus ``gamma`` (0 for estimators without outlier shifts) and ``flagged``.  As in
    ``outliers.csv``, ``i, j, l, k`` are fitted objects: rows of ``embedding.csv``
    (whose ``object`` column gives the input's id when only used ids were fitted).
    """
    graph = estimator.graph_
    edges = np.arange(len(graph)) if edges is None else np.asarray(edges, dtype=np.int64)
    table = graph.edge_table(edges)
    gamma = getattr(estimator, "gamma_", None)
    table["gamma"] = np.zeros(len(table)) if gamma is None else np.asarray(gamma, dtype=np.float64)[edges]
    mask = getattr(estimator, "outlier_mask_", None)
    table["flagged"] = np.zeros(len(table), bool) if mask is None else np.asarray(mask, bool)[edges]
    return table


def from_estimator(estimator, *, labels=None, summary: dict | None = None,
                   annotators: pd.DataFrame | None = None, object_ids=None, bootstrap=None) -> ReportData:
    """The report's tables for a fitted estimator (``embedding_`` and ``graph_``).

    ``labels``: one category per object (e.g. a genre) to colour by; ``annotators``
    overrides the estimator's ``annotators_`` table (e.g. a reweighting's final table);
    ``bootstrap``: a :class:`roembed.uncertainty.BootstrapResult` of this fit, whose
    stability, regions, flag frequencies and annotator intervals are shown.
    """
    objects = embedding_frame(estimator, object_ids, labels=[""] * len(estimator.embedding_) if labels is None
                              else labels)
    graph = estimator.graph_
    q = graph.edge_quadruplets()
    gamma = getattr(estimator, "gamma_", None)
    mask = getattr(estimator, "outlier_mask_", None)
    comparisons = pd.DataFrame({"edge": np.arange(len(graph)), "i": q[:, 0], "j": q[:, 1], "l": q[:, 2], "k": q[:, 3],
                                "votes": graph.votes, "opposing_votes": graph.opposing_votes,
                                "gamma": np.zeros(len(graph)) if gamma is None else np.asarray(gamma, np.float64),
                                "flagged": np.zeros(len(graph), bool) if mask is None else np.asarray(mask, bool)})
    pairs, table = None, None
    if graph.comparisons.annotator is not None:
        ids, codes = annotator_index(graph.comparisons)
        pairs = (pd.DataFrame({"edge": np.asarray(graph.response_edge, np.int64), "code": codes})
                 .drop_duplicates().sort_values(["edge", "code"], kind="stable").reset_index(drop=True))
        pairs = pd.DataFrame({"edge": pairs["edge"].to_numpy(),
                              "annotator": np.asarray(_as_text(ids), dtype=object)[pairs["code"].to_numpy()]})
        if annotators is not None:
            table = annotators
        elif hasattr(estimator, "outlier_mask_"):
            table = estimator.annotators_
    if summary is None:
        summary = {"estimator": type(estimator).__name__, "n_objects": int(estimator.embedding_.shape[0]),
                   "n_responses": len(graph.comparisons), "total_weight": total_weight(graph.comparisons),
                   "n_edges": len(graph),
                   "n_outliers": None if mask is None else int(np.sum(mask)),
                   "n_suspect_annotators": None if table is None or "suspect" not in table
                   else int(table["suspect"].sum()),
                   "n_position_biased_annotators": None if table is None or "position_biased" not in table
                   else int(table["position_biased"].sum()),
                   "settings": {"estimator": {k: v for k, v in estimator.get_params().items()
                                              if np.isscalar(v) or v is None}}}
        # what the data cannot support, as the fit warned (the estimator keeps no record of its warnings, and a
        # page shared without them looks fine): recomputed from the graph, as roembed fit's report lists them
        problems = data_problems(graph, getattr(estimator, "n_components_", None))
        if problems:
            summary["warnings"] = problems
    objects["n_comparisons"] = comparisons_per_object(comparisons, len(objects))
    if bootstrap is not None:
        objects, comparisons, table = merge_bootstrap(
            objects, comparisons, table, object_table=bootstrap.objects().reset_index(drop=True),
            flag_frequency=bootstrap.flag_frequency() if bootstrap.flag_counts is not None else None,
            annotator_intervals=bootstrap.annotators() if bootstrap.annotator_agreement is not None else None)
    return ReportData(objects=objects, comparisons=comparisons, edge_annotators=pairs, annotators=table,
                      summary=dict(summary))


def comparisons_per_object(comparisons: pd.DataFrame, n: int) -> np.ndarray:
    """How many distinct comparisons (edges) involve each object."""
    i, j, l, k = (comparisons[c].to_numpy() for c in "ijlk")
    counts = sum(np.bincount(column, minlength=n) for column in (i, j, k))
    return counts + np.bincount(l[l != i], minlength=n)  # a triplet's anchor is both i and l


def labels_column(labels, names, numbers) -> list[str]:
    """The ``label`` column: :func:`roembed.plotting.labels_per_object` for the objects of these ``names`` (or
    None) and ``numbers``."""
    from ..plotting import labels_per_object

    return [""] * len(numbers) if labels is None else labels_per_object(labels, names, numbers)


def _as_text(values) -> np.ndarray:
    return pd.Series(values, dtype=object).astype(str).to_numpy()


# ----------------------------------------------------------------------------- from a folder


def read_run(folder) -> ReportData:
    """The report's tables from a ``roembed fit`` output folder.

    Raises :class:`RunFolderError` (one line) when the folder is missing, holds no
    finished run (no ``summary.json``, or a file it lists is missing: any but an HTML
    page, which is the report's output, not its input), or was
    written by a version of roembed without ``comparisons.csv``, and when a file was cut off or edited since the
    fit (a file not ending with a line break, a count that differs from the summary's, a value of the wrong kind,
    a summary entry of another shape): the first such place, named by file and line.
    """
    folder = Path(folder).expanduser()
    problem = run_folder_problem(folder)
    if problem:
        raise RunFolderError(problem)
    summary_path = folder / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{summary_path}: not readable JSON ({exc})") from None
    if not isinstance(summary, dict):
        raise RunFolderError(f"{summary_path}: not a roembed summary")
    _check_summary(summary, summary_path)
    fmt = summary.get("output_format", 1)
    if not isinstance(fmt, int) or fmt < OUTPUT_FORMAT:
        version = (summary.get("versions") or {}).get("roembed", "an older version")
        raise RunFolderError(f"{folder}: written by roembed {version} (output format {fmt}), which has no "
                             f"comparisons.csv; run roembed fit again to make a report")
    if fmt > OUTPUT_FORMAT:
        raise RunFolderError(f"{folder}: output format {fmt} is newer than this roembed reads "
                             f"({OUTPUT_FORMAT}); upgrade roembed")
    listed = summary.get("files") or []
    missing = [name for name in dict.fromkeys((*REQUIRED, *listed))  # a page is the report's output, not its input
               if not name.endswith(".html") and not (folder / name).is_file()]
    if missing:
        raise RunFolderError(f"{folder}: incomplete run, missing {', '.join(missing)}")
    for name in REQUIRED:  # pandas ends every file it writes with a line break; a copy cut short rarely does
        if _cut_off(folder / name):
            raise RunFolderError(f"{folder / name}: cut off (it does not end with a line break); copy the run "
                                 "again, or run roembed fit again")
    objects = _read_csv(folder / "embedding.csv", ("object", "x1"))
    _check_numbers(objects, folder / "embedding.csv", [c for c in objects.columns if re.fullmatch(r"x\d+", c)],
                   whole=("object", "n_responses", "group"))
    if not objects["object"].is_unique:
        row = int(np.flatnonzero(objects["object"].duplicated().to_numpy())[0])
        raise RunFolderError(f"{folder / 'embedding.csv'} line {row + 2}: object {objects['object'].iloc[row]} "
                             f"appears twice")
    n = len(objects)
    n_edges = summary.get("n_edges")
    comparisons, pairs = _read_comparisons(folder / "comparisons.csv", n, n_edges)
    if isinstance(n_edges, int) and n_edges != len(comparisons):
        raise RunFolderError(f"{folder / 'comparisons.csv'}: {len(comparisons)} comparisons, but summary.json "
                             f"counts {n_edges} (edited since the fit?)")
    objects["name"] = objects["name"].fillna("").astype(str) if "name" in objects else ""
    objects["label"] = objects["label"].fillna("").astype(str) if "label" in objects else ""
    if "group" in objects and not (objects["label"] != "").any():  # unlinked groups, coloured as in embedding.png
        objects["label"] = ("group " + objects["group"].astype(str)).where(objects["group"] >= 0, "no comparison")
        summary["label_column"] = summary.get("label_column") or "unlinked groups"
    annotators = None
    if (folder / "annotators.csv").is_file():
        annotators = _read_csv(folder / "annotators.csv", ("annotator",))
        annotators["annotator"] = _as_text(annotators["annotator"])
    objects["n_comparisons"] = comparisons_per_object(comparisons, n)
    objects = _merge_object_extras(folder, objects)
    objects, comparisons, annotators = merge_bootstrap(
        objects, comparisons, annotators, flag_frequency=_read_optional(folder / "flag_frequency.csv"),
        annotator_intervals=_read_optional(folder / "annotator_intervals.csv"))
    return ReportData(objects=objects, comparisons=comparisons, edge_annotators=pairs, annotators=annotators,
                      summary=summary, dimension_curve=_dimension_curve(folder))


#: The structured entries of ``summary.json`` the report reads, and the JSON types each may have (or null).
SUMMARY_SHAPES = {"input": (str, list), "files": (list,), "warnings": (list,), "settings": (dict,),
                  "versions": (dict,), "bootstrap": (dict,), "outliers_by_vote": (dict,), "label_column": (str,)}
JSON_TYPES = {str: "a text", list: "a list", dict: "an object", int: "a number", float: "a number",
              bool: "true or false"}


def _check_summary(summary: dict, path: Path) -> None:
    """Raises naming the first entry of an edited ``summary.json`` whose shape the report cannot read."""
    for key, types in SUMMARY_SHAPES.items():
        value = summary.get(key)
        if value is None:
            continue
        found = JSON_TYPES.get(type(value), type(value).__name__)
        if not isinstance(value, types):
            raise RunFolderError(f"{path}: {key} is {found}, not {' or '.join(JSON_TYPES[t] for t in types)} "
                                 "(edited since the fit?)")
        if key in ("input", "files") and isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise RunFolderError(f"{path}: {key} is a list with something other than texts (edited since the fit?)")
    counts = summary.get("outliers_by_vote")
    if counts and not all(isinstance(counts.get(k), int) for k in ("split_queries", "outvoted", "tied", "majority")):
        raise RunFolderError(f"{path}: outliers_by_vote lacks its counts (edited since the fit?)")


def _is_number(value) -> bool:
    try:
        number = float(value)  # "1e400" too: pandas 2.0 keeps it as text, newer ones read inf
    except (TypeError, ValueError):
        return False
    return number == number  # "nan" is no number


def _cut_off(path: Path) -> bool:
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return False  # empty: pandas names it
        fh.seek(-1, 2)
        return fh.read(1) != b"\n"


def _read_csv(path: Path, required, nrows: int | None = None) -> pd.DataFrame:
    try:
        table = pd.read_csv(path, keep_default_na=False, na_values=[""],  # ids as written: "007" is not 7
                            dtype={"name": str, "label": str, "annotator": str, "annotators": str}, nrows=nrows)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path}: cannot read ({exc})") from None
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise RunFolderError(f"{path} line 1: no column {missing[0]!r} (columns: {', '.join(table.columns)})")
    return table


#: The columns of ``comparisons.csv`` a report reads.  The file's other columns (the objects' names, the
#: responses' other values) are there for people; the page takes names from ``embedding.csv``.
COMPARISON_COLUMNS = ("i", "j", "l", "k", "votes", "opposing_votes", "gamma", "flagged", "annotators")
#: Lines of ``comparisons.csv`` parsed at a time (pandas holds one parsed block, every column read and each
#: line's annotators text); kept, a comparison takes 49 bytes (four int32 indices, three floats, a flag, its row)
#: and each of its annotators 16 bytes.
READ_ROWS = 1 << 20


def _read_comparisons(path: Path, n: int, expected_rows: int | None = None):
    """``comparisons.csv`` as the report's comparison table (``edge`` (the row) and :data:`COMPARISON_COLUMNS`;
    indices int32 below 2^31 objects, ``gamma`` 0 and ``flagged`` False where absent) and its ``(edge,
    annotator)`` pairs (None without an ``annotators`` column).

    Read in blocks of :data:`READ_ROWS` lines, each checked (:func:`_check_block`) and copied into columns
    sized for ``expected_rows`` (the summary's count; grown, as a list grows, past it), so that a file of 10^7
    comparisons never stands in memory as pandas' table of every column, nor as blocks to be joined.
    """
    header = _read_csv(path, ("i", "j", "l", "k", "votes", "opposing_votes"), nrows=0).columns
    index = np.int32 if n < 2**31 else np.int64
    dtypes = {"i": index, "j": index, "l": index, "k": index, "votes": np.float64, "opposing_votes": np.float64,
              "gamma": np.float64, "flagged": bool}
    size = expected_rows if isinstance(expected_rows, int) and expected_rows > 0 else READ_ROWS
    size = min(size, path.stat().st_size // 12 + 1)  # a line has 12 characters at least: no count edited to 10^15
    table = {c: np.empty(size, dtypes[c]) for c in dtypes if c in header}
    pairs, known, start = [], {}, 0
    try:
        blocks = pd.read_csv(path, usecols=[c for c in (*COMPARISON_COLUMNS, "n_responses") if c in header],
                             chunksize=READ_ROWS, keep_default_na=False, na_values=[""],
                             dtype={"annotators": object})  # as written ("007"); pandas 3's str peaked 6x higher
        for block in blocks:
            _check_block(block, path, n, first_line=start + 2)
            end = start + len(block)
            if end > size:
                size = max(end, 2 * size)
                table = {c: np.concatenate([a, np.empty(size - len(a), a.dtype)]) for c, a in table.items()}
            for c, column in table.items():
                column[start:end] = block[c].to_numpy()
            if "annotators" in block:
                block_pairs = _explode_annotators(block["annotators"], known)
                block_pairs["edge"] += start
                pairs.append(block_pairs)
            start = end
    except RunFolderError:
        raise
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path}: cannot read ({exc})") from None
    table = {"edge": np.arange(start), **{c: a[:start] if start == size else a[:start].copy()  # grown: the slack
                                          for c, a in table.items()}}
    table.setdefault("gamma", np.zeros(start))
    table.setdefault("flagged", np.zeros(start, bool))
    comparisons = pd.DataFrame(table, copy=False)  # each column its own block, not copied into one
    if "annotators" not in header:
        return comparisons, None
    return comparisons, (pd.concat(pairs, ignore_index=True) if pairs
                         else _explode_annotators(pd.Series([], dtype=object)))


def _check_block(block: pd.DataFrame, path: Path, n: int, first_line: int) -> None:
    """Raises naming the first line of a block of ``comparisons.csv`` with a value of the wrong kind, or an
    object index outside the ``n`` rows of ``embedding.csv``; makes the indices and counts integers and the flags
    booleans."""
    _check_numbers(block, path, ["votes", "opposing_votes", "gamma"],  # votes: sums of weights, so not whole
                   whole=("i", "j", "l", "k", "n_responses"), flags=("flagged",), first_line=first_line)
    ids = block[list("ijlk")].to_numpy()
    outside = ((ids < 0) | (ids >= n)).any(axis=1)
    if outside.any():
        raise RunFolderError(f"{path} line {int(np.flatnonzero(outside)[0]) + first_line}: object index outside "
                             f"the {n} rows of embedding.csv")


def _check_numbers(table: pd.DataFrame, path: Path, columns, *, whole=(), flags=(), first_line: int = 2) -> None:
    """Raises naming the first line of an edited or cut-off output file whose value is missing or not a finite
    number in ``columns``, not a whole number in ``whole`` (counts and indices, then stored as integers), or
    not True / False in ``flags`` (then stored as booleans); absent columns are skipped.  ``first_line``: the
    file's line of the table's first row (a block of a file read in parts starts further down)."""
    for column in (c for c in (*columns, *whole) if c in table.columns):
        raw = table[column]
        values = (raw if raw.dtype.kind in "iufb" else pd.to_numeric(raw, errors="coerce")).to_numpy(np.float64)
        bad = ~np.isfinite(values)
        if column in whole:
            bad |= np.isfinite(values) & (np.round(values) != values)
        if bad.any():
            _bad_value(table, path, column, int(np.flatnonzero(bad)[0]),
                       "a whole number" if column in whole else "a finite number", first_line)
        if column in whole:
            table[column] = values.astype(np.int64)
    for column in (c for c in flags if c in table.columns):
        if table[column].dtype.kind == "b":
            continue
        text = table[column].astype(str).str.strip().str.lower()
        known = text.isin(["true", "false", "1", "0", "1.0", "0.0"])
        if not known.all():
            _bad_value(table, path, column, int(np.flatnonzero(~known.to_numpy())[0]), "True or False", first_line)
        table[column] = text.isin(["true", "1", "1.0"]).to_numpy()


def _bad_value(table: pd.DataFrame, path: Path, column: str, row: int, wanted: str, first_line: int = 2):
    value = table[column].iloc[row]
    text = wanted != "True or False" and not _is_number(value)
    shown = repr(value) if isinstance(value, str) else f"{value:g}"
    said = "is missing" if pd.isna(value) else f"{shown} is not {'a number' if text else wanted}"
    raise RunFolderError(f"{path} line {row + first_line}: {column} {said}")


def _explode_annotators(column: pd.Series, known: dict | None = None) -> pd.DataFrame:
    """``"a;b"`` per comparison -> ``(edge, annotator)`` pairs, edges numbered from 0 (empty ids dropped).

    Each distinct text is split once, and each id is one string object, shared through ``known`` (id -> itself)
    by the blocks of one file, so a column of Python objects (pandas 2) holds 16 bytes a pair.  Splitting every
    row took 3.2 s and about 500 bytes a row at its peak (10^6 rows, 2,000 annotators).
    """
    codes, texts = factorize(column.to_numpy(dtype=object))  # a missing text: code -1, no pairs
    known = {} if known is None else known
    names = [[known.setdefault(a, a) for a in str(t).split(";") if a] for t in texts]
    if not any(names):
        return pd.DataFrame({"edge": np.empty(0, np.int64), "annotator": np.empty(0, object)})
    per_text = np.array([len(x) for x in names], dtype=np.int64)
    flat = np.empty(int(per_text.sum()), dtype=object)
    flat[:] = [a for x in names for a in x]
    first = np.cumsum(per_text) - per_text  # where each text's ids start in flat
    per_row = np.where(codes >= 0, per_text[codes], 0)
    edge = np.repeat(np.arange(len(codes), dtype=np.int64), per_row)
    within = np.arange(len(edge)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    return pd.DataFrame({"edge": edge, "annotator": flat[np.repeat(first[codes], per_row) + within]})


# Optional bootstrap results written beside the run (``roembed fit --bootstrap``): per-object
# columns of any CSV with an ``object`` column are joined onto the objects (uncertainty.csv:
# stability, dispersion, the region's semi-axes and angle in degrees for p = 2, and those of its shadow on the
# principal plane above).
OBJECT_EXTRAS = ("stability", "dispersion", "axis_major", "axis_minor", "angle", "shadow_major", "shadow_minor",
                 "shadow_angle")


def _merge_object_extras(folder: Path, objects: pd.DataFrame) -> pd.DataFrame:
    known = {"embedding.csv", "comparisons.csv", "outliers.csv", "annotators.csv"}
    for path in sorted(folder.glob("*.csv")):
        if path.name in known:
            continue
        try:
            head = pd.read_csv(path, nrows=0).columns
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        extra = [c for c in OBJECT_EXTRAS if c in head and c not in objects.columns]
        if "object" in head and extra:
            table = pd.read_csv(path, usecols=["object", *extra])
            if table["object"].is_unique:
                objects = objects.merge(table, on="object", how="left")
    return objects


def merge_bootstrap(objects, comparisons, annotators, *, object_table=None, flag_frequency=None,
                    annotator_intervals=None):
    """Joins bootstrap results onto the report's tables: per-object columns (``OBJECT_EXTRAS``,
    by row), each comparison's ``flag_frequency`` (by ``edge``), and the annotators' bootstrap
    interval of agreement (as ``bootstrap_agreement_low/high``)."""
    if object_table is not None:
        extra = [c for c in OBJECT_EXTRAS if c in object_table.columns and c not in objects.columns]
        for c in extra:
            objects[c] = object_table[c].to_numpy()
    if flag_frequency is not None and "flag_frequency" in flag_frequency.columns:
        frequency = pd.Series(flag_frequency["flag_frequency"].to_numpy(), index=flag_frequency["edge"].to_numpy())
        comparisons["flag_frequency"] = frequency.reindex(comparisons["edge"].to_numpy()).to_numpy()
    if annotators is not None and annotator_intervals is not None:
        part = annotator_intervals[["annotator", "agreement_low", "agreement_high"]].rename(
            columns={"agreement_low": "bootstrap_agreement_low", "agreement_high": "bootstrap_agreement_high"})
        part = part.assign(annotator=_as_text(part["annotator"]))
        annotators = annotators.assign(annotator=_as_text(annotators["annotator"])).merge(part, on="annotator",
                                                                                         how="left")
    return objects, comparisons, annotators


def _read_optional(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"annotator": str})
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path}: cannot read ({exc})") from None


def _dimension_curve(folder: Path) -> pd.DataFrame | None:
    """A table of error against dimension (``dimension``/``n_components`` and an ``*error*`` column)."""
    for path in sorted(folder.glob("*dimension*.csv")):
        try:
            table = pd.read_csv(path)
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        dim = next((c for c in ("dimension", "n_components", "dim") if c in table.columns), None)
        err = [c for c in table.columns if "error" in c]
        if dim is not None and err:
            return table.rename(columns={dim: "dimension"})
    return None


# ----------------------------------------------------------------------------- summarising large inputs


def summarise(data: ReportData, max_comparisons: int) -> ReportData:
    """Keeps at most about ``max_comparisons`` comparisons: every object's worst ones.

    Comparisons are ranked worst first (flagged before unflagged, then by ``|gamma|``,
    then those the embedding contradicts); each object keeps its
    ``max(1, max_comparisons // n_objects)`` worst, and the flagged ones fill what
    is left.  A note in the report says what was kept.
    """
    comparisons = data.comparisons
    m = len(comparisons)
    if m <= max_comparisons:
        return data
    n = len(data.objects)
    per_object = max(1, max_comparisons // max(n, 1))
    ranked = _worst_first(data)
    keep = first_of_each_object(*(comparisons[c].to_numpy() for c in "ijlk"), ranked, per_object, n,
                                np.zeros(m, bool))
    room = max_comparisons - int(keep.sum())
    flagged = ranked[comparisons["flagged"].to_numpy(bool)[ranked] & ~keep[ranked]]
    keep[flagged[: max(room, 0)]] = True
    kept = np.flatnonzero(keep)
    pairs = data.edge_annotators
    if pairs is not None:
        new_index = np.full(m, -1)
        new_index[kept] = np.arange(len(kept))
        pairs = pairs[keep[pairs["edge"].to_numpy()]].copy()
        pairs["edge"] = new_index[pairs["edge"].to_numpy()]
    note = (f"{m:,} comparisons are too many to include: this report keeps {len(kept):,}, each object's "
            f"{per_object} worst (flagged first, then by |gamma|, then those the map contradicts) and "
            f"{'all' if room >= len(flagged) else 'the worst'} flagged ones; comparisons.csv has them all.")
    kept_table = comparisons.iloc[kept].reset_index(drop=True)
    kept_table["edge"] = np.arange(len(kept_table))
    return replace(data, comparisons=kept_table, edge_annotators=pairs, notes=(*data.notes, note))


def map_agrees(data: ReportData, block: int = 1 << 18) -> np.ndarray:
    """Whether the map puts each comparison's closer pair closer: ``|x_i - x_j| < |x_l - x_k|``.

    Computed in blocks, as the differences take 2 p floats a comparison; a tie counts as
    disagreeing (the page shows it uncoloured, the summary ranks it among the contradicted).
    """
    c = data.comparisons
    X = data.coordinates
    i, j, l, k = (c[x].to_numpy() for x in "ijlk")
    agrees = np.empty(len(c), bool)
    for start in range(0, len(c), block):
        b = slice(start, start + block)
        agrees[b] = np.linalg.norm(X[i[b]] - X[j[b]], axis=1) < np.linalg.norm(X[l[b]] - X[k[b]], axis=1)
    return agrees


def _worst_first(data: ReportData, block: int = 1 << 18) -> np.ndarray:
    c = data.comparisons
    return np.lexsort((map_agrees(data, block), -np.abs(c["gamma"].to_numpy(float)), ~c["flagged"].to_numpy(bool)))
