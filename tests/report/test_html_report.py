"""The report's tables and file: the same data from an estimator and from a run folder,
summarising large inputs, self-containment, and one-line errors for bad folders."""
import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import roembed
from roembed.cli import main
from roembed.data.diagnostics import DataWarning
from roembed.experiments import make_synthetic
from roembed.report import RunFolderError, from_estimator, read_run, summarise, write_report
from roembed.report.data import OUTPUT_FORMAT
from cli_testkit import one_line_error

N = 20


@pytest.fixture(scope="module")
def fitted():
    data = make_synthetic(n_objects=N, dim=2, n_train=600, n_validation=10, n_test=10, votes=(2, 4), rate=0.25,
                          model="spammers", n_annotators=10, random_state=3)
    names = [f"item{o:02d}" for o in range(N)]
    train = roembed.Comparisons(data.train.quadruplets, n_objects=N, annotator=data.train.annotator,
                                object_names=names)
    return roembed.RobustOrdinalEmbedding(n_components=2, random_state=0, max_iter=200).fit(train), data


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory, fitted):
    est, data = fitted
    folder = tmp_path_factory.mktemp("run")
    t = data.train.triplets
    pd.DataFrame({"anchor": t[:, 0], "closer": t[:, 1], "farther": t[:, 2],
                  "annotator": [f"w{a}" for a in data.train.annotator]}).to_csv(folder / "votes.csv", index=False)
    (folder / "names.txt").write_text("\n".join(f"item{o:02d}" for o in range(N)) + "\n")
    (folder / "labels.csv").write_text("index0,kind\n" + "".join(f"{o},k{o % 3}\n" for o in range(N)))
    out = folder / "out"
    result = CliRunner().invoke(main, ["fit", str(folder / "votes.csv"), "--out", str(out), "--names",
                                       str(folder / "names.txt"), "--labels", str(folder / "labels.csv"),
                                       "--label-column", "kind", "--max-iter", "200", "--quiet", "--report"])
    assert result.exit_code == 0, result.output + result.stderr
    return out


def test_comparison_table_is_the_graph_with_gamma(fitted):
    est, _ = fitted
    table = roembed.report.comparison_table(est)
    graph = est.graph_
    assert len(table) == len(graph)
    assert np.array_equal(table[list("ijlk")].to_numpy(), graph.edges)
    assert np.array_equal(table["votes"], graph.votes) and np.array_equal(table["opposing_votes"], graph.opposing_votes)
    assert np.array_equal(table["flagged"], est.gamma_ != 0) and table["flagged"].sum() == len(est.outliers_)
    for e in (0, 7, len(graph) - 1):  # the vectorised join lists what edge_annotators lists
        assert table["annotators"][e] == ";".join(map(str, graph.edge_annotators(e)))


def test_comparisons_csv_written_in_blocks_is_the_table(fitted, tmp_path):
    from roembed.cli._report import write_comparisons

    est, _ = fitted
    whole = roembed.report.comparison_table(est)
    assert (whole["annotators"] != "").all() and whole["flagged"].any()  # every column has something to split
    n = len(whole)
    for blocks, min_rows in ((8, 1 << 20), (3, 1), (n, 1), (4, 7)):  # one block; three; one row each; 7 at least
        path = write_comparisons(est, tmp_path / f"c{blocks}_{min_rows}.csv", blocks=blocks, min_rows=min_rows)
        assert path.read_text() == whole.to_csv(index=False)  # one header, every edge once, in order
    some = np.array([n - 1, 0, 5])
    part = roembed.report.comparison_table(est, some)
    assert part.to_csv(index=False) == whole.iloc[some].to_csv(index=False)


def test_folder_and_estimator_give_the_same_tables(fitted, run_folder):
    est, _ = fitted
    from_fit = from_estimator(est, labels=[f"k{o % 3}" for o in range(N)])
    from_folder = read_run(run_folder)
    assert from_folder.objects["name"].tolist() == from_fit.objects["name"].tolist()
    assert from_folder.objects["label"].tolist() == [f"k{o % 3}" for o in range(N)]
    assert np.array_equal(from_folder.objects["n_responses"], from_fit.objects["n_responses"])
    assert from_folder.summary["label_column"] == "kind" and from_folder.summary["output_format"] == OUTPUT_FORMAT
    # the same comparisons with the same annotators (the CLI read the same file, with "w" prefixed ids)
    a, b = from_fit.comparisons, from_folder.comparisons
    assert np.array_equal(a[list("ijlk")], b[list("ijlk")]) and np.array_equal(a["votes"], b["votes"])
    pa = from_fit.edge_annotators.assign(annotator="w" + from_fit.edge_annotators["annotator"])
    pb = from_folder.edge_annotators
    assert sorted(map(tuple, pa.to_numpy().tolist())) == sorted(map(tuple, pb.to_numpy().tolist()))
    assert set(from_folder.annotators["annotator"]) == {f"w{a}" for a in np.unique(est.graph_.comparisons.annotator)}


def test_the_label_legend_sits_beside_the_map_most_frequent_first_and_is_not_clickable(fitted):
    """Inside the map it covered objects; Bokeh's grouped legend listed labels in data order, and a click on
    any one hid every point (a grouped legend hides its whole renderer)."""
    from bokeh.models import Legend

    from roembed.report.page import build

    est, _ = fitted
    labels = ["rare"] + ["common"] * 12 + [["middle", "also"]] * 7  # data order: rare, common, middle; a list
    layout = build(from_estimator(est, labels=labels))  # counts by its first label, as roembed fit reads "a;b"
    plot = next(m for m in layout.references() if getattr(m, "name", None) == "map")
    legend = next(m for m in plot.right if isinstance(m, Legend))
    shown = [item.label.value for item in legend.items]
    assert shown[:3] == ["common (12)", "middle (7)", "rare (1)"] and shown[3] == "called farther"
    assert legend.click_policy == "none" and not any(isinstance(m, Legend) for m in plot.center)
    points = legend.items[0].renderers[0]
    assert [points.data_source.data["category"][item.index] for item in legend.items[:3]] == \
        ["common", "middle", "rare"]  # each entry drawn with its own label's colour


def test_report_file_is_self_contained_and_lists_every_object(run_folder):
    page = (run_folder / "report.html").read_text(encoding="utf-8")
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=", page)  # scripts and styles inline (the browser test checks requests)
    assert "Bokeh" in page and len(page) > 500_000  # BokehJS itself is in the file
    for o in range(N):
        assert f'<li>item{o:02d}' in page
    summary = json.loads((run_folder / "summary.json").read_text())
    assert "report.html" in summary["files"]
    # what the run found is in the summary table; the 40-odd rows of settings and versions fold under it
    found, how = page.split('<section id="summary">')[1].split("<details><summary>Settings and versions")
    assert "<th>train_error</th>" in found and "<th>settings." not in found and "<th>versions." not in found
    assert "<th>settings.method</th><td>robust</td>" in how and "<th>versions.roembed</th>" in how
    counts = summary["outliers_by_vote"]  # 2-4 votes per query: the header says how the flags stand in their query
    assert counts["split_queries"] and (f"flagged <b>{summary['n_outliers']}</b> ({counts['outvoted']} outvoted "
                                        f"within their query, {counts['tied']} tied, {counts['majority']} "
                                        "with their query&#x27;s majority)") in page


def test_roembed_report_rewrites_the_page_from_the_folder(run_folder, tmp_path):
    target = tmp_path / "again.html"
    result = CliRunner().invoke(main, ["report", str(run_folder), "-o", str(target), "--axes", "2,1"])
    assert result.exit_code == 0, result.stderr
    page = target.read_text(encoding="utf-8")
    assert "coordinate 2" in page and "item07" in page


def test_a_run_folder_that_cannot_be_written_is_one_line_pointing_at_output(run_folder, tmp_path, monkeypatch):
    """A colleague's run or a read-only mount: the line named the folder's error twice ("cannot write (...:
    cannot write there: Read-only file system)"); now the reason once and the way out, --output."""
    import errno
    import os
    import shutil
    import tempfile
    from pathlib import Path

    run = tmp_path / "run"
    shutil.copytree(run_folder, run)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    real = tempfile.mkdtemp

    def read_only(*args, dir=None, **kwargs):
        if dir is not None and Path(dir).resolve() == tmp_path.resolve():  # staging beside the run
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real(*args, dir=dir, **kwargs)
    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 2 and result.stderr.strip() == (
        f"Error: {run / 'report.html'}: cannot write (Read-only file system); --output FILE writes the page "
        "elsewhere"), result.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    result = CliRunner().invoke(main, ["report", str(run), "--output", str(tmp_path / "mine" / "page.html")])
    assert result.exit_code == 0 and (tmp_path / "mine" / "page.html").exists(), result.stderr


def test_report_from_inside_the_run_folder_says_how_to_run_it(run_folder, tmp_path, monkeypatch):
    """`cd music-out && roembed report .`: refused (the swap would pull the folder from under the shell) with
    "cannot write (.../run: is the working folder, ...; name a new folder for its files)", a fix that does not
    apply to a report; now the two that do."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(run_folder, run)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    monkeypatch.chdir(run)
    result = CliRunner().invoke(main, ["report", "."])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "(cd .. && roembed report run)" in result.stderr and "--output FILE" in result.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    result = CliRunner().invoke(main, ["report", ".", "--output", str(tmp_path / "page.html")])
    assert result.exit_code == 0 and (tmp_path / "page.html").exists(), result.stderr


def test_a_report_added_to_a_run_keeps_the_set_promise(run_folder, tmp_path, monkeypatch):
    import shutil

    from roembed.cli import report as report_cli

    run = tmp_path / "run"
    shutil.copytree(run_folder, run)
    (run / "report.html").unlink()
    summary = json.loads((run / "summary.json").read_text())
    summary["files"].remove("report.html")
    (run / "summary.json").write_text(json.dumps(summary))
    before = {p.name: p.read_bytes() for p in run.iterdir()}

    def listed_equals_present():
        listed = json.loads((run / "summary.json").read_text())["files"]
        return listed == sorted(p.name for p in run.iterdir())

    # interrupted while writing the page: the run is exactly as it was, no staging folder left
    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("roembed.report.write_report", broken)
    with pytest.raises(KeyboardInterrupt):
        report_cli.write_folder_report(run)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before and listed_equals_present()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    monkeypatch.undo()
    # finished: the page is in the set and summary.json lists it; every other file is unchanged
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 0, result.stderr
    assert listed_equals_present() and "report.html" in json.loads((run / "summary.json").read_text())["files"]
    assert {n: b for n, b in before.items() if n != "summary.json"} == {
        p.name: p.read_bytes() for p in run.iterdir() if p.name not in ("summary.json", "report.html")}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_summarise_keeps_each_objects_worst_comparisons(fitted):
    est, _ = fitted
    data = from_estimator(est)
    m = len(data.comparisons)
    small = summarise(data, 100)
    kept = small.comparisons
    assert len(kept) <= 100 and small.notes and f"{m:,}" in small.notes[0]
    per_object = max(1, 100 // N)
    flagged = data.comparisons["flagged"].to_numpy()
    gamma = np.abs(data.comparisons["gamma"].to_numpy())
    for o in range(N):  # every object keeps comparisons, and its worst flagged one is among them
        touches = (data.comparisons[list("ijlk")].to_numpy() == o).any(axis=1)
        assert (kept[list("ijlk")].to_numpy() == o).any(axis=1).sum() >= min(per_object, touches.sum())
        if (touches & flagged).any():
            worst = np.flatnonzero(touches & flagged)[np.argmax(gamma[touches & flagged])]
            row = data.comparisons.iloc[worst]
            assert ((kept[list("ijlk")] == row[list("ijlk")].to_numpy()).all(axis=1)).any()
    # annotator pairs follow their comparison to its new position
    pairs = small.edge_annotators
    original = data.edge_annotators.groupby("edge")["annotator"].apply(frozenset)
    for position in np.unique(pairs["edge"])[:20]:
        row = kept.iloc[position]
        e = int(np.flatnonzero((data.comparisons[list("ijlk")].to_numpy() == row[list("ijlk")].to_numpy()
                                .astype(int)).all(axis=1))[0])
        assert frozenset(pairs.loc[pairs["edge"] == position, "annotator"]) == original[e]
    assert summarise(data, m) is data  # nothing to summarise


def test_comparisons_per_object_counts_a_triplets_anchor_once():
    from roembed.report.data import comparisons_per_object

    table = pd.DataFrame([(0, 1, 0, 2), (0, 1, 2, 3), (1, 2, 1, 3)], columns=list("ijlk"))
    assert comparisons_per_object(table, 5).tolist() == [2, 3, 3, 2, 0]
    assert comparisons_per_object(table.iloc[:0], 3).tolist() == [0, 0, 0]


@pytest.mark.parametrize("index", [np.int32, np.int64])  # a folder's indices are int32, a fit's int64
def test_first_of_each_object_is_each_objects_first_comparisons_along_the_order(index):
    """The report keeps each object's ``per_object`` worst comparisons: one walk with a count per object (it was a
    sort of four entries a comparison, 100 bytes a comparison at 10^7), against the definition, on triplets and
    quadruplets that name an object twice."""
    from roembed._kernels import first_of_each_object

    rng = np.random.RandomState(0)
    n, m = 9, 60
    q = rng.randint(n, size=(m, 4)).astype(index)
    q[::3, 2] = q[::3, 0]  # triplets: the anchor is i and l
    q[1::7, 3] = q[1::7, 1]  # d(i, j) < d(l, j): j twice, two entries
    order = rng.permutation(m)
    for per_object in (1, 2, 5, m):
        entries = {o: [] for o in range(n)}  # each object's comparisons along the order, an entry per mention
        for e in order:
            for c in range(4):
                if c != 2 or q[e, 2] != q[e, 0]:
                    entries[q[e, c]].append(e)
        expected = np.zeros(m, bool)
        for listed in entries.values():
            expected[listed[:per_object]] = True
        got = first_of_each_object(*q.T.copy(), order, per_object, n, np.zeros(m, bool))
        assert np.array_equal(got, expected), per_object
    assert first_of_each_object(*q.T.copy(), order, m, n, np.zeros(m, bool)).all()


def test_worst_first_in_blocks_is_one_order(fitted):
    from roembed.report.data import _worst_first

    data = from_estimator(fitted[0])
    whole = _worst_first(data, block=len(data.comparisons))
    assert np.array_equal(_worst_first(data, block=7), whole) and sorted(whole) == list(range(len(whole)))
    flagged = np.flatnonzero(data.comparisons["flagged"].to_numpy(bool))
    assert len(flagged) and set(whole[: len(flagged)]) == set(flagged)  # the flagged come first


def test_map_agrees_known_answers_and_ties():
    from roembed.report.data import ReportData, map_agrees

    X = np.array([[0.0], [1.0], [3.0], [6.0]])  # |0-1| = 1, |1-2| = 2, |0-2| = 3, |2-3| = 3
    q = pd.DataFrame([[0, 1, 0, 2], [1, 2, 0, 1], [0, 2, 2, 3], [2, 3, 2, 1]], columns=list("ijlk"))
    data = ReportData(objects=pd.DataFrame({"x1": X[:, 0]}), comparisons=q, summary={})
    expected = [True, False, False, False]  # the third is a tie: not an agreement
    assert map_agrees(data).tolist() == expected and map_agrees(data, block=3).tolist() == expected


def test_summarised_report_says_so(fitted, tmp_path):
    est, _ = fitted
    page = write_report(est, tmp_path / "r.html", max_comparisons=50).read_text(encoding="utf-8")
    assert "too many to include" in page


def test_thumbnails_are_embedded(fitted, tmp_path):
    from PIL import Image

    est, _ = fitted
    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (300, 200), (200, 30, 30)).save(images / "item03.jpg")
    Image.new("RGBA", (40, 40), (0, 0, 200, 128)).save(images / "5.png")
    data = from_estimator(est)
    from roembed.report.thumbnails import thumbnail_column

    from roembed.data.diagnostics import DataWarning

    with pytest.warns(DataWarning, match=rf"images: {N - 2} of {N} objects with comparisons have no image named "
                                          r"after them \(item00, item01, item02, \.\.\.; looked for <name> or "
                                          r"<object number> with \.png, .*\): they show none on hover"):
        column = thumbnail_column(images, data.objects)  # item03.jpg by name, 5.png by number: the rest have none
    assert column[3].startswith("data:image/jpeg;base64,") and column[5].startswith("data:image/png;base64,")
    assert sum(bool(c) for c in column) == 2
    with pytest.warns(DataWarning, match="have no image"):
        page = write_report(est, tmp_path / "t.html", thumbnails=images).read_text(encoding="utf-8")
    assert column[3] in page
    with pytest.raises(ValueError, match="no image is named"):
        thumbnail_column(images, data.objects.assign(name="x", object=np.arange(100, 100 + N)))
    # a file of ids 00100, 00101, ... is read as the numbers 100, 101, ...: its images keep the zeros
    Image.new("RGB", (30, 20), (0, 200, 0)).save(images / "00101.png")
    Image.new("RGB", (30, 20), (0, 0, 200)).save(images / "101.png")  # an exact number comes first
    Image.new("RGB", (30, 20), (0, 200, 0)).save(images / "000102.jpg")
    with pytest.warns(DataWarning, match=f"{N - 2} of {N} objects"):
        column = thumbnail_column(images, data.objects.assign(name="", object=np.arange(100, 100 + N)))
    assert [bool(c) for c in column] == [False, True, True] + [False] * (N - 3)
    assert column[1] == thumbnail_column([images / "101.png"] + [""] * (N - 1), data.objects)[0]
    # objects named by their image files (salmon's and Mechanical Turk's exports), or by paths to them
    named = data.objects.assign(name=["item03.jpg", "uploads/5.png"] + [f"x{o}.gif" for o in range(N - 2)],
                                object=np.arange(300, 300 + N))
    with pytest.warns(DataWarning, match=f"{N - 2} of {N} objects"):
        column = thumbnail_column(images, named)
    assert column[:2] == [thumbnail_column([images / "item03.jpg"] + [""] * (N - 1), data.objects)[0],
                          thumbnail_column([images / "5.png"] + [""] * (N - 1), data.objects)[0]]
    with pytest.raises(ValueError, match=r"no image is named after an object \(e.g. 'a.gif' or '200.png'\)"):
        thumbnail_column(images, data.objects.assign(name=["a.gif"] * N, object=np.arange(200, 200 + N)))




def report(*args):
    return CliRunner().invoke(main, ["report", *map(str, args)])


def test_roembed_report_colours_by_labels_given_after_the_fit(run_folder, tmp_path):
    """Colours chosen after the fit needed the fit again (--labels was fit's only)."""
    folder = copy_run(run_folder, tmp_path / "run")
    colours = tmp_path / "colours.csv"
    colours.write_text("name,colour\n" + "".join(f"item{o:02d},c{o % 2}\n" for o in range(N)))
    result = report(folder, "--labels", colours)  # by name; the one label column is read
    assert result.exit_code == 0, result.stderr
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert all(f"<li>item{o:02d} <small>(c{o % 2})</small>" in page for o in range(N))
    assert "(k0)" not in page.split('<ol id="object-index"')[1].split("</ol>")[0]  # the fit's own labels gave way
    assert "<th>label_column</th><td>colour</td>" in page  # the legend's title too
    # in Python: labels and their title given for a run folder win over the folder's own
    page = write_report(run_folder, tmp_path / "py.html", labels=[f"p{o % 2}" for o in range(N)],
                        label_title="parity").read_text(encoding="utf-8")
    assert "<th>label_column</th><td>parity</td>" in page and "<li>item01 <small>(p1)</small>" in page
    one_line_error(report(folder, "--label-column", "colour"), "--label-column colour", "--labels")
    one_line_error(report(folder, "--labels", tmp_path / "none.csv"), "none.csv", "no such file")


@pytest.mark.parametrize("base", [0, 1])
def test_report_labels_match_objects_as_the_fit_does(tmp_path, base):
    """The report's labels are the ones roembed fit --labels gives, whatever the base: the table's index0 counts
    from 0 in both (a file counting from 1 keeps its numbers as names, which index0's numbers are not matched
    against: that gave every object the next one's label)."""
    rng = np.random.default_rng(0)
    t = np.array([row for row in rng.integers(base, 12 + base, size=(400, 3)) if len(set(row)) == 3])
    votes = tmp_path / "votes.csv"
    pd.DataFrame(t, columns=["anchor", "closer", "farther"]).to_csv(votes, index=False)
    labels = tmp_path / "labels.csv"
    labels.write_text("index0,kind\n" + "".join(f"{o},k{o}\n" for o in range(12)))
    common = ["fit", str(votes), "--index-base", str(base), "--method", "soe", "--max-iter", "50", "-q"]
    assert CliRunner().invoke(main, [*common, "-o", str(tmp_path / "with"), "--labels", str(labels)]).exit_code == 0
    assert CliRunner().invoke(main, [*common, "-o", str(tmp_path / "later")]).exit_code == 0
    result = report(tmp_path / "later", "--labels", labels)
    assert result.exit_code == 0, result.stderr
    fitted = pd.read_csv(tmp_path / "with" / "embedding.csv", keep_default_na=False, dtype=str)
    assert (fitted["label"] != "").sum() >= 10
    assert all(label == f"k{int(o) - base}" for o, label in zip(fitted["object"], fitted["label"]) if label)
    index = (tmp_path / "later" / "report.html").read_text(encoding="utf-8").split('<ol id="object-index"')[1]
    items = index.split("</ol>")[0].split("<li>")[1:]
    assert items == [(name or f"#{o}") + (f" <small>({label})</small>" if label else "")
                     for o, (name, label) in enumerate(zip(fitted["name"], fitted["label"]))]


def test_labels_keyed_by_name_are_aligned_to_the_objects(fitted, run_folder, tmp_path):
    """``labels=`` a pandas Series read from a table in another order than the objects (its index the names) gave
    each object another's label by position; a path was read as its characters ("got 53 labels for 20 objects")."""
    est, _ = fitted
    kinds = pd.Series({f"item{o:02d}": f"k{o % 3}" for o in reversed(range(N))})  # the table's order, reversed
    page = write_report(est, tmp_path / "s.html", labels=kinds).read_text(encoding="utf-8")
    assert all(f"<li>item{o:02d} <small>(k{o % 3})</small>" in page for o in range(N))
    partial = {f"item{o:02d}": f"k{o % 3}" for o in range(5)}  # a dict; the objects without a key unlabelled
    page = write_report(run_folder, tmp_path / "d.html", labels=partial).read_text(encoding="utf-8")
    assert "<li>item04 <small>(k1)</small>" in page and "<li>item05 <small>" not in page
    with pytest.raises(TypeError, match=r"labels: got a text or path \('genres.tsv'\); give one label per object"):
        write_report(est, tmp_path / "p.html", labels="genres.tsv")
    with pytest.raises(ValueError, match=r"none of its 1 keys \('rock'\) is an object's name or number"):
        write_report(est, tmp_path / "n.html", labels={"rock": "x"})
    from roembed.plotting import labels_per_object

    assert labels_per_object(pd.Series(["a", "b"]), ["x", "y"]) == ["a", "b"]  # a plain RangeIndex: by position
    assert labels_per_object(pd.Series(["a", "b"], index=[1, 0]), None, [0, 1]) == ["b", "a"]  # by number
    assert labels_per_object({11: "b", 10: "a"}, ["x", "y"], [10, 11]) == ["a", "b"]  # named objects, by number


def test_roembed_report_thumbnails_that_are_no_folder_get_one_line(run_folder, tmp_path):
    """Was Python's "TypeError: 'PosixPath' object is not iterable" (a path that is no folder was read as a list)."""
    one_line_error(report(run_folder, "-o", tmp_path / "t.html", "--thumbnails", tmp_path / "nope"),
                   "nope: no such folder (a folder of images named after the objects")
    one_line_error(report(run_folder, "-o", tmp_path / "t.html", "--thumbnails", run_folder / "embedding.csv"),
                   "embedding.csv: a file, not a folder of images")
    assert not (tmp_path / "t.html").exists()


def test_roembed_report_says_which_objects_got_no_thumbnail(run_folder, tmp_path):
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (30, 20), (200, 30, 30)).save(images / "item03.jpg")
    result = report(run_folder, "-o", tmp_path / "t.html", "--thumbnails", images)
    assert result.exit_code == 0, result.stderr
    [line] = result.stderr.splitlines()  # one line in the CLI's words, not Python's warning with its source line
    assert line.startswith(f"warning: {images}: {N - 1} of {N} objects with comparisons have no image")
    for name in range(N):  # every image found: nothing to say
        Image.new("RGB", (30, 20), (200, 30, 30)).save(images / f"item{name:02d}.jpg")
    result = report(run_folder, "-o", tmp_path / "t.html", "--thumbnails", images)
    assert result.exit_code == 0 and result.stderr == ""


def copy_run(run_folder, target):
    target.mkdir()
    for p in run_folder.iterdir():
        (target / p.name).write_bytes(p.read_bytes())
    return target


def test_bad_folders_get_one_line_and_exit_2(run_folder, tmp_path):
    one_line_error(report(tmp_path / "nowhere"), "no such folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(report(empty), "not a finished roembed run", "summary.json")
    # a run killed before summary.json: the other files are there, the run is not finished
    unfinished = copy_run(run_folder, tmp_path / "unfinished")
    (unfinished / "summary.json").unlink()
    one_line_error(report(unfinished), "not a finished roembed run")
    # written by an older roembed: no output format, no comparisons.csv
    old = copy_run(run_folder, tmp_path / "old")
    summary = json.loads((old / "summary.json").read_text())
    del summary["output_format"]
    summary["versions"]["roembed"] = "0.0.9"
    summary["files"].remove("comparisons.csv")
    (old / "summary.json").write_text(json.dumps(summary))
    (old / "comparisons.csv").unlink()
    one_line_error(report(old), "roembed 0.0.9", "run roembed fit again")
    newer = copy_run(run_folder, tmp_path / "newer")
    (newer / "summary.json").write_text(json.dumps({**summary, "output_format": OUTPUT_FORMAT + 1}))
    one_line_error(report(newer), "newer than this roembed reads")
    missing = copy_run(run_folder, tmp_path / "missing")
    (missing / "annotators.csv").unlink()
    one_line_error(report(missing), "incomplete run", "annotators.csv")
    (missing / "comparisons.csv").unlink()  # required and listed: named once (was "comparisons.csv, comparisons.csv")
    assert one_line_error(report(missing), "incomplete run").endswith("missing comparisons.csv, annotators.csv")
    # a file of the run given for the run: was "no such folder" for a file that is there
    one_line_error(report(run_folder / "embedding.csv"), "embedding.csv: a file, not a run's folder (give the folder "
                                                         f"it lies in: {run_folder})")
    # an edited table: was pandas' "could not convert string to float: 'abc'", no file or line
    for name, column in (("comparisons.csv", "gamma"), ("embedding.csv", "x2")):
        edited = copy_run(run_folder, tmp_path / f"edited_{column}")
        table = pd.read_csv(edited / name)
        table[column] = table[column].astype(object)
        table.loc[3, column] = "abc"
        table.to_csv(edited / name, index=False)
        one_line_error(report(edited), f"{name} line 5: {column} 'abc' is not a number")
    broken = copy_run(run_folder, tmp_path / "broken")
    (broken / "summary.json").write_text("{not json")
    one_line_error(report(broken), "summary.json", "not readable JSON")
    wrong = copy_run(run_folder, tmp_path / "wrong")
    table = pd.read_csv(wrong / "comparisons.csv")
    table.loc[4, "k"] = N + 5
    table.to_csv(wrong / "comparisons.csv", index=False)
    one_line_error(report(wrong), "comparisons.csv line 6", "outside the")
    one_line_error(report(run_folder, "--axes", "1,9"), "--axes 1,9: the fit in", "has 2 coordinates",
                   "two different numbers from 1 to 2")
    one_line_error(report(run_folder, "--axes", "one"), "--axes")


def test_comparisons_csv_read_in_blocks_is_the_file_read_at_once(run_folder, tmp_path, monkeypatch):
    """comparisons.csv is read READ_ROWS lines at a time into columns the summary's count sizes: read at once
    with every column, 3 * 10^6 comparisons with annotators took the report to 2.26 GB.  The blocks must give the
    same tables, name a bad line by its place in the file, and grow past (or without) the count."""
    import roembed.report.data as report_data

    whole = read_run(run_folder)
    m = len(whole.comparisons)
    assert list(whole.comparisons.columns) == ["edge", "i", "j", "l", "k", "votes", "opposing_votes", "gamma",
                                               "flagged"]  # what the page reads: not the names, nor the counts
    assert whole.comparisons["i"].dtype == np.int32 and whole.comparisons["flagged"].dtype == bool
    assert len(whole.edge_annotators) >= m and whole.edge_annotators["annotator"].str.startswith("w").all()
    for rows in (7, 1):  # several blocks, the last one short; a row each
        monkeypatch.setattr(report_data, "READ_ROWS", rows)
        blocks = read_run(run_folder)
        pd.testing.assert_frame_equal(blocks.comparisons, whole.comparisons)
        pd.testing.assert_frame_equal(blocks.edge_annotators, whole.edge_annotators)
    folder = copy_run(run_folder, tmp_path / "uncounted")
    summary = json.loads((folder / "summary.json").read_text())
    del summary["n_edges"]
    (folder / "summary.json").write_text(json.dumps(summary))
    monkeypatch.setattr(report_data, "READ_ROWS", 5)  # no count: the columns start at 5 rows and double
    pd.testing.assert_frame_equal(read_run(folder).comparisons, whole.comparisons)
    summary["n_edges"] = 10**15  # an edited count sizes nothing beyond the file: the mismatch is named
    (folder / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(RunFolderError, match=f"{m} comparisons, but summary.json counts {10**15}"):
        read_run(folder)
    table = pd.read_csv(folder / "comparisons.csv", keep_default_na=False, dtype=str)
    table.loc[m - 2, "gamma"] = "x"  # in the last block but one
    table.to_csv(folder / "comparisons.csv", index=False)
    with pytest.raises(RunFolderError, match=f"comparisons.csv line {m}: gamma 'x' is not a number"):
        read_run(folder)
    table.loc[m - 2, "gamma"] = "0"
    table.loc[m - 1, "k"] = str(N)  # the last line
    table.to_csv(folder / "comparisons.csv", index=False)
    with pytest.raises(RunFolderError, match=f"comparisons.csv line {m + 1}: object index outside the {N} rows"):
        read_run(folder)


def test_annotators_of_each_comparison_become_pairs_in_the_order_written():
    from roembed.report.data import _explode_annotators

    known = {}
    pairs = _explode_annotators(pd.Series(["w1;007", np.nan, "w1", "", "w1;;x", "007;w1"], dtype=object), known)
    assert pairs.to_numpy().tolist() == [[0, "w1"], [0, "007"], [2, "w1"], [4, "w1"], [4, "x"], [5, "007"],
                                         [5, "w1"]]  # each comparison's ids in its text's order; none missing
    assert sorted(known) == ["007", "w1", "x"]  # the ids met, kept for the file's next block
    assert _explode_annotators(pd.Series(["x;007"], dtype=object), known).to_numpy().tolist() == [[0, "x"], [0, "007"]]
    for nothing in ([], [np.nan, ""]):
        empty = _explode_annotators(pd.Series(nothing, dtype=object))
        assert empty.empty and list(empty.columns) == ["edge", "annotator"]


def test_a_cut_off_or_edited_run_folder_is_named_not_drawn(run_folder, tmp_path):
    """A comparisons.csv cut short by a copy stopped with numpy's "Cannot cast array data from dtype('float64') to
    dtype('int64')" (its last line lacked cells); 'nan' as an object id, 1e400 votes or 'maybe' as a flag were
    drawn (an object at no place, counts cast to garbage, every non-empty flag true); a lost row went unnoticed."""
    def edited(tag, name, edit):
        folder = copy_run(run_folder, tmp_path / tag)
        table = pd.read_csv(folder / name, keep_default_na=False, dtype=str)
        edit(table)
        table.to_csv(folder / name, index=False)
        return report(folder)

    cut = copy_run(run_folder, tmp_path / "cut")
    text = (cut / "comparisons.csv").read_text()
    (cut / "comparisons.csv").write_text(text[: len(text) // 2].rstrip("\n")[:-3])
    one_line_error(report(cut), "comparisons.csv: cut off (it does not end with a line break)")
    lines = text.splitlines(keepends=True)  # cut after a whole line: the summary's count says so
    (cut / "comparisons.csv").write_text("".join(lines[:-1]))
    one_line_error(report(cut), f"comparisons.csv: {len(lines) - 2} comparisons, but summary.json counts "
                                f"{len(lines) - 1} (edited since the fit?)")
    for tag, name, column, value, said in (
            ("id", "embedding.csv", "object", "nan", "line 5: object 'nan' is not a number"),
            ("votes", "comparisons.csv", "votes", "1e400", "is not a finite number"),  # shown as inf or '1e400'
            ("inf", "comparisons.csv", "i", "inf", "line 5: i inf is not a whole number"),
            ("half", "comparisons.csv", "l", "2.5", "line 5: l 2.5 is not a whole number"),
            ("count", "comparisons.csv", "n_responses", "x", "line 5: n_responses 'x' is not a number"),
            ("empty", "comparisons.csv", "j", "", "line 5: j is missing"),
            ("gamma", "comparisons.csv", "gamma", "-inf", "line 5: gamma -inf is not a finite number"),
            ("flag", "comparisons.csv", "flagged", "maybe", "line 5: flagged 'maybe' is not True or False")):
        one_line_error(edited(tag, name, lambda t: t.loc.__setitem__((3, column), value)), f"{name} line 5: {column}",
                       said)
    # flags written as 1 / 0 (a spreadsheet's habit) are read as such, and whole numbers written 3.0 as indices
    folder = copy_run(run_folder, tmp_path / "spreadsheet")
    table = pd.read_csv(folder / "comparisons.csv")
    flags = table["flagged"].to_numpy(bool)
    table.assign(flagged=flags.astype(int), k=table["k"].astype(float)).to_csv(folder / "comparisons.csv",
                                                                               index=False)
    data = read_run(folder)
    assert data.comparisons["flagged"].dtype == bool and (data.comparisons["flagged"].to_numpy() == flags).all()
    assert data.comparisons["k"].dtype.kind == "i" and np.array_equal(data.comparisons["k"], table["k"])
    # votes are sums of the responses' weights: a fit of weighted answers writes 0.5 votes, and reads back
    weighted = tmp_path / "weighted.csv"
    weighted.write_text("anchor,closer,farther,weight\n0,1,2,0.5\n1,2,0,1.5\n2,0,1,1\n0,2,1,0.25\n3,0,1,2\n")
    fitted = CliRunner().invoke(main, ["fit", str(weighted), "--out", str(tmp_path / "wout"), "--quiet"])
    assert fitted.exit_code == 0, fitted.output
    assert "0.5" in (tmp_path / "wout" / "comparisons.csv").read_text().splitlines()[1].split(",")[5:7]
    assert report(tmp_path / "wout").exit_code == 0
    # a summary.json whose input list is empty: the title had IndexError
    folder = copy_run(run_folder, tmp_path / "noinput")
    summary = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**summary, "input": [], "settings": None, "files": None}))
    assert report(folder).exit_code == 0  # and settings null: the title had AttributeError
    # entries of another shape: each was a traceback (AttributeError, TypeError) from the page's code
    for key, value, said in (("settings", [], "settings is a list, not an object"),
                             ("input", 5, "input is a number, not a text or a list"),
                             ("files", ["embedding.csv", 1], "files is a list with something other than texts"),
                             ("warnings", True, "warnings is true or false, not a list"),
                             ("outliers_by_vote", {"tied": 1}, "outliers_by_vote lacks its counts")):
        (folder / "summary.json").write_text(json.dumps({**summary, key: value}))
        one_line_error(report(folder), f"summary.json: {said} (edited since the fit?)")


def test_axes_on_a_one_dimensional_run_say_there_is_one_coordinate(tmp_path):
    """At p = 1 the refusal asked for "two different numbers from 1 to 1"."""
    rng = np.random.default_rng(0)
    q = np.array([t for t in rng.integers(0, 8, size=(120, 3)) if len(set(t)) == 3])
    path = tmp_path / "line.csv"
    pd.DataFrame(q, columns=["anchor", "closer", "farther"]).to_csv(path, index=False)
    out = tmp_path / "one"
    fitted = CliRunner().invoke(main, ["fit", str(path), "--dim", "1", "--method", "soe", "--out", str(out)])
    assert fitted.exit_code == 0, fitted.output
    one_line_error(report(out, "--axes", "1,2"), "--axes 1,2: the fit in", "has one coordinate", "leave out --axes")


def test_python_call_refuses_what_is_not_a_fit(tmp_path):
    with pytest.raises(TypeError, match="fitted estimator"):
        write_report(object(), tmp_path / "x.html")
    with pytest.raises(RunFolderError):
        write_report(tmp_path, tmp_path / "x.html")


@pytest.mark.parametrize("options, error, match", [
    (dict(title=3), TypeError, "title must be text, got 3"),  # was "'int' object has no attribute 'replace'"
    (dict(label_title=["genre"]), TypeError, "label_title must be text"),
    (dict(bootstrap="out/uncertainty.csv"), TypeError, "bootstrap must be the result of roembed.bootstrap, got str"),
    (dict(max_comparisons=None), ValueError, "max_comparisons must be a positive integer, got None"),
    (dict(max_comparisons=0), ValueError, "max_comparisons must be a positive integer"),
])
def test_python_call_refuses_bad_options_by_name_and_writes_nothing(fitted, tmp_path, options, error, match):
    est, _ = fitted
    with pytest.raises(error, match=match):
        write_report(est, tmp_path / "x.html", **options)
    assert not (tmp_path / "x.html").exists()


def test_bootstrap_results_are_shown(fitted, run_folder, tmp_path):
    from roembed.uncertainty import bootstrap

    est, _ = fitted
    result = bootstrap(est, est.graph_.comparisons, 4, fitted=est, random_state=0)
    data = from_estimator(est, bootstrap=result)
    assert np.allclose(data.objects["stability"], result.stability())
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = result.flag_counts / result.present_counts
    assert np.allclose(data.comparisons["flag_frequency"], expected, equal_nan=True)
    intervals = result.annotators().set_index(result.annotators()["annotator"].astype(str))
    row = data.annotators.iloc[0]
    assert row["bootstrap_agreement_high"] == intervals.loc[row["annotator"], "agreement_high"]
    page = write_report(est, tmp_path / "b.html", bootstrap=result).read_text(encoding="utf-8")
    assert "flag freq." in page and "stability" in page
    # the outlier table says how often the bootstrap flags each outlier (it listed gamma only)
    from roembed.report.page import build

    layout = build(data)
    table = next(m for m in layout.references() if getattr(m, "name", None) == "outlier_table")
    assert "frequency" in [c.field for c in table.columns]
    rows = table.source.data
    assert np.allclose(rows["frequency"], expected[rows["edge"]], equal_nan=True) and len(rows["edge"])
    # the same tables beside a run folder (as roembed fit --bootstrap writes them) are read too
    folder = copy_run(run_folder, tmp_path / "with-bootstrap")
    result.objects().reset_index().to_csv(folder / "uncertainty.csv", index=False)
    result.flag_frequency().to_csv(folder / "flag_frequency.csv", index=False)
    read = read_run(folder)
    assert np.allclose(read.objects["stability"], result.stability())
    assert np.allclose(read.objects["axis_major"], result.objects()["axis_major"])
    assert np.allclose(read.comparisons["flag_frequency"], expected, equal_nan=True)


def _map_of(layout):
    return next(m for m in layout.references() if getattr(m, "name", None) == "map")


def test_regions_are_drawn_for_every_object_only_up_to_max_regions_and_the_view_fits_the_points(fitted, monkeypatch):
    """THINGS' 1,473 regions (10 replicates) made the map one solid blot, and music's loosest regions widened the
    view threefold, squeezing the points into its middle.  Above MAX_REGIONS objects (the static plot's limit) the
    region shows for the chosen object only."""
    from bokeh.models import Ellipse, Scatter

    import roembed.plotting
    from roembed.report.page import build
    from roembed.uncertainty import bootstrap

    est, _ = fitted
    result = bootstrap(est, est.graph_.comparisons, 4, fitted=est, random_state=0)

    import roembed.report.page as page

    def regions_and_points(max_regions, max_cover=0.0):
        monkeypatch.setattr(roembed.plotting, "MAX_REGIONS", max_regions)
        monkeypatch.setattr(page, "MAX_REGION_COVER", max_cover)
        layout = build(from_estimator(est, bootstrap=result))
        plot = _map_of(layout)
        regions = next(r for r in plot.renderers if isinstance(getattr(r, "glyph", None), Ellipse))
        points = next(r for r in plot.renderers if isinstance(getattr(r, "glyph", None), Scatter)
                      and r.data_source is regions.data_source)
        info = next(m for m in layout.references() if getattr(m, "name", None) == "info")
        return plot, regions, points, info.text

    plot, regions, points, text = regions_and_points(N)  # every object's region
    assert regions.glyph.fill_alpha == 0.08 and regions.glyph.line_alpha == 0.35
    assert "The shaded ellipse around an object is its 90% region from the bootstrap" in text
    assert plot.x_range.renderers == [points] and plot.y_range.renderers == [points]
    plot, regions, points, text = regions_and_points(N - 1)  # the chosen object's only
    assert regions.glyph.fill_alpha == 0 and regions.glyph.line_alpha == 0
    def alpha(glyph, which):
        value = getattr(glyph, which)
        return getattr(value, "value", value)  # a clone's properties come wrapped in Value

    assert alpha(regions.nonselection_glyph, "fill_alpha") == 0 and alpha(regions.nonselection_glyph, "line_alpha") == 0
    assert alpha(regions.selection_glyph, "fill_alpha") > 0 and alpha(regions.selection_glyph, "line_alpha") > 0
    assert regions.data_source is points.data_source  # a click on a point selects its region
    assert "around a chosen object" in text
    # more objects than MAX_REGIONS, but regions that cover the map little (material: 1.3 times over): all drawn
    data = from_estimator(est, bootstrap=result)
    cover = page._region_cover(data.objects, data.coordinates)
    used = data.objects["n_responses"].to_numpy() > 0
    box = np.prod(np.ptp(data.coordinates[used], axis=0))
    assert cover == pytest.approx(np.sum(np.pi * data.objects["axis_major"] * data.objects["axis_minor"]) / box)
    plot, regions, points, text = regions_and_points(N - 1, max_cover=cover * 1.01)
    assert regions.glyph.fill_alpha == 0.08 and "around an object" in text
    plot, regions, points, text = regions_and_points(N - 1, max_cover=cover * 0.99)
    assert regions.glyph.fill_alpha == 0 and "around a chosen object" in text


def test_the_key_beside_an_unlabelled_map_shows_its_dashed_line_before_any_click(fitted):
    """Without labels the key sat inside the map over a corner's objects, and read "called farther" with no line:
    Bokeh draws no legend glyph for a renderer whose source is empty until an object is chosen."""
    from bokeh.models import Legend

    from roembed.report.page import build

    est, _ = fitted
    plot = _map_of(build(from_estimator(est)))
    assert not any(isinstance(m, Legend) for m in plot.center)
    legend = next(m for m in plot.right if isinstance(m, Legend))
    [item] = legend.items
    assert item.label.value == "called farther"
    [key] = item.renderers
    assert key.glyph.line_dash == "dashed" and len(key.data_source.data["x0"]) == 1  # a row to draw the key by
    assert np.isnan(key.data_source.data["x0"][0])  # that draws nothing on the map


def test_a_numeric_label_shades_the_map_on_a_colour_bar(fitted):
    """A measured quantity as categories: ten arbitrary values got colours and a legend entry each."""
    from bokeh.models import ColorBar, Legend

    from roembed.report.page import build

    est, _ = fitted
    values = np.linspace(0.1, 2.0, N)
    labels = [f"{v:.2f}" for v in values[:-1]] + [""]
    data = from_estimator(est, labels=labels)
    data.summary["label_column"] = "roughness"
    as_float32 = from_estimator(est, labels=np.r_[values[:-1], np.nan].astype(np.float32)).objects["label"]
    assert as_float32.iloc[-1] == "" and as_float32.iloc[0] == "0.1"  # a float32 NaN is no label, not "nan"
    plot = _map_of(build(data))
    [bar] = [m for m in plot.right if isinstance(m, ColorBar)]
    assert bar.title == "roughness" and (bar.color_mapper.low, bar.color_mapper.high) == pytest.approx((0.1, 1.9))
    [legend] = [m for m in plot.right if isinstance(m, Legend)]
    assert [item.label.value for item in legend.items] == ["called farther"]  # no label entries
    shaded = plot.select_one({"name": "objects"}).data["value"]
    assert np.allclose(shaded[:-1], values[:-1].round(2), atol=1e-6) and np.isnan(shaded[-1])


def test_fit_report_is_the_page_roembed_report_writes(run_folder, tmp_path):
    """``roembed fit --bootstrap N --report`` built its page from the estimator, without the bootstrap: no regions,
    no stability, no flag frequencies, and no colours for unlinked groups, unlike ``roembed report`` of the same
    folder.  Both now read the folder; the pages differ only in Bokeh's random element ids."""
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["fit", str(run_folder.parent / "votes.csv"), "--out", str(out),
                                       "--max-iter", "100", "--bootstrap", "3", "--quiet", "--report"])
    assert result.exit_code == 0, result.output + result.stderr
    result = CliRunner().invoke(main, ["report", str(out), "-o", str(tmp_path / "again.html")])
    assert result.exit_code == 0, result.stderr
    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "flag freq." in page and "stability" in page and "90% region" in page
    ids = re.compile(r"\bp\d+\b")  # Bokeh numbers its models on from the last document built in the process
    assert ids.sub("", uuid.sub("", page)) == ids.sub("", uuid.sub("", (tmp_path / "again.html").read_text(encoding="utf-8")))
    (out / "report.html").unlink()  # a run whose page was deleted is still a run to report on
    result = CliRunner().invoke(main, ["report", str(out)])
    assert result.exit_code == 0, result.stderr


def test_unlinked_groups_colour_an_unlabelled_run_and_objects_without_comparisons_say_so(run_folder, tmp_path):
    """Objects in no comparison (group -1 in embedding.csv) were listed as "group -1"."""
    folder = copy_run(run_folder, tmp_path / "groups")
    objects = pd.read_csv(folder / "embedding.csv").drop(columns="label")
    objects["group"] = [0] * (N - 3) + [1, 1, -1]
    objects.to_csv(folder / "embedding.csv", index=False)
    read = read_run(folder)
    assert read.objects["label"].tolist() == ["group 0"] * (N - 3) + ["group 1", "group 1", "no comparison"]
    summary = json.loads((folder / "summary.json").read_text())
    del summary["label_column"]
    (folder / "summary.json").write_text(json.dumps(summary))
    assert read_run(folder).summary["label_column"] == "unlinked groups"


def test_the_annotator_table_shows_who_is_suspect_and_why_first(fitted):
    """``suspect`` and ``reason`` were the table's last two of 28 columns, out of sight to the right."""
    from roembed.report.page import build

    est, _ = fitted
    layout = build(from_estimator(est))
    table = next(m for m in layout.references() if getattr(m, "name", None) == "annotator_table")
    fields = [c.field for c in table.columns]
    assert fields[:3] == ["annotator", "suspect", "reason"] and len(fields) > 10
    assert sorted(fields) == sorted(from_estimator(est).annotators.columns)  # every column still there


@pytest.mark.parametrize("inputs", [["votes.csv"], ["day1.csv", "day2.csv"]])
def test_the_fits_warnings_head_the_page(run_folder, tmp_path, inputs):
    """The run's warnings were only in the summary table at the page's foot, as one JSON list: "the comparisons
    cannot pin the map down" went unseen under a map that looked fine."""
    from roembed.report.page import header_html

    data = read_run(run_folder)
    named = inputs[0] if len(inputs) == 1 else f"{inputs[0]} (+1 more)"  # as roembed fit names its input
    data.summary.update(input=inputs[0] if len(inputs) == 1 else inputs, warnings=[
        f"{named}: the comparisons cannot pin the map down", "labels.tsv: 3 of the 20 objects have no row"])
    header = header_html(data, "t")
    assert ('<p class="note">warning: the comparisons cannot pin the map down</p>'
            '<p class="note">warning: labels.tsv: 3 of the 20 objects have no row</p>') in header
    data.objects.loc[3, "n_responses"] = 0
    data.summary["warnings"] = [f"{named}: 1 of 20 objects appear in no comparison (e.g. item03): their "
                                "coordinates are arbitrary"]  # as the fit words it: the page's own note would repeat it
    assert header_html(data, "t").count('class="note"') == 1 and "warning: 1 of 20 objects" in header_html(data, "t")
    data.summary.pop("warnings")
    assert header_html(data, "t").count('class="note"') == 1 and \
        "The map leaves out the objects without comparisons (1): their positions are arbitrary." in \
        header_html(data, "t")


def test_a_report_written_from_python_heads_with_what_the_data_cannot_support(tmp_path):
    """``write_report(est)`` had no warnings at its top (the estimator keeps none), so a page shared from Python
    looked fine where ``roembed fit``'s said the comparisons cannot support the map; it now lists the data's
    problems, recomputed from the fitted graph."""
    data = make_synthetic(n_objects=N, dim=2, n_train=300, n_validation=10, n_test=10, votes=(1, 1), rate=0.0,
                          model="vote", random_state=5)
    triplets = data.train.triplets[np.all(data.train.triplets != 7, axis=1)]  # object 7 in no comparison
    with pytest.warns(DataWarning, match="1 of 20 objects"):
        est = roembed.SOE(2, random_state=0).fit(roembed.Comparisons.from_triplets(triplets, n_objects=N))
    page = write_report(est, tmp_path / "r.html").read_text()
    assert '<p class="note">warning: 1 of 20 objects' in page
    clean = roembed.SOE(2, random_state=0).fit(data.train)
    assert 'class="note">warning' not in write_report(clean, tmp_path / "c.html").read_text()


def test_browser_tests_skip_locally_but_fail_when_required(monkeypatch):
    import browser_kit

    from roembed.report import browser

    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.setattr(browser.os.path, "exists", lambda path: False)
    monkeypatch.delenv("ROEMBED_BROWSER_TESTS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Chromium or chromedriver not found"):
        browser_kit.start_chrome()
    monkeypatch.setenv("ROEMBED_BROWSER_TESTS", "require")
    with pytest.raises(pytest.fail.Exception, match="required"):
        browser_kit.start_chrome()


def test_the_header_counts_weighted_responses_and_their_total_weight(tmp_path):
    """A file of vote counts (the material set's ``agreement``: 34,183 rows, 92,892 answers) read as weighted
    rows: the page and ``summary.json`` give the weights' sum beside the rows, in thousands; unweighted data
    leave it out (the count of responses says it)."""
    data = make_synthetic(n_objects=N, dim=2, n_train=1200, n_validation=10, n_test=10, votes=(1, 1), rate=0.0,
                          model="vote", random_state=6)
    counts = np.arange(len(data.train)) % 3 + 1.0
    weighted = roembed.Comparisons(data.train.quadruplets, n_objects=N, weight=counts)
    est = roembed.SOE(2, random_state=0, max_iter=100).fit(weighted)
    page = write_report(est, tmp_path / "w.html").read_text()
    assert f"responses <b>{len(counts):,}</b> &middot; total weight <b>{int(counts.sum()):,}</b>" in page
    assert int(counts.sum()) >= 1000 and len(counts) >= 1000  # so the separators show
    assert f"<th>n_responses</th><td>{len(counts)}</td>" in page  # the footer's table keeps the plain values
    plain = roembed.SOE(2, random_state=0, max_iter=100).fit(data.train)
    page = write_report(plain, tmp_path / "p.html").read_text()
    assert f"responses <b>{len(counts):,}</b> &middot; comparisons" in page and "total weight" not in page
    rows = pd.DataFrame(data.train.triplets, columns=["anchor", "closer", "farther"]).assign(weight=counts)
    rows.to_csv(tmp_path / "votes.csv", index=False)
    result = CliRunner().invoke(main, ["fit", str(tmp_path / "votes.csv"), "--out", str(tmp_path / "out"),
                                       "--method", "soe", "--max-iter", "100", "--quiet"])
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["n_responses"] == len(counts) and summary["total_weight"] == counts.sum()


def test_annotator_ids_written_with_leading_zeros_are_read_back_as_written(tmp_path):
    """annotators.csv's "007" was read back as 7 while the comparisons' annotators stayed "007": the table showed 7,
    and clicking it listed none of its comparisons (the page knew "7" and "007" as two annotators)."""
    rng = np.random.default_rng(2)
    rows = [rng.choice(15, 3, replace=False) for _ in range(400)]
    pd.DataFrame({"anchor": [f"o{r[0]}" for r in rows], "closer": [f"o{r[1]}" for r in rows],
                  "farther": [f"o{r[2]}" for r in rows],
                  "worker": [f"{w:03d}" for w in rng.integers(1, 9, 400)]}).to_csv(tmp_path / "v.csv", index=False)
    result = CliRunner().invoke(main, ["fit", str(tmp_path / "v.csv"), "--out", str(tmp_path / "o"), "--quiet",
                                       "--bootstrap", "4"])
    assert result.exit_code == 0, result.output + result.stderr
    data = read_run(tmp_path / "o")
    workers = set(data.annotators["annotator"])
    assert all(len(w) == 3 and w.startswith("00") for w in workers)
    assert set(data.edge_annotators["annotator"]) == workers
    assert data.annotators["bootstrap_agreement_low"].notna().all()  # annotator_intervals.csv matched too
