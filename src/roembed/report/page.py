"""The report page: one Bokeh standalone HTML file with everything inline.

Layout: the embedding (pan, zoom, hover, tap) beside the table of the chosen
object's or annotator's comparisons; tabs with the outlier table, the annotator
table, a searchable object table and, when present, the dimension curve; then
the run's summary and an index of all object names (plain HTML, so the
browser's find works on names).  The callbacks (``callbacks.js``) only copy
rows of the embedded tables into the shown ones.
"""
from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics import describe_flags_by_vote
from .data import ReportData, map_agrees

OTHER = "other"
MAX_CATEGORIES = 10
MAX_OUTLIER_ROWS = 5000
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",  # matplotlib's tab10 = Category10,
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")   # as in the static pictures
GREY = "#c7c7c7"


class AxesError(ValueError):
    """Axes that are not two different coordinates of the fit (``axes``: the 0-based pair; ``p``: the dimension)."""

    def __init__(self, axes, p: int):
        shown = tuple(v.item() if isinstance(v, np.generic) else v for v in np.ravel(axes))  # not np.int64(5)
        super().__init__(f"axes must be two different coordinates in 0..{p - 1}, got {shown}")
        self.axes, self.p = tuple(axes), p


def project(data: ReportData, axes=None) -> tuple[np.ndarray, tuple[str, str]]:
    """The shown 2-D positions and axis titles: coordinates ``axes`` (0-based pair), or
    by default the coordinates themselves for p <= 2 and the first two principal ones above."""
    from ..plotting import axis_titles, project_2d

    X = data.coordinates
    p = X.shape[1]
    if axes is not None:
        a, b = (int(v) for v in axes)
        if not (0 <= a < p and 0 <= b < p) or a == b:
            raise AxesError(axes, p)
        return X[:, [a, b]], (f"coordinate {a + 1}", f"coordinate {b + 1}")
    return project_2d(X)[0], axis_titles(X)


def categories(labels: pd.Series) -> tuple[np.ndarray, list[str], list[str]]:
    """Each object's colour category: its label if among the ``MAX_CATEGORIES`` most
    frequent, else ``"other"``; returns the categories, the factors and their colours."""
    labels = labels.fillna("").astype(str)
    counts = labels[labels != ""].value_counts()
    top = list(counts.index[:MAX_CATEGORIES])
    cats = np.where(labels.isin(top), labels, OTHER).astype(object)
    factors = top + ([OTHER] if (cats == OTHER).any() else [])
    colours = list(PALETTE[: len(top)]) + ([GREY] if OTHER in factors else [])
    return cats, factors, colours


def _compact(values: np.ndarray) -> np.ndarray:
    """Integer arrays in the smallest type Bokeh sends as binary (uint8/uint16/int32)."""
    values = np.asarray(values)
    if values.size and values.min() >= 0 and values.max() < 2 ** 8:
        return values.astype(np.uint8)
    if values.size and values.min() >= 0 and values.max() < 2 ** 16:
        return values.astype(np.uint16)
    return values.astype(np.int32)


def _counts(values: np.ndarray) -> np.ndarray:
    """Vote counts compactly when they are whole numbers, else float32."""
    values = np.asarray(values, dtype=np.float64)
    return _compact(values.astype(np.int64)) if np.array_equal(values, np.round(values)) else values.astype(np.float32)


def comparison_text(data: ReportData, rows: np.ndarray) -> list[str]:
    """``"a" closer to "b" than to "c"`` (triplet) or ``d(a, b) < d(c, d)`` per comparison."""
    names = data.objects["name"].astype(str)
    names = names.where(names != "", "#" + data.objects["object"].astype(str)).to_numpy(dtype=object)
    q = data.comparisons[list("ijlk")].to_numpy()[rows]
    i, j, l, k = (names[q[:, c]] for c in range(4))
    triplet = q[:, 0] == q[:, 2]
    return [f"{a} closer to {b} than to {d}" if t else f"d({a}, {b}) < d({c}, {d})"
            for a, b, c, d, t in zip(i, j, l, k, triplet)]


def _table(source, columns, *, width, height, name=None):
    from bokeh.models import DataTable, NumberFormatter, TableColumn

    cols = []
    for field, title, kind, w in columns:
        formatter = NumberFormatter(format={"float": "0.000", "int": "0,0", "count": "0,0.[000]"}[kind]) \
            if kind in ("float", "int", "count") else None
        cols.append(TableColumn(field=field, title=title, width=w, **({"formatter": formatter} if formatter else {})))
    return DataTable(source=source, columns=cols, width=width, height=height, sortable=True, selectable=True,
                     index_position=None, name=name, autosize_mode="none", reorderable=False)


#: Above MAX_REGIONS objects, every region is still drawn while together they cover the points' bounding box at
#: most this many times over (material, 100 objects: 1.3; music, 400: 61; THINGS at 10 replicates: 180).
MAX_REGION_COVER = 2.0


#: The columns of the regions drawn on the map: the regions themselves at p = 2, their shadows on the principal
#: plane above (``UncertaintyRegions.objects``).
REGION_COLUMNS = {2: ("axis_major", "axis_minor", "angle"), 3: ("shadow_major", "shadow_minor", "shadow_angle")}


def _region_cover(objects: pd.DataFrame, xy: np.ndarray, columns=REGION_COLUMNS[2]) -> float:
    """The regions' (``columns``: semi-axes, angle) summed area over the area of the box around the objects with
    comparisons."""
    major, minor = (objects[c].to_numpy() for c in columns[:2])
    used = (objects["n_responses"].to_numpy() > 0) & ~np.isnan(major)
    if not used.any():
        return 0.0
    area = float(np.sum(np.pi * major[used] * minor[used]))
    box = float(np.prod(np.ptp(xy[used], axis=0)))
    return area / box if box > 0 else np.inf


def _label_legend(points, cats: np.ndarray, factors: list[str], used: np.ndarray, title: str):
    """The labels' legend: most frequent first, each with its count of drawn objects, as the static plot's.  Not
    clickable: Bokeh hides a whole renderer for any entry of a grouped legend, so a click on one label hid them all."""
    from bokeh.core.property.vectorization import value
    from bokeh.models import Legend, LegendItem

    drawn = pd.Series(cats[used]).value_counts()
    first = {c: int(used[cats[used] == c][0]) for c in factors if drawn.get(c, 0)}
    items = [LegendItem(label=value(f"{c} ({drawn[c]})"), renderers=[points], index=first[c])
             for c in factors if c in first]
    return Legend(items=items, title=title, location="top_left", label_text_font_size="8pt",
                  background_fill_alpha=0.6)


def build(data: ReportData, *, axes=None, title: str | None = None):
    """The Bokeh layout of the report and the HTML around it (header, summary, index)."""
    from bokeh.layouts import column, row
    from bokeh.models import (CDSView, ColorBar, ColumnDataSource, CustomJS, Div, HoverTool, IndexFilter, LabelSet,
                              Legend, LegendItem, TabPanel, Tabs, TapTool, TextInput)
    from bokeh.palettes import Viridis256
    from bokeh.plotting import figure
    from bokeh.transform import factor_cmap, linear_cmap

    from ..plotting import MAX_REGIONS, numeric_labels

    objects, comparisons = data.objects, data.comparisons
    n, m = len(objects), len(comparisons)
    xy, (xlabel, ylabel) = project(data, axes)
    cats, factors, colours = categories(objects["label"])
    has_labels = bool((objects["label"] != "").any())
    object_data = {"x": xy[:, 0], "y": xy[:, 1], "name": objects["name"].astype(str).tolist(),
                   "label": objects["label"].astype(str).tolist(), "category": cats.tolist(),
                   "n": _compact(objects["n_comparisons"].to_numpy()), "responses": _compact(objects["n_responses"].to_numpy()),
                   "object": _compact(np.arange(n))}
    tooltips = [("object", "@name (#@object)")] + ([("label", "@label")] if has_labels else []) + \
        [("comparisons", "@n (@responses responses)")]
    for extra in ("stability", "dispersion"):  # from a bootstrap
        if extra in objects:
            object_data[extra] = objects[extra].to_numpy(np.float32)
            tooltips.append((extra, f"@{extra}{{0.000}}"))
    if "thumbnail" in objects:
        object_data["thumbnail"] = objects["thumbnail"].fillna("").astype(str).tolist()
    source = ColumnDataSource(object_data, name="objects")

    q = comparisons[list("ijlk")].to_numpy()
    flagged = comparisons["flagged"].to_numpy(bool)
    gamma = comparisons["gamma"].to_numpy(np.float64)
    X = data.coordinates
    agrees = map_agrees(data)
    # about 9 bytes per comparison (+3 per annotator vote) before base64: small integer types,
    # l only for quadruplets, the two flags in one byte, gamma only where it is not 0
    columns = {"i": _compact(q[:, 0]), "j": _compact(q[:, 1]), "k": _compact(q[:, 3]),
               "votes": _counts(comparisons["votes"]), "opposing": _counts(comparisons["opposing_votes"]),
               "flags": (agrees.astype(np.uint8) | (flagged.astype(np.uint8) << 1))}
    if (q[:, 2] != q[:, 0]).any():
        columns["l"] = _compact(q[:, 2])
    nonzero = np.flatnonzero(gamma != 0)
    gamma_source = ColumnDataSource({"edge": nonzero.astype(np.int32), "value": gamma[nonzero].astype(np.float32)},
                                    name="gamma")
    annotator_names, pair_source, annotator_source = [], None, None
    if data.edge_annotators is not None:
        known = [] if data.annotators is None else data.annotators["annotator"].astype(str).tolist()
        extra = sorted(set(data.edge_annotators["annotator"].unique().tolist()) - set(known))
        annotator_names = known + extra
        pairs = data.edge_annotators.sort_values("edge", kind="stable")
        codes = pd.Index(annotator_names).get_indexer(pairs["annotator"].to_numpy(dtype=object))
        columns["n_annotators"] = _compact(np.bincount(pairs["edge"].to_numpy(), minlength=m))
        pair_source = ColumnDataSource({"code": _compact(codes)}, name="edge_annotators")

    # ---- the map
    tools = "pan,wheel_zoom,box_zoom,reset,save"
    one_dimension = X.shape[1] == 1  # a ranked dot plot (project): its rows are no distances
    plot = figure(width=680, height=620, tools=tools, active_scroll="wheel_zoom", match_aspect=not one_dimension,
                  x_axis_label=xlabel, y_axis_label=ylabel, name="map",
                  output_backend="webgl" if n > 5000 else "canvas",
                  title=title or f"{n:,} objects, {m:,} comparisons (click an object)")
    size = 9 if n <= 1000 else 6 if n <= 10000 else 3
    label_title = data.summary.get("label_column") or "label"
    values = numeric_labels(objects["label"], MAX_CATEGORIES) if has_labels else None
    if values is not None:  # a measured quantity: shaded on a scale, as in embedding.png
        source.data["value"] = values.astype(np.float32)
        drawn = values[(objects["n_responses"].to_numpy() > 0) & ~np.isnan(values)]  # the scale of the drawn
        drawn = drawn if len(drawn) else values[~np.isnan(values)]  # objects (of all when none of them has one)
        colour = linear_cmap("value", Viridis256, low=float(drawn.min()), high=float(drawn.max()), nan_color=GREY)
    else:
        colour = factor_cmap("category", palette=colours, factors=factors) if has_labels else PALETTE[0]
    regions_note = ""
    level = (data.summary.get("bootstrap") or {}).get("confidence", 0.9)
    region = REGION_COLUMNS.get(min(X.shape[1], 3))  # none at p = 1: intervals
    on_their_plane = axes is None or (X.shape[1] == 2 and tuple(axes) == (0, 1))  # where they were computed
    if one_dimension and "axis_major" in objects.columns:  # intervals, each on its object's row: all drawn
        regions_note = (f" The bar through an object is its {100 * level:.0f}% interval from the bootstrap: where it "
                        "may lie, given the answers.")
        half = objects["axis_major"].to_numpy(np.float64)
        source.data.update({"left": (xy[:, 0] - half).astype(np.float32),
                            "right": (xy[:, 0] + half).astype(np.float32)})
        plot.segment(x0="left", y0="y", x1="right", y1="y", source=source, line_width=3, line_alpha=0.3,
                     color=colour)
    elif region and set(region) <= set(objects.columns) and on_their_plane:  # bootstrap regions (their shadows)
        major, minor, angle = region
        every = len(objects) <= MAX_REGIONS or _region_cover(objects, xy, region) <= MAX_REGION_COVER
        shadow = " (its shadow on this plane)" if X.shape[1] > 2 else ""
        regions_note = (f" The shaded ellipse around {'an' if every else 'a chosen'} object "
                        f"is its {100 * level:.0f}% region from the bootstrap{shadow}: where it may lie, given the "
                        "answers.")
        source.data.update({"width": 2 * objects[major].to_numpy(np.float32),
                            "height": 2 * objects[minor].to_numpy(np.float32),
                            "angle": np.radians(objects[angle].to_numpy(np.float64)).astype(np.float32)})
        regions = plot.ellipse("x", "y", width="width", height="height", angle="angle", source=source,
                               fill_alpha=0.08, line_alpha=0.35, color=colour)
        if not every:  # all of them hid the points (THINGS: a solid blot): the chosen object's only
            regions.glyph.update(fill_alpha=0, line_alpha=0)
            regions.selection_glyph = regions.glyph.clone()  # clone(**changes) needs Bokeh 3.5
            regions.selection_glyph.update(fill_alpha=0.15, line_alpha=0.6)
            regions.nonselection_glyph = regions.glyph.clone()
    used = np.flatnonzero(objects["n_responses"].to_numpy() > 0)
    points = plot.scatter("x", "y", source=source, view=CDSView(filter=IndexFilter(indices=used.astype(np.int32))),
                          size=size, color=colour, line_color="white", line_width=0.5,
                          alpha=0.85, nonselection_alpha=0.4, selection_line_color="black",
                          selection_line_width=2)
    plot.x_range.renderers = plot.y_range.renderers = [points]  # the points fill the view; a loose region may not
    if values is not None:
        plot.add_layout(ColorBar(color_mapper=colour.transform, title=label_title, width=12), "right")
    label_legend = has_labels and values is None
    if label_legend:
        plot.add_layout(_label_legend(points, cats, factors, used, label_title),
                        "right")  # beside the map, where it hides no object (inside, a dozen labels covered a corner)
    hover = HoverTool(renderers=[points], tooltips=_tooltip_html(tooltips) if "thumbnail" in object_data
                      else tooltips)
    plot.add_tools(hover, TapTool(renderers=[points]))
    near_source = ColumnDataSource({"x0": [], "y0": [], "x1": [], "y1": [], "colour": []}, name="near_segments")
    far_source = ColumnDataSource({"x0": [], "y0": [], "x1": [], "y1": []}, name="far_segments")
    far_style = dict(color="#555555", line_width=1, line_dash="dashed", line_alpha=0.7)
    plot.segment("x0", "y0", "x1", "y1", source=far_source, **far_style)
    plot.segment("x0", "y0", "x1", "y1", source=near_source, color="colour", line_width=2, line_alpha=0.85)
    # the key's own one-row renderer draws nothing (NaN) but gives the legend its dashed line before any click:
    # Bokeh draws no legend glyph for a renderer whose source is empty, as far_source is until an object is chosen
    far_key = plot.segment(x0=[np.nan], y0=[np.nan], x1=[np.nan], y1=[np.nan], **far_style)
    if not label_legend:  # beside the map, as the labels' legend (inside, it covered a corner's objects)
        plot.add_layout(Legend(location="top_left", background_fill_alpha=0.6), "right")
    plot.legend[0].items.append(LegendItem(label="called farther", renderers=[far_key]))
    marked = ColumnDataSource({"x": [], "y": [], "name": []}, name="marked")
    plot.scatter("x", "y", source=marked, size=size + 6, fill_color=None, line_color="black", line_width=1.5)
    plot.add_layout(LabelSet(x="x", y="y", text="name", source=marked, x_offset=6, y_offset=4,
                             text_font_size="9pt", background_fill_color="white", background_fill_alpha=0.7))

    # ---- the chosen comparisons
    shown = ColumnDataSource({c: [] for c in ("edge", "text", "votes", "opposing", "gamma", "flagged", "agrees",
                                              "annotators", "frequency")}, name="shown")
    if "flag_frequency" in comparisons:  # from a bootstrap: how often each comparison was flagged
        columns["flag_frequency"] = comparisons["flag_frequency"].to_numpy(np.float32)
    with_annotators = pair_source is not None
    shown_table = _table(shown, [("text", "comparison", "str", 250 if with_annotators else 350),
                                 ("votes", "votes", "count", 45), ("opposing", "opposing", "count", 60),
                                 ("gamma", "gamma", "float", 50), ("flagged", "flagged", "str", 50),
                                 ("agrees", "map agrees", "str", 70)]
                         + ([("frequency", "flag freq.", "float", 60)] if "flag_frequency" in comparisons else [])
                         + ([("annotators", "annotators", "str", 120)] if with_annotators else []),
                         width=660, height=520, name="shown_table")
    info = Div(text="<b>Click an object</b> on the map, or a row of the outlier, annotator or object table, "
                    "to list its comparisons here and draw them on the map: a solid line joins the pair the "
                    "voters called <i>closer</i> (red when flagged as an outlier, green when the map agrees, "
                    "orange when it does not), a dashed one the pair called <i>farther</i>." + regions_note,
               width=660, name="info")

    comparison_source = ColumnDataSource(columns, name="comparisons")
    code = resources.files(__package__).joinpath("callbacks.js").read_text(encoding="utf-8")
    args = dict(objects=source, comparisons=comparison_source, gamma=gamma_source, pairs=pair_source,
                annotator_names=annotator_names,
                shown=shown, near=near_source, far=far_source, marked=marked, info=info)
    source.selected.js_on_change("indices", CustomJS(args=args, code=code + "\nshowObject(cb_obj.indices);"))

    panels = []
    # ---- outliers
    order = np.flatnonzero(flagged)
    order = order[np.argsort(-np.abs(gamma[order]), kind="stable")]
    n_flagged = len(order)
    order = order[:MAX_OUTLIER_ROWS]
    outlier_source = ColumnDataSource({
        "edge": order.astype(np.int32), "text": comparison_text(data, order),
        "votes": comparisons["votes"].to_numpy(np.float64)[order],
        "opposing": comparisons["opposing_votes"].to_numpy(np.float64)[order], "gamma": gamma[order],
        "annotators": _joined(data, order)}, name="outliers")
    bootstrapped = "flag_frequency" in comparisons  # how often the bootstrap flags each: are the flags stable?
    if bootstrapped:
        outlier_source.data["frequency"] = comparisons["flag_frequency"].to_numpy(np.float64)[order]
    outlier_source.selected.js_on_change("indices", CustomJS(
        args=dict(args, table=outlier_source), code=code + "\nshowEdges(cb_obj.indices.map(r => table.data.edge[r]), "
                                                           "'outlier');"))
    caption = (f"{n_flagged:,} of {m:,} comparisons flagged" if "gamma" in comparisons and n_flagged
               else "no comparison flagged (gamma = 0 everywhere)")
    if n_flagged > MAX_OUTLIER_ROWS:
        caption += f"; the {MAX_OUTLIER_ROWS:,} with the largest |gamma| listed (outliers.csv has all)"
    panels.append(TabPanel(title=f"Outliers ({n_flagged:,})", child=column(
        Div(text=caption + ". Click a row to draw it."),
        _table(outlier_source, [("text", "comparison", "str", 420), ("votes", "votes", "count", 70),
                                ("opposing", "opposing votes", "count", 100), ("gamma", "gamma", "float", 80)]
               + ([("frequency", "flag freq.", "float", 80)] if bootstrapped else [])
               + ([("annotators", "annotators", "str", 360)] if with_annotators else []), width=1100, height=360,
               name="outlier_table"))))
    # ---- annotators
    if data.annotators is not None:
        table = data.annotators.reset_index(drop=True)
        annotator_source = ColumnDataSource({c: _column(table[c]) for c in table.columns}, name="annotators")
        annotator_source.selected.js_on_change("indices", CustomJS(
            args=args, code=code + "\nshowAnnotator(cb_obj.indices);"))
        first = [c for c in ("annotator", "suspect", "reason") if c in table.columns]  # not 25 columns to the right
        widths = {"annotator": 130, "reason": 320}
        columns = [(c, c.replace("_", " "), _kind(table[c]), widths.get(c, 90))
                   for c in first + [c for c in table.columns if c not in first]]
        n_suspect = int(table["suspect"].sum()) if "suspect" in table else 0
        panels.append(TabPanel(title=f"Annotators ({len(table):,}, {n_suspect} suspect)", child=column(
            Div(text="Click a column title to sort, a row to list and draw that annotator's comparisons."),
            _table(annotator_source, columns, width=1100, height=360, name="annotator_table"))))
    # ---- objects
    view = CDSView(filter=IndexFilter(indices=np.arange(n, dtype=np.int32)))
    search = TextInput(placeholder="find an object by name or label", width=400, name="search")
    search.js_on_change("value_input", CustomJS(args=dict(objects=source, filter=view.filter), code="""
        const q = cb_obj.value_input.trim().toLowerCase();
        const names = objects.data.name, labels = objects.data.label, hits = [];
        for (let o = 0; o < names.length; o++)
            if (!q || names[o].toLowerCase().includes(q) || labels[o].toLowerCase().includes(q)) hits.push(o);
        filter.indices = hits;
        objects.change.emit();"""))
    object_columns = [("name", "name", "str", 260)] + ([("label", "label", "str", 160)] if has_labels else []) + \
        [("n", "comparisons", "int", 100), ("responses", "responses", "int", 100), ("x", "x", "float", 80), ("y", "y", "float", 80)] + \
        ([("stability", "stability", "float", 90)] if "stability" in object_data else [])
    object_table = _table(source, object_columns, width=1100, height=360, name="object_table")
    object_table.view = view
    panels.append(TabPanel(title=f"Objects ({n:,})", child=column(search, object_table)))
    if data.dimension_curve is not None:
        panels.append(TabPanel(title="Dimension", child=_dimension_plot(data.dimension_curve)))
    layout = column(row(plot, column(info, shown_table)), Tabs(tabs=panels, name="tabs"))
    return layout


def _tooltip_html(tooltips) -> str:
    rows = "".join(f"<div><b>{html.escape(k)}:</b> {v}</div>" for k, v in tooltips)
    return f'<div style="max-width:260px"><img src="@thumbnail" style="max-width:128px;max-height:128px">{rows}</div>'


def _kind(values: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(values):
        return "str"
    if pd.api.types.is_integer_dtype(values):
        return "int"
    return "float" if pd.api.types.is_float_dtype(values) else "str"


def _column(values: pd.Series):
    if pd.api.types.is_bool_dtype(values):
        return np.where(values.to_numpy(bool), "yes", "").tolist()
    if pd.api.types.is_numeric_dtype(values):
        return values.to_numpy(np.float64)
    return values.fillna("").astype(str).tolist()


def _joined(data: ReportData, rows: np.ndarray) -> list[str]:
    if data.edge_annotators is None:
        return [""] * len(rows)
    pairs = data.edge_annotators[np.isin(data.edge_annotators["edge"].to_numpy(), rows)]
    joined = pairs.groupby("edge", sort=False)["annotator"].agg(";".join)
    return joined.reindex(rows).fillna("").tolist()


def _dimension_plot(curve: pd.DataFrame):
    """Held-out error against dimension (``dimensions.csv`` of ``roembed fit --dim auto``)."""
    from bokeh.plotting import figure

    plot = figure(width=600, height=360, x_axis_label="dimension", y_axis_label="held-out error",
                  name="dimension_plot", tools="pan,wheel_zoom,reset,save", title="Error against dimension")
    d, error = curve["dimension"].to_numpy(float), curve["error"].to_numpy(float) if "error" in curve else None
    if error is None:
        error = curve[[c for c in curve.columns if "error" in c][0]].to_numpy(float)
    plot.line(d, error, color=PALETTE[0])
    plot.scatter(d, error, color=PALETTE[0], size=7)
    if "se_vs_best" in curve:
        se = curve["se_vs_best"].to_numpy(float)
        plot.segment(d, error - se, d, error + se, color=PALETTE[0])
    if "chosen" in curve and curve["chosen"].astype(bool).any():
        chosen = curve["chosen"].astype(bool).to_numpy()
        plot.scatter(d[chosen], error[chosen], size=14, fill_color=None, line_color=PALETTE[3], line_width=2,
                     legend_label="chosen")
    return plot


# ----------------------------------------------------------------------------- the HTML around the plots


def _flatten(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value


def _fmt(value, digits: int = 6, counts: bool = False) -> str:
    """A summary value as text; ``counts``: whole numbers with thousands separators (the header's counts, not the
    footer's seeds and settings)."""
    if counts and isinstance(value, float) and value.is_integer() and abs(value) < 1e15:  # a sum of vote counts
        value = int(value)
    if counts and isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, (list, tuple)):
        return json.dumps(value, default=str)
    return "" if value is None else str(value)


FACTS = (("n_objects", "objects"), ("n_responses", "responses"), ("total_weight", "total weight"),
         ("n_edges", "comparisons"),
         ("n_outliers", "flagged"), ("n_suspect_annotators", "suspect annotators"),
         ("n_position_biased_annotators", "annotators favouring one screen position"),
         ("train_error", "training error"), ("holdout_error", "held-out error"), ("lam_used", "lambda"))


def header_html(data: ReportData, title: str) -> str:
    s = data.summary
    by_vote = describe_flags_by_vote(s.get("outliers_by_vote"))
    interval = s.get("holdout_error_interval")
    facts = [f"{label} <b>{html.escape(_fmt(s[key], digits=4, counts=True))}</b>"
             + (html.escape(f" ({by_vote})") if key == "n_outliers" and by_vote else "")
             + (html.escape(f" (95% interval {interval[0]:.4f}-{interval[1]:.4f})")
                if key == "holdout_error" and isinstance(interval, list) and len(interval) == 2
                and all(isinstance(v, (int, float)) for v in interval) else "")
             for key, label in FACTS if s.get(key) is not None]
    from ..data.diagnostics import UNUSED

    unused = int((data.objects["n_responses"] == 0).sum())
    warned = _run_warnings(s)
    extra = [f"The map leaves out the objects without comparisons ({unused:,}): their positions are arbitrary. "
             "The tables list them."] if unused and not any(UNUSED in w for w in warned) else []
    notes = "".join(f'<p class="note">{html.escape(note)}</p>' for note in (*data.notes, *warned, *extra))
    return (f'<header><h1>{html.escape(title)}</h1><p class="facts">{" &middot; ".join(facts)}</p>{notes}'
            f'</header>')


def _run_warnings(summary: dict) -> list[str]:
    """The fit's warnings (``summary.json``'s ``warnings``), shown at the top: in the summary table at the page's
    foot, "the comparisons cannot pin the map down" went unseen under a map that looked fine.  The input's name,
    which the header already gives, is cut from their start."""
    inputs = summary.get("input")
    inputs = [inputs] if isinstance(inputs, str) else [str(name) for name in inputs or []]
    prefixes = tuple(f"{name}: " for name in inputs) + ((f"{inputs[0]} (+{len(inputs) - 1} more): ",)
                                                         if len(inputs) > 1 else ())  # as cli.fit.source_text
    return ["warning: " + next((w[len(p):] for p in prefixes if w.startswith(p)), w)
            for w in summary.get("warnings") or [] if isinstance(w, str)]


def footer_html(data: ReportData) -> str:
    def rows(items):
        return "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(_fmt(v))}</td></tr>" for k, v in items)

    entries = [(k, v) for k, v in _flatten(data.summary) if k not in ("files", "warnings")]  # warnings: the header
    how = [(k, v) for k, v in entries if k.startswith(("settings.", "versions."))]  # 40-odd rows of how it ran
    what = [(k, v) for k, v in entries if not k.startswith(("settings.", "versions."))]
    names = data.objects["name"].astype(str).to_numpy()
    labels = data.objects["label"].astype(str).to_numpy()
    items = "".join(f'<li>{html.escape(name or f"#{o}")}{" <small>(" + html.escape(label) + ")</small>" if label else ""}'
                    for o, (name, label) in enumerate(zip(names, labels)))  # item o is object o
    return (f'<section id="summary"><h2>Summary of the run</h2><table class="summary">{rows(what)}</table>'
            + (f'<details><summary>Settings and versions ({len(how)})</summary><table class="summary">{rows(how)}'
               '</table></details>' if how else '') + '</section>'
            f'<section id="index"><details><summary>All {len(names):,} objects (click a name to select it; '
            f'the browser\'s find searches them)</summary><ol id="object-index" start="0">{items}</ol></details>'
            f'</section>')


STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 12px 18px; display: block; height: auto; color: #222; }
header h1 { font-size: 1.35em; margin: 0 0 4px 0; }
.facts { margin: 0 0 8px 0; } .note { background: #fff4d6; padding: 4px 8px; margin: 4px 0; }
table.summary { border-collapse: collapse; font-size: 0.85em; }
table.summary th { text-align: left; padding: 1px 12px 1px 0; font-weight: normal; color: #555; }
table.summary td { font-family: ui-monospace, monospace; }
#object-index { columns: 4; font-size: 0.85em; } #object-index li { cursor: pointer; }
</style>"""

INDEX_SCRIPT = """<script>
document.getElementById("object-index").addEventListener("click", (event) => {
  const item = event.target.closest("li");
  if (!item || !window.Bokeh) return;
  const source = Bokeh.documents[0].get_model_by_name("objects");
  source.selected.indices = [Array.prototype.indexOf.call(item.parentNode.children, item)];
  window.scrollTo(0, 0);
});
</script>"""


def render(data: ReportData, *, axes=None, title: str | None = None) -> str:
    """The whole report as one HTML string (Bokeh's JavaScript inline: no network requests)."""
    from bokeh.core.templates import FILE, get_env
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    title = title or _title(data)
    layout = build(data, axes=axes)
    template = get_env().from_string(
        "{% extends base %}{% block postamble %}{{ style }}{% endblock %}"
        "{% block contents %}{{ header }}{{ super() }}{{ footer }}{% endblock %}"
        "{% block inner_body %}{{ super() }}{{ index_script }}{% endblock %}")
    return file_html(layout, INLINE, title, template=template,
                     template_variables={"base": FILE, "style": STYLE, "header": header_html(data, title),
                                         "footer": footer_html(data), "index_script": INDEX_SCRIPT})


def _title(data: ReportData) -> str:
    s = data.summary
    source = s.get("input")
    if isinstance(source, list):  # several input files
        source = (f"{Path(str(source[0])).name} and {len(source) - 1} more" if len(source) > 1
                  else source[0] if source else None)
    method = (s.get("settings") or {}).get("method") or s.get("estimator") or "fit"
    return f"roembed report: {method}" + (f" of {Path(str(source)).name}" if source else "")
