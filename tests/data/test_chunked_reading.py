"""Reading a file in chunks (roembed.data.io.CHUNK_CHARS of text, CHUNK_ROWS Parquet rows) gives exactly
what reading it whole gives: the same comparisons, names, metadata, errors (file and line) and skipped-row
reports."""
import bz2
import gzip
import io as io_module
import lzma
import warnings
import zipfile

import numpy as np
import pytest
from test_bad_input_table import API_CASES, make_files

from roembed.data import Comparisons, InvalidComparisonsError, read_comparisons, write_comparisons
from roembed.data import convert, io

NAMES = [f"obj{o:02d}" for o in range(12)]


@pytest.fixture
def chunks(monkeypatch):
    """``chunks(size)`` sets the chunk size (characters of text, Parquet rows; a text chunk holds at least
    one line); ``chunks.frames`` lists the rows of each frame the reader converted."""
    added = []
    add = convert.ComparisonsBuilder.add
    monkeypatch.setattr(convert.ComparisonsBuilder, "add", lambda self, frame, where=None: (
        added.append(len(frame)), add(self, frame, where))[1])

    def set_rows(size):
        monkeypatch.setattr(io, "CHUNK_CHARS", size)
        monkeypatch.setattr(io, "CHUNK_ROWS", size)
        added.clear()
    set_rows.frames = added
    return set_rows


def _random(kind, m=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = np.array([rng.choice(len(NAMES), 3 if kind == "triplets" else 4, replace=False) for _ in range(m)])
    return Comparisons(rows, n_objects=len(NAMES), weight=rng.integers(1, 4, m) / 2,
                       annotator=[f"w{r}" for r in rng.integers(0, 5, m)], object_names=NAMES,
                       extra={"sampler": rng.choice(["random", "active"], m)})


def _read(chunks, size, *args, **kwargs):
    """``(comparisons, report, warnings)`` of one read in chunks of ``size``."""
    chunks(size)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c, report = read_comparisons(*args, return_report=True, **kwargs)
    return c, report, [str(w.message) for w in caught]


def _same(a, b):
    assert np.array_equal(a.quadruplets, b.quadruplets) and a.quadruplets.dtype == b.quadruplets.dtype
    assert np.array_equal(a.weight, b.weight)
    assert a.n_objects == b.n_objects and a.object_names == b.object_names
    for key in ("annotator", "timestamp", "response_time"):
        assert (getattr(a, key) is None) == (getattr(b, key) is None), key
        if getattr(a, key) is not None:
            assert list(getattr(a, key)) == list(getattr(b, key)), key
    assert a.extra.keys() == b.extra.keys()
    for key in a.extra:
        assert list(a.extra[key]) == list(b.extra[key]), key


@pytest.mark.parametrize("kind", ["triplets", "quadruplets"])
@pytest.mark.parametrize("with_names", [True, False])
def test_a_file_in_many_chunks_reads_as_it_does_whole(tmp_path, chunks, kind, with_names):
    path = write_comparisons(_random(kind), tmp_path / "c.csv", names=with_names)
    whole, _, _ = _read(chunks, 10**6, path)
    assert chunks.frames == [40]
    for size in (1, 100, 400):
        parts, _, _ = _read(chunks, size, path)
        assert len(chunks.frames) == 40 if size == 1 else 1 < len(chunks.frames) < 40  # really in pieces
        assert sum(chunks.frames) == 40
        _same(parts, whole)


def test_names_met_in_later_chunks_are_numbered_in_sorted_order(tmp_path, chunks):
    text = "anchor,closer,farther\nzebra,yak,emu\nyak,emu,zebra\nemu,zebra,ant\nant,yak,cat\n"
    path = tmp_path / "names.csv"
    path.write_text(text)
    c, _, _ = _read(chunks, 1, path)
    assert c.object_names == ("ant", "cat", "emu", "yak", "zebra")  # as read whole: sorted
    rows = [line.split(",") for line in text.splitlines()[1:]]
    assert np.asarray(c.object_names)[c.triplets].tolist() == rows


def test_odd_one_out_salmon_and_ties_in_chunks(tmp_path, chunks):
    files = {
        "odd.csv": "a,b,c,odd,subject\n" + "".join(f"{NAMES[r % 12]},{NAMES[(r + 1) % 12]},{NAMES[(r + 5) % 12]},"
                                                    f"{NAMES[(r + 5) % 12]},s{r % 3}\n" for r in range(20)),
        "salmon.csv": "head,left,right,winner,puid,head_filename,left_filename,right_filename\n" + "".join(
            f"{r % 7},{(r + 1) % 7},{(r + 3) % 7},{(r + 1 + 2 * (r % 2)) % 7},u{r},t{r % 7}.png,"
            f"t{(r + 1) % 7}.png,t{(r + 3) % 7}.png\n" for r in range(20)),
        "ties.csv": "anchor,closer,farther,tie\n" + "".join(f"{r % 5},{(r + 1) % 5},{(r + 2) % 5},{r % 3 == 0}\n"
                                                            for r in range(20)),
    }
    for path in make_files(tmp_path, files):
        whole, _, _ = _read(chunks, 10**6, path)
        parts, _, _ = _read(chunks, 3, path)
        assert chunks.frames == [1] * 20  # a chunk shorter than a line holds one line
        _same(parts, whole)
        if path.name == "salmon.csv":
            assert parts.object_names == tuple(f"t{o}.png" for o in range(7))
    assert whole.extra["tie"].sum() == 2 * 7  # ties became two half votes, in the chunked read too


BAD = "anchor,closer,farther,weight\n" + "0,1,2,1\n" * 9


@pytest.mark.parametrize("bad_line, message", [
    ("1,1,2,1", "line 12: the first pair repeats an object"),  # numbers, then a bad row
    ("0,one,2,1", "line 12: object id is not an integer object index"),  # a typo in a later chunk is no name
    ("0,1,2,-1", "line 12: weight is negative"),
    ("0,1,2,1,5", "line 12: has 5 fields but line 1 has 4"),  # the parser's own line count
])
def test_an_error_in_the_third_chunk_names_its_line(tmp_path, chunks, bad_line, message):
    path = tmp_path / "bad.csv"
    path.write_text(BAD + "1,2,0,1\n" + bad_line + "\n" + "2,0,1,1\n" * 5)
    chunks(40)  # 5 lines of 8 characters: lines 2-6, 7-11, then the bad row opens the third chunk
    with pytest.raises(InvalidComparisonsError, match=f"{path} {message}"):
        read_comparisons(path)
    assert chunks.frames[:2] == [5, 5] and len(chunks.frames) <= 3  # the third chunk failed


def test_a_row_wider_than_the_header_opening_a_chunk_is_an_error(tmp_path, chunks):
    """pandas would take the extra field of a chunk's (or the file's) first row as an index, silently."""
    path = tmp_path / "wide.csv"
    path.write_text("anchor,closer,farther\n0,1,2,7\n1,2,0,7\n")
    for size in (10**6, 1):
        chunks(size)
        with pytest.raises(InvalidComparisonsError, match=r"wide.csv line 2: has 4 fields but line 1 has 3"):
            read_comparisons(path)


@pytest.mark.parametrize("size", [10**6, 40])
@pytest.mark.parametrize("stray_line", [1, 2, 150])  # the header, the first row, a later chunk
def test_a_quote_mark_that_never_closes_names_its_line(tmp_path, chunks, monkeypatch, size, stray_line):
    """A stray quote mark opened a quoted field that ran to the end of the file: pandas' "EOF inside string"
    (not a roembed error from Python) or, on a 2 MB file, a read that did not end (each step back to an
    unquoted line end counted the quotes from the chunk's start).  Now one line names where it opens."""
    lines = ["anchor,closer,farther"] + ["0,1,2", "1,2,0", "2,0,1"] * 100
    lines[stray_line - 1] = lines[stray_line - 1].replace(",", ',"', 1)
    path = tmp_path / "stray.csv"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(io, "QUOTED_CHARS", 200)  # a quoted field is followed for 200 characters at most
    chunks(size)
    with pytest.raises(InvalidComparisonsError, match=rf"stray.csv line {stray_line}: a quote mark \(\"\) opens a "
                                                      "field that does not close"):
        read_comparisons(path)


def test_pieces_end_at_unquoted_line_ends_and_a_stray_quote_does_not_hold_the_rest(monkeypatch):
    """The pieces join to the text; a quoted line break (a name with one) stays inside its piece; past
    QUOTED_CHARS an open quote is cut, so no piece outgrows a chunk and that much more."""
    monkeypatch.setattr(io, "QUOTED_CHARS", 100)
    text = "a,b,c\n" + '0,"New\nYork",2\n' * 30 + '1,"2,0\n' + "0,1,2\n" * 300
    pieces = list(io._blocks(io_module.StringIO(text), 50))
    assert "".join(pieces) == text
    assert all(len(p) <= 50 + 100 + 6 for p in pieces)
    ends, stray = np.cumsum([len(p) for p in pieces]), text.index('1,"2,0')
    assert sum(ends <= stray) > 5 and all(text.count('"', 0, e) % 2 == 0 for e in ends[ends <= stray])


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])  # "\r" alone: Excel for Mac's "CSV (Macintosh)"
def test_an_undecodable_byte_in_a_later_chunk_names_its_line(tmp_path, chunks, newline):
    path = tmp_path / "latin.csv"
    text = "anchor,closer,farther,annotator\n" + "0,1,2,ann\n" * 3000 + "1,2,0,José\n"
    path.write_bytes(text.replace("\n", newline).encode("latin-1"))
    chunks(100)
    with pytest.raises(InvalidComparisonsError, match=r"latin.csv line 3002: not utf-8 text \(byte b'\\xe9'\)"):
        read_comparisons(path)
    assert list(read_comparisons(path, encoding="latin-1").annotator)[-1] == "José"


@pytest.mark.parametrize("suffix, compress", [
    (".csv.gz", gzip.compress), (".csv.bz2", bz2.compress), (".csv.xz", lzma.compress), (".zip", None)])
def test_compressed_files_in_chunks(tmp_path, chunks, suffix, compress):
    plain = write_comparisons(_random("triplets", m=50, seed=1), tmp_path / "plain.csv")
    packed = tmp_path / f"packed{suffix}"
    if compress is None:
        with zipfile.ZipFile(packed, "w") as archive:
            archive.write(plain, "responses.csv")
    else:
        packed.write_bytes(compress(plain.read_bytes()))
    whole, _, _ = _read(chunks, 10**6, plain)
    parts, _, _ = _read(chunks, 64, packed)
    assert 5 < len(chunks.frames) < 50 and sum(chunks.frames) == 50
    _same(parts, whole)


def test_parquet_in_batches(tmp_path, chunks):
    pytest.importorskip("pyarrow")
    c = _random("quadruplets", m=30, seed=2)
    path = write_comparisons(c, tmp_path / "c.parquet")
    parts, _, _ = _read(chunks, 4, path)
    assert len(chunks.frames) == 8
    _same(parts, c)


def test_skipping_counts_the_same_across_chunks(tmp_path, chunks):
    rows = ["0,1,2,1", "0,1,1,1", "0,x,2,1", ",,,", "1,2,0,-1", "2,0,1,2", "3,1,1,1", "3,1,2,nan", "1,3,0,1"] * 3
    path = tmp_path / "skip.csv"
    path.write_text("anchor,closer,farther,weight\n" + "\n".join(rows) + "\n")
    whole, whole_report, whole_warnings = _read(chunks, 10**6, path, on_invalid="skip")
    for size in (1, 20):
        parts, report, caught = _read(chunks, size, path, on_invalid="skip")
        _same(parts, whole)
        assert report.n_skipped == whole_report.n_skipped == 18
        assert report.examples == whole_report.examples and len(report.examples) == 5
        assert caught == whole_warnings and len(caught) == 1  # one warning for the file, not one per chunk
    all_bad = tmp_path / "all_bad.csv"
    all_bad.write_text("anchor,closer,farther\n" + "0,0,1\n" * 6)
    chunks(2)
    with pytest.raises(InvalidComparisonsError, match=r"all_bad.csv: no valid comparisons \(skipped 6 invalid"):
        read_comparisons(all_bad, on_invalid="skip")


@pytest.mark.parametrize("case, files, options, expected", API_CASES, ids=[c[0] for c in API_CASES])
def test_the_bad_input_table_reads_the_same_one_row_a_chunk(tmp_path, chunks, case, files, options, expected):
    paths = make_files(tmp_path, files)
    source = paths if len(paths) > 1 else paths[0]
    outcomes = []
    for size in (10**6, 1):
        chunks(size)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                outcomes.append(read_comparisons(source))
            except (InvalidComparisonsError, ValueError) as exc:
                outcomes.append(str(exc))
        outcomes.append([str(w.message) for w in caught])
    whole, whole_warnings, parts, part_warnings = outcomes
    assert part_warnings == whole_warnings
    if isinstance(whole, str):
        assert parts == whole
    else:
        _same(parts, whole)


def test_annotator_ids_that_read_as_numbers_in_one_chunk_and_text_in_another_are_one_kind(chunks, tmp_path):
    # ids 44 / w7 in one column: a chunk of digits alone is read as numbers, the next as text; every id ends as
    # its text, so worker "44" of the second chunk is worker 44 of the first, and nothing warns
    rows = [f"{r % 5},{(r + 1) % 5},{(r + 2) % 5},{44 if r < 6 or r % 2 else 'w7'}" for r in range(12)]
    path = tmp_path / "ids.csv"
    path.write_text("anchor,closer,farther,annotator\n" + "\n".join(rows) + "\n")
    whole, _, said = _read(chunks, 1 << 22, path)
    small, _, said_small = _read(chunks, 60, path)
    assert len(chunks.frames) > 1 and said == [] and said_small == []
    for c in (whole, small):
        assert c.annotator.tolist() == ["44"] * 6 + ["w7", "44"] * 3
    json_path = tmp_path / "ids.json"
    json_path.write_text('[{"anchor": 0, "closer": 1, "farther": 2, "annotator": 7},'
                         ' {"anchor": 1, "closer": 2, "farther": 3, "annotator": "7"},'
                         ' {"anchor": 2, "closer": 3, "farther": 4, "annotator": 7.0}]')
    assert read_comparisons(json_path).annotator.tolist() == ["7", "7", "7"]


def test_text_ids_and_columns_are_one_object_per_text_across_chunks(chunks, tmp_path):
    """pandas makes a string object per cell: 10^7 rows of worker ids ("w123") held 530 MB of equal strings, and
    stripping their spaces made another 10^7.  Read in chunks, each text is now one object (the ids still stripped,
    a missing extra cell still missing), so a column costs its pointers."""
    rows = [f"{r % 5},{(r + 1) % 5},{(r + 2) % 5},{[' w1', 'w2', 'w1 ', 'w3'][r % 4]},{'' if r == 5 else 'ab'[r % 2]}"
            for r in range(24)]
    path = tmp_path / "ids.csv"
    path.write_text("anchor,closer,farther,annotator,sampler\n" + "\n".join(rows) + "\n")
    whole, _, _ = _read(chunks, 1 << 22, path)
    small, _, _ = _read(chunks, 60, path)
    assert len(chunks.frames) > 3
    for c in (whole, small):
        assert c.annotator.tolist() == ["w1", "w2", "w1", "w3"] * 6
        assert len({id(a) for a in c.annotator}) == 3
        sampler = c.extra["sampler"]
        assert [s if isinstance(s, str) else None for s in sampler] == [None if r == 5 else "ab"[r % 2]
                                                                        for r in range(24)]
        assert len({id(s) for s in sampler if isinstance(s, str)}) == 2


def test_blank_lines_across_chunks_are_skipped_and_later_lines_keep_their_numbers(tmp_path, chunks):
    rows = ["anchor,closer,farther"] + [f"{i % 12},{(i + 1) % 12},{(i + 5) % 12}" for i in range(30)]
    text = "\n".join(r + ("\n" if k % 4 == 3 else "") for k, r in enumerate(rows)) + "\n\n"  # a blank every 4th
    path = tmp_path / "blank.csv"
    path.write_text(text)
    whole, _, _ = _read(chunks, 10**6, path)
    assert whole.triplets.tolist() == [[int(x) for x in r.split(",")] for r in rows[1:]]
    for size in (1, 13, 40):
        parts, _, _ = _read(chunks, size, path)
        _same(parts, whole)
    bad_line = text.split("\n").index(rows[25]) + 1  # its line in the file, blank lines counted
    path.write_text(text.replace(rows[25] + "\n", "0,0,1\n"))
    for size in (1, 13, 10**6):
        chunks(size)
        with pytest.raises(InvalidComparisonsError, match=f"blank.csv line {bad_line}: the first pair repeats"):
            read_comparisons(path)


def test_a_space_separated_file_in_chunks(tmp_path, chunks):
    triplets = _random("triplets", m=60, seed=3).triplets
    path = tmp_path / "savetxt.txt"
    np.savetxt(path, triplets)  # 1.200000000000000000e+01 ...
    whole = read_comparisons(path)
    chunks(40)
    assert read_comparisons(path).triplets.tolist() == whole.triplets.tolist() == triplets.tolist()
    assert len(chunks.frames) > 10
