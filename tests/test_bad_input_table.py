"""The whole bad-input table, replayed through ``roembed fit`` and the Python API.

Each case is a tiny file (or option) a real user may hand over.  For every case the
CLI must either stop with exit 2 and ONE line on stderr naming the file (and line)
and the problem -- writing nothing: no --out folder, no staging folder -- or finish
with a documented ``warning:`` line and a consistent output set (summary.json
listing exactly the files present).  The same files through the Python API raise
:class:`InvalidComparisonsError` with the same words, or warn with a ``DataWarning``.
"""
import io
import json
import warnings
import zipfile

import pytest
from click.testing import CliRunner

from roembed import SOE, InvalidComparisonsError, read_comparisons
from roembed.cli import main


def triplets(objects, step=1):
    rows = [(a, b, c) for a in objects for b in objects for c in objects if len({a, b, c}) == 3 and b < c]
    return rows[::step]


def csv(rows, header="anchor,closer,farther", extra=None):
    lines = [header] + [",".join(map(str, r)) + ("" if extra is None else f",{extra(n)}") for n, r in enumerate(rows)]
    return "\n".join(lines) + "\n"


GOOD = csv(triplets(range(6)))
HEAD = "anchor,closer,farther\n0,1,2\n1,2,3\n2,3,4\n"


def tarred(gzip=False):
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gzip else "w") as archive:
        info = tarfile.TarInfo("votes.csv")
        info.size = len(HEAD)
        archive.addfile(info, io.BytesIO(HEAD.encode()))
    return buffer.getvalue()


def zipped(*members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in members:
            archive.writestr(name, HEAD)
    return buffer.getvalue()


def contradiction():
    rows = triplets(range(6))
    return csv(rows + [(a, c, b) for a, b, c in rows])


def huge_ids():
    ids = [0, 3, 17, 99, 1000, 5000, 77777, 123456, 654321, 999999]
    return csv([(ids[a], ids[b], ids[c]) for a, b, c in triplets(range(10), step=3)])


def extreme_weights():
    return csv(triplets(range(6)), "anchor,closer,farther,weight", extra=lambda n: "1e300" if n == 3 else "1")


# id, files {name: text or bytes}, CLI options, expected: ("error", fragments) or ("warning", fragments)
CASES = [
    # -- rows ------------------------------------------------------------------------------
    ("negative index", {"v.csv": HEAD + "1,2,-3\n"}, [], ("error", ["v.csv line 5", "negative object index"])),
    ("huge index", {"v.csv": HEAD + "1,2,100000000000000000000\n"}, [], ("error", ["v.csv line 5", "too large", "read as names when they are text"])),
    ("repeated object", {"v.csv": HEAD + "1,1,2\n"}, [], ("error", ["v.csv line 5", "repeats an object"])),
    ("missing index", {"v.csv": HEAD + "2,1,\n"}, [], ("error", ["v.csv line 5", "missing"])),
    ("fractional index", {"v.csv": HEAD + "0,1,2.5\n"}, [], ("error", ["v.csv line 5", "not an integer"])),
    ("word among numbers", {"v.csv": HEAD + "0,one,2\n"}, [], ("error", ["v.csv line 5", "not an integer"])),
    ("NaN weight", {"v.csv": "anchor,closer,farther,weight\n0,1,2,1\n1,2,0,nan\n"}, [],
     ("error", ["v.csv line 3", "weight is NaN"])),
    ("negative weight", {"v.csv": "anchor,closer,farther,weight\n0,1,2,1\n1,2,0,-1\n"}, [],
     ("error", ["v.csv line 3", "weight is negative"])),
    ("infinite weight", {"v.csv": "anchor,closer,farther,weight\n0,1,2,1\n1,2,0,inf\n"}, [],
     ("error", ["v.csv line 3", "weight is infinite"])),
    ("decimal comma weight", {"v.csv": "anchor;closer;farther;weight\n0;1;2;1\n1;2;0;1,5\n"}, [],
     ("error", ["v.csv line 3", "weight is not a number: it has a decimal comma (write 1.5 for 1,5)"])),
    # 1,234 was told to be a decimal comma, where a spreadsheet's thousands separator is as likely
    ("thousands separator weight", {"v.csv": 'anchor,closer,farther,weight\n0,1,2,1\n1,2,0,"1,234"\n'}, [],
     ("error", ["v.csv line 3", "it has a comma, a thousands separator (write 1234 for 1,234) or a decimal comma"])),
    ("header again (joined files)", {"v.csv": HEAD + "anchor,closer,farther\n3,4,0\n"}, [],
     ("error", ["v.csv line 5", "the header line again (were files joined into one?"])),
    ("named objects, header again", {"v.csv": "anchor,closer,farther\nant,bee,cat\nanchor,closer,farther\n"}, [],
     ("error", ["v.csv line 3", "the header line again"])),
    ("mixed widths", {"v.csv": "0,1,2\n0,1,2,3\n"}, [], ("error", ["v.csv line 2", "cannot be mixed"])),
    # pandas' ParserWarning came above the line in Python (the CLI kept it off stderr)
    ("first row wider than the header", {"v.csv": "anchor,closer,farther\n0,1,2,3\n1,2,3\n"}, [],
     ("error", ["v.csv line 2", "has 4 fields but line 1 has 3"])),
    ("five unnamed columns", {"v.csv": "0,1,2,3,4\n"}, [], ("error", ["v.csv line 1", "3 (triplet) or 4"])),
    ("empty file", {"v.csv": ""}, [], ("error", ["v.csv", "empty"])),
    ("header only", {"v.csv": "anchor,closer,farther\n"}, [], ("error", ["v.csv", "empty"])),
    ("no comparison columns", {"v.csv": "foo,bar,baz\n0,1,2\n"}, [], ("error", ["v.csv", "no comparison columns"])),
    ("column twice", {"v.csv": "anchor,closer,farther,annotator,worker\n0,1,2,a,b\n"}, [],
     ("error", ["v.csv line 1", "both look like the annotator column"])),
    ("missing annotator", {"v.csv": "anchor,closer,farther,annotator\n0,1,2,a\n1,2,0,\n"}, [],
     ("error", ["v.csv line 3", "annotator id is missing"])),
    ("salmon winner", {"r.csv": "head,left,right,winner,puid\n0,1,2,1,u\n0,1,2,3,u\n"}, [],
     ("error", ["r.csv line 3", "winner is neither the left nor the right object"])),
    ("huge winner beside text ids", {"r.csv": "head,left,right,winner,puid\n0,1,2,1,u\n0,bee,2,99999999999999999999,u\n"},
     [], ("error", ["r.csv line 3", "not an integer object index"])),  # was an OverflowError from pyarrow
    ("stray quote mark", {"v.csv": HEAD + '1,"2,3\n0,1,2\n'}, [],
     ("error", ["v.csv line 5", 'a quote mark (") opens a field that does not close'])),
    ("stray quote mark in the header", {"v.csv": 'anchor,"closer,farther\n0,1,2\n'}, [],
     ("error", ["v.csv line 1", 'a quote mark (") opens a field that does not close'])),
    ("field across lines", {"v.csv": 'anchor,closer,farther\nant,bee,cat\nant,"bee,cat\nbee,cat,ant\ncat,ant,"\n'},
     [], ("error", ["v.csv line 3", "'bee,cat\\nbee,cat,ant\\ncat,ant,'", "a field spans several lines"])),
    ("odd one not shown", {"o.csv": "a,b,c,odd\n0,1,2,1\n0,1,2,5\n"}, [],
     ("error", ["o.csv line 3", "odd one is not among the objects shown"])),
    ("bad tie flag", {"v.csv": "anchor,closer,farther,tie\n0,1,2,0\n1,2,0,maybe\n"}, [],
     ("error", ["v.csv line 3", "tie is not true/false"])),
    ("bad gold mark", {"v.csv": "anchor,closer,farther,annotator,gold\n0,1,2,a,1\n1,2,0,b,maybe\n"}, [],
     ("error", ["v.csv line 3", "gold is not 1 (right), 0 (wrong) or empty"])),
    ("gold column twice", {"v.csv": "anchor,closer,farther,gold,gold_correct\n0,1,2,1,1\n"}, [],
     ("error", ["v.csv line 1", "both look like the gold column"])),
    # -- files -----------------------------------------------------------------------------
    ("latin-1 without --encoding", {"v.csv": ("anchor,closer,farther,annotator\n0,1,2,a\n1,2,0,José\n")
                                    .encode("latin-1")}, [], ("error", ["v.csv line 3", "--encoding latin-1"])),
    ("broken MATLAB file", {"t.mat": b"MATLAB 5.0 MAT-file" + b" " * 97 + b"\x00\x01IM\x9c\xff"}, [],
     ("error", ["t.mat: not a MATLAB file that scipy.io.loadmat can read"])),
    ("binary file", {"t.bin": b"MATLAB 5.0 MAT-file" + b" " * 97 + b"\x00\x01IM\x9c\xff"}, [],
     ("error", ["t.bin line 1", "a binary file, not text"])),
    ("spreadsheet", {"t.xlsx": b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00b\xee\x9dh^\x01"}, [],
     ("error", ["t.xlsx line 1", "a binary file, not text", "a spreadsheet: save it as CSV"])),
    ("unknown encoding", {"v.csv": HEAD}, ["--encoding", "klingon"], ("error", ["v.csv", "unknown encoding 'klingon'"])),
    ("corrupt gzip", {"v.csv.gz": b"not gzip"}, [], ("error", ["v.csv.gz", "not a readable .gz file"])),
    ("zip with two files", {"v.zip": zipped("a.csv", "b.csv")}, [], ("error", ["v.zip", "exactly one file"])),
    # archives and compressions roembed does not open: named, not "a binary file" or "not utf-8 text"
    ("tar.gz", {"v.tar.gz": tarred(gzip=True)}, [], ("error", ["v.tar.gz", "a tar archive: extract the file first"])),
    ("tar", {"v.tar": tarred()}, [], ("error", ["v.tar", "a tar archive: extract the file first"])),
    ("zstd", {"v.csv.zst": b"\x28\xb5\x2f\xfd\x04\x58\x45\x00\x00\x10\xff\x00"}, [],
     ("error", ["v.csv.zst", "Zstandard-compressed (.zst): decompress it first"])),
    ("7-zip", {"v.7z": b"7z\xbc\xaf\x27\x1c\x00\x04\x8d\x9b\xd5\x0f"}, [], ("error", ["v.7z", "a 7-Zip archive"])),
    ("hdf5", {"v.h5": b"\x89HDF\r\n\x1a\n" + bytes(64)}, [], ("error", ["v.h5: an HDF5 file", "as CSV or Parquet",
                                                                                        "from_rank_trials"])),
    ("sqlite", {"v.db": b"SQLite format 3\x00" + bytes(84)}, [], ("error", ["v.db: an SQLite database", "sqlite3 -header"])),
    ("pickle", {"v.pkl": b"\x80\x04\x95\x1a\x00\x00\x00"}, [],
     ("error", ["v.pkl: a Python pickle, which roembed never loads", "DataFrame.to_csv"])),
    ("not feather", {"v.feather": HEAD}, [], ("error", ["v.feather", "not a Feather/Arrow file"])),
    # formats roembed reads, under another name: said so, with the name to give
    ("json named .csv", {"v.csv": '[{"anchor": 0, "closer": 1, "farther": 2}]\n'}, [],
     ("error", ["v.csv line 1", "JSON under another name (it starts with '[{'): name it .json"])),
    ("pretty json named .csv", {"v.csv": '{\n  "answers": [[0, 1, 2]],\n  "agreement": [[3, 1]]\n}\n'}, [],
     ("error", ["v.csv line 1", "JSON under another name (it starts with '{'): name it .json"])),
    ("parquet named .csv", {"v.csv": b"PAR1\x15\x04\x15\x00" + bytes(56)}, [],
     ("error", ["v.csv: a Parquet file under another name: name it .parquet"])),
    ("feather named .csv", {"v.csv": b"ARROW1\x00\x00" + bytes(56)}, [],
     ("error", ["v.csv: a Feather/Arrow file under another name: name it .feather"])),
    ("zip named .csv", {"v.csv": zipped("a.csv")}, [],
     ("error", ["v.csv: a zip archive under another name: name it .zip"])),
    ("not parquet", {"v.parquet": HEAD}, [], ("error", ["v.parquet: not a Parquet file that pyarrow can read"])),
    ("second file bad", {"a.csv": HEAD, "b.csv": HEAD + "4,4,1\n"}, [], ("error", ["b.csv line 5", "repeats"])),
    ("files with other columns", {"a.csv": HEAD, "b.csv": "anchor,closer,farther,weight\n0,1,2,1\n"}, [],
     ("error", ["b.csv line 1", "differ from those of"])),
    # -- options ---------------------------------------------------------------------------
    ("holdout rounds to no query", {"v.csv": GOOD}, ["--holdout", "0.0001"], ("error", ["--holdout 0.0001"])),
    ("--lam with soe", {"v.csv": GOOD}, ["--method", "soe", "--lam", "2"], ("error", ["--lam does not apply"])),
    ("--loss with roe", {"v.csv": GOOD}, ["--method", "roe", "--loss", "ste"], ("error", ["--loss does not apply"])),
    ("negative seed", {"v.csv": GOOD}, ["--seed", "-1"], ("error", ["--seed"])),
    ("dim >= objects", {"v.csv": csv(triplets(range(4)))}, ["--dim", "4"], ("error", ["--dim 4", "only 4 objects"])),
    ("--annotator-rounds with soe", {"v.csv": GOOD}, ["--method", "soe", "--annotator-rounds", "1"],
     ("error", ["--annotator-rounds does not apply to --method soe"])),
    ("--annotator-rounds without annotators", {"v.csv": GOOD}, ["--annotator-rounds", "1"],
     ("error", ["--annotator-rounds 1", "v.csv has no annotator column"])),
    ("--bootstrap-unit annotator without annotators", {"v.csv": GOOD},
     ["--bootstrap", "2", "--bootstrap-unit", "annotator"],  # was found only after the fit, below its warnings
     ("error", ["--bootstrap-unit annotator", "v.csv has no annotator column"])),
    ("--bootstrap-unit without --bootstrap", {"v.csv": GOOD}, ["--bootstrap-unit", "object"],
     ("error", ["--bootstrap-unit object goes with --bootstrap N"])),
    ("--jobs 0", {"v.csv": GOOD}, ["--bootstrap", "2", "--jobs", "0"],  # was joblib's traceback
     ("error", ["'--jobs': 0: give 1 or more processes, or -1 for all cores"])),
    ("all weights zero", {"v.csv": "anchor,closer,farther,weight\n0,1,2,0\n1,2,0,0\n"}, ["--method", "soe"],
     ("error", ["v.csv", "weights are zero"])),
    ("labels without column", {"v.csv": GOOD}, ["--labels", "v.csv"], ("error", ["--label-column"])),
    ("unknown device", {"v.csv": GOOD}, ["--device", "abacus"], ("error", ["--device abacus"])),
    ("--device with soe", {"v.csv": GOOD}, ["--method", "soe", "--device", "cpu:0"],
     ("error", ["--device does not apply to --method soe"])),
    # -- results the data cannot support (documented warnings) -----------------------------
    ("disconnected groups", {"v.csv": csv(triplets(range(5)) + triplets(range(5, 10)))}, ["--method", "soe"],
     ("warning", ["v.csv", "2 groups with no comparison between them"])),
    ("pure contradiction", {"v.csv": contradiction()}, ["--method", "soe"], ("warning", ["pure contradiction"])),
    ("a few unused ids", {"v.csv": csv([r for r in triplets(range(8)) if 6 not in r])}, ["--method", "soe"],
     ("warning", ["1 of 8 objects appear in no comparison"])),
    ("mostly unused ids", {"v.csv": huge_ids()}, ["--method", "soe"], ("warning", ["only 10 of the 1000000"])),
    ("extreme weights", {"v.csv": extreme_weights()}, ["--method", "soe"], ("warning", ["extreme weights"])),
    ("fewer queries than free coordinates", {"v.csv": csv(triplets(range(8), step=14))}, ["--method", "soe"],
     ("warning", ["12 distinct queries for 8 objects in 2 dimensions: fewer than the 13 coordinates"])),
    ("iteration limit", {"v.csv": GOOD}, ["--method", "soe", "--max-iter", "1"], ("warning", ["--max-iter"])),
    ("gold without annotator ids", {"v.csv": csv(triplets(range(6)), "anchor,closer,farther,gold",
                                                 extra=lambda n: "1" if n % 4 == 0 else "")}, [],
     ("warning", ["known-answer (gold) marks are not used: the comparisons have no annotator ids"])),
    ("partial salmon names, clashing", {"r.csv": "head,left,right,winner,head_filename,left_filename,"
                                        "right_filename\n0,1,2,1,a,b,c\n0,1,2,2,z,b,c\n"}, ["--method", "soe"],
     ("warning", ["salmon target names not used"])),
]
CLI_ONLY = {"holdout rounds to no query", "--lam with soe", "--loss with roe", "negative seed", "dim >= objects",
            "labels without column", "unknown device", "--device with soe", "mostly unused ids", "--annotator-rounds with soe",
            "--annotator-rounds without annotators", "iteration limit", "unknown encoding",
            "gold without annotator ids", "--bootstrap-unit annotator without annotators",
            "--bootstrap-unit without --bootstrap", "--jobs 0"}  # SOE and the plain estimators do not read annotator ids or gold marks


def make_files(tmp_path, files):
    paths = []
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        paths.append(path)
    return paths


@pytest.mark.parametrize("case, files, options, expected", CASES, ids=[c[0] for c in CASES])
def test_cli(tmp_path, monkeypatch, case, files, options, expected):
    monkeypatch.chdir(tmp_path)
    paths = make_files(tmp_path, files)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["fit", *map(str, paths), "--out", str(out), "--quiet", *options])
    kind, fragments = expected
    lines = result.stderr.strip().splitlines()
    if kind == "error":
        assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
        assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
        for fragment in fragments:
            assert fragment in lines[0], lines[0]
        assert not out.exists()  # nothing half-written ...
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]  # ... not even staged
    else:
        assert result.exit_code == 0, (result.output, result.exception)
        warnings = [line for line in lines if line.startswith("warning: ")]
        assert any(all(f in line for f in fragments) for line in warnings), result.stderr
        assert not [line for line in lines if not line.startswith("warning: ")], result.stderr  # nothing else
        summary = json.loads((out / "summary.json").read_text())
        assert summary["files"] == sorted(p.name for p in out.iterdir())
        assert any(fragments[-1] in w for w in summary["warnings"])


API_CASES = [c for c in CASES if c[0] not in CLI_ONLY]


@pytest.mark.parametrize("case, files, options, expected", API_CASES, ids=[c[0] for c in API_CASES])
def test_python_api(tmp_path, case, files, options, expected):
    paths = make_files(tmp_path, files)
    source = paths if len(paths) > 1 else paths[0]
    kind, fragments = expected
    if kind == "error":
        with warnings.catch_warnings(record=True) as caught, pytest.raises(InvalidComparisonsError) as info:
            warnings.simplefilter("always")
            SOE(random_state=0).fit(read_comparisons(source))
        message = str(info.value)
        assert "\n" not in message
        assert [str(w.message) for w in caught] == []  # the error alone, as the CLI's one line
        for fragment in fragments:
            assert fragment.replace("--encoding latin-1", "encoding='latin-1'") in message, message
    else:
        with pytest.warns(UserWarning) as caught:
            SOE(random_state=0, max_iter=50).fit(read_comparisons(source))
        assert any(fragments[-1] in str(w.message) for w in caught), [str(w.message) for w in caught]
        if case != "partial salmon names, clashing":
            from roembed.data.diagnostics import DataWarning

            assert any(issubclass(w.category, DataWarning) for w in caught)


def test_the_table_is_whole():
    assert len(CASES) >= 38 and len({c[0] for c in CASES}) == len(CASES)
