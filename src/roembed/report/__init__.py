"""One self-contained HTML file per fit: the embedding, its comparisons, outliers and annotators.

``write_report(estimator, "fit.html")`` on a fitted estimator, or
``write_report("out/", "out/report.html")`` on a ``roembed fit`` output folder
(``roembed report OUT`` on the command line).  The file is a Bokeh standalone
page with Bokeh's JavaScript and all data inline: it opens offline, with no
Python, no server and no network request.  Inputs with more than
``max_comparisons`` comparisons are summarised (each object's worst ones, see
:func:`roembed.report.data.summarise`) and the report says so.
"""
from __future__ import annotations

import numbers
from pathlib import Path

from .._io import atomic_write
from .data import OUTPUT_FORMAT, ReportData, RunFolderError, comparison_table, from_estimator, labels_column, \
    read_run, summarise

#: Comparisons kept in a report before summarising (10^6 triplets of 10^4 objects fit in ~15 MB).
MAX_COMPARISONS = 1_000_000


def _check_options(*, title, label_title, bootstrap, max_comparisons) -> None:
    """The keyword options of :func:`write_report` that are read late, refused by name before any work (a number as
    ``title`` was "'int' object has no attribute 'replace'")."""
    for name, value in (("title", title), ("label_title", label_title)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be text, got {value!r}")
    if bootstrap is not None and not callable(getattr(bootstrap, "flag_frequency", None)):  # a BootstrapResult
        raise TypeError(f"bootstrap must be the result of roembed.bootstrap, got {type(bootstrap).__name__}")
    if isinstance(max_comparisons, bool) or not isinstance(max_comparisons, numbers.Integral) or max_comparisons < 1:
        raise ValueError(f"max_comparisons must be a positive integer, got {max_comparisons!r}")


def write_report(source, path, *, labels=None, label_title: str | None = None, thumbnails=None, axes=None,
                 title: str | None = None, summary: dict | None = None, annotators=None, object_ids=None,
                 bootstrap=None, max_comparisons: int = MAX_COMPARISONS) -> Path:
    """Writes the report of ``source`` (a fitted estimator, or a run folder) to ``path``.

    Parameters
    ----------
    source : fitted estimator or path
        An estimator with ``embedding_`` and ``graph_`` (robust ones add ``gamma_``
        and annotators), or a folder written by ``roembed fit``.
    labels : sequence, mapping or pandas Series, optional
        One category per object to colour by, in the objects' order, or keyed by object name (else number), as
        :func:`roembed.plotting.labels_per_object` aligns them; over a run folder's own labels.
    label_title : str, optional
        Name of the label (the legend's title).
    thumbnails : folder, or sequence of URLs/paths, optional
        Images shown on hover; see :func:`roembed.report.thumbnails.thumbnail_column`.
    axes : pair of int, optional
        The coordinates to show (0-based); default: both coordinates when p <= 2,
        else the first two principal coordinates.
    title : str, optional
        Page title.
    summary : dict, optional
        Settings and results to list (a run folder's ``summary.json`` is used as is).
    annotators : DataFrame, optional
        Annotator table to show instead of ``estimator.annotators_``.
    object_ids : array, optional
        The input's id of each fitted object, when only the used ids were fitted.
    bootstrap : BootstrapResult, optional
        :func:`roembed.uncertainty.bootstrap` of this fit: stability on hover, 90% regions
        (p = 2), each comparison's flag frequency, annotators' bootstrap intervals.  A run
        folder's bootstrap tables (``roembed fit --bootstrap``) are read from the folder.
    max_comparisons : int
        Above this many comparisons, keep each object's worst ones (noted in the report).

    Returns the path written (atomically).
    """
    _check_options(title=title, label_title=label_title, bootstrap=bootstrap, max_comparisons=max_comparisons)
    data = _data(source, labels=labels, summary=summary, annotators=annotators, object_ids=object_ids,
                 bootstrap=bootstrap)
    if label_title:  # the labels' own title, also over a run folder's (its labels or "unlinked groups")
        data.summary["label_column"] = label_title
    if thumbnails is not None:
        from .thumbnails import thumbnail_column

        data.objects["thumbnail"] = thumbnail_column(thumbnails, data.objects)
    return write_data(data, path, axes=axes, title=title, max_comparisons=max_comparisons)


def write_data(data: ReportData, path, *, axes=None, title=None, max_comparisons: int = MAX_COMPARISONS) -> Path:
    """Writes the report of already gathered :class:`ReportData`."""
    from .page import render

    page = render(summarise(data, max_comparisons), axes=axes, title=title)
    path = Path(path).expanduser()
    with atomic_write(path, encoding="utf-8") as fh:
        fh.write(page)
    return path


def _data(source, **options) -> ReportData:
    if isinstance(source, ReportData):
        return source
    if isinstance(source, (str, Path)):
        if any(options.get(k) is not None for k in ("summary", "annotators", "object_ids", "bootstrap")):
            raise TypeError("summary=, annotators=, object_ids= and bootstrap= are for an estimator; "
                            "a run folder has its own")
        data = read_run(source)
        if options.get("labels") is not None:
            objects = data.objects
            names = objects["name"].astype(str).tolist()
            data.objects["label"] = labels_column(options["labels"], names if any(names) else None,
                                                  objects["object"].tolist())
        return data
    if not hasattr(source, "embedding_") or not hasattr(source, "graph_"):
        raise TypeError(f"write_report needs a fitted estimator or a run folder, got {type(source).__name__}")
    return from_estimator(source, **options)


__all__ = ["write_report", "write_data", "read_run", "from_estimator", "summarise", "comparison_table",
           "ReportData", "RunFolderError", "OUTPUT_FORMAT", "MAX_COMPARISONS"]
