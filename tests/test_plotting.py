"""Pictures: they draw what they claim and are saved atomically."""
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from roembed import plotting
from roembed.data import Comparisons
from roembed.plotting import plot_annotators, plot_embedding, plot_outliers, project_2d, save_figure


class FakeFit:
    """What the outlier picture reads from a fitted robust estimator."""

    def __init__(self, n=12, with_names=True):
        rng = np.random.default_rng(0)
        q = np.array([(i, j, k) for i, j, k in rng.integers(0, n, size=(300, 3)) if len({i, j, k}) == 3])
        names = [f"o{i}" for i in range(n)] if with_names else None
        self.graph_ = Comparisons(q, n_objects=n, object_names=names).aggregate()
        self.embedding_ = rng.normal(size=(n, 3))
        self.gamma_ = np.where(rng.random(len(self.graph_)) < 0.2, rng.exponential(size=len(self.graph_)), 0.0)
        self.outlier_mask_ = self.gamma_ > 0


def test_project_2d_is_pca():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3)) * [5.0, 1.0, 0.1]
    xy, note = project_2d(X)
    assert xy.shape == (50, 2) and "principal" in note
    # the projection keeps the two large directions: distances are nearly preserved
    d_full = np.linalg.norm(X[:, None] - X[None], axis=-1)
    d_2d = np.linalg.norm(xy[:, None] - xy[None], axis=-1)
    assert np.abs(d_full - d_2d).max() < 0.5
    assert np.array_equal(project_2d(X[:, :2])[0], X[:, :2])
    with pytest.raises(ValueError):
        project_2d(np.zeros(5))


def test_labels_are_spread_out():
    xy = np.random.default_rng(2).normal(size=(500, 2))
    widths = np.random.default_rng(3).uniform(0.05, 0.2, size=500)
    chosen = plotting._spread_labels(xy, max_labels=30, widths=widths, height=0.03)
    assert 0 < len(chosen) <= 30 and len(set(chosen)) == len(chosen)
    unit = (xy - xy.min(0)) / np.ptp(xy, axis=0)
    x, y, w = unit[chosen, 0], unit[chosen, 1], widths[chosen]
    overlap = (x[:, None] < x[None] + w[None]) & (x[None] < x[:, None] + w[:, None]) \
        & (np.abs(y[:, None] - y[None]) < 0.03)
    assert not (overlap & ~np.eye(len(chosen), dtype=bool)).any()  # no two label boxes overlap


def test_embedding_plot_colours_and_legend():
    X = np.random.default_rng(3).normal(size=(30, 2))
    labels = ["rock"] * 12 + ["jazz"] * 8 + ["pop"] * 5 + [""] * 5
    fig = plot_embedding(X, [f"n{i}" for i in range(30)], labels, max_categories=2, label_title="genre")
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["other / none", "rock (12)", "jazz (8)"]  # pop is folded into "other"
    assert len(ax.texts) > 0
    with pytest.raises(ValueError, match="labels"):
        plot_embedding(X, labels=labels[:-1])
    with pytest.raises(ValueError, match="names"):
        plot_embedding(X, names=["a"])


@pytest.mark.parametrize("X, match", [
    (np.zeros((0, 2)), r"of one or more objects, got shape \(0, 2\)"),  # was "zero-size array to reduction ..."
    (np.full((5, 2), np.nan), r"5 object\(s\) with coordinates that are not finite"),  # drew an empty frame
    (np.array([[0.0, 1.0], [np.inf, 0.0], [1.0, 1.0]]), r"1 object\(s\) with"),
])
def test_a_map_with_no_objects_or_non_finite_coordinates_is_refused(X, match):
    with pytest.raises(ValueError, match=match):
        plot_embedding(X)


def test_bad_plot_options_are_refused_by_name():
    X = np.random.default_rng(3).normal(size=(10, 2))
    with pytest.raises(TypeError, match="uncertainty must be the result of roembed.bootstrap"):  # was AttributeError
        plot_embedding(X, uncertainty="uncertainty.csv")
    for n_shown in (1.5, -1, True):  # 1.5 was "slice indices must be integers"
        with pytest.raises(ValueError, match="n_shown must be an integer >= 0"):
            plot_outliers(FakeFit(), n_shown=n_shown)


def test_numeric_labels_are_read_as_a_quantity_only_when_every_label_is_a_number_of_many_values():
    values = [f"{v:.2f}" for v in np.linspace(0, 1, 12)]
    read = plotting.numeric_labels(values + ["", " 3e-1 ", "NaN", "n/a", None], max_categories=10)
    assert np.allclose(read[:12], np.linspace(0, 1, 12).round(2)) and np.isnan(read[12]) and read[13] == 0.3
    assert np.isnan(read[14:]).all()  # the usual spellings of a missing number are missing values, not words
    assert plotting.numeric_labels(np.r_[np.linspace(0, 1, 12), np.nan].astype(np.float32)) is not None
    assert plotting.numeric_labels(values[:10] + [""], max_categories=10) is None  # 10 values: categories still
    assert plotting.numeric_labels(values + ["high"], max_categories=10) is None  # a word: categories
    assert plotting.numeric_labels(["", ""], max_categories=10) is None


def test_a_list_of_labels_counts_by_its_first_as_the_cli_reads_rock_semicolon_pop():
    """load_music_genres gives each artist a list of genres: as categories, each list's text was one colour
    ("['alternative rock', 'post-grunge']") and "[]" another."""
    assert [plotting.label_text(v) for v in (["rock", "pop"], ("jazz",), [], {"b", "a"}, np.array(["x", "y"]),
                                              None, np.float32("nan"), 3, "a;b")] == \
        ["rock", "jazz", "", "a", "x", "", "", "3", "a;b"]
    X = np.random.default_rng(3).normal(size=(6, 2))
    genres = [["rock", "pop"], ["rock"], ["jazz", "rock"], [], ["rock", "metal"], ["jazz"]]
    ax = plot_embedding(X, labels=genres).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["other / none", "rock (3)", "jazz (2)"]


def test_a_numeric_label_shades_the_points_on_a_scale():
    """Coloured as categories, 10 arbitrary values of a measured roughness got colours and the rest were grey."""
    X = np.random.default_rng(3).normal(size=(30, 2))
    roughness = np.random.default_rng(4).random(30)
    labels = [f"{v:.3f}" for v in roughness[:28]] + ["", ""]
    fig = plot_embedding(X, labels=labels, label_title="roughness")
    ax, bar = fig.axes
    assert ax.get_legend() is None and bar.get_ylabel() == "roughness"
    grey, shaded = ax.collections
    assert len(grey.get_offsets()) == 2 and np.allclose(grey.get_offsets(), X[28:])
    assert np.allclose(shaded.get_array(), roughness[:28].round(3)) and np.allclose(shaded.get_offsets(), X[:28])


def test_outlier_plot_draws_the_most_suspicious_comparisons_one_per_panel():
    fit = FakeFit()
    fig = plot_outliers(fit, n_shown=4)
    assert "edges" not in fit.graph_.__dict__  # the panels' edges only: every edge's quadruplet stayed cached (32 B)
    ax_hist, *panels = fig.axes
    assert len(panels) == 4
    assert sum(p.get_height() for p in ax_hist.patches) == fit.outlier_mask_.sum()
    xy = project_2d(fit.embedding_)[0]
    order = np.argsort(-np.abs(fit.gamma_), kind="stable")[:4]  # largest |gamma| first
    for ax, e in zip(panels, order):
        i, j, l, k = fit.graph_.edges[e]
        near, far = ax.lines  # the pair called closer (solid), the pair called farther (dashed)
        assert np.allclose(near.get_xydata(), xy[[i, j]]) and np.allclose(far.get_xydata(), xy[[l, k]])
        assert far.get_linestyle() == "--"
        assert f"votes {fit.graph_.votes[e]:g} for, {fit.graph_.opposing_votes[e]:g} against" in ax.get_title()
        assert {t.get_text() for t in ax.texts} == {f"o{o}" for o in {i, j, l, k}}  # its objects named
        x0, x1 = ax.get_xlim()
        assert all(x0 < xy[o, 0] < x1 for o in (i, j, l, k))  # zoomed onto the comparison
    fit.gamma_[:] = 0.0
    fit.outlier_mask_[:] = False
    assert len(plot_outliers(FakeFit(with_names=False), n_shown=2).axes) == 3
    empty = plot_outliers(fit, n_shown=2)
    assert all(not ax.lines for ax in empty.axes[1:])  # nothing flagged: nothing drawn


def test_annotator_plot_marks_suspects():
    table = pd.DataFrame({"annotator": ["a", "b", "c"], "n_votes": [10, 200, 50],
                          "agreement": [0.2, 0.9, 0.85], "agreement_low": [0.05, 0.85, 0.75],
                          "agreement_high": [0.5, 0.94, 0.92], "suspect": [True, False, False]})
    fig = plot_annotators(table, n_named=1)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["a"]
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert "suspect (1)" in legend and "reliable (2)" in legend
    assert "screen position" not in legend
    ringed = plot_annotators(table.assign(position_biased=[True, False, True]), n_named=1).axes[0]
    legend = " ".join(t.get_text() for t in ringed.get_legend().get_texts())
    assert "favours one screen position (2)" in legend
    rings = [c for c in ringed.collections if c.get_label().startswith("favours")]
    np.testing.assert_allclose(rings[0].get_offsets(), [[10, 0.2], [50, 0.85]])


def test_names_labels_and_ids_with_dollar_signs_are_drawn_as_typed(tmp_path):
    """Text from the data is no mathtext: "$$" stopped the drawing (matplotlib's ParseException) and "$x^2$" drew
    a superscript; every picture now draws each name, label, id and title as typed."""
    from matplotlib.text import Text

    names = ["$$", "a $x^2$ b", "$5 bill", "back\\slash $", "plain"] + [f"o{i}" for i in range(7)]
    fit = FakeFit()
    fit.graph_ = Comparisons(fit.graph_.comparisons.quadruplets, n_objects=12, object_names=names).aggregate()
    table = pd.DataFrame({"annotator": ["$$", "$w$", "c"], "n_votes": [10, 200, 50], "agreement": [0.2, 0.9, 0.85],
                          "agreement_low": [0.05, 0.85, 0.75], "agreement_high": [0.5, 0.94, 0.92],
                          "suspect": [True, False, False]})
    figures = [plot_embedding(fit.embedding_, names=names, labels=["$a$", "$$"] * 6, title="my $$ file.csv"),
               plot_outliers(fit, n_shown=4), plot_annotators(table, n_named=3)]
    for k, fig in enumerate(figures):
        save_figure(fig, tmp_path / f"figure{k}")  # drew (and saved) without a ParseException
        typed = [t for t in fig.findobj(Text) if "$" in t.get_text()]  # tick labels are numbers, left alone
        assert typed and not any(t.get_parse_math() for t in typed)
    drawn = {t.get_text() for fig in figures for t in fig.findobj(Text)}
    assert {"$$", "a $x^2$ b", "$5 bill", "my $$ file.csv", "$w$"} <= drawn
    assert any(t.startswith("$a$") for t in drawn)  # the legend entry of a label, with its count


def test_characters_no_font_draws_make_one_warning_naming_the_file(tmp_path):
    """An emoji in a name: matplotlib warned once per character with its own source line; now one warning names
    the picture and the characters, and a tab (which no font draws) is drawn as a space, unannounced."""
    X = np.random.default_rng(0).normal(size=(4, 2))
    fig = plot_embedding(X, names=["emoji \U0001F3B5", "tab\there", "plain", "more \U0001F3B5\u2603"])
    assert "tab here" in {t.get_text() for t in fig.axes[0].texts}
    with pytest.warns(UserWarning) as caught:
        save_figure(fig, tmp_path / "map")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert messages[0].startswith("map.png: the font has no glyph for '\U0001F3B5'")
    assert "\t" not in messages[0] and (tmp_path / "map.png").stat().st_size > 0


def test_save_png_and_svg(tmp_path):
    fig = plot_embedding(np.eye(3)[:, :2])
    paths = save_figure(fig, tmp_path / "sub" / "pic", ("png", "svg"))
    assert [p.name for p in paths] == ["pic.png", "pic.svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in paths[1].read_text()
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["pic.png", "pic.svg"]


def test_crash_while_saving_leaves_no_file(tmp_path, monkeypatch):
    target = tmp_path / "pic.png"
    target.write_bytes(b"old picture")

    def crash(self, fname, **kwargs):
        with open(fname, "wb") as fh:
            fh.write(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", crash)
    with pytest.raises(KeyboardInterrupt):
        save_figure(plot_embedding(np.eye(3)[:, :2]), target)
    assert target.read_bytes() == b"old picture"  # the old file is untouched
    assert [p.name for p in tmp_path.iterdir()] == ["pic.png"]  # no temporary left behind


def test_embedding_plot_names_its_axes_and_points():
    X = np.random.default_rng(4).normal(size=(40, 5)) * [4.0, 2.0, 1.0, 0.5, 0.1]
    ax = plot_embedding(X).axes[0]
    assert ax.get_xlabel().startswith("principal coordinate 1 (") and ax.get_ylabel().startswith(
        "principal coordinate 2 (")
    shares = [float(label.split("(")[1].split("%")[0]) for label in (ax.get_xlabel(), ax.get_ylabel())]
    assert shares[0] > shares[1] > 10  # the larger direction first
    assert ax.texts and all(t.get_text().startswith("#") for t in ax.texts)  # unnamed: row numbers
    ax2 = plot_embedding(X[:, :2]).axes[0]
    assert (ax2.get_xlabel(), ax2.get_ylabel()) == ("coordinate 1", "coordinate 2")


def test_an_estimator_or_its_table_is_drawn_with_its_names():
    """``plot_embedding(est)`` and ``plot_embedding(est.set_output(transform="pandas").transform())`` draw what
    ``plot_embedding(est.embedding_, names=est.object_names_)`` draws (an estimator was "float() argument must
    be a string or a real number")."""
    est = _line_fit()[0]
    est.embedding_ = np.random.default_rng(1).normal(size=(15, 2))  # two dimensions: labelled points
    texts = lambda fig: sorted(t.get_text() for t in fig.axes[0].texts)  # noqa: E731
    by_hand = texts(plot_embedding(est.embedding_, names=est.object_names_))
    assert by_hand and all(t.startswith("o") for t in by_hand)
    assert texts(plot_embedding(est)) == by_hand
    assert texts(plot_embedding(est.set_output(transform="pandas").transform())) == by_hand
    assert texts(plot_embedding(est, names=[f"n{i}" for i in range(15)]))[0].startswith("n")


def _line_fit(n=15, seed=0):
    """A one-dimensional SOE fit of triplets from points on a line, and its bootstrap."""
    from roembed import SOE, bootstrap

    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    q = np.array([t for t in rng.integers(0, n, size=(600, 3)) if len(set(t)) == 3])
    swap = np.abs(x[q[:, 0]] - x[q[:, 1]]) > np.abs(x[q[:, 0]] - x[q[:, 2]])
    q[swap] = q[swap][:, [0, 2, 1]]
    comparisons = Comparisons(q, n_objects=n, object_names=[f"o{i}" for i in range(n)])
    est = SOE(1, random_state=0).fit(comparisons)
    return est, bootstrap(est, comparisons, 8, fitted=est, random_state=0)


def test_a_one_dimensional_map_is_a_ranked_dot_plot_with_its_intervals():
    """At p = 1 every point sat on one line (names and points hid each other; a bootstrap's picture drew no region
    at all).  Now each object has its own row in the coordinate's order, named when they are few, with its interval
    as a bar of half-width sqrt(radius2 var) about the fit; rows are no distances, so the aspect is free."""
    from matplotlib.collections import LineCollection

    assert project_2d(np.array([[3.0], [1.0], [2.0], [1.0]]))[0].tolist() == [[3, 3], [1, 0], [2, 2], [1, 1]]
    est, result = _line_fit()
    X = est.embedding_
    fig = plot_embedding(X, names=est.object_names_, uncertainty=result)
    ax = fig.axes[0]
    bars = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(bars) == 1
    segments = np.array(bars[0].get_segments())
    half = np.sqrt(result.radius2 * result.covariances[:, 0, 0])
    rows = np.argsort(np.argsort(X[:, 0], kind="stable"), kind="stable")
    assert np.allclose(segments[:, :, 1], rows[:, None])  # each bar on its object's row
    assert np.allclose(segments[:, 0, 0], X[:, 0] - half) and np.allclose(segments[:, 1, 0], X[:, 0] + half)
    named = dict(zip(ax.get_yticks().tolist(), [t.get_text() for t in ax.get_yticklabels()]))
    assert named == {float(rows[o]): est.object_names_[o] for o in range(len(X))}  # each row named by its object
    assert ax.get_aspect() == "auto"
    assert ax.get_ylabel() == "objects in the order of coordinate 1"
    # two dimensions keep the equal aspect
    from roembed import SOE

    flat = plot_embedding(SOE(2, random_state=0).fit(est.graph_.comparisons).embedding_)
    assert flat.axes[0].get_aspect() == 1.0


def test_the_report_of_a_one_dimensional_map_draws_rows_and_interval_bars():
    """The report's map at p = 1: the same rows as the static picture, no matched aspect, and a bar per object from
    the bootstrap's interval (all of them: on their own rows they hide no point)."""
    from bokeh.models import Segment

    from roembed.report.data import from_estimator
    from roembed.report.page import build

    est, result = _line_fit()
    layout = build(from_estimator(est, bootstrap=result))
    plot = next(m for m in layout.references() if getattr(m, "name", None) == "map")
    assert plot.match_aspect is False
    bars = next(r for r in plot.renderers if isinstance(getattr(r, "glyph", None), Segment))
    data = bars.data_source.data
    half = np.sqrt(result.radius2 * result.covariances[:, 0, 0])
    X = est.embedding_[:, 0]
    assert np.allclose(data["left"], X - half, atol=1e-5) and np.allclose(data["right"], X + half, atol=1e-5)
    assert np.array_equal(data["y"], np.argsort(np.argsort(X, kind="stable"), kind="stable"))
    info = next(m for m in layout.references() if getattr(m, "name", None) == "info")
    assert "The bar through an object is its 90% interval from the bootstrap" in info.text
    assert plot.x_range.renderers == plot.y_range.renderers and bars not in plot.x_range.renderers


def test_the_report_of_a_three_dimensional_map_draws_each_regions_shadow():
    """Above two dimensions the report drew no region (the static picture drew their shadows): now each object's
    shadow on the principal plane, from the bootstrap's table in Python or from uncertainty.csv beside a run;
    with --axes (another plane) none, as at p = 2."""
    from bokeh.models import Ellipse

    from roembed import SOE, bootstrap
    from roembed.report.data import from_estimator
    from roembed.report.page import build

    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 3))
    q = np.array([t for t in rng.integers(0, 15, size=(900, 3)) if len(set(t)) == 3])
    swap = np.linalg.norm(X[q[:, 0]] - X[q[:, 1]], axis=1) > np.linalg.norm(X[q[:, 0]] - X[q[:, 2]], axis=1)
    q[swap] = q[swap][:, [0, 2, 1]]
    est = SOE(3, random_state=0).fit(Comparisons(q, n_objects=15))
    result = bootstrap(est, est.graph_.comparisons, 6, fitted=est, random_state=0)
    data = from_estimator(est, bootstrap=result)

    def ellipses(axes=None):
        plot = next(m for m in build(data, axes=axes).references() if getattr(m, "name", None) == "map")
        return [r for r in plot.renderers if isinstance(getattr(r, "glyph", None), Ellipse)]

    drawn = ellipses()
    assert len(drawn) == 1
    table = result.objects()
    source = drawn[0].data_source.data
    assert np.allclose(source["width"], 2 * table["shadow_major"], rtol=1e-6)
    assert np.allclose(source["angle"], np.radians(table["shadow_angle"]), rtol=1e-6)
    assert ellipses(axes=(0, 2)) == []


def test_a_map_of_more_than_two_dimensions_is_drawn_on_its_own_first_two_coordinates():
    """Fitted maps are on their principal axes (``orient_embedding``), so the principal plane the pictures draw is
    the map's coordinates 1-2 -- signed as the map is, not mirrored by the SVD's own choice of signs; and the
    regions' plane (``principal_plane``) is the same plane."""
    from roembed.projections import orient_embedding
    from roembed.uncertainty import principal_plane

    for seed in range(8):
        X = np.random.default_rng(seed).standard_normal((40, 4)) * [4.0, 3.0, 2.0, 1.0]
        oriented = orient_embedding(X)
        np.testing.assert_allclose(project_2d(oriented)[0], oriented[:, :2], atol=1e-10)
        np.testing.assert_allclose(project_2d(X)[0], oriented[:, :2], atol=1e-10)
        np.testing.assert_allclose((X - X.mean(axis=0)) @ principal_plane(X), oriented[:, :2], atol=1e-10)
