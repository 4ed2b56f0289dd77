"""Reading and writing comparison files: round trips, detection, and errors that name the line."""
import io
import os
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from roembed.data import (
    Comparisons, InvalidComparisonsError, SkippedRowsWarning, from_frame, read_comparisons, read_names,
    write_comparisons,
)

NAMES = ["ant", "bee", "cat", "dog", "emu"]


def _comparisons(quads, names=NAMES):
    m = len(quads)
    return Comparisons(quads, n_objects=len(NAMES), weight=np.linspace(0.5, 3, m), annotator=[f"w{r % 3}" for r in range(m)],
                       timestamp=np.arange(m) * 100, response_time=np.linspace(0.25, 1, m), object_names=names)


TRIPLETS = np.array([[0, 1, 2], [3, 2, 1], [2, 0, 3], [4, 3, 0]])
QUADS = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [0, 4, 1, 3]])


def _same(a, b):
    assert np.array_equal(a.quadruplets, b.quadruplets)
    np.testing.assert_allclose(a.weight, b.weight)
    assert a.n_objects == b.n_objects and a.object_names == b.object_names
    for key in ("annotator", "timestamp", "response_time"):
        assert list(getattr(a, key)) == list(getattr(b, key)), key


def _write(tmp_path, text, name="c.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("quads", [TRIPLETS, QUADS])
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet", ".csv.gz", ".tsv.bz2", ".csv.xz"])
def test_round_trip_with_names_and_metadata(tmp_path, quads, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    c = _comparisons(quads)
    path = write_comparisons(c, tmp_path / f"c{suffix}", names_path=tmp_path / "names.txt")
    back = read_comparisons(path) if suffix == ".parquet" else read_comparisons(path, names=tmp_path / "names.txt")
    _same(back, c)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # atomic write leaves no temporaries


def test_write_refuses_names_of_formats_it_does_not_write(tmp_path):
    """It wrote CSV text under any name: a .json, .npz, .xlsx or .zip that read_comparisons (or Excel) could not
    read, a .csv.gz that was no gzip (compression is now written, see the round trip)."""
    c = _comparisons(TRIPLETS)
    for name in ("c.json", "c.npz", "c.mat", "c.feather", "c.xlsx", "c.zip", "c.parquet.gz"):
        with pytest.raises(ValueError, match=f"c.{name.split('.', 1)[1]}: write_comparisons writes CSV/TSV"):
            write_comparisons(c, tmp_path / name)
    (tmp_path / "folder").mkdir()
    with pytest.raises(IsADirectoryError, match="folder: is a folder; give the file to write"):
        write_comparisons(c, tmp_path / "folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]  # nothing written, no temporaries
    # rows of indices are taken as Comparisons are (was "'list' object has no attribute 'is_triplet'")
    assert read_comparisons(write_comparisons([[0, 1, 2], [1, 2, 0]], tmp_path / "r.txt")).triplets.tolist() == \
        [[0, 1, 2], [1, 2, 0]]


@pytest.mark.parametrize("first", ["0", "name", "Smith, J.", "a\tb"])
def test_a_names_file_round_trips_whatever_the_first_name(tmp_path, first):
    """The names file held one name a line: a first name "0" or "name" was then dropped as a header, and one with a
    comma or a tab made the file read as a table; it is written below a ``name`` header now."""
    names = (first, "cat", "dog")
    c = Comparisons([[0, 1, 2], [2, 1, 0]], object_names=names)
    path = write_comparisons(c, tmp_path / "c.csv", names_path=tmp_path / "names.txt")
    assert (tmp_path / "names.txt").read_text().splitlines()[0] == "name"
    back = read_comparisons(path, names=tmp_path / "names.txt")
    assert back.object_names == names and back.triplets.tolist() == [[0, 1, 2], [2, 1, 0]]


def test_csv_round_trip_without_a_names_file_keeps_names(tmp_path):
    c = _comparisons(TRIPLETS)
    path = write_comparisons(c, tmp_path / "c.csv")
    assert path.read_text().splitlines()[:2] == ["anchor,closer,farther,weight,annotator,timestamp,response_time",
                                                 "ant,bee,cat,0.5,w0,0,0.25"]
    back = read_comparisons(path)  # names found in the file, sorted: here the same order
    _same(back, c)
    plain = read_comparisons(write_comparisons(c, tmp_path / "i.csv", names=False))
    assert np.array_equal(plain.quadruplets, c.quadruplets) and plain.object_names is None


def test_headerless_files_and_separators(tmp_path):
    c = read_comparisons(_write(tmp_path, "0\t1\t2\n3\t2\t1\n"))
    assert c.triplets.tolist() == [[0, 1, 2], [3, 2, 1]]
    q = read_comparisons(_write(tmp_path, "0;1;2;3\n1;2;0;3\n"))
    assert q.quadruplets.tolist() == [[0, 1, 2, 3], [1, 2, 0, 3]]
    named = read_comparisons(_write(tmp_path, "0,1,2,7\n0,2,1,8\n"), columns=["i", "j", "k", "worker"])
    assert list(named.annotator) == [7, 8]
    # string ids in the first row: a list of names means no header, so that row is data, not dropped
    strings = read_comparisons(_write(tmp_path, "ant,bee,cat,w1\ncat,bee,ant,w2\n"), columns=["i", "j", "k", "worker"])
    assert strings.object_names == ("ant", "bee", "cat") and list(strings.annotator) == ["w1", "w2"]
    assert strings.triplets.tolist() == [[0, 1, 2], [2, 1, 0]]
    # a first line equal to the names is the header
    same = read_comparisons(_write(tmp_path, "i,j,k,worker\n0,1,2,7\n0,2,1,8\n"), columns=["i", "j", "k", "worker"])
    assert same.triplets.tolist() == [[0, 1, 2], [0, 2, 1]] and list(same.annotator) == [7, 8]
    upper = read_comparisons(_write(tmp_path, "I,J,K\n0,1,2\n"), columns=["i", "j", "k"])  # names compared normalised
    assert upper.triplets.tolist() == [[0, 1, 2]]
    # a header with other names is not read as a comparison of objects called "anchor", "near" and "far"
    with pytest.raises(InvalidComparisonsError, match=r"c.csv line 1: looks like a header \(anchor,near,far\)"):
        read_comparisons(_write(tmp_path, "anchor,near,far\n0,1,2\n2,1,0\n"), columns=["anchor", "closer", "farther"])
    with pytest.raises(InvalidComparisonsError, match=r"c.csv line 1: has 4 columns but 3 column names were given"):
        read_comparisons(_write(tmp_path, "0,1,2,7\n"), columns=["i", "j", "k"])
    # a quoted name keeps its comma: three columns, as the table's parser reads them
    quoted = read_comparisons(_write(tmp_path, '"Smith, J.",bee,cat\ncat,bee,"Smith, J."\n'), columns=["i", "j", "k"])
    assert quoted.object_names == ("Smith, J.", "bee", "cat") and quoted.triplets.tolist() == [[0, 1, 2], [2, 1, 0]]
    with pytest.raises(InvalidComparisonsError, match=r"c.csv line 1: a file without a header must have 3"):
        read_comparisons(_write(tmp_path, "0,1,2,3,4\n"))


def test_auto_detects_salmon_and_odd_one_out_files(tmp_path):
    salmon = _write(tmp_path, "puid,head,left,right,winner,loser,response_time,network_latency,datetime_received\n"
                              "u1,0,1,2,2,1,1.5,0.1,2024-01-01\nu2,3,2,1,2,1,0.7,0.2,2024-01-02\n")
    c = read_comparisons(salmon, names=NAMES)
    assert c.triplets.tolist() == [[0, 2, 1], [3, 2, 1]] and list(c.annotator) == ["u1", "u2"]
    assert list(c.timestamp) == ["2024-01-01", "2024-01-02"] and c.object_names == tuple(NAMES)
    odd = _write(tmp_path, "a,b,c,odd,subject\nant,bee,cat,cat,s1\n", name="odd.csv")
    c = read_comparisons(odd)
    assert c.triplets.tolist() == [[0, 1, 2], [1, 0, 2]] and list(c.annotator) == ["s1", "s1"]


BAD_FILES = [
    ("anchor,closer,farther\n0,1,2\n0,1,9\n", {"n_objects": 5}, "line 3: object index out of range (n_objects=5)"),
    ("anchor,closer,farther\n0,1,2\n-1,1,2\n", {}, "line 3: negative object index"),
    ("anchor,closer,farther\n0,1,2\n1,1,2\n", {}, "line 3: the first pair repeats an object (closer == anchor): (1, 1, 2)"),
    ("anchor,closer,farther\n0,1,2\n1,0,1\n", {}, "line 3: the second pair repeats an object (farther == anchor)"),
    ("i,j,l,k\n0,1,2,3\n0,0,2,3\n", {}, "line 3: the first pair repeats an object (i == j)"),
    ("i,j,l,k\n0,1,2,3\n0,1,3,3\n", {}, "line 3: the second pair repeats an object (l == k)"),
    ("i,j,l,k\n0,1,2,3\n0,1,1,0\n", {}, "line 3: both pairs are the same pair ((i, j) == (l, k))"),
    ("anchor,closer,farther\n0,1,2\n0,1.5,2\n", {}, "line 3: object index is not an integer"),
    ("anchor,closer,farther\n0,1,2\n0,,2\n", {}, "line 3: object index is missing"),
    ("anchor,closer,farther\n0,1,2\n0,1,2\n0,one,2\n", {}, "line 4: object id is not an integer object index"),
    ("anchor,closer,farther,weight\n0,1,2,1\n0,1,2,nan\n", {}, "line 3: weight is NaN"),
    ("anchor,closer,farther,weight\n0,1,2,1\n0,1,2,-2\n", {}, "line 3: weight is negative"),
    ("anchor,closer,farther,weight\n0,1,2,1\n0,1,2,inf\n", {}, "line 3: weight is infinite"),
    ("anchor,closer,farther,weight\n0,1,2,1\n0,1,2,heavy\n", {}, "line 3: weight is not a number"),
    ("anchor,closer,farther,annotator\n0,1,2,a\n0,1,2,\n", {}, "line 3: annotator id is missing"),
    ("anchor,closer,farther,worker_id\n0,1,2,\n", {},  # an empty id column: how to fit without it
     "line 2: annotator id is missing (to fit without ids, drop the column: --columns worker_id=, "
     "columns={'worker_id': None})"),
    # a blank line is no row, but a row of separators only (a spreadsheet's rows below its data) is one: named so
    ("anchor,closer,farther\n0,1,2\n,,\n1,0,2\n", {}, "line 3: an empty row (every field missing, as in the rows "
                                                     "a spreadsheet writes below its data; delete it): (, , )"),
    ("i\tj\tk\n0\t1\t2\n\t\t\n1\t0\t2\n", {}, "line 3: an empty row (every field missing"),
    ("anchor,closer,farther\n0,1,2\n2,1,\n", {}, "line 3: object index is missing"),  # a partly empty one is not
    ("anchor,closer,farther\n", {}, "no comparisons: the input is empty"),
    ("", {}, "no comparisons: the file is empty"),
    ("anchor,nearer,farther\n0,1,2\n", {}, "unknown columns ['anchor', 'nearer', 'farther']"),
    ("query,similar,dissimilar\n0,1,2\n", {}, "to read a file whose columns have other names, rename them, e.g. "
     "roembed fit --columns query=anchor,similar=closer,dissimilar=farther (columns={...} in Python)"),
    (",".join(f"c{k}" for k in range(20)) + "\n" + ",".join("0" * 20) + "\n", {},
     "unknown columns ['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9', 'c10', 'c11', '... 20 in all']"),
    ("HITId,WorkerId,Input.head,Input.left,Input.right,Answer.choice\nh,w,0,1,2,1\n", {},
     "a Mechanical Turk batch file? name the roles of its input.head, input.left, input.right, answer.choice columns"),
    ("0,1,2\n0,1,2,3\n", {}, "line 2: has 4 fields but line 1 has 3: triplets (3) and quadruplets (4) cannot be mixed"),
    ("0,1,2,3\n1,2,3,0\n0,1,2\n", {}, "line 3: has 3 fields but other rows have 4: triplets (3) and quadruplets (4) "
     "cannot be mixed in one file"),
    ("anchor,closer,farther\n0,1,2\n0,1,2,3\n", {}, "line 3: has 4 fields but line 1 has 3"),
    ("anchor,closer,farther\n0,1,2,3\n0,1,2\n", {}, "line 2: has 4 fields but line 1 has 3"),  # the first row
    ("anchor,closer,farther\nant,bee,cat\nant,bee,yak\n", {"names": NAMES}, "line 3: unknown object name"),
    # a repeated role: pandas read the second as "anchor.1", an extra column, and the first was fitted silently
    ("anchor,closer,farther,anchor\n0,1,2,3\n", {}, "line 1: the header names column 'anchor' twice; which one "
                                                    "holds it cannot be told"),
    ("anchor,closer,farther,worker_id,Worker ID\n0,1,2,a,b\n", {}, "the header names column 'Worker ID' twice"),
    # a column of TRUE/FALSE among numbers was read as objects 1 and 0
    ("anchor,closer,farther\nTRUE,3,2\nFALSE,3,2\n", {}, "line 2: object id is true or false, not an object index"),
]


@pytest.mark.parametrize("text, kwargs, message", BAD_FILES)
def test_bad_input_names_the_file_line_and_problem(tmp_path, text, kwargs, message):
    path = _write(tmp_path, text)
    with warnings.catch_warnings(record=True) as caught, pytest.raises(InvalidComparisonsError) as info:
        warnings.simplefilter("always")
        read_comparisons(path, **kwargs)
    assert message in str(info.value)
    assert str(path) in str(info.value)
    # the one line alone: a first row too wide had pandas' ParserWarning ("Length of header or names does not
    # match length of data ...") printed above it
    assert [str(w.message) for w in caught] == []


def test_a_row_split_unlike_the_others_is_not_called_a_triplet_quadruplet_mix(tmp_path):
    path = tmp_path / "answers.tsv"  # commas in a tab-separated file
    path.write_text("0\t1\t2\t1\t7\n5,1,2,3,7\n")
    with pytest.raises(InvalidComparisonsError) as info:
        read_comparisons(path, columns=["a", "b", "c", "odd_position", "annotator"])
    assert str(path) in str(info.value)
    assert str(info.value).endswith("line 2: has 1 field but other rows have 5")


def test_indices_counted_from_one(tmp_path):
    path = _write(tmp_path, "anchor,closer,farther\n1,2,3\n3,1,4\n")
    c = read_comparisons(path, index_base=1)  # 0-based codes, the file's numbers kept as names
    assert c.triplets.tolist() == [[0, 1, 2], [2, 0, 3]] and c.object_names == ("1", "2", "3", "4")
    named = read_comparisons(path, index_base=1, names=["a", "b", "c", "d"])  # index 1 is the first name
    assert named.triplets.tolist() == c.triplets.tolist() and named.object_names == ("a", "b", "c", "d")
    with pytest.raises(InvalidComparisonsError, match="line 3: object index below 1, but index_base=1"):
        read_comparisons(_write(tmp_path, "anchor,closer,farther\n1,2,3\n0,1,2\n"), index_base=1)
    with pytest.raises(InvalidComparisonsError, match="index_base=1 applies to integer object indices"):
        read_comparisons(_write(tmp_path, "anchor,closer,farther\na,b,c\n"), index_base=1)
    with pytest.raises(ValueError, match="index_base must be 0 or 1"):
        read_comparisons(path, index_base=2)


def test_a_file_counting_from_one_with_names_is_refused_even_when_invalid_rows_are_skipped(tmp_path):
    """The music data as MATLAB ships them (objects 1..412, 412 names, 17 rows repeating an object): with
    ``on_invalid="skip"`` the rows naming object 412 were skipped as out of range and every name went to the next
    object, the map looking fine.  Read with ``index_base=1`` it is right; a file that uses object 0 is 0-based,
    and its one row past the names is skipped as before."""
    names = ["a", "b", "c", "d"]
    one_based = _write(tmp_path, "anchor,closer,farther\n1,2,3\n2,3,4\n4,1,2\n3,3,1\n", "one.csv")
    with pytest.raises(InvalidComparisonsError, match=r"one.csv: its object indices run up to 4 and none is 0, "
                                                      r"with 4 names given: the file counts objects from 1.*index_base=1"):
        read_comparisons(one_based, names=names, on_invalid="skip")
    with pytest.raises(InvalidComparisonsError, match="index_base=1"):  # raising at the first bad row, as before
        read_comparisons(one_based, names=names)
    with pytest.warns(SkippedRowsWarning, match="repeats an object"):
        c = read_comparisons(one_based, names=names, on_invalid="skip", index_base=1)
    assert c.object_names == tuple(names) and c.triplets.tolist() == [[0, 1, 2], [1, 2, 3], [3, 0, 1]]
    zero_based = _write(tmp_path, "anchor,closer,farther\n0,2,3\n2,3,4\n", "zero.csv")
    with pytest.warns(SkippedRowsWarning, match="out of range"):
        c = read_comparisons(zero_based, names=names, on_invalid="skip")
    assert c.triplets.tolist() == [[0, 2, 3]]


def test_a_names_table_given_to_the_python_reader_is_read_as_the_cli_reads_it(tmp_path):
    """``read_comparisons(path, names="artist_names.tsv")`` took each line of the table for a name, its header
    the first object: 413 objects named ``'index0\\tindex1\\tname...'``, ``'0\\t1\\t112\\t5'``, ... without a word."""
    from roembed.data import read_names

    path = _write(tmp_path, "anchor,closer,farther\n0,1,2\n2,1,0\n", "votes.csv")
    table = _write(tmp_path, "index0\tindex1\tname\tsource_id\n1\t2\tbee\t21\n0\t1\tant\t5\n2\t3\tcat\t9\n",
                   "names.tsv")
    c = read_comparisons(path, names=table)
    assert c.object_names == ("ant", "bee", "cat") and c.n_objects == 3
    assert read_names(table) == ("ant", "bee", "cat")
    assert read_names(_write(tmp_path, "name\nant\nbee\n", "plain.txt")) == ("ant", "bee")  # one a line, as before
    gap = _write(tmp_path, "index0,name\n0,ant\n2,cat\n", "gap.csv")
    with pytest.raises(InvalidComparisonsError, match=r"gap.csv line 3: index0 2, but names are given by position"):
        read_comparisons(path, names=gap)
    one_based = _write(tmp_path, "object,name\n2,bee\n1,ant\n3,cat\n", "one.csv")
    assert read_names(one_based, index_base=1) == ("ant", "bee", "cat")
    c = read_comparisons(_write(tmp_path, "anchor,closer,farther\n1,2,3\n3,2,1\n", "v1.csv"), names=one_based,
                         index_base=1)
    assert c.object_names == ("ant", "bee", "cat") and c.triplets.tolist() == [[0, 1, 2], [2, 1, 0]]


def test_a_mechanical_turk_batch_file_reads_once_its_columns_are_named(tmp_path):
    path = _write(tmp_path, "HITId,WorkerId,Input.head,Input.left,Input.right,Answer.choice\n"
                            "h1,w1,a.jpg,b.jpg,c.jpg,c.jpg\nh2,w2,b.jpg,a.jpg,c.jpg,a.jpg\n")
    c = read_comparisons(path, columns={"Input.head": "head", "Input.left": "left", "Input.right": "right",
                                        "Answer.choice": "winner"})
    assert c.object_names == ("a.jpg", "b.jpg", "c.jpg")
    assert c.triplets.tolist() == [[0, 2, 1], [1, 0, 2]] and list(c.annotator) == ["w1", "w2"]
    assert list(c.extra["hitid"]) == ["h1", "h2"]


def test_space_separated_files_as_numpy_and_matlab_write_them(tmp_path):
    """``np.savetxt`` separates by a space (its default format writes 1.200000000000000000e+01), MATLAB's
    ``save -ascii`` by runs of spaces after leading ones: read as the comma-separated file."""
    triplets = np.array([[12, 10, 15], [1, 0, 12], [15, 1, 10]])
    comma = read_comparisons(_write(tmp_path, "".join(f"{a},{b},{c}\n" for a, b, c in triplets), "c.csv"))
    np.savetxt(tmp_path / "int.txt", triplets, fmt="%d")
    np.savetxt(tmp_path / "float.txt", triplets)
    _write(tmp_path, "".join(f"   {a:.7e}   {b:.7e}   {c:.7e}\n" for a, b, c in triplets), "matlab.txt")
    for name in ("int.txt", "float.txt", "matlab.txt"):
        c = read_comparisons(tmp_path / name)
        assert c.triplets.tolist() == comma.triplets.tolist() == triplets.tolist() and c.n_objects == 16, name
    text = "anchor closer  farther annotator\nant bee cat w1\n\nbee\tcat ant w2\n"  # runs of spaces, a tab
    header = read_comparisons(_write(tmp_path, text, "header.txt"))
    assert header.object_names == ("ant", "bee", "cat") and list(header.annotator) == ["w1", "w2"]
    assert header.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    with pytest.raises(InvalidComparisonsError, match=r"bad.txt line 4: object id is not an integer"):
        read_comparisons(_write(tmp_path, "0 1 2\n1 2 0\n\n2 x 1\n", "bad.txt"))
    with pytest.raises(InvalidComparisonsError, match=r"wide.txt line 2: has 4 fields but line 1 has 3"):
        read_comparisons(_write(tmp_path, "0 1 2\n1 2 0 3\n", "wide.txt"))


def test_a_home_relative_path_is_expanded_as_pandas_expands_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "data").mkdir()
    c = Comparisons([[0, 1, 2], [1, 2, 0]], object_names=["ant", "bee", "cat"])
    written = write_comparisons(c, "~/data/votes.csv", names_path="~/data/names.txt")  # was "no such file"
    assert written == tmp_path / "data" / "votes.csv" and (tmp_path / "data" / "names.txt").is_file()
    again = read_comparisons("~/data/votes.csv", names="~/data/names.txt")
    assert again.triplets.tolist() == c.triplets.tolist() and again.object_names == c.object_names
    assert read_comparisons(["~/data/votes.csv"]).object_names == c.object_names


def test_an_open_file_or_a_buffer_is_told_what_to_pass(tmp_path):
    path = _write(tmp_path, "anchor,closer,farther\n0,1,2\n", "votes.csv")
    with open(path) as fh, pytest.raises(TypeError, match=r"reads files by path .*got TextIOWrapper; pass its path, "
                                                          r"'.*votes.csv'"):
        read_comparisons(fh)
    with pytest.raises(TypeError, match=r"got StringIO; for text in memory, roembed.from_frame\(pd.read_csv\(buffer"):
        read_comparisons(io.StringIO(path.read_text()))
    with pytest.raises(TypeError, match=r"got bytes$"):
        read_comparisons([path, b"votes.csv"])


def test_comment_lines_a_commented_header_and_excels_sep_line(tmp_path):
    """``np.savetxt(..., header=...)`` writes its header as a comment (``# anchor closer farther``): it was
    "unknown columns ['#_anchor', ...]", or with spaces a 4-field header over 3-field rows; a comment above the
    data stopped it too, and Excel's ``sep=;`` line made line 2 "4 fields but line 1 has 2"."""
    triplets = np.array([[12, 10, 15], [1, 0, 12], [15, 1, 10]])
    np.savetxt(tmp_path / "space.txt", triplets, fmt="%d", header="anchor closer farther")
    np.savetxt(tmp_path / "comma.csv", triplets, fmt="%d", delimiter=",", header="anchor,closer,farther")
    np.savetxt(tmp_path / "note.txt", triplets, fmt="%d", header="triplets of study 3\nanswered 2026")  # not a header
    for name in ("space.txt", "comma.csv", "note.txt"):
        assert read_comparisons(tmp_path / name).triplets.tolist() == triplets.tolist(), name
    np.savetxt(tmp_path / "order.csv", triplets[:, [2, 1, 0]], fmt="%d", delimiter=",", header="farther,closer,anchor")
    assert read_comparisons(tmp_path / "order.csv").triplets.tolist() == triplets.tolist()  # by name, not position
    named = _write(tmp_path, "# anchor,closer,farther,annotator\nant,bee,cat,w1\nbee,cat,ant,w2\n", "named.csv")
    c = read_comparisons(named)  # the first line is data, not a header of objects' names
    assert c.object_names == ("ant", "bee", "cat") and c.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    commented = _write(tmp_path, "# exported 2026-11-28\nanchor,closer,farther\nant,bee,cat\nbee,cat\n", "x.csv")
    with pytest.raises(InvalidComparisonsError, match=r"x.csv line 4: object name is missing"):  # lines counted
        read_comparisons(commented)
    excel = _write(tmp_path, "sep=;\nanchor;closer;farther\nant;bee;cat\nbee;cat;ant;x\n", "excel.csv")
    with pytest.raises(InvalidComparisonsError, match=r"excel.csv line 4: has 4 fields but line 2 has 3"):
        read_comparisons(excel)
    excel.write_text("sep=;\nanchor;closer;farther\nant;bee;cat\nbee;cat;ant\n")
    assert read_comparisons(excel).triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    with pytest.raises(InvalidComparisonsError, match=r"wide.txt line 2: a file without a header must have 3"):
        read_comparisons(_write(tmp_path, "# five columns\n1 2 3 4 5\n", "wide.txt"))
    with pytest.raises(InvalidComparisonsError, match=r"only.txt: no comparisons: nothing after the 1 line"):
        read_comparisons(_write(tmp_path, "# nothing yet\n", "only.txt"))


def test_a_next_triplets_export_reads_as_salmon_responses(tmp_path):
    """NEXT's Triplets app exports Center, Left, Right and the object chosen as Answer."""
    rows = ("p1,2016-01-11 20:29:01.5,a.jpg,b.jpg,c.jpg,c.jpg,RandomSampling\n"
            "p2,2016-01-11 20:29:02.5,b.jpg,a.jpg,c.jpg,a.jpg,UCB\n")
    c = read_comparisons(_write(tmp_path, "Participant ID,Timestamp,Center,Left,Right,Answer,Alg Label\n" + rows))
    salmon = read_comparisons(_write(tmp_path, "puid,timestamp,head,left,right,winner,alg_label\n" + rows, "s.csv"))
    assert c.object_names == salmon.object_names == ("a.jpg", "b.jpg", "c.jpg")
    assert c.triplets.tolist() == salmon.triplets.tolist() == [[0, 2, 1], [1, 0, 2]]
    assert list(c.annotator) == ["p1", "p2"] and list(c.extra["alg_label"]) == ["RandomSampling", "UCB"]
    both = read_comparisons(_write(tmp_path, "head,left,right,winner,center,answer\n0,1,2,2,5,x\n", "both.csv"))
    assert both.triplets.tolist() == [[0, 2, 1]] and list(both.extra["center"]) == [5]  # salmon's own names win


@pytest.mark.parametrize("head, winner", [("anchor", "winner"), ("query", "choice"), ("reference", "chosen"),
                                          ("head", "selected"), ("target", "answer")])
def test_other_names_of_salmons_head_and_winner_beside_left_and_right(tmp_path, head, winner):
    """Exports of one's own experiments name salmon's roles otherwise ("anchor,left,right,winner" was "unknown
    columns"); beside left and right, one other name of each role reads as salmon's.  Two candidates for a role
    stay unknown, and without left and right nothing is renamed (a triplet file's own "choice" column is kept)."""
    rows = "x,y,z,y\ny,x,z,z\n"
    c = read_comparisons(_write(tmp_path, f"{head},left,right,{winner}\n" + rows))
    salmon = read_comparisons(_write(tmp_path, "head,left,right,winner\n" + rows, "s.csv"))
    assert c.triplets.tolist() == salmon.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    with pytest.raises(InvalidComparisonsError, match="unknown columns"):
        read_comparisons(_write(tmp_path, f"anchor,query,left,right,{winner}\n" + rows.replace("\n", ",x\n"),
                                "two.csv"))
    kept = read_comparisons(_write(tmp_path, "anchor,closer,farther,choice\n" + rows, "t.csv"))
    assert kept.triplets.tolist() == [[0, 1, 2], [1, 0, 2]] and list(kept.extra["choice"]) == ["y", "z"]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])  # "\r" alone: Excel for Mac's "CSV (Macintosh)"
def test_blank_lines_hold_no_comparison_and_other_lines_keep_their_numbers(tmp_path, newline):
    rows = ["anchor,closer,farther,annotator", "0,1,2,a", "", "1,2,0,b", "   ", "2,0,1,c", "", ""]
    blank = read_comparisons(_write(tmp_path, newline.join(rows), "blank.csv"))
    plain = read_comparisons(_write(tmp_path, "\n".join(r for r in rows if r.strip()) + "\n", "plain.csv"))
    assert blank.triplets.tolist() == plain.triplets.tolist() == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    assert list(blank.annotator) == ["a", "b", "c"]
    headerless = read_comparisons(_write(tmp_path, newline.join(["0,1,2", "", "1,2,0", ""]), "headerless.csv"))
    assert headerless.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    bad = _write(tmp_path, newline.join(rows[:5] + ["2,x,1,c", "", "0,0,1,d", ""]), "bad.csv")
    with pytest.raises(InvalidComparisonsError, match=r"bad.csv line 6: object id is not an integer"):
        read_comparisons(bad)
    with pytest.warns(SkippedRowsWarning, match="skipped 2 invalid row"):  # the blank lines are not among them
        c, report = read_comparisons(bad, on_invalid="skip", return_report=True)
    assert [e.split(": ")[0] for e in report.examples] == [f"{bad} line {n}" for n in (6, 8)]
    assert c.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    with pytest.raises(InvalidComparisonsError, match="no comparisons"):
        read_comparisons(_write(tmp_path, newline.join(["anchor,closer,farther", "", " ", ""]), "none.csv"))


def test_a_header_inside_the_data_is_named_and_never_read_as_objects(tmp_path):
    """Files that each begin with a header, joined into one: read as data, the second header would add objects
    called "anchor", "closer" and "farther" to a file that names its objects."""
    header = "anchor,closer,farther,annotator"
    path = _write(tmp_path, f"{header}\nant,bee,cat,w1\nbee,cat,ant,w2\n{header}\ncat,ant,bee,w1\n", "joined.csv")
    with pytest.raises(InvalidComparisonsError, match=r"joined.csv line 4: the header line again \(were files "
                                                      r"joined into one\? pass them as separate files"):
        read_comparisons(path)
    with pytest.warns(SkippedRowsWarning, match="skipped 1 invalid row"):
        c, report = read_comparisons(path, on_invalid="skip", return_report=True)
    assert c.object_names == ("ant", "bee", "cat") and len(c) == 3 and list(c.annotator) == ["w1", "w2", "w1"]
    assert report.examples[0].startswith(f"{path} line 4: the header line again")
    # objects that share a name with a column, in a row that is not the whole header, are objects
    named = read_comparisons(_write(tmp_path, f"{header}\nanchor,closer,cat,w1\n", "named.csv"))
    assert named.object_names == ("anchor", "cat", "closer") and named.triplets.tolist() == [[0, 2, 1]]
    frame = pd.DataFrame({"anchor": ["ant", "anchor"], "closer": ["bee", "closer"], "farther": ["cat", "farther"]})
    with pytest.raises(InvalidComparisonsError, match="row 1: the header line again"):
        from_frame(frame)
    # two salmon exports joined: the header makes every column text, and the targets keep their file names
    salmon = "head,left,right,winner,puid,head_filename,left_filename,right_filename,winner_filename"
    rows = ["0,1,2,1,u,a.png,b.png,c.png,b.png", "1,2,0,2,v,b.png,c.png,a.png,c.png"]
    path = _write(tmp_path, "\n".join([salmon, rows[0], salmon, rows[1]]) + "\n", "salmon.csv")
    with pytest.warns(SkippedRowsWarning, match="skipped 1 invalid row"):
        joined = read_comparisons(path, on_invalid="skip")
    alone = read_comparisons(_write(tmp_path, "\n".join([salmon, *rows]) + "\n", "one.csv"))
    assert joined.object_names == alone.object_names == ("a.png", "b.png", "c.png")
    assert joined.triplets.tolist() == alone.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    # every line ending in a comma (an empty last header field): the repeated header is still found
    trailing = _write(tmp_path, "anchor,closer,farther,\nant,bee,cat,\nanchor,closer,farther,\ncat,ant,bee,\n",
                      "trailing.csv")
    with pytest.raises(InvalidComparisonsError, match=r"trailing.csv line 3: the header line again"):
        read_comparisons(trailing)  # was read as a comparison of objects called anchor, closer and farther
    trailing.write_text("anchor,closer,farther,\nant,bee,cat,\nanchor,closer,farther,x\n")  # a row, not a header
    kept = read_comparisons(trailing)
    assert kept.object_names == ("anchor", "ant", "bee", "cat", "closer", "farther")
    assert pd.isna(kept.extra["unnamed:_3"][0]) and kept.extra["unnamed:_3"][1] == "x"  # it holds a value: kept
    trailing.write_text("anchor,closer,farther,\nant,bee,cat,\nbee,cat,ant,\n")
    assert dict(read_comparisons(trailing).extra) == {}  # the trailing comma's empty column is not kept


@pytest.mark.parametrize("sep", [",", "\t"])
def test_spaces_around_a_name_do_not_make_another_object(tmp_path, sep):
    rows = ["anchor,closer,farther,worker", "ant,bee,cat,w1", "bee ,cat,ant,w2", "cat,  ant ,bee,w1 ", "ant,cat,bee,w2"]
    path = _write(tmp_path, "\n".join(r.replace(",", sep) for r in rows) + "\n", "spaces.csv")
    c = read_comparisons(path)
    assert c.object_names == ("ant", "bee", "cat") and list(c.annotator) == ["w1", "w2", "w1", "w2"]
    assert c.triplets.tolist() == [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]]
    assert read_comparisons(path, names=["cat", "bee", "ant"]).object_names == ("cat", "bee", "ant")
    with pytest.raises(InvalidComparisonsError, match="row 1: object name is missing"):
        from_frame(pd.DataFrame({"anchor": ["ant", "  "], "closer": ["bee", "cat"], "farther": ["cat", "ant"]}))


def test_the_earliest_bad_line_is_reported(tmp_path):
    path = _write(tmp_path, "anchor,closer,farther,weight\n0,1,2,1\n0,1,1,1\n0,x,2,1\n0,1,2,-1\n")
    with pytest.raises(InvalidComparisonsError, match=r"line 3: both pairs are the same pair \(closer == farther\): \(0, 1, 1\)"):
        read_comparisons(path)


def test_skipping_reports_count_and_examples_never_silently(tmp_path):
    path = _write(tmp_path, "anchor,closer,farther,weight\n0,1,2,1\n0,1,1,1\n0,x,2,1\n,,,\n1,2,0,-1\n2,0,1,2\n")
    with pytest.warns(SkippedRowsWarning, match="skipped 4 invalid row"):
        c, report = read_comparisons(path, on_invalid="skip", return_report=True)
    assert c.triplets.tolist() == [[0, 1, 2], [2, 0, 1]] and c.weight.tolist() == [1, 2]
    assert report.n_skipped == 4
    assert [e.split(": ")[0] for e in report.examples] == [f"{path} line {n}" for n in (3, 4, 5, 6)]
    assert "weight is negative" in report.examples[3]
    with pytest.raises(InvalidComparisonsError, match="no valid comparisons"):
        read_comparisons(_write(tmp_path, "anchor,closer,farther\n0,0,1\n", "all_bad.csv"), on_invalid="skip")


def test_a_name_only_a_skipped_row_gives_names_no_object(tmp_path):
    """Was an object with no comparison and arbitrary coordinates ("bus", a typo's "emu"), in every output."""
    path = _write(tmp_path, "anchor,closer,farther\ncat,dog,car\ndog,cat,car\ncar,bus,bus\nemu,emu,cat\n")
    with pytest.warns(SkippedRowsWarning, match="skipped 2 invalid row"):
        c = read_comparisons(path, on_invalid="skip")
    assert c.object_names == ("car", "cat", "dog") and c.triplets.tolist() == [[1, 2, 0], [2, 1, 0]]
    with pytest.warns(SkippedRowsWarning):  # names given are the objects, used or not
        assert read_comparisons(path, on_invalid="skip", names=["bus", "car", "cat", "dog", "emu"]).n_objects == 5


def test_names_file_and_duplicate_names(tmp_path):
    names = _write(tmp_path, "ant\nbee\n\ncat\n", name="names.txt")
    c = read_comparisons(_write(tmp_path, "anchor,closer,farther\n2,1,0\n"), names=names)
    assert c.object_names == ("ant", "bee", "cat") and c.n_objects == 3
    with pytest.raises(InvalidComparisonsError, match="'ant' appears more than once"):
        read_comparisons(tmp_path / "c.csv", names=["ant", "bee", "ant"])
    # pandas' one-column CSV, pd.Series(names, name="name").to_csv(index=False): "name" is its header, not object 0's
    pd.Series(["ant", "bee", "cat"], name="name").to_csv(tmp_path / "names.csv", index=False)
    c = read_comparisons(tmp_path / "c.csv", names=tmp_path / "names.csv")
    assert c.object_names == ("ant", "bee", "cat") and c.triplets.tolist() == [[2, 1, 0]]
    # an empty names file named no objects ("names were given for 0 objects: indices 0--1"), a header alone was
    # "not enough values to unpack"
    for text, why in (("", "the file is empty"), ("\n\n", "the file is empty"), ("name\n", "only a header line"),
                      ("index,name\n", "only a header line")):
        empty = _write(tmp_path, text, name="empty.txt")
        with pytest.raises(InvalidComparisonsError, match=f"empty.txt: no object names in it \\({why}\\)"):
            read_names(empty)
    # a string is a file: one that is not there was "[Errno 2] No such file or directory: 'ant bee cat'", not
    # saying which argument
    with pytest.raises(FileNotFoundError, match=r"^names: ant bee cat: no such file \(a file of names, or give a "
                                                r"list of them\)$"):
        read_comparisons(tmp_path / "c.csv", names="ant bee cat")


def test_parquet_without_our_metadata_reads_like_a_frame(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "plain.parquet"
    pd.DataFrame({"head": [0], "left": [1], "right": [2], "winner": [1], "puid": ["u"]}).to_parquet(path)
    c = read_comparisons(path)
    assert c.triplets.tolist() == [[0, 1, 2]] and c.object_names is None
    with pytest.raises(FileNotFoundError, match="missing.csv: no such file$"):
        read_comparisons(tmp_path / "missing.csv")
    with pytest.raises(FileNotFoundError, match="^https://example.org/responses.csv: a web address: roembed reads "
                                                "files on this machine only"):
        read_comparisons("https://example.org/responses.csv")  # never downloaded
    (tmp_path / "day1.csv").write_text("anchor,closer,farther\n0,1,2\n")
    with pytest.raises(FileNotFoundError, match=r"no file matches it as a pattern .*sorted\(glob.glob"):
        read_comparisons(tmp_path / "day*.csv")  # Python does not expand it


@pytest.mark.parametrize("text, hint", [
    ("query,similar,dissimilar\n0,1,2\n", "rename them"),
    ("0,1,2,w7\n1,2,3,w8\n", "the first line looks like data"),  # string annotator ids: taken for a header
    ("HITId,WorkerId,Input.head,Input.left,Input.right,Answer.choice\nh,w,0,1,2,1\n", "Mechanical Turk"),
    ("dog,cat,horse\ncat,dog,horse\n", "a file of names without a header"),  # names recur below: line 1 is data
    ("Query,Similar,Dissimilar\ndog,cat,horse\n", "rename them"),  # names that do not recur: a header
])
def test_unknown_columns_get_one_hint(tmp_path, text, hint):
    """An unknown header gets the hint that fits it, and only that one: renaming for named columns, naming
    for a headerless file, the roles for a Mechanical Turk batch."""
    with pytest.raises(InvalidComparisonsError) as info:
        read_comparisons(_write(tmp_path, text))
    hints = ("rename them", "the first line looks like data", "Mechanical Turk", "a file of names without a header")
    assert [h for h in hints if h in str(info.value)] == [hint]


@pytest.mark.parametrize("header, suggested", [
    ("HITId,WorkerId,Input.anchor,Input.left_image,Input.right_image,Answer.choice",
     "input.anchor=head,input.left_image=left,input.right_image=right,answer.choice=winner"),
    ("HITId,WorkerId,Input.Query,Input.Left,Input.Right,Answer.Selected",
     "input.query=head,input.left=left,input.right=right,answer.selected=winner"),
    # two answer columns and no head word: the roles it cannot place keep the example's names
    ("HITId,Input.x,Input.left,Input.right,Answer.a,Answer.b", "Input.head=head,input.left=left,input.right=right,"
     "Answer.choice=winner"),
])
def test_mechanical_turk_hint_names_the_files_own_columns(tmp_path, header, suggested):
    """The hint for a Mechanical Turk batch names the file's own columns, so that the mapping it gives, pasted
    back, reads the file where every role was placed."""
    rows = "".join(f"h{n},w{n % 3},{n % 5},{(n + 1) % 5},{(n + 2) % 5},{(n + 1 + n % 2) % 5}\n" for n in range(20))
    path = _write(tmp_path, header + "\n" + rows)
    with pytest.raises(InvalidComparisonsError, match="e.g. roembed fit --columns " + re.escape(suggested) + " "):
        read_comparisons(path)
    if "Input.head" not in suggested:
        mapping = dict(item.split("=") for item in suggested.split(","))
        comparisons = read_comparisons(path, columns=mapping)
        assert len(comparisons) == 20 and comparisons.annotator is not None


def test_a_mechanical_turk_batch_of_several_questions_per_row_is_told_to_make_one_row_each(tmp_path):
    """Three questions per HIT (``Input.Anchor1 ... Input.Anchor3``): the hint used to name the first question's
    columns (and a column ``Input.head`` the file lacks), so that, followed, the read kept one question in three.  Now
    it gives the reshaping, and the code it gives, pasted, reads every question."""
    import pandas as pd
    from roembed import from_frame

    header = "HITId,WorkerId," + ",".join(f"Input.Anchor{q},Input.Left{q},Input.Right{q}" for q in (1, 2, 3)) + \
        ",Answer.Choice1,Answer.Choice2,Answer.Choice3"
    rows = [[f"h{n}", f"w{n % 3}"] + [str((n + q + k) % 6) for q in range(3) for k in range(3)] +
            [str((n + q + 1 + (n % 2)) % 6) for q in range(3)] for n in range(8)]
    path = _write(tmp_path, header + "\n" + "".join(",".join(r) + "\n" for r in rows))
    with pytest.raises(InvalidComparisonsError, match=r"a Mechanical Turk batch of 3 questions per row "
                                                      r"\(input.anchor1 ... input.anchor3\)\? make one row") as info:
        read_comparisons(path)
    code = str(info.value).split("e.g. ", 1)[1]
    reshape, read = code.split(", then ")
    df = pd.read_csv(path)
    long = eval(reshape.split(" = ", 1)[1], {"pandas": pd, "df": df})
    c = eval(read, {"roembed": __import__("roembed"), "long": long, "from_frame": from_frame})
    assert len(c) == 24 and c.annotator is not None  # every question of every HIT
    first = long.loc[(0, 1)]
    assert c.triplets[list(long.index).index((0, 1))].tolist()[0] == int(first["input.anchor"])


def _odd_one_out_rows(base: int, annotators: bool, m: int = 30) -> str:
    """THINGS' export: three object ids (1-based, up to 60), the odd one's position from ``base``, a subject."""
    rng = np.random.RandomState(base)
    rows = [list(rng.choice(60, 3, replace=False) + 1) + [rng.randint(3) + base] + ([rng.randint(5)] if annotators
                                                                                       else []) for _ in range(m)]
    return "".join("\t".join(map(str, row)) + "\n" for row in rows)


@pytest.mark.parametrize("base", [0, 1])
@pytest.mark.parametrize("annotators", [False, True])
def test_headerless_odd_one_out_columns_are_named_for_the_user(tmp_path, base, annotators):
    """A headerless export of odd-one-out answers (THINGS: a, b, c, position from 1, subject) has 4 or 5
    columns: 4 were read as quadruplets (positions became objects 0-3; the fit ran on nonsense unless a row
    happened to repeat an object), 5 got only general advice.  Both now name the columns to give, with the
    position base, and those columns read the file."""
    text = _odd_one_out_rows(base, annotators)
    path = _write(tmp_path, text, "things.tsv")
    names = "a,b,c,odd_position" + (",annotator" if annotators else "")
    told = rf"--columns {names}" + (" --odd-position-base 1" if base else r" \(")
    with pytest.raises(InvalidComparisonsError, match=rf"its 4th column holds only {base}-{base + 2} in the first "
                                                       rf"30 rows, as odd-one-out positions do: name the columns, "
                                                       rf"roembed fit {told}"):
        read_comparisons(path)
    if not annotators:  # or three annotators' ids: the other reading is named too
        with pytest.raises(InvalidComparisonsError, match="--columns anchor,closer,farther,annotator if it holds "
                                                          "annotator ids, --columns i,j,l,k to read quadruplets"):
            read_comparisons(path)
    with pytest.raises(InvalidComparisonsError, match="; no object id in those rows is 0: if the ids count from 1, "
                                                      "as THINGS' do, add --index-base 1 "):
        read_comparisons(path)  # the ids are 1-60
    read = read_comparisons(path, columns=names.split(","), odd_position_base=base)
    assert len(read) == 2 * 30 and (read.annotator is not None) is annotators  # two triplets an answer
    zero_based = _write(tmp_path, "0\t5\t7\t1" + ("\t3" if annotators else "") + "\n" + text, "zero.tsv")
    with pytest.raises(InvalidComparisonsError, match="as odd-one-out positions do") as info:
        read_comparisons(zero_based)
    assert "--index-base" not in str(info.value)  # an id 0: nothing to hint


def test_headerless_quadruplets_and_short_files_get_no_odd_one_out_hint(tmp_path):
    """Quadruplets whose fourth ids vary are read as quadruplets; under 10 rows nothing is guessed."""
    rng = np.random.RandomState(0)
    quads = np.array([rng.choice(20, 4, replace=False) for _ in range(30)])
    assert np.array_equal(read_comparisons(_write(tmp_path, "".join(",".join(map(str, q)) + "\n" for q in quads)))
                          .quadruplets, quads)
    short = _write(tmp_path, "".join(_odd_one_out_rows(1, True, m=9)), "short.tsv")
    with pytest.raises(InvalidComparisonsError, match="got 5; add a header line naming them"):
        read_comparisons(short)


def test_headerless_triplets_with_separately_numbered_annotators_are_not_read_as_quadruplets(tmp_path):
    """A headerless file of triplets and annotator ids numbered apart from the objects (workers 100-139 beside
    objects 0-19) was read as quadruplets whose fourth objects no other column names: the fit agreed with every
    answer (train error 0) and meant nothing.  It now stops, names both readings, and each reads the file."""
    rng = np.random.RandomState(0)
    rows = np.column_stack([np.array([rng.choice(20, 3, replace=False) for _ in range(40)]),
                            rng.randint(100, 140, 40)])
    path = _write(tmp_path, "".join(",".join(map(str, r)) + "\n" for r in rows))
    with pytest.raises(InvalidComparisonsError, match=rf"its 4th column \({rows[:, 3].min()}-{rows[:, 3].max()}\) "
                                                      rf"lies outside the range of the first three \(0-19\) in the "
                                                      rf"first 40 rows.*--columns anchor,closer,farther,annotator"):
        read_comparisons(path)
    triplets = read_comparisons(path, columns=["anchor", "closer", "farther", "annotator"])
    assert np.array_equal(triplets.triplets, rows[:, :3])
    assert np.array_equal(np.asarray(triplets.annotator, dtype=np.int64), rows[:, 3])
    assert np.array_equal(read_comparisons(path, columns=["i", "j", "l", "k"]).quadruplets, rows)
    rows[7, 3] = rows[3, 0]  # one shared value: quadruplets may draw the fourth object from anywhere
    assert np.array_equal(read_comparisons(_write(tmp_path, "".join(",".join(map(str, r)) + "\n" for r in rows),
                                               "shared.csv")).quadruplets, rows)
    # a few quadruplets over many objects share no value by chance; their ranges interleave, so they are read
    sparse = np.array([rng.choice(10**6, 4, replace=False) for _ in range(12)])
    assert not np.isin(sparse[:, 3], sparse[:, :3]).any()
    assert np.array_equal(read_comparisons(_write(tmp_path, "".join(",".join(map(str, r)) + "\n" for r in sparse),
                                               "sparse.csv")).quadruplets, sparse)


@pytest.mark.parametrize("column", ["WorkerId", "participant_id", "PROLIFIC_PID", "Subject", "rater"])
def test_crowd_platforms_annotator_columns_are_read_as_annotators(tmp_path, column):
    """MTurk's WorkerId, Prolific's PROLIFIC_PID, jsPsych's subject, ...: each platform's participant column gives
    the annotator ids without renaming."""
    path = _write(tmp_path, f"anchor,closer,farther,{column}\n0,1,2,w1\n1,2,0,w2\n2,0,1,w1\n")
    assert read_comparisons(path).annotator.tolist() == ["w1", "w2", "w1"]


@pytest.mark.parametrize("body, said", [
    (None, "reading Parquet needs pyarrow: pip install 'roembed[parquet]'"),  # not installed
    ('raise ImportError("pyarrow requires NumPy 2.0 or newer, found 1.26.4")',  # pyarrow 21+ under numpy 1.26
     "reading Parquet needs pyarrow, which is installed but failed to import: pyarrow requires NumPy 2.0"),
    ("import a_library_pyarrow_needs",  # a dependency of its own missing
     "needs pyarrow, which is installed but failed to import: No module named 'a_library_pyarrow_needs'"),
    ("import pyarrow._compiled_part",  # a broken install: a part of pyarrow itself missing
     "needs pyarrow, which is installed but failed to import: No module named 'pyarrow._compiled_part'"),
])
def test_parquet_without_a_working_pyarrow_says_which_and_why(tmp_path, monkeypatch, body, said):
    """An installed pyarrow that fails to import was reported as missing, with "pip install" (which changes
    nothing) as the advice; the reason is now given instead."""
    import sys

    path = tmp_path / "votes.parquet"
    path.write_bytes(b"PAR1")
    for name in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    if body is None:
        monkeypatch.setitem(sys.modules, "pyarrow", None)
    else:
        (tmp_path / "fake" / "pyarrow").mkdir(parents=True)
        (tmp_path / "fake" / "pyarrow" / "__init__.py").write_text(body + "\n")
        monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    with pytest.raises(ImportError) as error:
        read_comparisons(path)
    assert str(error.value).startswith(f"{path}: ") and said in str(error.value)
    assert ("pip install" in str(error.value)) == (body is None)


def test_numbers_with_a_word_among_them_are_read_as_names_when_the_names_are_listed(tmp_path):
    """Object codes such as 101, 102 with a word ("control") among them read as indices with a typo; the error
    says how to read them as names, and the names it asks for read the file."""
    path = _write(tmp_path, "anchor,closer,farther\n101,102,103\n102,103,control\n103,101,102\n")
    with pytest.raises(InvalidComparisonsError, match=r"line 3: object id is not an integer object index \(most ids "
                                                      r"are numbers.*list every name in a names file"):
        read_comparisons(path)
    comparisons = read_comparisons(path, names=["101", "102", "103", "control"])
    assert comparisons.object_names == ("101", "102", "103", "control")
    assert comparisons.triplets.tolist() == [[0, 1, 2], [1, 2, 3], [2, 0, 1]]


def test_ids_written_with_leading_zeros_are_names_kept_as_written(tmp_path):
    """``007`` is text: read as a number it was object 7 (eleven objects for four ids, written back as ``7``), and
    a names file listing ``001``... in its own order met "object index out of range" or, where the numbers
    fell inside it, the name at that position."""
    path = _write(tmp_path, "anchor,closer,farther,worker,rt\n001,002,003,007,0.5\n002,003,001,012,01\n"
                            "010,001,002,007,2\n")
    c = read_comparisons(path)
    assert c.object_names == ("001", "002", "003", "010") and c.n_objects == 4
    assert c.triplets.tolist() == [[0, 1, 2], [1, 2, 0], [3, 0, 1]]
    assert list(c.annotator) == ["007", "012", "007"]  # worker ids too
    assert c.response_time.tolist() == [0.5, 1.0, 2.0]  # not all whole numbers: still numbers
    given = read_comparisons(path, names=["010", "003", "002", "001"])
    assert given.triplets.tolist() == [[3, 2, 1], [2, 1, 3], [0, 3, 2]]
    out = tmp_path / "back.csv"
    write_comparisons(c, out)
    assert read_comparisons(out).object_names == c.object_names
    frame = pd.DataFrame({"anchor": ["001", "002"], "closer": ["002", "003"], "farther": ["003", "001"]})
    assert from_frame(frame).object_names == ("001", "002", "003")
    # without a leading zero, numbers stay indices
    assert read_comparisons(_write(tmp_path, "anchor,closer,farther\n1,2,3\n0,3,2\n", "plain.csv")).object_names is None


def test_one_number_written_two_ways_is_refused(tmp_path):
    path = _write(tmp_path, "anchor,closer,farther\n1,2,3\n2,3,1\n01,2,3\n")
    with pytest.raises(InvalidComparisonsError, match=r"c.csv: object ids '01' and '1' are one number written two "
                                                      r"ways .*write every id alike"):
        read_comparisons(path)


def test_a_name_in_another_unicode_form_than_the_names_files_is_named_so(tmp_path):
    """A decomposed café in the file (macOS writes file names so), a composed one in the names file: both print
    alike, and "unknown object name (not in names)" showed a name that is plainly there."""
    path = tmp_path / "nfd.csv"
    path.write_bytes("anchor,closer,farther\ntea,water,milk\ncafe\u0301,tea,water\n".encode())
    with pytest.raises(InvalidComparisonsError, match=r"nfd.csv line 3: unknown object name: one of names in "
                                                      r"another Unicode form .*unicodedata.normalize"):
        read_comparisons(path, names=["caf\u00e9", "tea", "water", "milk"])
    with pytest.raises(InvalidComparisonsError, match=r"line 3: unknown object name \(not in names\)"):
        read_comparisons(path, names=["coffee", "tea", "water", "milk"])
    # the same for letter case: Tea in the file, tea in the names (matched as written, never merged)
    path.write_text("anchor,closer,farther\ntea,water,milk\nTea,water,milk\n")
    with pytest.raises(InvalidComparisonsError, match=r"line 3: unknown object name: one of names in other letter "
                                                      r"case \(names are matched as written"):
        read_comparisons(path, names=["caf\u00e9", "tea", "water", "milk"])
    assert read_comparisons(path, names=["Tea", "tea", "water", "milk"]).triplets.tolist()[1] == [0, 2, 3]


def test_qualtrics_two_lines_under_the_header_are_skipped_and_said_so(tmp_path):
    """A Qualtrics export writes each question's text and ``{"ImportId": ...}`` under its header: read as answers,
    they were comparisons of objects named "Which image is the anchor?" and '{"ImportId":"QID1"}'."""
    path = _write(tmp_path, 'Q1,Q2,Q3,ResponseId\n"Which image is the anchor?",Closer image,Farther image,Response ID\n'
                            '"{""ImportId"":""QID1""}","{""ImportId"":""QID2""}","{""ImportId"":""QID3""}",'
                            '"{""ImportId"":""_recordId""}"\ncat,dog,car,R_1\ndog,cat,car,R_2\ncar,bus,bus,R_3\n',
                  "survey.csv")
    columns = {"Q1": "anchor", "Q2": "closer", "Q3": "farther"}
    with pytest.warns(UserWarning, match=r"survey.csv: lines 2-3 are Qualtrics' question text and ImportId lines "
                                         r"under the header, not answers: skipped"):
        with pytest.raises(InvalidComparisonsError, match=r"survey.csv line 6: .*\(car, bus, bus\)"):
            read_comparisons(path, columns=columns)  # later lines keep their numbers
    with pytest.warns(UserWarning, match="Qualtrics"):
        c = read_comparisons(path, columns=columns, on_invalid="skip")
    assert [[c.object_names[o] for o in t] for t in c.triplets] == [["cat", "dog", "car"], ["dog", "cat", "car"]]
    assert list(c.extra["responseid"]) == ["R_1", "R_2"] and not any("ImportId" in n for n in c.object_names)


@pytest.mark.parametrize("records, message", [
    # read as a number, true was object 1; a JSON object or list became a name, "{'id': 1}" or "[1]"
    ('{"anchor": true, "closer": 2, "farther": 3}', "line 1: object id is true or false, not an object index"),
    ('{"anchor": "cat", "closer": false, "farther": "dog"}', "line 1: object id is true or false"),
    ('{"anchor": {"id": 1}, "closer": {"id": 2}, "farther": {"id": 3}}', "line 1: object id is a JSON object or list, "
     "not an object index or name (flatten the file first, e.g. pandas.json_normalize"),
    ('{"anchor": [1], "closer": [2], "farther": [3]}', "line 1: object id is a JSON object or list"),
])
def test_json_ids_that_are_no_index_or_name_are_refused(tmp_path, records, message):
    path = _write(tmp_path, records + "\n", "c.jsonl")
    with pytest.raises(InvalidComparisonsError, match=re.escape(message)):
        read_comparisons(path)
