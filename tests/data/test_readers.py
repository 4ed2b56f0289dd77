"""What crowd platforms export: compressed files, other encodings, several files, ties,
extra per-response columns, partial salmon exports."""
import bz2
import codecs
import gzip
import lzma
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

from roembed.data import Comparisons, InvalidComparisonsError, SkippedRowsWarning, read_comparisons, write_comparisons
from roembed.data.convert import split_ties

TEXT = "anchor,closer,farther,annotator\n0,1,2,ann\n1,2,3,bob\n2,3,0,José\n3,0,1,ann\n"
EXPECTED = [[0, 1, 2], [1, 2, 3], [2, 3, 0], [3, 0, 1]]


def _zip(path, data):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("responses.csv", data)


@pytest.mark.parametrize("name, write", [
    ("votes.csv.gz", lambda p, d: p.write_bytes(gzip.compress(d))),
    ("votes.csv.bz2", lambda p, d: p.write_bytes(bz2.compress(d))),
    ("votes.csv.xz", lambda p, d: p.write_bytes(lzma.compress(d))),
    ("votes.zip", _zip),
])
def test_compressed_files_read_like_plain_ones(tmp_path, name, write):
    path = tmp_path / name
    write(path, TEXT.encode())
    c = read_comparisons(path)
    assert c.triplets.tolist() == EXPECTED and list(c.annotator) == ["ann", "bob", "José", "ann"]


def test_compressed_tsv_keeps_its_separator_and_bad_archives_are_named(tmp_path):
    path = tmp_path / "votes.tsv.gz"
    path.write_bytes(gzip.compress(TEXT.replace(",", "\t").encode()))
    assert read_comparisons(path).triplets.tolist() == EXPECTED
    broken = tmp_path / "broken.csv.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(InvalidComparisonsError, match=r"broken.csv.gz: not a readable .gz file"):
        read_comparisons(broken)
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as archive:
        archive.writestr("a.csv", TEXT)
        archive.writestr("b.csv", TEXT)
    with pytest.raises(InvalidComparisonsError, match=r"two.zip: a .zip must hold exactly one file, it holds a.csv, "
                                                      r"b.csv; extract the one to read \(unzip -p .*two.zip a.csv \| "
                                                      r"roembed fit - ...\)"):
        read_comparisons(two)
    # an archive inside: a .zip was "a zip archive under another name", a .csv.gz "a binary file, not text"
    for inner, payload in (("votes.zip", two.read_bytes()), ("votes.csv.gz", gzip.compress(TEXT.encode()))):
        outer = tmp_path / "outer.zip"
        with zipfile.ZipFile(outer, "w") as archive:
            archive.writestr(inner, payload)
        with pytest.raises(InvalidComparisonsError, match=f"outer.zip: holds {inner}, itself an archive or "
                                                          f"compressed: unzip outer.zip first and read {inner}"):
            read_comparisons(outer)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_compressed_bytes_under_a_plain_name_are_read_by_their_magic(tmp_path, compress):
    """A download saved still compressed, or ``cat votes.csv.gz |``: the first bytes say so, not the name."""
    path = tmp_path / "votes.csv"
    path.write_bytes(compress(TEXT.encode()))
    c = read_comparisons(path)
    assert c.triplets.tolist() == EXPECTED and list(c.annotator) == ["ann", "bob", "José", "ann"]
    path.write_bytes(compress(TEXT.encode())[:20])  # cut short: named as a broken compressed file
    with pytest.raises(InvalidComparisonsError, match=r"votes.csv: not a readable compressed file"):
        read_comparisons(path)


def test_a_text_that_merely_starts_like_a_bzip2_stream_is_text(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("anchor,closer,farther\nBZh9,b,c\nb,c,BZh9\n")
    assert read_comparisons(path).object_names == ("BZh9", "b", "c")
    path.write_text("BZh9,b,c\nb,c,BZh9\n")  # headerless: the first line is data
    assert len(read_comparisons(path, columns=["anchor", "closer", "farther"])) == 2


def test_a_file_given_twice_stops_and_a_second_download_is_named(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text(TEXT)
    for again in (path, tmp_path / "." / "votes.csv"):
        with pytest.raises(InvalidComparisonsError, match=r"votes.csv: given twice.*; each file is read once"):
            read_comparisons([path, again])
    copy = tmp_path / "votes (1).csv"  # the same export downloaded again: its votes would count twice
    copy.write_text(TEXT)
    other = tmp_path / "other.csv"  # the same size, other bytes: no warning
    other.write_text(TEXT.replace("José", "Josè"))
    assert other.stat().st_size == path.stat().st_size
    with pytest.warns(UserWarning, match=r"votes \(1\).csv: the same bytes as .*votes.csv: each of its responses "
                                         r"counts twice") as caught:
        both = read_comparisons([path, copy, other])
    assert len([w for w in caught if "same bytes" in str(w.message)]) == 1
    assert len(both) == 3 * len(EXPECTED)  # still read: a warning, not a guess about which to drop
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_comparisons([path, other])


def _through_a_pipe(tmp_path, data: bytes, **kwargs):
    """``read_comparisons`` of a named pipe (as ``/dev/stdin`` or a shell's ``<(...)``), fed ``data`` by a thread:
    it can be read only once."""
    import os
    import threading
    import time

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as fh:
            fh.write(data)

    done = threading.Event()

    def watchdog():  # a reader that opens the pipe again would wait for a writer forever: give it one, and EOF,
        if not done.wait(30):  # so that the test fails instead of hanging
            with open(fifo, "wb"):
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    threading.Thread(target=watchdog, daemon=True).start()
    try:
        return read_comparisons(fifo, **kwargs)
    finally:
        done.set()
        if writer.is_alive():  # the reader failed before opening the pipe, or the writer is just leaving: drain it
            # without waiting for a writer (a blocking open hung forever when the writer had closed its end between
            # is_alive and the open: seen in CI's numpy 1.26 run on a slower machine)
            fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            try:
                deadline = time.monotonic() + 5
                while writer.is_alive() and time.monotonic() < deadline:
                    try:
                        os.read(fd, 1 << 16)
                    except BlockingIOError:
                        time.sleep(0.01)
            finally:
                os.close(fd)
        writer.join(5)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="no named pipes on this system")
def test_a_pipe_is_read_in_one_pass(tmp_path):
    c = _through_a_pipe(tmp_path, TEXT.encode())
    assert c.triplets.tolist() == EXPECTED and list(c.annotator) == ["ann", "bob", "José", "ann"]
    (tmp_path / "gz").mkdir()
    assert _through_a_pipe(tmp_path / "gz", gzip.compress(TEXT.encode())).triplets.tolist() == EXPECTED
    (tmp_path / "latin").mkdir()
    with pytest.raises(InvalidComparisonsError, match=r"pipe: not utf-8 text; give its encoding, e.g. "
                                                      r"encoding='latin-1' \(roembed fit --encoding latin-1\)"):
        _through_a_pipe(tmp_path / "latin", TEXT.encode("latin-1"))
    (tmp_path / "short").mkdir()
    with pytest.raises(InvalidComparisonsError, match=r"pipe line 3: .*missing"):
        _through_a_pipe(tmp_path / "short", b"anchor,closer,farther\n0,1,2\n1,2\n")


def test_a_binary_file_is_named_binary_not_given_an_encoding_hint(tmp_path):
    path = tmp_path / "triplets.bin"  # the head of a MATLAB v5 file: a text header, then NUL and non-utf-8 bytes
    path.write_bytes(b"MATLAB 5.0 MAT-file, Platform: GLNXA64" + b" " * 78 + b"\x00\x01IM\x0f\x00\x9c\xff" * 4)
    with pytest.raises(InvalidComparisonsError, match=r"triplets.bin line 1: a binary file, not text") as info:
        read_comparisons(path)
    assert "encoding" not in str(info.value) and "MATLAB .mat and NumPy .npy/.npz" in str(info.value)


def test_a_matlab_file_of_triplets_or_quadruplets_is_read_in_its_own_numbering(tmp_path):
    from scipy.io import savemat

    triplets = np.array([[1, 2, 3], [2, 3, 1], [3, 1, 4]], dtype=np.uint16)  # MATLAB numbers from 1
    savemat(tmp_path / "t.mat", {"triplets": triplets, "note": "van der Maaten's format"})
    plain = read_comparisons(tmp_path / "t.mat")
    np.testing.assert_array_equal(plain.triplets, triplets)  # read as they are: object 0 never compared
    one_based = read_comparisons(tmp_path / "t.mat", index_base=1)
    np.testing.assert_array_equal(one_based.triplets, triplets - 1)
    assert one_based.object_names == ("1", "2", "3", "4")
    savemat(tmp_path / "q.mat", {"q": np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 2.0, 0.0, 3.0]])})  # doubles
    np.testing.assert_array_equal(read_comparisons(tmp_path / "q.mat").quadruplets, [[0, 1, 2, 3], [1, 2, 0, 3]])
    savemat(tmp_path / "bad.mat", {"triplets": np.array([[1, 2, 3], [4, 4, 5]])})
    with pytest.raises(InvalidComparisonsError, match=r"bad.mat triplets row 2: .*repeats an object"):
        read_comparisons(tmp_path / "bad.mat")


def test_numpy_files_hold_one_array_of_indices_or_names(tmp_path):
    """``np.save("triplets.npy", T)``, a cblearn user's habit, was "a binary file, not text"."""
    triplets = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 3]])
    np.save(tmp_path / "t.npy", triplets)
    assert read_comparisons(tmp_path / "t.npy").triplets.tolist() == triplets.tolist()
    np.save(tmp_path / "q.npy", np.array([[0, 1, 2, 3], [1, 2, 0, 3]], dtype=np.int32))
    assert read_comparisons(tmp_path / "q.npy").quadruplets.tolist() == [[0, 1, 2, 3], [1, 2, 0, 3]]
    np.savez(tmp_path / "split.npz", train=triplets, labels=np.arange(4))  # the one array of 3 columns
    assert read_comparisons(tmp_path / "split.npz").triplets.tolist() == triplets.tolist()
    names = np.array([["ant", "bee", "cat"], ["bee", "cat", "ant"]])
    np.save(tmp_path / "n.npy", names)
    named = read_comparisons(tmp_path / "n.npy")
    assert named.object_names == ("ant", "bee", "cat") and named.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]
    np.save(tmp_path / "bad.npy", np.array([[0, 1, 2], [1, 1, 2]]))  # rows counted from 0, as NumPy counts
    with pytest.raises(InvalidComparisonsError, match=r"bad.npy row 1: the first pair repeats an object"):
        read_comparisons(tmp_path / "bad.npy")
    np.savez(tmp_path / "two.npz", triplets, triplets)
    with pytest.raises(InvalidComparisonsError, match=r"two.npz: needs exactly one array of 3 or 4 columns .*found 2: "
                                                      r"arr_0 \(3x3 int64\), arr_1"):
        read_comparisons(tmp_path / "two.npz")
    with pytest.raises(InvalidComparisonsError) as info:
        read_comparisons(tmp_path / "two.npz")
    assert "tensor-count" not in str(info.value)
    tensor = np.zeros((5, 5, 5), dtype=int)  # cblearn's tensor-count form, densified: says how to read it
    tensor[0, 1, 2], tensor[3, 1, 2] = 1, -2
    np.savez(tmp_path / "tensor.npz", counts=tensor)
    with pytest.raises(InvalidComparisonsError, match=r"found 0: counts \(5x5x5 int64\); counts is shaped as "
                                                      r"cblearn's tensor-count form, which roembed reads in Python "
                                                      r"\(roembed.from_cblearn\(array\), or fit\(array\)\)"):
        read_comparisons(tmp_path / "tensor.npz")
    np.save(tmp_path / "objects.npy", names.astype(object), allow_pickle=True)  # never unpickled
    with pytest.raises(InvalidComparisonsError, match=r"objects.npy: not a NumPy file that numpy.load can read "
                                                      r"without pickle"):
        read_comparisons(tmp_path / "objects.npy")
    (tmp_path / "text.npy").write_text("0,1,2\n")
    with pytest.raises(InvalidComparisonsError, match=r"text.npy: not a NumPy file \(no .npy or .npz header\) "
                                                      r"\(it starts as text: name it .csv\)$"):
        read_comparisons(tmp_path / "text.npy")  # numpy.load called it "pickled (object) data"


def test_feather_and_arrow_files_read_as_their_frames_batch_by_batch(tmp_path, monkeypatch):
    """``df.to_feather(path)`` was "a binary file, not text"; Feather (both versions) and Arrow IPC files (file
    or stream format) read as the frame they hold, record batch by record batch, rows counted from 0 as Parquet's."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    from pyarrow import feather

    import roembed.data.io as rio

    frame = pd.DataFrame({"head": ["ant", "bee", "cat", "ant"], "left": ["bee", "cat", "ant", "cat"],
                          "right": ["cat", "ant", "bee", "bee"], "winner": ["bee", "ant", "bee", "cat"],
                          "puid": ["u1", "u1", "u2", "u2"]})
    expected = read_comparisons(_csv(tmp_path, frame))
    frame.to_feather(tmp_path / "v.feather")
    feather.write_feather(frame, tmp_path / "v.arrow", compression="lz4", chunksize=3)  # two record batches
    with warnings.catch_warnings():  # pyarrow 25 deprecates version 1
        warnings.simplefilter("ignore", DeprecationWarning)
        feather.write_feather(frame, tmp_path / "v1.feather", version=1)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with pa.OSFile(str(tmp_path / "stream.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table, max_chunksize=3)  # the IPC stream format, two batches
    for name in ("v.feather", "v.arrow", "v1.feather", "stream.arrow"):
        got = read_comparisons(tmp_path / name)
        assert got.object_names == expected.object_names
        np.testing.assert_array_equal(got.annotator, expected.annotator)
        np.testing.assert_array_equal(got.triplets, expected.triplets)
    monkeypatch.setattr(rio, "CHUNK_ROWS", 1)  # version 1 cut into batches too
    np.testing.assert_array_equal(read_comparisons(tmp_path / "v1.feather").triplets, expected.triplets)
    bad = frame.assign(winner=["bee", "ant", "dog", "cat"])  # row 2: the winner is not shown
    feather.write_feather(bad, tmp_path / "bad.arrow", chunksize=2)  # the bad row in the second batch
    with pytest.raises(InvalidComparisonsError, match=r"bad.arrow row 2: "):
        read_comparisons(tmp_path / "bad.arrow")
    whole = (tmp_path / "stream.arrow").read_bytes()
    (tmp_path / "cut.arrow").write_bytes(whole[:-40])  # a download that broke off in the second batch
    with pytest.raises(InvalidComparisonsError, match=r"cut.arrow row 3: a damaged Feather/Arrow file"):
        read_comparisons(tmp_path / "cut.arrow")
    frame.iloc[:0].to_feather(tmp_path / "empty.feather")
    with pytest.raises(InvalidComparisonsError, match=r"empty.feather: no comparisons"):
        read_comparisons(tmp_path / "empty.feather")
    (tmp_path / "text.feather").write_text("head,left,right,winner\n")
    with pytest.raises(InvalidComparisonsError, match=r"text.feather: not a Feather/Arrow file that pyarrow can read"):
        read_comparisons(tmp_path / "text.feather")


def test_text_that_happens_to_hold_a_tar_mark_where_tar_keeps_it_is_read_as_text(tmp_path):
    """A tar archive is known by "ustar" at byte 257; so is a CSV naming "mustard" there, which must still read."""
    text = "anchor,closer,farther\n" + "ketchup,relish,mayonnaise\n" * 8
    anchor = "a" * (256 - len(text) - len(",ketchup,relish\n"))  # the next line starts at byte 256
    text += f"{anchor},ketchup,relish\nmustard,ketchup,relish\n"
    assert text.encode()[257:262] == b"ustar"
    (tmp_path / "condiments.csv").write_text(text)
    got = read_comparisons(tmp_path / "condiments.csv")
    assert len(got.triplets) == 10 and "mustard" in got.object_names


def test_a_text_header_that_starts_like_a_binary_format_is_read_as_text(tmp_path):
    """Parquet files start with "PAR1"; a CSV whose first column is named PAR1 is text all the same."""
    (tmp_path / "v.csv").write_text("PAR1,closer,farther\n0,1,2\n1,2,0\n")
    with pytest.raises(InvalidComparisonsError) as info:
        read_comparisons(tmp_path / "v.csv")
    assert "Parquet" not in str(info.value) and "unknown columns" in str(info.value)
    got = read_comparisons(tmp_path / "v.csv", columns={"PAR1": "anchor"})
    assert got.triplets.tolist() == [[0, 1, 2], [1, 2, 0]]


def _csv(folder, frame):
    frame.to_csv(folder / "v.csv", index=False)
    return folder / "v.csv"


def test_a_matlab_file_without_one_array_of_comparisons_says_what_it_holds(tmp_path):
    from scipy.io import savemat

    savemat(tmp_path / "two.mat", {"train": np.ones((4, 3)), "test": np.ones((2, 3)), "labels": np.ones(5)})
    with pytest.raises(InvalidComparisonsError, match=r"two.mat: needs exactly one numeric array of 3 or 4 columns"
                                                      r" .*found 2: .*train \(4x3 float64\).*test.*labels"):
        read_comparisons(tmp_path / "two.mat")
    savemat(tmp_path / "none.mat", {"X": np.ones((5, 2))})
    with pytest.raises(InvalidComparisonsError, match=r"none.mat: .*found 0: X \(5x2 float64\)"):
        read_comparisons(tmp_path / "none.mat")
    header = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, HDF5 schema 1.00 .".ljust(116) + b"\x00" * 8
    (tmp_path / "v73.mat").write_bytes(header + b"\x00\x02IM" + b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    with pytest.raises(InvalidComparisonsError, match=r"v73.mat: a MATLAB v7.3 \(HDF5\) file.*-v7"):
        read_comparisons(tmp_path / "v73.mat")
    (tmp_path / "broken.mat").write_bytes(b"MATLAB 5.0 MAT-file" + b" " * 97 + b"\x00\x01IM\x9c\xff")
    with pytest.raises(InvalidComparisonsError, match=r"broken.mat: not a MATLAB file that scipy.io.loadmat can read"):
        read_comparisons(tmp_path / "broken.mat")


def test_other_encodings_name_the_file_line_and_the_fix(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(TEXT.encode("latin-1"))
    with pytest.raises(InvalidComparisonsError, match=r"latin.csv line 4: not utf-8 text .*encoding='latin-1'"):
        read_comparisons(path)
    assert list(read_comparisons(path, encoding="latin-1").annotator)[2] == "José"
    with pytest.raises(InvalidComparisonsError, match="unknown encoding 'klingon'"):
        read_comparisons(path, encoding="klingon")
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + TEXT.encode())
    assert read_comparisons(bom).triplets.tolist() == EXPECTED


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_and_utf32_with_a_byte_order_mark_are_read_without_being_named(tmp_path, encoding):
    """Excel's "Unicode text" export: tab-separated UTF-16 with a byte-order mark, also compressed."""
    text = TEXT.replace(",", "\t")
    data = (codecs.BOM_UTF16_BE + text.encode("utf-16-be")) if encoding == "utf-16-be" else text.encode(encoding)
    path = tmp_path / "unicode.txt"
    path.write_bytes(data)
    compressed = tmp_path / "unicode.txt.gz"
    compressed.write_bytes(gzip.compress(data))
    for source in (path, compressed):
        c = read_comparisons(source)
        assert c.triplets.tolist() == EXPECTED and list(c.annotator) == ["ann", "bob", "José", "ann"]


def test_several_files_read_as_one_with_errors_naming_each_file(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.tsv"
    a.write_text("anchor,closer,farther,annotator\n0,1,2,ann\n")
    b.write_text("anchor\tcloser\tfarther\tannotator\n1\t2\t3\tbob\n2\t2\t0\tcat\n")
    with pytest.raises(InvalidComparisonsError, match=r"b.tsv line 3: the first pair repeats an object"):
        read_comparisons([a, b])
    b.write_text("anchor\tcloser\tfarther\tannotator\n1\t2\t3\tbob\n")
    c = read_comparisons([a, b])
    assert c.triplets.tolist() == [[0, 1, 2], [1, 2, 3]] and list(c.annotator) == ["ann", "bob"]
    named_a, named_b = tmp_path / "na.csv", tmp_path / "nb.csv"
    named_a.write_text("anchor,closer,farther\nant,bee,cat\n")
    named_b.write_text("anchor,closer,farther\ndog,ant,bee\n")
    c = read_comparisons([named_a, named_b])  # names over both files, one numbering
    assert c.object_names == ("ant", "bee", "cat", "dog") and c.triplets.tolist() == [[0, 1, 2], [3, 0, 1]]
    other = tmp_path / "other.csv"
    other.write_text("anchor,closer,farther,weight\n0,1,2,1\n")
    with pytest.raises(InvalidComparisonsError, match=r"other.csv line 1: columns .* differ from those of .*a.csv"):
        read_comparisons([a, other])


def test_a_file_of_indices_after_a_file_of_names_stops_at_its_first_row(tmp_path):
    """Read as names, the second file's numbers were objects "0", "1", ... apart from the named ones (seventieth
    session: 8 objects from 4 names and 4 indices); the other order already stopped at the first name."""
    named, numbered = tmp_path / "named.csv", tmp_path / "numbered.csv"
    named.write_text("anchor,near,far\napple,pear,fig\npear,fig,plum\n")
    numbered.write_text("anchor,near,far\n0,1,2\n1,2,3\n")
    with pytest.raises(InvalidComparisonsError, match=r"numbered.csv line 2: object id is a number where the first "
                                                      r"rows' ids are names"):
        read_comparisons([named, numbered])
    with pytest.raises(InvalidComparisonsError, match=r"named.csv line 2: object id is not an integer object index"):
        read_comparisons([numbered, named])
    with pytest.warns(SkippedRowsWarning, match="skipped 2 invalid row"):
        c = read_comparisons([named, numbered], on_invalid="skip")
    assert c.object_names == ("apple", "fig", "pear", "plum") and len(c) == 2
    # names that are numbers, a few among words, stay names; zero-padded ids are names as written
    numbered.write_text("anchor,near,far\n1984,pear,fig\n007,008,apple\n")
    c = read_comparisons([named, numbered])
    assert c.object_names == ("007", "008", "1984", "apple", "fig", "pear", "plum")
    numbered.write_text("anchor,near,far\n1984,2001,fig\n")  # two of three distinct ids whole numbers
    with pytest.raises(InvalidComparisonsError, match=r"numbered.csv line 2: object id is a number"):
        read_comparisons([named, numbered])
    c = read_comparisons([named, numbered], names=["1984", "2001", "apple", "fig", "pear", "plum"])
    assert c.triplets.tolist()[-1] == [0, 1, 3]


def test_a_tie_is_half_a_vote_each_way():
    c = Comparisons([[0, 1, 2], [1, 2, 3]], weight=[1.0, 3.0], annotator=["a", "b"])
    tied = split_ties(c, [False, True])
    assert tied.triplets.tolist() == [[0, 1, 2], [1, 2, 3], [1, 3, 2]]
    assert tied.weight.tolist() == [1.0, 1.5, 1.5] and list(tied.annotator) == ["a", "b", "b"]
    assert tied.extra["tie"].tolist() == [False, True, True]
    graph = tied.aggregate()  # both directions carry half the tie's weight: no net preference
    tie_edges = graph.response_edge[1:]
    assert graph.votes[tie_edges].tolist() == [1.5, 1.5] and graph.opposing_votes[tie_edges].tolist() == [1.5, 1.5]


def test_a_tie_column_is_read(tmp_path):
    path = tmp_path / "ties.csv"
    path.write_text("anchor,closer,farther,tie\n0,1,2,0\n1,2,3,yes\n2,3,0,\n")
    c = read_comparisons(path)
    assert c.triplets.tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 0], [1, 3, 2]]
    assert c.weight.tolist() == [1.0, 0.5, 1.0, 0.5]
    path.write_text("anchor,closer,farther,tie\n0,1,2,0\n1,2,3,maybe\n")
    with pytest.raises(InvalidComparisonsError, match=r"ties.csv line 3: tie is not true/false"):
        read_comparisons(path)


def test_extra_columns_are_kept_written_and_listed_per_comparison(tmp_path):
    path = tmp_path / "extra.csv"
    path.write_text("anchor,closer,farther,annotator,sampler,known_answer\n"
                    "0,1,2,a,random,0\n0,1,2,b,uncertainty,1\n1,2,3,a,random,0\n")
    c = read_comparisons(path)
    assert c.extra["sampler"].tolist() == ["random", "uncertainty", "random"]
    assert c[[2]].extra["known_answer"].tolist() == [0]
    table = c.aggregate().edge_table()
    assert table["sampler"].tolist() == ["random;uncertainty", "random"]
    back = read_comparisons(write_comparisons(c, tmp_path / "back.csv"))
    assert back.extra["sampler"].tolist() == c.extra["sampler"].tolist()
    assert Comparisons.concat([c, c]).extra["known_answer"].tolist() == [0, 1, 0] * 2


def test_a_partial_salmon_export_keeps_its_names(tmp_path):
    path = tmp_path / "responses.csv"
    path.write_text("head,left,right,winner,loser,puid,head_filename,left_filename,right_filename,alg_ident\n"
                    "0,1,3,3,1,u,a.png,b.png,d.png,RandomSampling\n"
                    "3,0,1,0,1,v,d.png,a.png,b.png,ARR\n")
    c = read_comparisons(path)
    assert c.object_names == ("a.png", "b.png", "#2", "d.png")  # target 2 was never shown
    assert c.triplets.tolist() == [[0, 3, 1], [3, 0, 1]]
    assert c.extra["alg_ident"].tolist() == ["RandomSampling", "ARR"]


def _next_query(uid, head, left, right, winner=None, **fields):
    names = "abcd"
    targets = [{"target_id": t, "primary_description": f"{names[t]}.png", "label": label}
               for t, label in ((head, "center"), (left, "left"), (right, "right"))]
    return {"participant_uid": uid, "target_indices": targets, **fields,
            **({} if winner is None else {"target_winner": winner})}


def test_next_participant_data_reads_as_salmon_responses_with_its_names(tmp_path):
    """NEXT's dashboard download of a Triplets app (``{"participant_responses": {uid: [query, ...]}}``): center, left
    and right targets, ``target_winner`` the one called closer, ``primary_description`` the names; queries never
    answered are no response (counted in a warning); a bad row is named by participant and response."""
    import json

    data = {"participant_responses": {
        "p1": [_next_query("p1", 0, 1, 2, 1, alg_label="Test", response_time=1.2, network_delay=0.1),
               _next_query("p1", 1, 2, 3, alg_label="Test"),  # shown, never answered
               _next_query("p1", 3, 0, 2, 2, alg_label="RandomSampling", response_time=2.0)],
        "p2": [_next_query("p2", 2, 3, 0, 0, alg_label="Test", response_time=0.9)]}}
    path = tmp_path / "next.json"
    path.write_text(json.dumps(data))
    with pytest.warns(UserWarning, match="1 query shown but never answered"):
        c = read_comparisons(path)
    assert c.object_names == ("a.png", "b.png", "c.png", "d.png")
    assert c.triplets.tolist() == [[0, 1, 2], [3, 2, 0], [2, 0, 3]]  # (head, winner, the other)
    assert list(c.annotator) == ["p1", "p1", "p2"] and c.position.tolist() == [0, 1, 1]  # winner left / right
    assert c.extra["alg_label"].tolist() == ["Test", "RandomSampling", "Test"] and "network_delay" in c.extra
    assert c.response_time.tolist() == [1.2, 2.0, 0.9]
    data["participant_responses"]["p2"][0]["target_winner"] = 7
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidComparisonsError, match=r"next.json participant 'p2' response 0: winner is neither"):
        read_comparisons(path)
    data["participant_responses"]["p2"] = {"target_winner": 0}
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidComparisonsError, match=r"participant 'p2': responses must be a list of queries"):
        read_comparisons(path)


def test_json_records_columns_and_lines_read_like_csv(tmp_path):
    import json

    rows = [dict(anchor=0, closer=1, farther=2, annotator="w1"), dict(anchor=2, closer=0, farther=1, annotator="w2"),
            dict(anchor=1, closer=2, farther=0, annotator="w1")]
    csv = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    expected = read_comparisons(csv)
    (tmp_path / "records.json").write_text(json.dumps(rows))
    (tmp_path / "columns.json").write_text(json.dumps({k: [r[k] for r in rows] for k in rows[0]}))
    (tmp_path / "lines.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    with gzip.open(tmp_path / "records.json.gz", "wt") as fh:
        fh.write(json.dumps(rows))
    for name in ("records.json", "columns.json", "lines.jsonl", "records.json.gz"):
        got = read_comparisons(tmp_path / name)
        assert np.array_equal(got.quadruplets, expected.quadruplets), name
        assert list(got.annotator) == list(expected.annotator), name


def test_json_query_vote_counts_become_weighted_triplets(tmp_path):
    import json

    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"answers": [[0, 1, 2], [1, 2, 3]], "agreement": [[3, 1], [0, 2]]}))
    c = read_comparisons(path)
    votes = {(int(q[0]), int(q[1]), int(q[3])): w for q, w in zip(c.quadruplets, c.weight)}
    assert votes == {(0, 1, 2): 3, (0, 2, 1): 1, (1, 3, 2): 2}  # the 0-vote direction is no response
    # the same as one row per vote
    repeated = Comparisons(np.array([[0, 1, 2]] * 3 + [[0, 2, 1]] + [[1, 3, 2]] * 2), n_objects=4).aggregate()
    graph = c.aggregate()
    assert sorted(zip(map(tuple, graph.edge_quadruplets().tolist()), graph.votes)) == \
        sorted(zip(map(tuple, repeated.edge_quadruplets().tolist()), repeated.votes))


@pytest.mark.parametrize("text, fragments", [
    ('{"anchor": [0, 1], "closer": [1]}', ["different lengths"]),
    ('{"answers": [[0, 1]], "agreement": [[1, 0]]}', ["'answers' must be (N, 3)"]),
    ('{"answers": [[0, 1, 2]], "agreement": [[-1, 0]]}', ["non-negative"]),
    # a NaN vote count was dropped as "no response", silently; an index past int64 was an OverflowError
    ('{"answers": [[0, 1, 2], [1, 2, 0]], "agreement": [[2, 0], [1, NaN]]}', ["query 1", "[1.0, nan]",
                                                                             "must be non-negative numbers"]),
    ('{"answers": [[0, 1, 99999999999999999999]], "agreement": [[1, 0]]}', ["lists of integer lists",
                                                                            "below 2**63"]),
    ('{"answers": 3, "agreement": [[1, 0]]}', ["'answers' must be (N, 3)", "got () and (1, 2)"]),
    # a list where an object id belongs: was numpy's "truth value of an array ... is ambiguous"
    ('[{"anchor": 0, "closer": 1, "farther": 2}, {"anchor": [], "closer": 1, "farther": 2}]', ["record 1", "([], 1, 2)"]),
    ('{"head": [0, 1], "left": [1, [2, 0]], "right": [2, 0], "winner": [1, 2]}', ["record 1", "[2, 0]"]),
    ('{"a": 1}', ["keys a", "not a comparison table"]),
    ('[1, 2, 3]', ["a JSON list", "not a comparison table"]),
    ('[{"anchor": 0, "closer": 1, "farther": 2},\n {"anchor": 0, "closer": 1, ', ["line 2", "not valid JSON"]),
    ('[{"anchor": 0, "closer": 1, "farther": 2}, {"anchor": 0, "closer": 0, "farther": 2}]', ["record 1"]),
])
def test_bad_json_is_one_clear_error_naming_the_file(tmp_path, text, fragments):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InvalidComparisonsError) as info:
        read_comparisons(path)
    message = str(info.value)
    assert "bad.json" in message and "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_bad_json_lines_name_their_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"anchor": 0, "closer": 1, "farther": 2}\n\n{"anchor": 0, "closer": 1,\n')
    with pytest.raises(InvalidComparisonsError, match="bad.jsonl line 3: not valid JSON"):
        read_comparisons(path)
    path.write_text('{"anchor": 0, "closer": 1, "farther": 2}\n[0, 1, 2]\n')
    with pytest.raises(InvalidComparisonsError, match="line 2: a JSON Lines record must be an object"):
        read_comparisons(path)
