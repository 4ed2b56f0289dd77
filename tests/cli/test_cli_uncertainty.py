"""``roembed fit --bootstrap N`` and ``--dim auto``: the tables beside the usual outputs."""
import json

import pandas as pd
import pytest
from click.testing import CliRunner

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


def test_dim_auto_writes_the_selection(votes, tmp_path):
    out = tmp_path / "out"
    result = run(votes, "--out", out, "--dim", "auto", "--method", "soe", "--max-iter", 100)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    table = pd.read_csv(out / "dimensions.csv")
    assert summary["dim_selected"] == 2 and table.loc[table["chosen"], "n_components"].item() == 2
    assert {"dimensions.csv", "dimensions.png"} <= set(summary["files"])
    assert pd.read_csv(out / "embedding.csv").filter(like="x").shape[1] == 2
    assert "dimension 2 chosen" in result.output


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
