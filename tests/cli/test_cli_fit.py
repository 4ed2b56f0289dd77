"""End-to-end tests of ``roembed fit`` on small files."""
import codecs
import json
import os
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from roembed.cli import main
from roembed.cli._options import BadInput
from roembed.experiments import make_synthetic
from cli_testkit import one_line_error


@pytest.fixture(scope="module")
def spam():
    return make_synthetic(n_objects=25, dim=2, n_train=1200, n_validation=200, n_test=500, votes=(3, 6),
                          rate=0.25, model="spammers", n_annotators=16, random_state=5)


@pytest.fixture()
def files(tmp_path, spam):
    t = spam.train.triplets
    csv = tmp_path / "votes.csv"
    pd.DataFrame({"anchor": t[:, 0], "closer": t[:, 1], "farther": t[:, 2],
                  "annotator": [f"w{a}" for a in spam.train.annotator]}).to_csv(csv, index=False)
    names = tmp_path / "names.txt"
    names.write_text("\n".join(f"thing{o}" for o in range(25)) + "\n")
    labels = tmp_path / "labels.tsv"
    labels.write_text("index0\tname\tgroup\n" + "".join(f"{o}\tthing{o}\tg{o % 3};x\n" for o in range(25)))
    return tmp_path, csv, names, labels


def run(*args):
    result = CliRunner().invoke(main, ["fit", *map(str, args)])
    return result




def test_fit_writes_everything(files, spam):
    folder, csv, names, labels = files
    out = folder / "out"
    result = run(csv, "--dim", 2, "--out", out, "--names", names, "--labels", labels, "--label-column", "group",
                 "--holdout", 0.2, "--seed", 1, "--svg", "--quiet")
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout == ""  # --quiet
    expected = {"embedding", "outliers", "annotators"}
    assert {p.name for p in out.iterdir()} == ({f"{s}.{e}" for s in expected for e in ("csv", "png", "svg")}
                                               | {"summary.json", "comparisons.csv"})
    umask = os.umask(0o022)
    os.umask(umask)
    assert {p.stat().st_mode & 0o777 for p in out.iterdir()} == {0o666 & ~umask}  # not mkstemp's 0600
    emb = pd.read_csv(out / "embedding.csv")
    assert list(emb.columns) == ["object", "name", "label", "n_responses", "x1", "x2"]
    assert emb["label"].tolist() == [f"g{o % 3}" for o in range(25)]  # first of "g1;x"
    assert emb["name"].tolist() == [f"thing{o}" for o in range(25)] and np.isfinite(emb[["x1", "x2"]]).all().all()
    outliers = pd.read_csv(out / "outliers.csv")
    assert {"i_name", "votes", "opposing_votes", "annotators", "gamma"} <= set(outliers.columns)
    assert (outliers["gamma"] > 0).all()
    annotators = pd.read_csv(out / "annotators.csv")
    found = set(annotators.loc[annotators["suspect"], "annotator"])
    assert found == {f"w{a}" for a in spam.spammers}
    assert annotators.loc[annotators["suspect"], "reason"].str.len().gt(0).all()
    assert annotators["unproven"].dtype == bool and {"q_below_reference", "inverts"} <= set(annotators.columns)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_suspect_annotators"] == len(found) and "midway between chance" in summary["suspect_rule"]
    assert summary["settings"]["method"] == "robust" and summary["settings"]["dim"] == 2
    assert summary["n_objects"] == 25 and summary["n_responses"] == len(spam.train)
    assert 0 < summary["n_holdout_responses"] < 0.3 * len(spam.train)
    assert 0 <= summary["train_error"] < 0.5 and 0 <= summary["holdout_error"] < 0.5
    assert summary["iterations"] > 0 and np.isfinite(summary["objective"])
    chosen = summary["chosen"]  # the self-tuning default says what it chose, in the summary and on stdout
    assert chosen["loss"] in ("soe", "tste") and chosen["weighting"] in ("consensus", "vote")
    assert chosen["lam"] == summary["lam_used"]
    assert summary["versions"]["roembed"] and summary["files"] == sorted(p.name for p in out.iterdir())


def test_flag_count_says_how_many_flags_are_the_minority_of_their_own_query(files, spam):
    folder, csv, _, _ = files
    result = run(csv, "--dim", 2, "--out", folder / "out", "--seed", 1)
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads((folder / "out" / "summary.json").read_text())
    counts = summary["outliers_by_vote"]
    assert counts["split_queries"] and counts["outvoted"] > 0  # 3-6 votes per query, a quarter of them spam
    assert counts["outvoted"] + counts["tied"] + counts["majority"] == summary["n_outliers"]
    flagged = pd.read_csv(folder / "out" / "comparisons.csv").query("flagged")
    assert counts["outvoted"] == int((flagged["votes"] < flagged["opposing_votes"]).sum())
    assert (f"{summary['n_outliers']:,} of {summary['n_edges']:,} comparisons flagged ({counts['outvoted']:,} "
            f"outvoted within their query, {counts['tied']:,} tied, {counts['majority']:,} with their query's "
            "majority)") in result.stdout
    one_vote = folder / "one_vote.csv"  # each query answered once: no breakdown to give
    t = spam.train.triplets
    first = pd.DataFrame({"i": t[:, 0], "j": np.minimum(t[:, 1], t[:, 2]), "k": np.maximum(t[:, 1], t[:, 2])})
    pd.DataFrame(t, columns=["i", "j", "k"])[~first.duplicated().to_numpy()].to_csv(one_vote, index=False)
    result = run(one_vote, "--dim", 2, "--out", folder / "out1", "--seed", 1)
    assert result.exit_code == 0, result.output + result.stderr
    assert not json.loads((folder / "out1" / "summary.json").read_text())["outliers_by_vote"]["split_queries"]
    assert "comparisons flagged" in result.stdout and "outvoted" not in result.stdout
    assert "fitting RobustOrdinalEmbedding in 2 dimensions" in result.stdout
    result = run(one_vote, "--dim", 1, "--out", folder / "out2", "--seed", 1, "--max-iter", 20)
    assert result.exit_code == 0, result.output + result.stderr
    assert "fitting RobustOrdinalEmbedding in 1 dimension" in result.stdout and "1 dimensions" not in result.stdout
    # nothing held out: the training error says what it is measured on, and how to measure new answers
    train_error = json.loads((folder / "out2" / "summary.json").read_text())["train_error"]
    assert f"train error {train_error:.4f} (on the answers fitted; --holdout 0.2 measures the error on new ones)" \
        in result.stdout


def test_test_file_is_scored_by_name_or_index_as_the_training_file(files, spam):
    from roembed import SOE
    from roembed.data.io import read_comparisons

    folder, csv, _, _ = files
    test = spam.test.triplets[(spam.test.triplets >= 5).all(axis=1)][:200]  # no objects 0-4 in the test file
    test_csv = folder / "test.csv"
    pd.DataFrame(test, columns=["anchor", "closer", "farther"]).to_csv(test_csv, index=False)
    result = run(csv, "--out", folder / "t", "--test", test_csv, "--method", "soe", "--seed", 1)
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads((folder / "t" / "summary.json").read_text())
    expected = 1 - SOE(2, random_state=1).fit(read_comparisons(csv)).score(test)
    assert summary["holdout_error"] == pytest.approx(expected) and summary["n_holdout_responses"] == len(test)
    assert summary["settings"]["test"] == str(test_csv) and f"held-out error {expected:.4f}" in result.stdout
    assert "--holdout 0.2 measures" not in result.stdout  # the hint only where nothing was held out
    # the same with object names: the test file's own sorted names are matched to the training file's
    named = lambda t: pd.DataFrame([[f"thing{o:02d}" for o in row] for row in t], columns=["anchor", "closer", "farther"])
    named(spam.train.triplets).to_csv(folder / "named.csv", index=False)
    named(test).to_csv(folder / "named_test.csv", index=False)
    result = run(folder / "named.csv", "--out", folder / "tn", "--test", folder / "named_test.csv",
                 "--method", "soe", "--seed", 1)
    assert result.exit_code == 0, result.output + result.stderr
    assert json.loads((folder / "tn" / "summary.json").read_text())["holdout_error"] == pytest.approx(expected)
    # a test comparison of an object the training comparisons never show cannot be scored: an error, or dropped
    (folder / "unknown.csv").write_text("anchor,closer,farther\nthing05,thing06,thing07\nthing01,thing02,stranger\n")
    (folder / "too_far.csv").write_text("anchor,closer,farther\n5,6,7\n0,1,99\n")
    (folder / "only_far.csv").write_text("anchor,closer,farther\n0,1,99\n")
    result = run(folder / "named.csv", "--out", folder / "tu", "--test", folder / "unknown.csv", "--skip-invalid",
                 "--method", "soe", "--seed", 1)
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads((folder / "tu" / "summary.json").read_text())
    dropped = (f"{folder / 'unknown.csv'}: dropped 1 of 2 test comparisons with an object that occurs in no "
               f"comparison of {folder / 'named.csv'} (the first: 'stranger')")
    assert summary["n_holdout_responses"] == 1 and dropped in summary["warnings"] and dropped in result.output
    alone = SOE(2, random_state=1).fit(read_comparisons(folder / "named.csv"))
    assert summary["holdout_error"] == pytest.approx(1 - alone.score(np.array([["thing05", "thing06", "thing07"]])))
    (folder / "weightless.csv").write_text("anchor,closer,farther,weight\n0,1,2,0\n1,2,0,0\n")
    for test_file, args, fragments in [
            (folder / "unknown.csv", (folder / "named.csv",),
             ["unknown.csv: 1 of 2 test comparisons have an object that occurs in no comparison of",
              "(the first: 'stranger'); --skip-invalid drops them"]),
            (folder / "too_far.csv", (csv,), ["too_far.csv: 1 of 2 test comparisons have", "(the first: 99)"]),
            (folder / "only_far.csv", (csv, "--skip-invalid"), ["only_far.csv: every test comparison has an object",
                                                               "(the first: 99): nothing to score"]),
            (folder / "named_test.csv", (csv,), ["named_test.csv", "names its objects but", "numbers them"]),
            (test_csv, (csv, "--holdout", 0.2), ["--test", "--holdout 0.2", "one or the other"]),
            (folder / "missing.csv", (csv,), ["missing.csv", "no such file"]),
            # was "all comparison weights are zero: nothing to fit", of the file to score
            (folder / "weightless.csv", (csv,), ["weightless.csv: all comparison weights are zero (a comparison of "
                                                 "weight 0 counts for nothing)"])]:
        one_line_error(run(*args, "--out", folder / "no", "--test", test_file, "--method", "soe"), *fragments)
    assert not (folder / "no").exists()


def test_names_come_from_the_first_name_column_whose_names_are_distinct(files, tmp_path):
    from roembed.cli._fit import read_names_file

    table = tmp_path / "things.tsv"  # as THINGS' table: "word" repeats "bat", "uniqueID" does not
    table.write_text("index1\tindex0\tword\tuniqueID\n3\t2\tcat\tcat\n1\t0\tbat\tbat1\n2\t1\tbat\tbat2\n")
    assert read_names_file(table) == ["bat1", "bat2", "cat"]  # in index0 order
    plain = tmp_path / "plain.csv"
    plain.write_text("index0,name,note\n1,b,x\n0,a,x\n")
    assert read_names_file(plain) == ["a", "b"]
    repeated = tmp_path / "repeated.csv"  # no distinct column: the first, and the repeat is named by its lines
    repeated.write_text("name,kind\na,x\na,x\n")
    with pytest.raises(BadInput, match=r"repeated.csv line 3: object name 'a' again \(first on line 2\)"):
        read_names_file(repeated)
    one_column = tmp_path / "one.csv"  # pd.Series(names, name="name").to_csv(index=False): a header, then names
    one_column.write_text("Name\nbat1\nbat2\n")
    assert read_names_file(one_column) == ["bat1", "bat2"]  # was ["Name", "bat1", "bat2"]: every name one off
    pd.Series(["bat1", "bat2"]).to_csv(one_column, index=False)  # a Series without a name: header "0"
    assert one_column.read_text().splitlines()[0] == "0" and read_names_file(one_column) == ["bat1", "bat2"]
    one_column.write_text("0\n1\n2\n")  # numbers as names: all kept
    assert read_names_file(one_column) == ["0", "1", "2"]


def test_a_names_tables_ids_must_number_its_rows(tmp_path):
    """Names are given by position: an ``index0`` with a gap or a repeat gave the next objects their neighbours'
    names without a word, and ``object, name`` (``embedding.csv`` of an earlier run) took the ids as the names."""
    from roembed.cli._fit import read_names_file

    def names(text, **kw):
        path = tmp_path / ("names.tsv" if "\t" in text else "names.csv")
        path.write_text(text)
        return read_names_file(path, **kw)

    assert names("index0\tname\n1\tb\n0\ta\n2\tc\n") == ["a", "b", "c"]
    with pytest.raises(BadInput, match=r"names.tsv line 4: index0 3, but names are given by position: the 3 rows "
                                       r"must number the objects 0-2 \(index0 2 has no row\)"):
        names("index0\tname\n0\ta\n1\tb\n3\td\n")
    with pytest.raises(BadInput, match=r"names.tsv line 3: index0 0 again \(first on line 2\)"):
        names("index0\tname\n0\ta\n0\tb\n1\tc\n")
    assert names("index1\tname\n2\tb\n1\ta\n") == ["a", "b"]  # index1 counts from 1 whatever the file does
    with pytest.raises(BadInput, match="line 2: index1 0, but"):
        names("index1\tname\n0\ta\n1\tb\n")
    # object (and index) count as the comparisons do: an earlier run's embedding.csv gives its names
    earlier = "object,name,n_responses,x1\n1,b,3,0.5\n0,a,2,0.1\n2,c,4,0.3\n"
    assert names(earlier) == ["a", "b", "c"]
    with pytest.raises(BadInput, match=r"line 3: object 0, but .* objects 1-3 \(object 3 has no row\)$"):
        names(earlier, index_base=1)
    assert names("object,name\n2,b\n1,a\n3,c\n", index_base=1) == ["a", "b", "c"]
    with pytest.raises(BadInput, match=r"object 3, .* objects 0-2 \(object 0 has no row\) \(--index-base 1"):
        names(earlier.replace("\n0,a", "\n3,a"))
    assert names("object\tkind\nant\tx\nbee\ty\n") == ["ant", "bee"]  # an object column of names stays names


def test_bad_names_and_labels_files_are_named_with_their_line(tmp_path):
    """A names or labels file's problem named the comparisons file ("votes.csv: Unable to parse string", "votes.csv:
    object name 'b' appears more than once in names") or quoted pandas ("cannot read labels (Error tokenizing data.
    C error: ...)" with a line break); each is now one line naming the names or labels file and its line."""
    votes = tmp_path / "votes.csv"
    votes.write_text("anchor,closer,farther\n" + "".join(f"{a},{b},{c}\n" for a, b, c in
                                                          [(0, 1, 2), (1, 2, 3), (2, 3, 0), (3, 0, 1)] * 3))
    for text, fragments in [
        ("a\nb\n\nc\nb\n", ["names.txt line 5: object name 'b' again (first on line 2): names must be distinct"]),
        ("index0,name\n1,b\nx,a\n2,c\n3,d\n", ["names.txt line 3: index0 'x' is not a number"]),
        ("index0,name\n0,a\n1,b,extra\n2,c\n3,d\n", ["names.txt line 3: has 3 fields but line 1 has 2"]),
        ("a\nb\nc\n", ["votes.csv line 3", "object index out of range (names were given for 3 objects: indices "
                         "0-2)"]),
    ]:
        names = tmp_path / "names.txt"
        names.write_text(text)
        one_line_error(run(votes, "--names", names, "--method", "soe", "--out", tmp_path / "no"), *fragments)
    names.write_text("a\nb\nc\n")  # the objects counted from 1, as THINGS' files and MATLAB's count them
    votes.write_text("anchor,closer,farther\n" + "1,2,3\n2,3,1\n" * 3)
    one_line_error(run(votes, "--names", names, "--method", "soe", "--out", tmp_path / "no"),
                   "votes.csv line 2", "(names were given for 3 objects: indices 0-2; if the file counts objects "
                   "from 1, read it with --index-base 1 / index_base=1)")
    assert run(votes, "--names", names, "--index-base", "1", "--method", "soe", "--dim", "1",
               "--out", tmp_path / "yes").exit_code == 0
    votes.write_text("anchor,closer,farther\n" + "".join(f"{a},{b},{c}\n" for a, b, c in
                                                          [(0, 1, 2), (1, 2, 3), (2, 3, 0), (3, 0, 1)] * 3))
    labels = tmp_path / "labels.csv"
    labels.write_text("index0,kind\n0,x\n1,y,z\n")
    one_line_error(run(votes, "--labels", labels, "--method", "soe", "--out", tmp_path / "no"),
                   "labels.csv line 3: has 3 fields but line 1 has 2")
    labels.write_text('index0,kind\n0,x\n1,"y\n2,z\n')  # read by the comparisons' own parse-error wording
    one_line_error(run(votes, "--labels", labels, "--method", "soe", "--out", tmp_path / "no"),
                   "labels.csv line 3: a quote mark (\") opens a field that does not close")
    # named objects and a table whose names match none: it said "'foo' is not an object index", as if names were
    # not looked at
    names.write_text("a\nb\nc\nd\n")
    labels.write_text("name,kind\nfoo,x\nbar,y\n")
    one_line_error(run(votes, "--names", names, "--labels", labels, "--method", "soe", "--out", tmp_path / "no"),
                   "labels.csv line 2: name 'foo' is neither one of the objects' names nor an object index in 0..3")
    assert not (tmp_path / "no").exists()


def test_names_and_labels_files_are_read_in_the_encoding_given_and_without_a_byte_order_mark(tmp_path):
    """--encoding covers every input: a latin-1 names file was read as utf-8 (an error naming the comparisons
    file), labels ignored it; Excel's utf-8 byte-order mark stuck to the first name."""
    objects = ["café", "naïve", "zoë", "bär"]
    rows = [(a, b, c) for a in range(4) for b in range(4) for c in range(4) if len({a, b, c}) == 3]
    csv = tmp_path / "votes.csv"
    csv.write_bytes(("anchor,closer,farther\n" + "".join(f"{objects[a]},{objects[b]},{objects[c]}\n"
                                                         for a, b, c in rows)).encode("latin-1"))
    names = tmp_path / "names.txt"
    names.write_bytes("\n".join(objects).encode("latin-1"))
    labels = tmp_path / "labels.csv"
    labels.write_bytes(("name,kind\n" + "".join(f"{o},k{i % 2}\n" for i, o in enumerate(objects))).encode("latin-1"))
    out = tmp_path / "out"
    result = run(csv, "--encoding", "latin-1", "--names", names, "--labels", labels, "--label-column", "kind",
                 "--method", "soe", "--out", out, "--quiet")
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(out / "embedding.csv")
    assert emb["name"].tolist() == objects and emb["label"].tolist() == ["k0", "k1", "k0", "k1"]
    utf8 = tmp_path / "votes8.csv"
    utf8.write_text(csv.read_bytes().decode("latin-1"), encoding="utf-8")
    names.write_bytes(codecs.BOM_UTF8 + "\n".join(objects).encode())  # Notepad's "UTF-8 with BOM"
    labels.write_bytes(codecs.BOM_UTF8 + labels.read_bytes().decode("latin-1").encode())
    result = run(utf8, "--names", names, "--labels", labels, "--label-column", "kind", "--method", "soe",
                 "--out", tmp_path / "out8", "--quiet")
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "out8" / "embedding.csv")
    assert emb["name"].tolist() == objects and emb["label"].tolist() == ["k0", "k1", "k0", "k1"]
    names.write_bytes("\n".join(objects).encode("latin-1"))
    one_line_error(run(utf8, "--names", names, "--out", tmp_path / "no"), "names.txt: not utf-8 text", "--encoding")


@pytest.mark.skipif(not os.path.exists("/dev/stdin"), reason="no /dev/stdin on this system")
def test_a_dash_reads_the_comparisons_from_standard_input_even_compressed(files, tmp_path):
    import gzip
    import subprocess
    import sys
    from pathlib import Path

    _, csv, names, _ = files
    src = str(Path(__import__("roembed").__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, "-m", "roembed", "fit", "-", "--names", str(names), "--method", "soe", "--quiet"]
    piped = subprocess.run([*command, "--out", str(tmp_path / "piped")], input=gzip.compress(csv.read_bytes()),
                           capture_output=True, env=env)  # as `zcat`-free `cat votes.csv.gz | roembed fit -`
    assert piped.returncode == 0, piped.stderr
    direct = run(csv, "--names", names, "--method", "soe", "--quiet", "--out", tmp_path / "direct")
    assert direct.exit_code == 0
    for name in ("embedding.csv", "comparisons.csv"):
        assert (tmp_path / "piped" / name).read_text() == (tmp_path / "direct" / name).read_text()
    assert json.loads((tmp_path / "piped" / "summary.json").read_text())["input"] == "/dev/stdin"
    broken = subprocess.run([*command, "--out", str(tmp_path / "no")], input=b"anchor,closer,farther\n0,1,2\n1,2\n",
                            capture_output=True, env=env, text=False)
    assert broken.returncode == 2 and broken.stderr.decode().strip().splitlines() == [
        "Error: /dev/stdin line 3: object index is missing: (1, 2, ) (--skip-invalid drops invalid rows and reports them)"]
    one_line_error(run("-", "--test", "-", "--out", tmp_path / "no"), "'-' (standard input) is given for two inputs")
    # a piped .zip was told to "name it .zip", which a pipe cannot be
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("votes.csv", csv.read_bytes())
    zipped = subprocess.run([*command, "--out", str(tmp_path / "no")], input=archive.getvalue(), capture_output=True,
                            env=env)
    assert zipped.returncode == 2 and zipped.stderr.decode().strip().splitlines() == [
        "Error: /dev/stdin: a zip archive, piped: give roembed the .zip by its name (roembed fit export.zip), or pipe "
        "the one file inside it (unzip -p export.zip | roembed fit -)"]
    assert not (tmp_path / "no").exists()


def test_objects_without_a_row_in_the_labels_table_are_counted(files, tmp_path):
    """A labels table that spells names otherwise ("thing 3" for "thing3") matched few objects, and the rest
    were drawn unlabelled without a word."""
    _, csv, names, labels = files
    partial = tmp_path / "partial.tsv"
    partial.write_text("name\tgroup\n" + "".join(f"{'thing ' if o >= 20 else 'thing'}{o}\tg{o % 3}\n" for o in range(25)))
    result = run(csv, "--names", names, "--labels", partial, "--label-column", "group", "--method", "soe",
                 "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    assert (f"warning: {partial}: 5 of the 25 objects with comparisons have no row in its name column "
            "(e.g. thing20, thing21, thing22, thing23, thing24): drawn unlabelled") in result.stderr
    emb = pd.read_csv(tmp_path / "out" / "embedding.csv", keep_default_na=False)
    assert emb["label"].tolist() == [f"g{o % 3}" for o in range(20)] + [""] * 5
    result = run(csv, "--names", names, "--labels", labels, "--label-column", "group", "--method", "soe",
                 "--out", tmp_path / "whole")
    assert result.exit_code == 0 and "no row" not in result.stderr


@pytest.mark.parametrize("with_names", [True, False])
def test_labels_without_a_label_column_read_the_tables_one_column_of_labels(files, tmp_path, with_names):
    """``index0, name, group`` (music's artist_genres.tsv is ``index0, name, genres``): the one column that is
    neither the rows' key, an index nor names is the labels; it was "--labels and --label-column go together"."""
    _, csv, names, labels = files
    result = run(csv, *(("--names", names) if with_names else ()), "--labels", labels, "--method", "soe",
                 "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "out" / "embedding.csv", keep_default_na=False)
    assert emb["label"].tolist() == [f"g{o % 3}" for o in range(25)]
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["label_column"] == "group"
    label = write(tmp_path, "object,label\n" + "".join(f"{o},k{o % 2}\n" for o in range(25)), "label.csv")
    result = run(csv, "--labels", label, "--method", "soe", "--out", tmp_path / "by_label")  # 'label' is labels
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "by_label" / "embedding.csv", keep_default_na=False)
    assert emb["label"].tolist() == [f"k{o % 2}" for o in range(25)]


def test_labels_of_a_file_counting_from_one_go_to_the_objects_they_name(files, tmp_path):
    """The music data as MATLAB ships them, read with ``--index-base 1``: the reader keeps the file's numbers
    ("1", "2", ...) as names, and the labels table's ``index0`` column ("0", "1", ...) was matched as names, so every
    label went to the next object (artist 1 took artist 2's genre) with one puzzling warning.  ``index0`` counts
    from 0; ``object`` counts as the file does (``embedding.csv``'s ``object`` column); ``roembed report --labels``
    reads them alike.  With names and ``--skip-invalid``, the file's rows naming its last object were skipped as
    out of range and every name shifted: now a one-line refusal naming ``--index-base 1``."""
    folder, csv, names, labels = files
    frame = pd.read_csv(csv)
    frame[["anchor", "closer", "farther"]] += 1
    one_based = tmp_path / "one_based.csv"
    frame.iloc[:200].to_csv(one_based, index=False)
    with open(one_based, "a") as fh:
        fh.write("3,3,5,w1\n")  # a row to skip
    result = run(one_based, "--index-base", 1, "--skip-invalid", "--labels", labels, "--method", "soe",
                 "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "out" / "embedding.csv", keep_default_na=False)
    assert emb["object"].tolist() == list(range(1, 26))
    assert emb["label"].tolist() == [f"g{o % 3}" for o in range(25)] and "no row" not in result.stderr
    by_object = write(tmp_path, "object,kind\n" + "".join(f"{o + 1},k{o % 2}\n" for o in range(25)), "obj.csv")
    result = run(one_based, "--index-base", 1, "--skip-invalid", "--labels", by_object, "--method", "soe",
                 "--out", tmp_path / "out2")
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "out2" / "embedding.csv", keep_default_na=False)
    assert emb["label"].tolist() == [f"k{o % 2}" for o in range(25)]
    by_index1 = write(tmp_path, "index1,kind\n" + "".join(f"{o + 1},j{o % 4}\n" for o in range(25)), "i1.csv")
    result = run(csv, "--labels", by_index1, "--method", "soe", "--out", tmp_path / "out3")  # a 0-based file
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "out3" / "embedding.csv", keep_default_na=False)
    assert emb["label"].tolist() == [f"j{o % 4}" for o in range(25)]  # index1 counts from 1: was one off
    report = CliRunner().invoke(main, ["report", str(tmp_path / "out2"), "--labels", str(labels),
                                       "-o", str(tmp_path / "r.html")])
    assert report.exit_code == 0, report.stderr
    from roembed.cli.report import relabelled
    data, notes = relabelled(tmp_path / "out2", labels, None)
    assert data.objects["label"].tolist() == [f"g{o % 3}" for o in range(25)] and notes == []
    refused = run(one_based, "--names", names, "--skip-invalid", "--method", "soe", "--out", tmp_path / "named")
    one_line_error(refused, "one_based.csv", "the file counts objects from 1")
    assert "--index-base 1" in refused.stderr and not (tmp_path / "named").exists()
    result = run(one_based, "--names", names, "--index-base", 1, "--skip-invalid", "--method", "soe",
                 "--out", tmp_path / "named")
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "named" / "embedding.csv", keep_default_na=False)
    assert emb["name"].tolist() == [f"thing{o}" for o in range(25)]


@pytest.mark.parametrize("by", ["name", "index0"])
def test_an_object_with_rows_that_disagree_takes_its_first_row_and_says_so(files, tmp_path, by):
    """A labels table with one row per image or per rater: the last row won, without a word."""
    _, csv, names, _ = files
    rows = [(f"thing{o}" if by == "name" else str(o), f"g{o % 3}") for o in range(25)]
    rows += [("thing4" if by == "name" else "4", "late"), ("thing7" if by == "name" else "7", "g1;x")]
    labels = write(tmp_path, f"{by},group\n" + "".join(f"{k},{v}\n" for k, v in rows), "rows.csv")
    result = run(csv, "--names", names, "--labels", labels, "--method", "soe", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    emb = pd.read_csv(tmp_path / "out" / "embedding.csv", keep_default_na=False)
    assert emb["label"].tolist() == [f"g{o % 3}" for o in range(25)]  # thing4's first row; thing7's agrees
    warned = [line for line in result.stderr.splitlines() if "different group" in line]
    assert warned == [f"warning: {labels}: 1 object has rows with different group (e.g. "
                      f"{'thing4' if by == 'name' else '4'}: g1, late): each object's first row is used"]


def test_dash_o_names_the_output_folder_as_in_roembed_report(files, tmp_path):
    _, csv, _, _ = files
    result = run(csv, "-o", tmp_path / "short", "--method", "soe", "--quiet")  # was "No such option '-o'"
    assert result.exit_code == 0, result.stderr
    assert json.loads((tmp_path / "short" / "summary.json").read_text())["settings"]["method"] == "soe"


def test_a_training_file_given_as_the_test_file_stops(files, tmp_path):
    _, csv, _, _ = files
    copy = tmp_path / "copy.csv"
    copy.write_bytes(csv.read_bytes())
    for test_file in (csv, copy):
        one_line_error(run(csv, "--test", test_file, "--out", tmp_path / "no"),
                       f"--test {test_file}: the same comparisons as {csv}", "training error")
    assert not (tmp_path / "no").exists()


def test_holdout_keeps_each_query_on_one_side(files):
    from roembed.data.io import read_comparisons
    from roembed.model_selection import holdout_split

    data = read_comparisons(files[1])
    train, test = holdout_split(data, 0.3, random_state=0)
    assert len(train) + len(test) == len(data)
    key = lambda c: {tuple(sorted((q[1], q[3]))) + (q[0],) for q in c.quadruplets}  # noqa: E731
    assert not key(train) & key(test)


def test_holdout_keeps_every_comparison_among_the_same_objects_on_one_side(tmp_path):
    """An odd-one-out answer is two triplets, two queries: held out by query, one half of an answer was scored
    while the fit saw the other (THINGS at p = 2: held-out error 0.28 by query, chance, 0.49, on new triples)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    shown = np.array([rng.choice(30, 3, replace=False) for _ in range(400)])
    shown = np.repeat(shown, 2, axis=0)  # each triple answered twice
    d = lambda a, b: np.linalg.norm(X[a] - X[b], axis=1)  # noqa: E731
    pair_gaps = np.c_[d(shown[:, 1], shown[:, 2]), d(shown[:, 0], shown[:, 2]), d(shown[:, 0], shown[:, 1])]
    odd = np.argmin(pair_gaps, axis=1)  # the odd one is opposite the closest pair
    csv = tmp_path / "odd.csv"
    pd.DataFrame({"a": shown[:, 0], "b": shown[:, 1], "c": shown[:, 2], "odd_position": odd}).to_csv(csv, index=False)
    result = run(csv, "--out", tmp_path / "out", "--holdout", 0.3, "--seed", 0, "--quiet")
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    fitted = pd.read_csv(tmp_path / "out" / "comparisons.csv")
    triple = lambda rows: [frozenset(r) for r in rows]  # noqa: E731
    answers_per_triple = pd.Series(triple(shown)).value_counts()
    votes = fitted["votes"].groupby(triple(fitted[["i", "j", "k"]].to_numpy())).sum()  # a response: one edge's vote
    # every triple the fit saw, it saw whole: both triplets of each of its answers
    assert (votes == 2 * answers_per_triple[votes.index]).all()
    assert summary["n_holdout_responses"] == 2 * len(shown) - votes.sum() > 0.2 * 2 * len(shown)


def test_a_reader_warning_that_names_its_file_is_not_prefixed_twice(files, tmp_path):
    """Was "warning: votes.csv (+1 more): copy.csv: the same bytes as ..." and, for one file, its name twice."""
    _, csv, *_ = files
    copy = tmp_path / "copy.csv"
    copy.write_bytes(csv.read_bytes())
    result = run(csv, copy, "--out", tmp_path / "two", "--quiet")
    assert result.exit_code == 0, result.output + result.stderr
    assert f"warning: {copy}: the same bytes as {csv}:" in result.stderr and "more): " not in result.stderr


def test_held_out_error_has_its_interval_and_one_at_chance_is_said(files, tmp_path):
    """The held-out error comes with its 95% interval (sets of objects as the sample size,
    ``roembed.metrics.triplet_error(unit="object_set")``); where it reaches 0.5 a map of answers given at random looked like any
    other (train error 0.35, held-out 0.46), so a warning says the held-out answers cannot tell it from guessing.
    A map that predicts gets no such warning."""
    folder, csv, *_ = files
    result = run(csv, "--out", folder / "ho", "--holdout", 0.2, "--seed", 0)
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads((folder / "ho" / "summary.json").read_text())
    low, high = summary["holdout_error_interval"]
    assert low < summary["holdout_error"] < high < 0.5
    assert f"held-out error {summary['holdout_error']:.4f} (95% interval {low:.4f}-{high:.4f})" in result.stdout
    assert not any("chance" in w for w in summary["warnings"])
    result = CliRunner().invoke(main, ["report", str(folder / "ho")])
    page = (folder / "ho" / "report.html").read_text()
    assert result.exit_code == 0 and f"(95% interval {low:.4f}-{high:.4f})" in page
    rng = np.random.default_rng(2)
    queries = np.array([rng.choice(40, 3, replace=False) for _ in range(3000)])
    pd.DataFrame(queries, columns=["anchor", "closer", "farther"]).to_csv(tmp_path / "random.csv", index=False)
    result = run(tmp_path / "random.csv", "--out", tmp_path / "r", "--holdout", 0.2, "--seed", 0, "--quiet")
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    low, high = summary["holdout_error_interval"]
    assert low < 0.5 <= high
    warned = [w for w in summary["warnings"] if "reaches 0.5, chance" in w]
    assert len(warned) == 1 and warned[0].startswith("--holdout 0.2: the held-out error's 95% interval")
    assert "held-out sets of objects): on these answers the map's predictions cannot be told from guessing" in result.stderr
    n_sets = int(re.search(r"over (\d+) held-out sets of objects", warned[0]).group(1))
    assert 0.8 * summary["n_holdout_responses"] < n_sets <= summary["n_holdout_responses"]  # some share objects


def test_a_holdout_that_rounds_to_no_query_is_bad_input(files):
    result = run(files[1], "--out", files[0] / "tiny", "--holdout", 0.0001, "--quiet")
    assert result.exit_code == 2 and "--holdout 0.0001" in result.output and "nothing held out" in result.output
    assert not (files[0] / "tiny").exists()


@pytest.mark.parametrize("value", ["nan", "NaN"])
def test_a_holdout_that_is_not_a_number_is_bad_input(files, value):
    """click's FloatRange let NaN through its bounds: --holdout nan fitted with no hold-out, rc 0, no word."""
    result = run(files[1], "--out", files[0] / "nan", "--holdout", value, "--quiet")
    assert result.exit_code == 2 and f"Invalid value for '--holdout': '{value}' is not a number" in result.output
    assert not (files[0] / "nan").exists()


def test_classic_method_and_reweighting(files):
    folder, csv, *_ = files
    result = run(csv, "--out", folder / "soe", "--method", "soe", "--quiet")
    assert result.exit_code == 0, result.stderr
    assert {p.name for p in (folder / "soe").iterdir()} == {"embedding.csv", "comparisons.csv", "embedding.png",
                                                            "summary.json"}
    result = run(csv, "--out", folder / "rw", "--annotator-rounds", 2, "--verbose")
    assert result.exit_code == 0, result.stderr
    assert "annotator reweighting round 1" in result.stdout
    summary = json.loads((folder / "rw" / "summary.json").read_text())
    assert len(summary["reweighting_rounds"]) >= 2


def write(folder, text, name="bad.csv"):
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, problem", [
    ("anchor,closer,farther\n0,1,2\n1,2,-3\n", "line 3: negative object index"),
    ("anchor,closer,farther\n0,1,2\n1,1,2\n", "line 3: the first pair repeats an object"),
    ("anchor,closer,farther\n0,1,2\n2,1,\n", "line 3: object index is missing"),
    ("anchor,closer,farther\n0,1,2\n0,1,2.5\n", "line 3"),
    ("anchor,closer,farther,weight\n0,1,2,1\n1,2,0,nan\n", "line 3: weight"),
    ("anchor,closer,farther,weight\n0,1,2,1\n1,2,0,-1\n", "line 3: weight is negative"),
    ("0,1,2\n0,1,2,3\n", "line 2"),
    ("", "empty"),
    ("foo,bar,baz\n0,1,2\n", "unknown columns"),
    ("anchor,closer,farther,weight\n0,1,2,0\n1,2,0,0\n", "all comparison weights are zero"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, text, problem):
    bad = write(tmp_path, text)
    result = run(bad, "--out", tmp_path / "out")
    one_line_error(result, "bad.csv", problem)
    assert not (tmp_path / "out").exists()  # nothing written


def test_bad_options_and_files(files):
    folder, csv, names, labels = files
    one_line_error(run(folder / "missing.csv", "--out", folder / "o"), "missing.csv", "no such file")
    one_line_error(run("https://example.org/responses.csv", "--out", folder / "o"), "https://example.org/responses.csv",
                   "a web address: roembed reads files on this machine only (download it first)")
    one_line_error(run(folder / "day*.csv", "--out", folder / "o"), "day*.csv",  # the shell left it: no match
                   "no such file, and no file matches it as a pattern")
    one_line_error(run(csv, "--out", folder / "o", "--lam", "abc"), "--lam")
    one_line_error(run(csv, "--out", folder / "o", "--lam", "-1"), "--lam")
    one_line_error(run(csv, "--out", folder / "o", "--label-column", "group"),
                   "--label-column group names a column of --labels, which is missing")
    two = write(folder, "index0,name,group,decade\n0,thing0,a,1990\n", "two.csv")
    one_line_error(run(csv, "--out", folder / "o", "--labels", two),
                   "two.csv: which column labels the objects? give --label-column, one of group, decade")
    one_line_error(run(csv, "--out", folder / "o", "--labels", write(folder, "index0,name\n0,thing0\n", "none.csv")),
                   "none.csv line 1: no column of labels beside index0, name")
    one_line_error(run(csv, "--out", folder / "o", "--labels", labels, "--label-column", "genre"),
                   "labels.tsv line 1", "no column 'genre'")
    bad_labels = write(folder, "index0\tgroup\n0\ta\n99\tb\n", "lab.tsv")
    one_line_error(run(csv, "--out", folder / "o", "--labels", bad_labels, "--label-column", "group"),
                   "lab.tsv line 3")
    assert not (folder / "o").exists()


def test_columns_name_a_headerless_file_or_rename_a_file_s_own(files, spam):
    """--columns: names for a file without a header (triplets with string annotator ids; odd-one-out answers
    laid out as THINGS exports them: three objects, the odd one's position, the annotator) or renames old=new;
    the fit reads the same comparisons either way."""
    folder, csv, *_ = files
    table = pd.read_csv(csv)
    headerless = folder / "plain.tsv"
    table.to_csv(headerless, sep="\t", header=False, index=False)
    # string annotator ids: the first line is not all numbers, so it is taken for a header
    one_line_error(run(headerless, "--out", folder / "no"), "plain.tsv", "looks like data", "--columns")
    named = run(headerless, "--out", folder / "named", "--columns", "anchor,closer,farther,annotator", "--quiet",
                "--method", "soe")
    assert named.exit_code == 0, named.stderr
    renamed_csv = folder / "renamed.csv"
    table.rename(columns={"annotator": "rater", "anchor": "probe"}).assign(junk=1).to_csv(renamed_csv, index=False)
    message = one_line_error(run(renamed_csv, "--out", folder / "no"), "renamed.csv", "probe")
    assert "looks like data" not in message
    renamed = run(renamed_csv, "--out", folder / "renamed", "--columns", "probe=anchor, rater=annotator, junk=",
                  "--quiet", "--method", "soe")
    assert renamed.exit_code == 0, renamed.stderr
    for out in ("named", "renamed"):
        summary = json.loads((folder / out / "summary.json").read_text())
        assert summary["n_responses"] == len(table)
        assert np.allclose(pd.read_csv(folder / out / "embedding.csv")[["x1", "x2"]],
                           pd.read_csv(folder / "named" / "embedding.csv")[["x1", "x2"]])
    # odd-one-out answers without a header, positions from 0
    shown = np.array([[0, 1, 2], [3, 4, 5], [1, 3, 5], [0, 2, 4]] * 20)
    odd_file = folder / "odd.csv"
    odd_file.write_text("".join(f"{a},{b},{c},{k % 3},{k % 4}\n" for k, (a, b, c) in enumerate(shown)))
    odd = run(odd_file, "--out", folder / "odd", "--columns", "a,b,c,odd_position,annotator", "--quiet",
              "--method", "soe")
    assert odd.exit_code == 0, odd.stderr
    assert json.loads((folder / "odd" / "summary.json").read_text())["n_responses"] == 2 * len(shown)
    # the same answers with positions counted from 1, as THINGS exports them: refused, then read alike
    odd1_file = folder / "odd1.csv"
    odd1_file.write_text("".join(f"{a},{b},{c},{k % 3 + 1},{k % 4}\n" for k, (a, b, c) in enumerate(shown)))
    odd1_args = (odd1_file, "--columns", "a,b,c,odd_position,annotator", "--quiet", "--method", "soe")
    one_line_error(run(*odd1_args, "--out", folder / "no"), "odd1.csv line 3", "not 0, 1 or 2",
                   "--odd-position-base 1")
    odd1 = run(*odd1_args, "--out", folder / "odd1", "--odd-position-base", 1)
    assert odd1.exit_code == 0, odd1.stderr
    assert json.loads((folder / "odd1" / "summary.json").read_text())["settings"]["odd_position_base"] == 1
    assert np.array_equal(pd.read_csv(folder / "odd1" / "embedding.csv")[["x1", "x2"]],
                          pd.read_csv(folder / "odd" / "embedding.csv")[["x1", "x2"]])
    one_line_error(run(csv, "--out", folder / "no", "--odd-position-base", 1), "votes.csv",
                   "no odd_position column")
    # objects counted from 1 too (THINGS, MATLAB): --index-base 1; the outputs keep the file's numbers
    odd11_file = folder / "odd11.csv"
    odd11_file.write_text("".join(f"{a + 1},{b + 1},{c + 1},{k % 3 + 1},{k % 4}\n" for k, (a, b, c) in enumerate(shown)))
    (folder / "six.txt").write_text("".join(f"thing{o}\n" for o in range(1, 7)))
    odd11 = run(odd11_file, "--columns", "a,b,c,odd_position,annotator", "--quiet", "--method", "soe",
                "--odd-position-base", 1, "--index-base", 1, "--names", folder / "six.txt", "--out", folder / "odd11")
    assert odd11.exit_code == 0, odd11.stderr
    embedding = pd.read_csv(folder / "odd11" / "embedding.csv")
    assert embedding["object"].tolist() == [1, 2, 3, 4, 5, 6]
    assert embedding["name"].tolist() == [f"thing{o}" for o in range(1, 7)]
    assert np.array_equal(embedding[["x1", "x2"]], pd.read_csv(folder / "odd" / "embedding.csv")[["x1", "x2"]])
    one_line_error(run(odd_file, "--columns", "a,b,c,odd_position,annotator", "--index-base", 1, "--out",
                       folder / "no"), "odd.csv line 1", "object index below 1, but index_base=1")
    as_json = folder / "votes.json"
    table.to_json(as_json, orient="records")
    one_line_error(run(as_json, "--out", folder / "no", "--columns", "anchor,closer,farther,annotator"),
                   "votes.json", "only for text files without a header", "--columns old=new")
    for bad, problem in [("a,b=c", "not both"), ("=x", "old name"), ("a,,c", "empty column name")]:
        one_line_error(run(headerless, "--out", folder / "no", "--columns", bad), "--columns", problem)
    assert not (folder / "no").exists()


def test_skip_invalid_reports_what_it_dropped(tmp_path):
    rows = [(a, b, c) for a in range(6) for b in range(6) for c in range(6) if len({a, b, c}) == 3 and b < c]
    text = "anchor,closer,farther\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows) + "3,3,1\n"
    bad = write(tmp_path, text)
    # without the flag: one line naming the row, and what --skip-invalid would do
    one_line_error(run(bad, "--out", tmp_path / "no"), f"line {len(rows) + 2}", "repeats an object",
                   "--skip-invalid drops invalid rows")
    # a problem with the file as a whole is not a row to skip
    header = run(write(tmp_path, "x,y,z\n0,1,2\n", "cols.csv"), "--out", tmp_path / "no")
    assert header.exit_code == 2 and "--skip-invalid" not in header.output
    result = run(bad, "--out", tmp_path / "out", "--skip-invalid", "--quiet", "--method", "soe")
    assert result.exit_code == 0, result.stderr
    assert "skipped 1 invalid row" in result.stderr and f"line {len(rows) + 2}" in result.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["n_responses"] == len(rows)


def test_crash_while_writing_leaves_no_half_file(files, monkeypatch):
    folder, csv, *_ = files
    out = folder / "out"
    assert run(csv, "--out", out, "--quiet").exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    from roembed.cli import _report

    original = _report.write_frame

    def crash_on_outliers(frame, fh, **kwargs):
        if "gamma" in frame.columns:  # the outliers table: write half of it, then die
            fh.write(frame.to_csv(index=False)[:100])
            raise KeyboardInterrupt
        return original(frame, fh, **kwargs)

    monkeypatch.setattr(_report, "write_frame", crash_on_outliers)
    result = run(csv, "--out", out, "--quiet", "--seed", 7)
    assert result.exit_code != 0
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(after) == set(before)  # no temporary files left behind
    assert after["outliers.csv"] == before["outliers.csv"]  # the old complete file, not half a new one
    assert after["summary.json"] == before["summary.json"]  # summary (written last) still the old run's


def test_a_salmon_worker_who_always_clicks_left_is_named(tmp_path):
    # 11 workers answer as a 2-D map says; one always picks the left candidate
    rng = np.random.default_rng(3)
    x = rng.standard_normal((25, 2))
    rows = []
    for w in range(12):
        for _ in range(80):
            head, left, right = rng.choice(25, 3, replace=False)
            closer = left if ((x[head] - x[left]) ** 2).sum() < ((x[head] - x[right]) ** 2).sum() else right
            rows.append((head, left, right, left if w == 11 else closer, f"p{w}"))
    csv = tmp_path / "responses.csv"
    pd.DataFrame(rows, columns=["head", "left", "right", "winner", "puid"]).to_csv(csv, index=False)
    result = run(csv, "--out", tmp_path / "out", "--report")
    assert result.exit_code == 0, result.output + result.stderr
    assert "(1 pick one screen position more often than chance)" in result.stdout
    assert "annotators favouring one screen position <b>1</b>" in (tmp_path / "out" / "report.html").read_text()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["n_position_biased_annotators"] == 1 and "position_biased" in summary["suspect_rule"]
    table = pd.read_csv(tmp_path / "out" / "annotators.csv").set_index("annotator")
    assert table.loc["p11", "suspect"] and table.loc["p11", "top_position"] == 0
    assert "picks screen position 0 in" in table.loc["p11", "reason"]
    assert not table.drop(index="p11")["position_biased"].any()


@pytest.mark.parametrize("given, method", [("t-STE", "tste"), ("SOE", "soe"), ("t_ste", "tste"),
                                           ("RobustOrdinalEmbedding", "robust")])
def test_method_names_match_without_case_hyphens_or_underscores(files, given, method):
    """``--method t-STE``, the results tables' name, was "'t-STE' is not one of ... 'tste'"; ``reproduce --methods``
    already read it."""
    folder, csv, _, _ = files
    result = run(csv, "--method", given, "--out", folder / "o", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads((folder / "o" / "summary.json").read_text())["settings"]["method"] == method
    assert run(csv, "--method", "t-SNE", "--out", folder / "no").exit_code == 2 and not (folder / "no").exists()


def test_every_method_is_named_by_its_estimators_class_too():
    """``--method`` takes each method's estimator class name (``RobustOrdinalEmbedding``, ``TSTE``): the alias table
    the help keeps without importing the estimators covers every registered class."""
    from roembed.cli._options import CLASS_METHODS, METHODS, MethodChoice, method_key
    from roembed.estimators.registry import estimator_class

    choice = MethodChoice(sorted(METHODS))
    for method in METHODS:
        assert choice.convert(estimator_class(method).__name__, None, None) == method
    assert set(CLASS_METHODS.values()) <= set(METHODS) and all(method_key(k) == k for k in CLASS_METHODS)


def test_names_with_dollars_and_emoji_are_drawn_and_reported_in_one_line(files):
    """A name "$$" stopped the run with matplotlib's ParseException traceback; an emoji made matplotlib print one
    warning per character with its own source path.  Now the run finishes, the pictures are written, and the
    emoji gets one warning line naming the picture, also kept in summary.json."""
    folder, csv, _, _ = files
    names = folder / "odd_names.txt"
    names.write_text("\n".join(["$$", "a $x^2$ b", "emoji \U0001F3B5"] + [f"thing{o}" for o in range(3, 25)]) + "\n",
                     encoding="utf-8")
    out = folder / "out"
    result = run(csv, "--names", names, "--method", "soe", "--max-iter", "100", "--out", out)
    assert result.exit_code == 0, result.output + result.stderr
    assert (out / "embedding.png").stat().st_size > 0
    lines = [line for line in result.stderr.splitlines() if "glyph" in line]
    assert lines == ["warning: embedding.png: the font has no glyph for '\U0001F3B5' in the names or labels drawn: "
                     "they show as boxes (the CSV files and the report keep them)"]
    assert "UserWarning" not in result.stderr and "ParseException" not in result.output + result.stderr
    assert any("no glyph" in w for w in json.loads((out / "summary.json").read_text())["warnings"])
    assert pd.read_csv(out / "embedding.csv")["name"].tolist()[:3] == ["$$", "a $x^2$ b", "emoji \U0001F3B5"]


def test_init_starts_from_an_earlier_runs_embedding_matched_by_name(files, spam):
    """Refitting as responses accrue: ``--init first/embedding.csv`` starts the second fit where the first ended,
    objects matched by name (the second file drops one object's comparisons and adds a new object); the run says
    how many the start placed and records the file in summary.json."""
    folder, csv, names, _ = files
    table = pd.read_csv(csv)
    table["anchor"], table["closer"], table["farther"] = (table[c].map(lambda o: f"thing{o}")
                                                          for c in ("anchor", "closer", "farther"))
    first_rows = table[~table[["anchor", "closer", "farther"]].isin(["thing24"]).any(axis=1)]  # thing24 new later
    second_rows = table[~table[["anchor", "closer", "farther"]].isin(["thing0"]).any(axis=1)]  # thing0 gone
    first_rows.to_csv(folder / "first.csv", index=False)
    second_rows.to_csv(folder / "second.csv", index=False)
    assert run(folder / "first.csv", "--out", folder / "first", "--quiet").exit_code == 0
    result = run(folder / "second.csv", "--init", folder / "first" / "embedding.csv", "--out", folder / "second")
    assert result.exit_code == 0, result.output + result.stderr
    start = folder / "first" / "embedding.csv"
    assert f"starting from {start} (23 of 24 objects, 1 new at its centre)" in result.stdout
    summary = json.loads((folder / "second" / "summary.json").read_text())
    assert summary["settings"]["init"] == str(folder / "first" / "embedding.csv")
    assert summary["chosen"]["n_init"] == 1  # one start: the one given
    cold = run(folder / "second.csv", "--out", folder / "cold", "--quiet")
    assert cold.exit_code == 0
    warm_error = summary["train_error"]
    assert warm_error <= json.loads((folder / "cold" / "summary.json").read_text())["train_error"] + 0.01


def test_init_matches_numbered_objects_by_the_files_numbers(files):
    """Numbered objects: ``embedding.csv``'s ``object`` column holds the file's numbers, matched to this file's
    (object 24 is new in the second run); under ``--index-base 1`` the numbers are the objects' names."""
    folder, csv, _, _ = files
    table = pd.read_csv(csv)[["anchor", "closer", "farther"]]
    table[~table.isin([24]).any(axis=1)].to_csv(folder / "first.csv", index=False)
    assert run(folder / "first.csv", "--out", folder / "first", "--quiet").exit_code == 0
    result = run(csv, "--init", folder / "first" / "embedding.csv", "--out", folder / "second")
    assert result.exit_code == 0, result.output + result.stderr
    assert "(24 of 25 objects, 1 new at its centre)" in result.stdout
    assert "warning" not in result.stderr
    table[table.max(axis=1) < 10].to_csv(folder / "ten.csv", index=False)  # a map of 10 of the 25 objects
    assert run(folder / "ten.csv", "--out", folder / "ten", "--quiet").exit_code == 0
    result = run(csv, "--init", folder / "ten" / "embedding.csv", "--out", folder / "third")
    assert result.exit_code == 0 and "(10 of 25 objects, 15 new at its centre)" in result.stdout
    assert "places only 10 of the 25 objects; is it a map of these objects?" in result.stderr
    sparse = table * 1000  # ids 0, 1000, ..., 24000: the fit keeps the 25 used, embedding.csv the file's ids
    sparse.to_csv(folder / "sparse.csv", index=False)
    sparse[~sparse.isin([3000]).any(axis=1)].to_csv(folder / "sparse_first.csv", index=False)
    assert run(folder / "sparse_first.csv", "--out", folder / "sparse_first", "--quiet").exit_code == 0
    result = run(folder / "sparse.csv", "--init", folder / "sparse_first" / "embedding.csv", "--out",
                 folder / "sparse_second")  # by the rows of the fit, only id 0 would match
    assert result.exit_code == 0 and "(24 of 25 objects, 1 new at its centre)" in result.stdout, result.output
    (table + 1).to_csv(folder / "one.csv", index=False)
    assert run(folder / "one.csv", "--index-base", 1, "--out", folder / "a", "--quiet").exit_code == 0
    result = run(folder / "one.csv", "--index-base", 1, "--init", folder / "a" / "embedding.csv", "--out",
                 folder / "b")
    assert result.exit_code == 0, result.output + result.stderr
    assert "(25 of 25 objects)" in result.stdout


@pytest.mark.parametrize("extra, fragments", [
    (["--dim", 3], ["--init", "init has 2 coordinate columns (x1, x2), expected 3"]),
    (["--dim", "auto"], ["--init", "fixed dimension"]),
    (["--method", "soe"], ["--init does not apply to --method soe (only to robust"]),
    (["--names", "NAMES"], ["--init", "has no object names, but these comparisons name their objects"]),
])
def test_init_that_does_not_fit_the_run_is_refused_in_one_line(files, extra, fragments):
    folder, csv, names, _ = files
    assert run(csv, "--out", folder / "numbered", "--quiet").exit_code == 0
    extra = [names if e == "NAMES" else e for e in extra]
    result = run(csv, "--init", folder / "numbered" / "embedding.csv", "--out", folder / "again", *extra)
    one_line_error(result, *fragments)
    assert not (folder / "again").exists()


def test_init_of_an_earlier_runs_output_folder_reads_its_embedding(files):
    """``--init first`` (the folder ``--out`` wrote, as a shell completes it) used to stop with "is a folder, not a
    file (several files are read as one: roembed fit first/*.csv ...)", advice about the comparisons' files."""
    folder, csv, _, _ = files
    assert run(csv, "--out", folder / "first", "--quiet").exit_code == 0
    result = run(csv, "--init", folder / "first", "--out", folder / "second")
    assert result.exit_code == 0, result.output + result.stderr
    assert f"starting from {folder / 'first' / 'embedding.csv'} (25 of 25 objects)" in result.stdout
    (folder / "empty").mkdir()
    one_line_error(run(csv, "--init", folder / "empty", "--out", folder / "x"),
                   f"--init {folder / 'empty'}: a folder without embedding.csv")
    assert not (folder / "x").exists()


def test_init_of_a_file_that_is_no_embedding_is_refused(files):
    folder, csv, _, _ = files
    one_line_error(run(csv, "--init", csv, "--out", folder / "x"), f"--init {csv}", "coordinate column")
    one_line_error(run(csv, "--init", folder / "missing.csv", "--out", folder / "x"), "missing.csv")
    assert run(csv, "--out", folder / "first", "--quiet").exit_code == 0
    table = pd.read_csv(folder / "first" / "embedding.csv")
    for name, broken, fragment in [
            ("header.csv", table.iloc[:0], "no rows"),
            ("nan.csv", table.assign(x1=table["x1"].where(table.index != 3)), "row of object 3: a coordinate that is "
                                                                                "not a finite number (x1 = empty"),
            ("text.csv", table.assign(x2=table["x2"].astype(str).where(table.index != 4, "far")), "x2 = far)")]:
        broken.to_csv(folder / name, index=False)
        one_line_error(run(csv, "--init", folder / name, "--out", folder / "x"), f"--init {folder / name}", fragment)
    table.to_csv(folder / "semicolons.csv", index=False, sep=";")  # as a spreadsheet saves it in some locales
    result = run(csv, "--init", folder / "semicolons.csv", "--out", folder / "y")
    assert result.exit_code == 0 and "(25 of 25 objects)" in result.stdout
