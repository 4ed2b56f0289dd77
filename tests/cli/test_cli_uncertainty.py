"""``roembed fit --bootstrap N`` and ``--dim auto``: the tables beside the usual outputs."""
import json

import pandas as pd
import pytest
from click.testing import CliRunner

from cli_testkit import one_line_error

from roembed.cli import main
from roembed.experiments import make_synthetic


@pytest.fixture(scope="module")
def votes(tmp_path_factory):
    data = make_synthetic(n_objects=16, dim=2, n_train=500, n_validation=10, n_test=10, votes=(2, 4),
                          rate=0.2, model="spammers", n_annotators=8, random_state=2)
    t = data.train.triplets
    path = tmp_path_factory.mktemp("votes") / "votes.csv"
    pd.DataFrame({"anchor": t[:, 0], "closer": t[:, 1], "farther": t[:, 2],
                  "annotator": [f"w{a}" for a in data.train.annotator]}).to_csv(path, index=False)
    return path


def run(*args):
    return CliRunner().invoke(main, ["fit", *map(str, args)])


def test_bootstrap_writes_its_tables_and_pictures(votes, tmp_path):
    out = tmp_path / "out"
    result = run(votes, "--out", out, "--bootstrap", 3, "--seed", 1, "--max-iter", 100, "-q")
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    expected = {"uncertainty.csv", "uncertainty.png", "flag_frequency.csv", "flag_frequency.png",
                "annotator_intervals.csv", "embedding.csv", "summary.json"}
    assert expected <= set(summary["files"]) and set(summary["files"]) == {p.name for p in out.iterdir()}
    objects = pd.read_csv(out / "uncertainty.csv")
    assert len(objects) == 16 and {"object", "x1", "x2", "axis_major", "stability", "n_comparisons"} <= set(objects)
    assert summary["bootstrap"]["replicates"] == 3 and summary["bootstrap"]["unit"] == "query"
    assert 0 < summary["bootstrap"]["out_of_bag_error"] < 0.6
    flags = pd.read_csv(out / "flag_frequency.csv")
    assert flags["flag_frequency"].dropna().between(0, 1).all()
    assert len(pd.read_csv(out / "annotator_intervals.csv")) == 8
    # a plain rerun into the same folder replaces the whole set: no bootstrap file stays behind
    assert run(votes, "--out", out, "--seed", 1, "--max-iter", 100, "-q").exit_code == 0
    assert not expected - {"embedding.csv", "summary.json"} & {p.name for p in out.iterdir()}


def test_bootstrap_warnings_are_reported_not_dropped(votes, tmp_path):
    # 2 replicates in 2 dimensions: singular covariances, no regions -- said on stderr and in the summary
    out = tmp_path / "out"
    result = run(votes, "--out", out, "--bootstrap", 2, "--seed", 1, "--max-iter", 100, "-q")
    assert result.exit_code == 0, result.output
    line = [s for s in result.output.splitlines() if s.startswith("warning: --bootstrap 2:")]
    assert line and any("no confidence regions" in s for s in line)
    summary = json.loads((out / "summary.json").read_text())
    assert any("no confidence regions" in w for w in summary["warnings"])
    assert pd.read_csv(out / "uncertainty.csv")["axis_major"].isna().all()


def test_dim_auto_writes_the_selection(votes, tmp_path, monkeypatch):
    out = tmp_path / "out"
    result = run(votes, "--out", out, "--dim", "auto", "--method", "soe", "--max-iter", 100)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    table = pd.read_csv(out / "dimensions.csv")
    assert summary["dim_selected"] == 2 and table.loc[table["chosen"], "n_components"].item() == 2
    assert {"dimensions.csv", "dimensions.png"} <= set(summary["files"])
    assert pd.read_csv(out / "embedding.csv").filter(like="x").shape[1] == 2
    assert "dimension 2 chosen" in result.output
    # --jobs 2 runs the folds on two processes, with the same selection and map
    import joblib
    import roembed.dimension

    workers = []

    class Recorded(joblib.Parallel):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            workers.append(self.n_jobs)

    monkeypatch.setattr(roembed.dimension, "Parallel", Recorded)
    again = tmp_path / "again"
    result = run(votes, "--out", again, "--dim", "auto", "--method", "soe", "--max-iter", 100, "--jobs", 2)
    assert result.exit_code == 0, result.output
    assert workers == [2]
    assert pd.read_csv(again / "dimensions.csv").equals(table)
    assert pd.read_csv(again / "embedding.csv").equals(pd.read_csv(out / "embedding.csv"))
    # and a rerun into the same folder replaces the set (the selection's files are roembed's own)
    assert run(votes, "--out", out, "--method", "soe", "--max-iter", 100, "-q").exit_code == 0
    assert not {"dimensions.csv", "dimensions.png"} & {p.name for p in out.iterdir()}


def test_dim_auto_with_bootstrap_resamples_at_the_chosen_dimension(votes, tmp_path):
    # the replicates start from the full fit's map, so they must fit at its dimension, not choose their own
    out = tmp_path / "out"
    result = run(votes, "--out", out, "--dim", "auto", "--bootstrap", 4, "--seed", 1, "--max-iter", 100)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    p = summary["dim_selected"]
    assert summary["bootstrap"]["replicates"] == 4
    assert {"dimensions.csv", "uncertainty.csv", "flag_frequency.csv"} <= set(summary["files"])
    columns = set(pd.read_csv(out / "uncertainty.csv"))
    assert {f"x{d}" for d in range(1, p + 1)} <= columns and f"x{p + 1}" not in columns
    assert pd.read_csv(out / "embedding.csv").filter(regex=r"^x\d+$").shape[1] == p


@pytest.mark.parametrize("args, fragment", [(["--bootstrap", 1], "at least 2"),
                                            (["--bootstrap", 3, "--annotator-rounds", 1], "cannot be combined"),
                                            (["--dim", "zero"], "neither a positive integer nor 'auto'"),
                                            (["--dim", "0"], "not a positive integer")])
def test_bad_options(votes, tmp_path, args, fragment):
    result = run(votes, "--out", tmp_path / "out", *args)
    assert result.exit_code == 2 and fragment in result.output
    assert not (tmp_path / "out").exists()


def test_annotator_unit_without_annotators_is_bad_input(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"anchor": [0, 1, 2, 3] * 20, "closer": [1, 2, 3, 0] * 20, "farther": [2, 3, 0, 1] * 20}).to_csv(
        path, index=False)
    result = run(path, "--out", tmp_path / "out", "--bootstrap", 3, "--bootstrap-unit", "annotator",
                 "--max-iter", 50)
    assert result.exit_code == 2 and "annotator" in result.output


def test_an_interrupted_bootstrap_resumes_from_its_store(votes, tmp_path, monkeypatch):
    from roembed import uncertainty

    args = [votes, "--bootstrap", 4, "--seed", 1, "--max-iter", 100, "--method", "soe"]
    plain = run(*args, "--out", tmp_path / "plain", "-q")
    assert plain.exit_code == 0, plain.output
    store, out = tmp_path / "store", tmp_path / "out"
    real, calls = uncertainty._replicate, []

    def interrupted(*a):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C during the third replicate
        return real(*a)

    monkeypatch.setattr(uncertainty, "_replicate", interrupted)
    stopped = run(*args, "--out", out, "--bootstrap-store", store)
    assert stopped.exit_code == 130 and not out.exists()  # interrupted; no output folder from a run that did not finish
    assert sorted(p.name for p in store.iterdir()) == ["manifest.json", "replicate-0000.npz", "replicate-0001.npz"]
    monkeypatch.setattr(uncertainty, "_replicate", real)
    resumed = run(*args, "--out", out, "--bootstrap-store", store)  # the same command again
    assert resumed.exit_code == 0, resumed.output
    assert f"2 of 4 replicates read from {store}" in resumed.output
    for name in ("uncertainty.csv", "embedding.csv"):
        assert (out / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()
    summary = json.loads((out / "summary.json").read_text())["bootstrap"]
    assert summary["from_store"] == 2 and summary["store"] == str(store)


def test_a_bootstrap_store_of_another_run_is_bad_input(votes, tmp_path):
    store = tmp_path / "store"
    args = [votes, "--bootstrap", 2, "--max-iter", 50, "--method", "soe", "--bootstrap-store", store]
    assert run(*args, "--out", tmp_path / "a", "--seed", 1).exit_code == 0
    result = run(*args, "--out", tmp_path / "b", "--seed", 1, "--bootstrap-unit", "annotator")
    one_line_error(result, "--bootstrap-store", str(store), "another run", "unit")
    assert not (tmp_path / "b").exists()
    one_line_error(run(votes, "--out", tmp_path / "c", "--bootstrap-store", store), "goes with --bootstrap")
    one_line_error(run(votes, "--out", tmp_path / "d", "--bootstrap", 2, "--bootstrap-store", tmp_path / "d" / "s"),
                   "outside --out")


def test_a_blank_bootstrap_store_is_bad_input(votes, tmp_path, monkeypatch):
    """'' was read as the working folder: manifest.json and replicate-*.npz written among the user's files."""
    monkeypatch.chdir(tmp_path)
    result = run(votes, "--out", tmp_path / "a", "--bootstrap", 2, "--bootstrap-store", "")
    one_line_error(result, "--bootstrap-store", "an empty path")
    assert result.exit_code == 2 and list(tmp_path.iterdir()) == []


def test_uncertainty_png_names_the_labels_as_embedding_png_does(votes, tmp_path, monkeypatch):
    """The labels' legend of uncertainty.png had no title (embedding.png's says "genres")."""
    from roembed import plotting

    titles = []
    real = plotting.plot_embedding

    def spy(*args, **kwargs):
        titles.append(kwargs.get("label_title"))
        return real(*args, **kwargs)

    monkeypatch.setattr(plotting, "plot_embedding", spy)
    labels = tmp_path / "labels.csv"
    labels.write_text("index0,kind\n" + "".join(f"{o},k{o % 3}\n" for o in range(16)))
    result = run(votes, "--out", tmp_path / "out", "--bootstrap", 2, "--max-iter", 50, "--labels", labels)
    assert result.exit_code == 0, result.output
    assert titles == ["kind", "kind"]  # embedding.png, uncertainty.png
    # the bootstrap's answer is printed too (it was in summary.json only)
    b = json.loads((tmp_path / "out" / "summary.json").read_text())["bootstrap"]
    assert (f"bootstrap (2 replicates by query): out-of-bag error {b['out_of_bag_error']:.4f} (90% interval "
            f"{b['out_of_bag_error_low']:.4f}-{b['out_of_bag_error_high']:.4f}); median stability "
            f"{b['median_stability']:.2f} (the share of an object's nearest neighbours kept across replicates), "
            f"least stable: {', '.join(map(str, b['least_stable']))}; uncertainty.csv has all") in result.stdout


def test_the_bootstrap_line_names_the_least_stable_objects_when_they_have_names():
    from roembed.cli._uncertainty import describe_bootstrap

    part = {"bootstrap": {"replicates": 10, "unit": "annotator", "confidence": 0.9, "out_of_bag_error": 0.21,
                          "out_of_bag_error_low": 0.2, "out_of_bag_error_high": 0.23, "median_stability": 0.3,
                          "least_stable": [4, 7], "least_stable_names": ["sugar", "coal_chamber"]}}
    assert describe_bootstrap(part) == (
        "bootstrap (10 replicates by annotator): out-of-bag error 0.2100 (90% interval 0.2000-0.2300); median "
        "stability 0.30 (the share of an object's nearest neighbours kept across replicates), least stable: sugar, "
        "coal_chamber; uncertainty.csv has all")
    part["bootstrap"]["median_stability"] = None  # no stability (k = 0): the error only
    assert describe_bootstrap(part).endswith("(90% interval 0.2000-0.2300)")
