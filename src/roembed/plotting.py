"""Pictures of a fit: the embedding, the outliers and the annotators.

Figures are built with :class:`matplotlib.figure.Figure` directly (no pyplot, so
no GUI backend and no global state) and saved atomically with :func:`save_figure`.
Their text is drawn as typed: names, labels and ids come from the data, where ``$`` is a price or a
name (``"$$"``, as mathtext, stopped the drawing: matplotlib's "ParseException"), so no figure parses
mathematics (:func:`_as_typed`).
"""
from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

from ._io import atomic_path


def _drawn(text) -> str:
    """``text`` as drawn: tabs and other control characters (which no font draws) as spaces, newlines kept."""
    return re.sub(r"[\x00-\x09\x0b-\x1f\x7f]", " ", str(text))


def _as_typed(plot):
    """``plot`` with every text it creates drawn as typed (``text.parse_math`` off while it builds the figure)."""
    @functools.wraps(plot)
    def wrapper(*args, **kwargs):
        with rc_context({"text.parse_math": False}):
            return plot(*args, **kwargs)
    return wrapper


OTHER = "other"
#: Above this many objects a map draws the confidence regions of some objects only: all of them hide the points.
MAX_REGIONS = 60
#: Up to this many objects a one-dimensional map names each on its own row (6-point type on a 7-inch figure).
MAX_ROW_NAMES = 70


def order_rows(x: np.ndarray) -> np.ndarray:
    """Each value's place in the sorted order of ``x`` (0 for the smallest; ties by position), as floats."""
    rows = np.empty(len(x))
    rows[np.argsort(x, kind="stable")] = np.arange(len(x))
    return rows


def project_2d(X: np.ndarray) -> tuple[np.ndarray, str]:
    """First two principal coordinates of ``X`` (n x p); returns them and an axis note.

    A one-dimensional map is drawn as a ranked dot plot: the coordinate across, each object on its own row
    in the coordinate's order up the page (on one line the points and their names hid each other)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] < 1 or len(X) == 0:
        raise ValueError(f"expected an (n, p) embedding of one or more objects, got shape {X.shape}")
    if not np.isfinite(X).all():  # (an all-NaN map drew an empty frame)
        raise ValueError(f"the embedding has {np.count_nonzero(~np.isfinite(X).all(axis=1))} object(s) with "
                         "coordinates that are not finite numbers")
    if X.shape[1] == 1:
        return np.column_stack([X[:, 0], order_rows(X[:, 0])]), "coordinate 1, the objects in its order upward"
    if X.shape[1] == 2:
        return X, "coordinates 1-2"
    from .uncertainty import principal_plane

    centred = X - X.mean(axis=0)
    xy = centred @ principal_plane(X)  # a fitted map's own coordinates 1-2 (it is on its principal axes)
    share = (xy ** 2).sum() / max((centred ** 2).sum(), 1e-300)
    return xy, f"principal coordinates 1-2 ({100 * share:.0f}% of variance)"


def axis_titles(X: np.ndarray) -> tuple[str, str]:
    """Titles of the two axes :func:`project_2d` draws: the coordinates, or the principal
    coordinates with the share of the variance each shows."""
    X = np.asarray(X, dtype=np.float64)
    p = X.shape[1]
    if p <= 2:
        return "coordinate 1", "coordinate 2" if p == 2 else "objects in the order of coordinate 1"
    S = np.linalg.svd(X - X.mean(axis=0), compute_uv=False)
    share = S ** 2 / max((S ** 2).sum(), 1e-300)
    return (f"principal coordinate 1 ({100 * share[0]:.0f}% of variance)",
            f"principal coordinate 2 ({100 * share[1]:.0f}%)")


def _spread_labels(xy: np.ndarray, max_labels: int, widths=None, height: float = 0.03) -> np.ndarray:
    """Indices of points to label: greedily, outermost first, skipping a point whose
    label box (``widths[o]`` x ``height`` as fractions of the plot's extent, to the
    right of the point) would overlap a box already placed."""
    span = np.ptp(xy, axis=0)
    unit = (xy - xy.min(axis=0)) / np.where(span > 0, span, 1.0)
    widths = np.full(len(xy), 0.1) if widths is None else np.asarray(widths, dtype=float)
    order = np.argsort(-np.linalg.norm(unit - 0.5, axis=1), kind="stable")
    chosen: list[int] = []
    for o in order:
        if len(chosen) >= max_labels:
            break
        c = np.asarray(chosen, dtype=np.int64)
        x_overlap = (unit[c, 0] < unit[o, 0] + widths[o]) & (unit[o, 0] < unit[c, 0] + widths[c])
        y_overlap = np.abs(unit[c, 1] - unit[o, 1]) < height
        if not (x_overlap & y_overlap).any():
            chosen.append(int(o))
    return np.asarray(chosen, dtype=np.int64)


def _category_colours(labels: Sequence, max_categories: int):
    """Maps labels to colours: the most frequent ``max_categories`` get their own, the rest grey."""
    labels = pd.Series(list(labels), dtype="object").fillna(OTHER).astype(str).replace("", OTHER)
    top = [c for c in labels.value_counts().index if c != OTHER][:max_categories]
    palette = [c for name in ("tab10", "Dark2", "Set1") for c in _cmap_colours(name)]
    colour_of = {c: palette[t % len(palette)] for t, c in enumerate(top)}
    cats = labels.where(labels.isin(top), OTHER)
    return cats.to_numpy(), colour_of


def labels_per_object(labels, names: Sequence | None, numbers: Sequence | None = None) -> list[str]:
    """One label per object (:func:`label_text`) from ``labels``: a sequence in the objects' order, or a mapping or
    a pandas Series (not on a plain ``RangeIndex``) from each object's name (``names``), else its number
    (``numbers``, by default 0, 1, ...), to its label, aligned so (objects without a key unlabelled).  A Series read
    from a table in another order than the objects' gave each object another's label by position; a path was read
    as its characters ("got 53 labels for 412 objects")."""
    numbers = list(range(len(names))) if numbers is None else list(numbers)
    n = len(numbers)
    if isinstance(labels, (str, bytes, os.PathLike)):
        raise TypeError(f"labels: got a text or path ({str(labels)!r}); give one label per object (a list), or a "
                        f"mapping or pandas Series from object name to label, e.g. "
                        f"pd.read_csv(path, sep='\\t').set_index('name')['genre']")
    if isinstance(labels, Mapping) or (isinstance(labels, pd.Series) and not isinstance(labels.index, pd.RangeIndex)):
        given = dict(labels.items())
        for keys in ([list(names)] if names is not None else []) + [numbers]:
            found = [next((given[k] for k in (key, str(key)) if k in given), None) for key in keys]
            if not given or any(v is not None for v in found):
                return [label_text(v) for v in found]
        example = f" ({names[0] if names is not None else numbers[0]!r}, ...)" if n else ""
        raise ValueError(f"labels: none of its {len(given)} keys ({next(iter(given))!r}"
                         f"{', ...' if len(given) > 1 else ''}) is an object's name or number{example}")
    labels = list(labels)
    if len(labels) != n:
        raise ValueError(f"got {len(labels)} labels for {n} objects")
    return [label_text(v) for v in labels]


def label_text(value) -> str:
    """One object's label as text: "" for none (None, NaN); a sequence of labels (an artist's genres, as
    :func:`roembed.load_music_genres` gives them) counts by its first, as ``roembed fit --labels`` reads
    "rock;pop" (as a category, the list's text made one colour per distinct list, and "[]" one more)."""
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=str)
    if isinstance(value, (list, tuple, pd.Series)) or (isinstance(value, np.ndarray) and value.ndim > 0):
        return label_text(list(value)[0]) if len(value) else ""
    return "" if value is None or (np.ndim(value) == 0 and pd.isna(value)) else str(value)  # np.float32 NaN too


#: Labels that mean "no value" in a column of numbers (pandas' usual spellings, as text).
MISSING = ("", "nan", "na", "n/a", "null", "none", "<na>")


def numeric_labels(labels: Sequence, max_categories: int = 10) -> np.ndarray | None:
    """The labels as numbers (NaN where missing) when every given label is a number and there are more distinct
    values than categories get colours, else None.  A measured quantity (a roughness, a year) is then shaded on
    a scale: as categories, ten arbitrary values got colours and every other object was grey "other"."""
    text = pd.Series(list(labels), dtype=object).fillna("").astype(str).str.strip()
    given = ~text.str.lower().isin(MISSING).to_numpy()
    values = pd.to_numeric(text.where(given), errors="coerce").to_numpy(dtype=float)
    if not given.any() or np.isnan(values[given]).any() or len(np.unique(values[given])) <= max_categories:
        return None
    return values


def _cmap_colours(name: str):
    from matplotlib import colormaps

    return list(colormaps[name].colors)


def _plane(X: np.ndarray) -> np.ndarray:
    """The (p, 2) basis :func:`project_2d` projects on (the coordinates for p <= 2, else principal axes)."""
    from .uncertainty import principal_plane

    p = X.shape[1]
    return np.eye(p, 2) if p <= 2 else principal_plane(X)


def _with_region(n: int, uncertainty, cov: np.ndarray, only=None) -> np.ndarray:
    """The objects to draw a region of: used, with a region (``local_uncertainty`` has none for some), and
    among ``only`` when given."""
    used = np.zeros(n, bool)
    used[uncertainty.used_objects] = True
    if only is not None:
        used &= np.isin(np.arange(n), only)
    return used & np.isfinite(cov).all(axis=(1, 2))


def _draw_intervals(ax, xy: np.ndarray, uncertainty, only=None, colour="0.35") -> None:
    """At p = 1 the regions are intervals: a bar along each object's row of the ranked dot plot."""
    from matplotlib.collections import LineCollection

    centres, cov = uncertainty.ellipses_2d()
    drawn = _with_region(len(xy), uncertainty, cov, only)
    half = np.sqrt(np.clip(cov[drawn, 0, 0], 0.0, None))
    rows = xy[drawn, 1]
    bars = np.stack([np.column_stack([centres[drawn, 0] - half, rows]),
                     np.column_stack([centres[drawn, 0] + half, rows])], axis=1)
    # left out of the autoscaling as the ellipses are: the view fits the points
    ax.add_collection(LineCollection(bars, colors=colour, alpha=0.45, linewidths=2.5, zorder=0), autolim=False)


def _draw_regions(ax, X: np.ndarray, uncertainty, only=None, colour="0.35") -> None:
    """Confidence regions as ellipses (their shadows on the plotted plane): every used object, or ``only`` those."""
    from matplotlib.patches import Ellipse

    V = _plane(X)
    centres, cov = uncertainty.ellipses_2d(V)
    if X.shape[1] > 2:
        centres = centres - X.mean(axis=0) @ V  # project_2d centres the principal coordinates
    for o in np.flatnonzero(_with_region(len(X), uncertainty, cov, only)):
        vals, vecs = np.linalg.eigh(cov[o])
        vals = np.sqrt(np.clip(vals, 0.0, None))
        angle = np.degrees(np.arctan2(vecs[1, -1], vecs[0, -1]))
        # an artist, not a patch: clipped to the axes but left out of the autoscaling, so the view fits the points
        # (music's loosest regions widened it twofold, squeezing the points into its middle)
        ax.add_artist(Ellipse(centres[o], 2 * vals[-1], 2 * vals[0], angle=angle, facecolor=colour, alpha=0.08,
                              edgecolor=colour, linewidth=0.6, zorder=0))


@_as_typed
def plot_embedding(X, names: Sequence[str] | None = None, labels: Sequence | None = None, *,
                   max_labels: int = 40, max_categories: int = 10, title: str | None = None,
                   label_title: str | None = None, uncertainty=None, max_regions: int = MAX_REGIONS,
                   figsize=(8.0, 7.0)) -> Figure:
    """Scatter of the embedding (first two coordinates; PCA for p > 2; a ranked dot plot at p = 1).

    ``names`` label up to ``max_labels`` points that do not overlap; ``labels`` (one
    category per object, e.g. a genre; a list of them counts by its first; or keyed by name,
    :func:`labels_per_object`) colour the points, the
    ``max_categories`` most frequent get a colour and a legend entry, the rest are grey "other".
    ``uncertainty`` (a :class:`~roembed.uncertainty.BootstrapResult` or
    :class:`~roembed.sandwich.LocalUncertaintyResult` of this embedding) draws
    each object's confidence region (for p > 2 the shadow of its ellipsoid on the plane, at p = 1 an interval
    on the object's row of the ranked dot plot :func:`project_2d` draws); with more than ``max_regions`` objects
    in two or more dimensions, only those of the named (or, unnamed, of a spread of) objects.

    ``X``: the coordinates, or a fitted estimator (its ``embedding_``, named by its ``object_names_``), or the
    table ``transform()`` gives after ``set_output(transform="pandas")`` (named by its index of names).
    """
    if hasattr(X, "embedding_"):  # plot_embedding(est)
        names = getattr(X, "object_names_", None) if names is None else names
        X = X.embedding_
    elif isinstance(X, pd.DataFrame) and X.index.name == "name" and names is None:
        names = [str(name) for name in X.index]
    X = np.asarray(X, dtype=np.float64)
    xy = project_2d(X)[0]
    n = len(xy)
    if uncertainty is not None and not hasattr(uncertainty, "ellipses_2d"):
        raise TypeError("uncertainty must be the result of roembed.bootstrap or roembed.local_uncertainty, got "
                        f"{type(uncertainty).__name__}")
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    if uncertainty is not None:
        widths = None if names is None else [0.011 * len(str(s)) + 0.015 for s in names]
        crowded = n > max_regions and X.shape[1] > 1  # at p = 1 each bar has its own row: all drawn
        only = _spread_labels(xy, min(max_labels, max_regions), widths) if crowded else None
        if X.shape[1] == 1:
            _draw_intervals(ax, xy, uncertainty, only)
        else:
            _draw_regions(ax, X, uncertainty, only)
    if labels is not None:
        labels = labels_per_object(labels, names, range(n))
        values = numeric_labels(labels, max_categories)
        if values is not None:  # a scale, with the objects without a value grey
            none = np.isnan(values)
            ax.scatter(xy[none, 0], xy[none, 1], s=14, color="0.75", zorder=1)
            shaded = ax.scatter(xy[~none, 0], xy[~none, 1], s=22, c=values[~none], cmap="viridis", zorder=2)
            fig.colorbar(shaded, ax=ax, shrink=0.6, label=label_title)
        else:
            cats, colour_of = _category_colours(labels, max_categories)
            grey = cats == OTHER
            ax.scatter(xy[grey, 0], xy[grey, 1], s=14, color="0.75", label=f"{OTHER} / none", zorder=1)
            for c, colour in colour_of.items():
                sel = cats == c
                ax.scatter(xy[sel, 0], xy[sel, 1], s=22, color=colour, label=f"{c} ({sel.sum()})", zorder=2)
            ax.legend(title=label_title, fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5),
                      frameon=False)
    else:
        ax.scatter(xy[:, 0], xy[:, 1], s=18, color="C0")
    if names is not None and len(names) != n:
        raise ValueError(f"got {len(names)} names for {n} objects")
    if names is None:  # unnamed objects: their row numbers, to look them up in embedding.csv
        names = [f"#{o}" for o in range(n)]
    widths = [0.011 * len(str(s)) + 0.015 for s in names]  # ~ text width at fontsize 7
    if X.shape[1] == 1 and n <= MAX_ROW_NAMES:  # a ranked dot plot names every row
        ax.set_yticks(xy[:, 1], [_drawn(name) for name in names], fontsize=min(8.0, 420 / max(n, 1)))
    else:
        for o in _spread_labels(xy, max_labels, widths):
            ax.annotate(_drawn(names[o]), xy[o], xytext=(3, 3), textcoords="offset points", fontsize=7, color="0.2")
    xlabel, ylabel = axis_titles(X)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if X.shape[1] > 1:  # at p = 1 the rows are places in an order, not distances
        ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(title or f"Embedding of {n} objects")
    return fig


@_as_typed
def plot_dimension_selection(selection, *, title: str | None = None, figsize=(6.0, 4.0)) -> Figure:
    """Held-out error against the dimension (:func:`roembed.dimension.select_dimension`), with the
    one-standard-error bars of the paired differences to the best and the chosen dimension marked."""
    t = selection.table
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    ax.errorbar(t["n_components"], t["error"], yerr=t["se_vs_best"], marker="o", color="C0", capsize=3)
    chosen = t[t["chosen"]]
    ax.scatter(chosen["n_components"], chosen["error"], s=120, facecolor="none", edgecolor="C3", zorder=3,
               label=f"chosen: {selection.n_components} ({selection.rule})")
    ax.set_xlabel("dimension")
    ax.set_ylabel("held-out error (grouped CV)")
    ax.set_xticks(t["n_components"].tolist())
    ax.legend(frameon=False)
    ax.set_title(title or "Error against dimension")
    return fig


@_as_typed
def plot_flag_frequency(flags: pd.DataFrame, *, title: str | None = None, figsize=(6.0, 4.0)) -> Figure:
    """Histogram of how often each comparison is flagged across bootstrap replicates, split by
    whether the full fit flags it (:meth:`roembed.uncertainty.BootstrapResult.flag_frequency`)."""
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    bins = np.linspace(0, 1, 21)
    freq = flags["flag_frequency"].to_numpy(dtype=float)
    full = flags["flagged_in_full_fit"].to_numpy(dtype=bool)
    ok = ~np.isnan(freq)
    ax.hist([freq[ok & ~full], freq[ok & full]], bins=bins, stacked=True, color=["0.6", "C3"],
            label=[f"not flagged by the full fit ({(~full).sum()})", f"flagged by the full fit ({full.sum()})"])
    ax.set_yscale("log")
    ax.set_xlabel("share of replicates that flag the comparison")
    ax.set_ylabel("comparisons")
    ax.legend(frameon=False, fontsize="small")
    ax.set_title(title or "Outlier flags across bootstrap replicates")
    return fig


@_as_typed
def plot_outliers(estimator, *, n_shown: int = 8, title: str | None = None, figsize=(13.0, 6.0)) -> Figure:
    """Left: histogram of the outlier shifts ``|gamma_c|`` of the flagged edges.  Right: the
    ``n_shown`` most suspicious comparisons, one small map each (the embedding in grey,
    zoomed to the comparison): a solid red segment joins the pair the voters called
    *closer*, a dashed one the pair they called *farther* -- for a flagged comparison the
    map says the opposite.  Each panel names its objects and gives the votes and gamma."""
    if isinstance(n_shown, bool) or not isinstance(n_shown, (int, np.integer)) or n_shown < 0:
        raise ValueError(f"n_shown must be an integer >= 0, got {n_shown!r}")
    gamma = np.abs(np.asarray(estimator.gamma_, dtype=np.float64))
    mask = np.asarray(estimator.outlier_mask_, bool)
    graph = estimator.graph_
    xy, axis_note = project_2d(estimator.embedding_)
    flagged = np.flatnonzero(mask)
    top = flagged[np.argsort(-gamma[flagged], kind="stable")][:n_shown]
    fig = Figure(figsize=figsize, layout="constrained")
    columns = max(1, (n_shown + 1) // 2)
    grid = fig.add_gridspec(2, columns + 1, width_ratios=[1.6] + [1] * columns)
    ax_hist = fig.add_subplot(grid[:, 0])
    if mask.any():
        ax_hist.hist(gamma[mask], bins=40, color="C3")
    from matplotlib.ticker import MaxNLocator

    ax_hist.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax_hist.set_xlabel("outlier shift |γ| of a flagged comparison")
    ax_hist.set_ylabel("flagged comparisons")
    ax_hist.set_title(f"{mask.sum():,} of {len(mask):,} comparisons flagged ({100 * mask.mean():.1f}%)",
                      fontsize="medium")
    names = graph.object_names
    quadruplets = graph.edge_quadruplets(top)  # the shown edges' only: all of them, 32 bytes an edge, stayed cached
    votes, opposing = graph.votes[top], graph.opposing_votes[top]
    spans = np.ptp(xy, axis=0) if len(xy) else np.ones(2)
    one_dimension = np.asarray(estimator.embedding_).shape[1] == 1  # rows of a ranked dot plot: no distance
    for rank in range(min(n_shown, 2 * columns)):
        ax = fig.add_subplot(grid[rank // columns, 1 + rank % columns])
        ax.set_xticks([])
        ax.set_yticks([])
        if rank >= len(top):
            ax.set_axis_off()
            continue
        e = top[rank]
        i, j, l, k = (int(v) for v in quadruplets[rank])
        members = np.unique([i, j, l, k])
        centre = xy[members].mean(axis=0)
        reach = np.abs(xy[members] - centre).max(axis=0) * 1.35
        half = np.maximum(reach, 0.08 * spans) if one_dimension else np.full(2, max(reach.max(), 0.08 * spans.max()))
        ax.scatter(xy[:, 0], xy[:, 1], s=4, color="0.82", zorder=1, rasterized=len(xy) > 2000)
        ax.plot(xy[[i, j], 0], xy[[i, j], 1], color="C3", lw=2, zorder=3, solid_capstyle="round")
        ax.plot(xy[[l, k], 0], xy[[l, k], 1], color="0.25", lw=1.2, ls="--", zorder=3)
        ax.scatter(xy[members, 0], xy[members, 1], s=22, color="k", zorder=4)
        for o in members:
            text = _drawn(names[o]) if names is not None else f"#{o}"
            ax.annotate(text if len(text) <= 18 else text[:17] + "…", xy[o], xytext=(3, 3),
                        textcoords="offset points", fontsize=7, zorder=5,
                        bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.7))
        ax.set_xlim(centre[0] - half[0], centre[0] + half[0])
        ax.set_ylim(centre[1] - half[1], centre[1] + half[1])
        if not one_dimension:
            ax.set_aspect("equal")
        ax.set_title(f"{rank + 1}. votes {votes[rank]:g} for, {opposing[rank]:g} against\n"
                     f"|γ| = {gamma[e]:.2f}", fontsize=8)
    if len(top):
        from matplotlib.lines import Line2D

        fig.legend(handles=[Line2D([], [], color="C3", lw=2, label="pair called closer"),
                            Line2D([], [], color="0.25", lw=1.2, ls="--", label="pair called farther")],
                   loc="outside lower right", ncols=2, fontsize="small", frameon=False)
    fig.suptitle(title or f"Outliers: the {len(top)} most suspicious comparisons on the map ({axis_note})")
    return fig


@_as_typed
def plot_annotators(table: pd.DataFrame, *, n_named: int = 10, title: str | None = None,
                    figsize=(9.5, 5.5)) -> Figure:
    """Agreement of each annotator with the embedding (with its interval) against
    their number of votes; suspects in red, those who favour one screen position (``position_biased``)
    ringed, the ``n_named`` least reliable named."""
    from .annotators import suspect_threshold

    t = table.reset_index(drop=True)
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    yerr = np.vstack([t["agreement"] - t["agreement_low"], t["agreement_high"] - t["agreement"]])
    yerr = np.clip(np.nan_to_num(yerr), 0.0, None)  # an interval from elsewhere may miss its centre by rounding
    for flag, colour, label in ((False, "C0", "reliable"), (True, "C3", "suspect")):
        sel = (t["suspect"] == flag).to_numpy()
        if sel.any():
            ax.errorbar(t.loc[sel, "n_votes"], t.loc[sel, "agreement"], yerr=yerr[:, sel], fmt="o", ms=3.5,
                        color=colour, ecolor=colour, elinewidth=0.7, alpha=0.8,
                        label=f"{label} ({sel.sum()})")
    if "position_biased" in t and t["position_biased"].astype(bool).any():
        sel = t["position_biased"].astype(bool).to_numpy()
        ax.scatter(t.loc[sel, "n_votes"], t.loc[sel, "agreement"], s=70, facecolors="none", edgecolors="C1",
                   linewidths=1.0, label=f"favours one screen position ({sel.sum()})")
    threshold = table.attrs.get("reference_agreement")
    if threshold is None:  # a table read back from annotators.csv: the rule's reference from its columns
        threshold = suspect_threshold(t["agreement"], t["n_units"] if "n_units" in t else None)
    ax.axhline(threshold, color="C3", lw=0.8, ls="--", label=f"reference {threshold:.2f} (suspect: shown below)")
    ax.axhline(0.5, color="0.5", lw=0.8, ls=":", label="chance (0.5)")
    for r in range(min(n_named, len(t))):
        ax.annotate(_drawn(t.loc[r, "annotator"]), (t.loc[r, "n_votes"], t.loc[r, "agreement"]),
                    xytext=(4, -3), textcoords="offset points", fontsize=7)
    if t["n_votes"].max() > 20 * max(t["n_votes"].min(), 1):
        ax.set_xscale("log")
    ax.set_xlabel("votes given")
    ax.set_ylabel("agreement with the embedding (95% Wilson interval)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(title or f"Reliability of {len(t)} annotators")
    return fig


_MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from (current )?font")  # matplotlib 3.7: "current font"


def save_figure(fig: Figure, path, formats: Sequence[str] = ("png",), dpi: int = 150) -> list[Path]:
    """Saves ``fig`` as ``path`` with each suffix in ``formats``, atomically; returns the paths.

    Characters the font lacks (an emoji in a name) are drawn as boxes; matplotlib warns once per character, with
    its own source line, and these become one warning naming the file and the characters."""
    written = []
    for fmt in formats:
        target = Path(path).with_suffix(f".{fmt.lstrip('.')}")
        with atomic_path(target) as tmp, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig.savefig(tmp, format=fmt.lstrip("."), dpi=dpi)
        missing = []
        for w in caught:
            found = _MISSING_GLYPH.search(str(w.message))
            if found is None:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            elif chr(int(found.group(1))) not in missing:
                missing.append(chr(int(found.group(1))))
        if missing:
            shown = ", ".join(repr(c) for c in missing[:5]) + (", ..." if len(missing) > 5 else "")
            warnings.warn(f"{target.name}: the font has no glyph for {shown} in the names or labels drawn: "
                          "they show as boxes (the CSV files and the report keep them)", UserWarning, stacklevel=2)
        written.append(target)
    return written


__all__ = ["plot_embedding", "plot_outliers", "plot_annotators", "save_figure", "project_2d", "axis_titles"]
