"""`roembed reproduce synthetic|music` end to end on one tiny cell each."""
from pathlib import Path

import pytest
from click.testing import CliRunner

import experiments_testkit as kit
from roembed.cli import main
from roembed.experiments.runner import MethodSpec, ResultStore, register_method

register_method(MethodSpec("tiny-cli", factory=kit.TinyFlagger))
register_method(MethodSpec("tiny-warns", factory=kit.Warning_))
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
    (["--models", ""], "give at least one of vote"),  # was a TypeError traceback
    (["--models", " , "], "give at least one of vote"),
    (["--rates", "0,2"], "[0, 1]"),
    (["--rates", "x"], "comma-separated"),
    (["--methods", "nope"], "unknown"),
    (["--seed", "-1"], "Invalid value for '--seed': -1 is not in the range x>=0"),  # was numpy's traceback
])
def test_bad_options(tmp_path, bad, message):
    result = CliRunner().invoke(main, ["reproduce", "synthetic", "--out", str(tmp_path), *bad])
    assert result.exit_code == 2 and message in result.output


def test_reproduce_music_in_a_folder_without_the_data_stops_at_once(tmp_path):
    """It ran every cell, stored each as failed (FileNotFoundError) and exited 0; now one usage error, no store."""
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["reproduce", "music", "--data", str(tmp_path), "--trials", "1", "--methods",
                                       "tiny-cli", "--out", str(out), "--no-progress"])
    assert result.exit_code == 2 and "missing music_triplets_0based.csv" in result.output
    assert "Invalid value for --data" in result.output and not out.exists()
    for option in (["--n-jobs", "0"], ["--n-jobs", "two"]):  # 0 was joblib's "n_jobs == 0 has no meaning"
        result = CliRunner().invoke(main, ["reproduce", "synthetic", "--out", str(out), *option])
        assert result.exit_code == 2 and "Invalid value for '--n-jobs'" in result.output and not out.exists()


def test_method_names_match_without_case_hyphens_or_underscores():
    """``roembed fit --method tste`` names t-STE; in ``reproduce --methods`` it was "unknown ['tste']"."""
    import click

    from roembed.cli.reproduce import _registered
    from roembed.experiments.runner import METHODS

    assert _registered(("tste", "gnmds-p", "Two_Stage", "roe", "GNMDS"), METHODS) == \
        ("t-STE", "GNMDS-p", "two-stage", "ROE", "GNMDS")
    with pytest.raises(click.BadParameter, match=r"unknown \['tsne'\]; registered: .*t-STE") as info:
        _registered(("tste", "tsne"), METHODS)
    assert " is run by " not in str(info.value)
    # an estimator's class name: the methods that run it, each with what it is
    with pytest.raises(click.BadParameter) as info:
        _registered(("RobustOrdinalEmbedding", "soe"), METHODS)
    said = str(info.value)
    assert "unknown ['RobustOrdinalEmbedding']" in said
    assert said.endswith("; RobustOrdinalEmbedding is run by robust (" + METHODS["robust"].description + "), default ("
                         + METHODS["default"].description + ")")


@pytest.mark.parametrize("n_jobs", ["1", "2"])
def test_a_cells_warnings_are_kept_in_its_record_and_counted_once_at_the_end(tmp_path, n_jobs):
    """Each fit's warnings were printed as they came, with joblib's source line, hundreds of times in a run; now
    once per kind (messages that differ only in their numbers or parenthesised examples are one kind)."""
    result = CliRunner().invoke(main, ["reproduce", "synthetic", "--trials", "2", "--models", "vote", "--rates",
                                       "0.25", "--methods", "tiny-warns", "--n-test", "500", "--out", str(tmp_path),
                                       "--no-progress", "--n-jobs", n_jobs])
    assert result.exit_code == 0, result.output
    records = ResultStore(tmp_path / "results.jsonl").records()
    assert len(records) == 2 and all(r["status"] == "ok" for r in records)
    for r in records:  # each text once, in the order said
        assert r["warnings"][0] == "UserWarning: always said" and len(r["warnings"]) == 2
        assert r["warnings"][1].startswith("RuntimeWarning: ") and r["warnings"][1].endswith(" edges")
    lines = [line for line in result.stderr.splitlines() if line.startswith("warning")]
    assert lines[0] == "warning (2 of 2 cells; their records list it): UserWarning: always said"
    texts = {r["warnings"][1] for r in records}  # the edges' counts differ by cell: one kind, quoted once
    assert len(lines) == 2 and lines[1].startswith(
        f"warning (2 of 2 cells; their records list it){', e.g.' if len(texts) > 1 else ''}: RuntimeWarning: ")
    assert "UserWarning" not in result.stdout and "warnings.warn" not in result.stderr


def test_reproduce_into_a_store_of_another_seed_stops_with_one_line(tmp_path):
    args = ["reproduce", "synthetic", "--trials", "1", "--models", "vote", "--rates", "0.25", "--methods",
            "tiny-cli", "--n-test", "500", "--out", str(tmp_path), "--no-progress"]
    assert CliRunner().invoke(main, args).exit_code == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for other, said in ((["--seed", "3"], "seed 0 there, 3 now"), (["--n-test", "400"], "n_test 500 there, 400 now")):
        result = CliRunner().invoke(main, args + other)
        assert result.exit_code == 2, result.output
        assert said in result.output and len(result.output.strip().splitlines()) == 1
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # tables not rewritten either


@pytest.mark.skipif(not MUSIC.is_dir(), reason="music data folder absent")
def test_the_music_settings_name_the_data_by_content(tmp_path):
    import shutil

    from roembed.experiments.music import MusicProtocol

    copy, edited = tmp_path / "copy", tmp_path / "edited"
    for folder in (copy, edited):
        folder.mkdir()
        shutil.copy(MUSIC / "artist_names.tsv", folder)
    shutil.copy(MUSIC / "music_triplets_0based.csv", copy)
    rows = (MUSIC / "music_triplets_0based.csv").read_text().splitlines(keepends=True)
    (edited / "music_triplets_0based.csv").write_text("".join(rows[:-1]))
    original, same, other = (MusicProtocol(str(p)).settings() for p in (MUSIC, copy, edited))
    assert original == same and len(original["data_sha256"]) == 16
    assert other["data_sha256"] != original["data_sha256"]
    assert {k: v for k, v in other.items() if k != "data_sha256"} == {k: v for k, v in original.items()
                                                                      if k != "data_sha256"}


def test_a_full_disk_is_one_line_naming_the_store_and_the_store_still_resumes(tmp_path, monkeypatch):
    """A full disk while a cell's record is appended was a traceback (exit 1); now one line naming the store,
    exit 2, and the store (a torn last line at worst) resumes once there is room."""
    import errno
    import os

    args = ["reproduce", "synthetic", "--trials", "1", "--models", "unanimous", "--rates", "0.25",
            "--methods", "tiny-cli", "--n-test", "2000", "--out", str(tmp_path), "--no-progress"]

    def full(fd):  # the record's last bytes did not fit: a torn line, then the error
        os.ftruncate(fd, os.fstat(fd).st_size - 5)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", full)
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stderr.strip() == f"Error: {tmp_path / 'results.jsonl'}: cannot write (No space left on device)"
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and "1 new cells" in again.output
    assert [r["status"] for r in ResultStore(tmp_path / "results.jsonl").records()] == ["ok"]
