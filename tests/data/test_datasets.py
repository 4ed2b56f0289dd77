"""Each real data set loads through the public API with its names and PROVENANCE.md counts."""
from pathlib import Path

import numpy as np
import pytest

import roembed
from roembed.data import SkippedRowsWarning

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def _folder(name):
    path = DATA / name
    if not path.is_dir():
        pytest.skip(f"{path} is absent")
    return path


def test_music_drops_degenerate_rows_loudly_and_keeps_names():
    path = _folder("music-aset400-ste")
    with pytest.warns(SkippedRowsWarning, match="skipped 17"):
        music, report = roembed.load_music(path, return_report=True)
    assert report.n_skipped == 17 and report.examples[0].endswith(
        "music_triplets_0based.csv line 5033: the second pair repeats an object (farther == anchor): (221, 150, 221)")
    assert len(music) == 9107 - 17 and music.is_triplet
    assert music.n_objects == 400 and len(music.object_names) == 400
    with pytest.warns(SkippedRowsWarning):
        full = roembed.load_music(path, objects="all")
    assert full.n_objects == 412 and full.object_names[7] == "acdc" and full.object_names[232] == "miles_davis"
    # renumbering keeps each triplet's artists
    names_used = np.asarray(music.object_names)[music.triplets]
    names_full = np.asarray(full.object_names)[full.triplets]
    assert (names_used == names_full).all()
    genres = roembed.load_music_genres(path)
    assert len(genres) == 412 and (genres.str.len() == 0).sum() == 17
    assert "jazz" in genres["miles_davis"] and "eurodance" in genres["ace_of_base"]
    assert len(genres[list(music.object_names)]) == 400


@pytest.mark.parametrize("split, n_queries, n_responses, n_tied", [("train", 22801, 92892, 1395), ("test", 3000, 11800, 262)])
def test_material_votes_become_responses(split, n_queries, n_responses, n_tied):
    material = roembed.load_material(_folder("material-similarity-lagunas2019"), split)
    assert len(material) == n_responses and material.n_objects == 100 and material.is_triplet
    assert material.object_names[0] == "alum-bronze"
    graph = material.aggregate()
    assert graph.votes.sum() == n_responses
    # each query is one unordered triplet: a tie means both directions with equal votes
    both = graph.reverse_edge >= 0
    assert len(graph) - both.sum() // 2 == n_queries
    assert (both & (graph.votes == graph.opposing_votes)).sum() // 2 == n_tied


def test_things_odd_one_out_gives_two_triplets_per_answer_with_participants():
    path = _folder("things-odd-one-out-repeated")
    things = roembed.load_things(path)
    assert len(things) == 40000 and things.n_objects == 1503
    assert len(np.unique(things.annotator)) == 325
    assert len(set(things.object_names)) == 1503
    full = roembed.load_things(path, objects="all")
    assert full.n_objects == 1854
    assert [full.object_names[o] for o in (801, 804, 324, 1151)] == ["hot-air_balloon", "hot_tub", "chicken_wire", "pepper_mill"]
    t = full.triplets
    assert (t[0::2, 0] == t[1::2, 1]).all() and (t[0::2, 2] == t[1::2, 2]).all()


def test_real_files_through_read_and_write(tmp_path):
    path = _folder("music-aset400-ste")
    with pytest.raises(roembed.InvalidComparisonsError, match="music_triplets_0based.csv line 5033: the second pair"):
        roembed.read_comparisons(path / "music_triplets_0based.csv")
    with pytest.warns(SkippedRowsWarning):
        music = roembed.load_music(path)
    # names such as "112" and "311" stay names; without a names file the objects come back sorted by name
    back = roembed.read_comparisons(roembed.write_comparisons(music, tmp_path / "music.csv"))
    assert back.object_names == tuple(sorted(music.object_names))
    assert (np.asarray(back.object_names)[back.triplets] == np.asarray(music.object_names)[music.triplets]).all()
    things = roembed.load_things(_folder("things-odd-one-out-repeated"))
    pytest.importorskip("pyarrow")
    again = roembed.read_comparisons(roembed.write_comparisons(things, tmp_path / "things.parquet"))
    assert again.object_names == things.object_names and np.array_equal(again.quadruplets, things.quadruplets)
    assert (again.annotator == things.annotator).all()


def test_the_music_triplets_read_from_matlab_equal_the_csv_copy():
    path = _folder("music-aset400-ste")
    mat = roembed.read_comparisons(path / "music_triplets.mat", index_base=1, on_invalid="skip")
    csv = roembed.read_comparisons(path / "music_triplets_0based.csv", on_invalid="skip")
    np.testing.assert_array_equal(mat.triplets, csv.triplets)
    with pytest.raises(roembed.InvalidComparisonsError, match=r"music_labels.mat: a MATLAB v7.3 \(HDF5\) file"):
        roembed.read_comparisons(path / "music_labels.mat")


def test_a_loader_given_a_file_of_its_folder_says_to_give_the_folder(tmp_path):
    """``load_music(".../music_triplets_0based.csv")`` said "music_triplets_0based.csv: missing
    music_triplets_0based.csv, artist_names.tsv (is this the right data folder?)"."""
    (tmp_path / "artist_genres.tsv").write_text("index0\tname\tgenres\n0\ta\trock\n")
    with pytest.raises(FileNotFoundError, match=r"artist_genres.tsv: a file; give the data folder that holds it "
                                                 r"\(.*\), with artist_genres.tsv"):
        roembed.load_music_genres(tmp_path / "artist_genres.tsv")
    with pytest.raises(FileNotFoundError, match=r"missing answers_processed_train.json, material_names.txt \(is this "
                                                 r"the right data folder\?\)"):
        roembed.load_material(tmp_path)
    # the folder above the data folder (../shared/data): the one inside that has the files is named
    inner = tmp_path / "material-similarity-lagunas2019"
    inner.mkdir()
    (inner / "answers_processed_train.json").write_text('{"answers": [[0, 1, 2]], "agreement": [[3, 1]]}')
    (inner / "material_names.txt").write_text("a\nb\nc\n")
    with pytest.raises(FileNotFoundError, match=r"material_names.txt \(the data folder is .*material-similarity-"
                                                 r"lagunas2019, in it\)"):
        roembed.load_material(tmp_path)
    assert roembed.load_material(inner).n_objects == 3
