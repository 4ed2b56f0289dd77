"""Mutated crowd files: every read either succeeds or stops with one line naming the file.

Found by fuzzing in the fifty-eighth session: a stray quote mark (pandas' "EOF inside string", and a read that
did not end on a 2 MB file), a winner past int64 beside text ids (an OverflowError from pyarrow), a field that
spans lines printed across lines, a list in a JSON cell (numpy's "truth value of an array is ambiguous").
Here the same mutations are drawn by hypothesis (derandomized, so CI sees the same files each run)."""
import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from roembed.data import InvalidComparisonsError, read_comparisons

ROWS = [(1, 2, 3), (2, 3, 4), (3, 4, 5), (4, 5, 1), (5, 1, 2)] * 4
TEXTS = {
    "triplets": "anchor,closer,farther,annotator\n" + "".join(f"{a},{b},{c},w{a % 3}\n" for a, b, c in ROWS),
    "headerless": "".join(f"{a},{b},{c}\n" for a, b, c in ROWS),
    "salmon": "head,left,right,winner,puid,response_time\n"
              + "".join(f"{a},{b},{c},{(b, c)[i % 2]},p{i % 3},{0.5 + i}\n" for i, (a, b, c) in enumerate(ROWS)),
    "odd one out": "a,b,c,odd,annotator\n"
                   + "".join(f"x{a},x{b},x{c},x{(a, b, c)[i % 3]},s{i % 4}\n" for i, (a, b, c) in enumerate(ROWS)),
    "weights and ties": "anchor,closer,farther,weight,tie\n"
                        + "".join(f"o{a},o{b},o{c},{i % 4 / 2},{int(i % 7 == 0)}\n" for i, (a, b, c) in enumerate(ROWS)),
}
TOKENS = ["", " ", ",", ";", "\t", '"', "NaN", "-1", "1e3", "1.5", "inf", "abc", "é", "True", "1,5",
          "99999999999999999999", "#", "\r", "'", "left", "right"]


@st.composite
def mutated_text(draw):
    lines = TEXTS[draw(st.sampled_from(sorted(TEXTS)))].splitlines()
    for _ in range(draw(st.integers(1, 4))):
        r = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["field", "delete", "repeat", "append", "cut", "reverse"]))
        if op == "field":
            fields = lines[r].split(",")
            fields[draw(st.integers(0, len(fields) - 1))] = draw(st.sampled_from(TOKENS))
            lines[r] = ",".join(fields)
        elif op == "delete" and len(lines) > 1:
            del lines[r]
        elif op == "repeat":
            lines.insert(r, lines[draw(st.integers(0, len(lines) - 1))])
        elif op == "append":
            lines[r] += "," + draw(st.sampled_from(TOKENS))
        elif op == "cut":
            lines[r] = lines[r][:draw(st.integers(0, len(lines[r])))]
        elif op == "reverse":
            lines[r] = ",".join(reversed(lines[r].split(",")))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n"]))


def _read_or_one_line(path):
    try:
        comparisons = read_comparisons(path)
    except InvalidComparisonsError as exc:
        message = str(exc)
        assert "\n" not in message and path.name in message, message
        return None
    assert len(comparisons) > 0 and np.all(comparisons.quadruplets >= 0)
    assert np.all(comparisons.quadruplets < comparisons.n_objects)
    return comparisons


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=mutated_text())
def test_a_mutated_text_file_reads_or_stops_with_one_line_naming_it(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "answers.csv"
    path.write_text(text, encoding="utf-8")
    _read_or_one_line(path)


CELLS = [None, -1, 1.5, "x", "", [], {}, [1], [1, 2, 3], 10**30, True, "1", 0, 3.0, {"a": 1}]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(layout=st.sampled_from(["records", "columns", "answers"]), edits=st.lists(
    st.tuples(st.integers(0, 19), st.integers(0, 3), st.sampled_from(range(len(CELLS)))), min_size=1, max_size=3),
    whole=st.one_of(st.none(), st.sampled_from(range(len(CELLS)))))
def test_a_mutated_json_file_reads_or_stops_with_one_line_naming_it(tmp_path_factory, layout, edits, whole):
    """``whole``: one cell's value in place of a whole column (or of ``answers``)."""
    keys = ["anchor", "closer", "farther", "annotator"]
    rows = [[a, b, c, f"w{a % 3}"] for a, b, c in ROWS]
    for r, c, v in edits:
        rows[r][c] = CELLS[v]
    if layout == "records":
        data = [dict(zip(keys, row)) for row in rows]
    elif layout == "columns":
        data = {k: [row[i] for row in rows] for i, k in enumerate(keys)}
    else:  # the material-similarity layout: queries and their vote counts (an edited 4th cell: the first count)
        data = {"answers": [row[:3] for row in rows],
                "agreement": [[2 if isinstance(row[3], str) and row[3].startswith("w") else row[3], 1]
                              for row in rows]}
    if whole is not None and isinstance(data, dict):
        data[next(iter(data))] = CELLS[whole]
    path = tmp_path_factory.mktemp("fuzz") / "answers.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    _read_or_one_line(path)
