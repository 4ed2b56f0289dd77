"""`roembed reproduce synthetic|music` end to end on one tiny cell each."""
from pathlib import Path

import pytest
from click.testing import CliRunner

import experiments_testkit as kit
from roembed.cli import main
from roembed.experiments.runner import MethodSpec, ResultStore, register_method

register_method(MethodSpec("tiny-cli", factory=kit.TinyFlagger))
MUSIC = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "music-aset400-ste"


def test_reproduce_synthetic_writes_store_tables_and_resumes(tmp_path):
    args = ["reproduce", "synthetic", "--trials", "1", "--models", "unanimous", "--rates", "0.25",
            "--methods", "tiny-cli", "--n-test", "2000", "--out", str(tmp_path), "--no-progress"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "1 new cells" in result.output
    (record,) = ResultStore(tmp_path / "results.jsonl").records()
    assert record["status"] == "ok" and record["model"] == "unanimous"
    assert (tmp_path / "tables.md").read_text().count("| tiny-cli |") == 1
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and "0 new cells" in again.output


@pytest.mark.skipif(not MUSIC.is_dir(), reason="music data folder absent")
def test_reproduce_music(tmp_path):
    result = CliRunner().invoke(main, ["reproduce", "music", "--data", str(MUSIC), "--trials", "1", "--rates", "0",
                                       "--methods", "tiny-cli", "--out", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    (record,) = ResultStore(tmp_path / "results.jsonl").records()
    assert record["protocol"] == "music" and record["status"] == "ok" and record["test_error"] < 0.5


@pytest.mark.parametrize("bad, message", [
    (["--models", "nope"], "unknown"),
    (["--rates", "0,2"], "[0, 1]"),
    (["--rates", "x"], "comma-separated"),
    (["--methods", "nope"], "unknown"),
])
def test_bad_options(tmp_path, bad, message):
    result = CliRunner().invoke(main, ["reproduce", "synthetic", "--out", str(tmp_path), *bad])
    assert result.exit_code == 2 and message in result.output
