"""Screen positions: carried per response from odd-one-out and salmon files (and a ``position`` column), kept
through subsetting, counted once per answer, checked row by row, and read by the annotator table."""
import numpy as np
import pandas as pd
import pytest

from roembed.annotators import annotator_reliability, position_bias
from roembed.data import Comparisons, InvalidComparisonsError, annotator_units, read_comparisons, write_comparisons
from roembed.data.convert import from_frame, from_odd_one_out, to_salmon
from roembed.estimators.robust import RobustOrdinalEmbedding

SHOWN = np.array([[0, 1, 2], [3, 1, 0], [2, 3, 4], [0, 4, 1]])


def test_odd_one_out_answers_carry_their_position_on_both_triplets():
    c = from_odd_one_out(SHOWN, [2, 0, 1, 2], annotator=["p", "p", "q", "p"])
    assert c.position.tolist() == [2, 2, 0, 0, 1, 1, 2, 2]
    assert repr(c) == "Comparisons(8 triplets over 5 objects, with annotators, with screen positions)"
    # counted once per answer: p answered 3 times (positions 2, 0, 2), q once (1)
    assert c.position_counts.tolist() == [[1, 0, 2], [0, 1, 0]]
    assert c.answer_units.tolist() == [0, 0, 1, 1, 3, 3, 2, 2]
    # an odd one given as an object says nothing about the screen
    assert from_odd_one_out(SHOWN, [2, 3, 3, 1], odd_is="object").position is None
    kept = c[[0, 3, 6]].take_objects(np.arange(5))
    assert kept.position.tolist() == [2, 0, 2]
    assert Comparisons.concat([c[:2], c[2:]]).position.tolist() == c.position.tolist()
    assert c.with_weight(np.full(len(c), 2.0)).position is c.position
    with pytest.raises(InvalidComparisonsError, match="no screen positions"):
        from_odd_one_out(SHOWN, [2, 3, 3, 1], odd_is="object", annotator=list("pqrs")).position_counts


@pytest.mark.parametrize("position, message", [
    ([0, 1, -1], "row 2: position is -1, expected a whole number >= 0"),
    ([0, 1.5, 1], "row 1: position is 1.5"),
    ([0, np.nan, 1], "row 1: position is nan"),
    ([0, 1], "got 2 position values for 3 comparisons"),
    (["a", "b", "c"], "position values must be whole numbers"),
])
def test_bad_positions_name_the_row(position, message):
    with pytest.raises(InvalidComparisonsError, match=message):
        Comparisons([[0, 1, 2], [1, 2, 0], [2, 0, 1]], position=position)


@pytest.mark.parametrize("position, annotator, kwargs, message", [
    ([0, 1, -1], ["a", "b", "c"], {}, "row 2: position is -1, expected a whole number >= 0"),  # was a position "-1"
    ([0, 0.5, 1], ["a", "b", "c"], {}, "row 1: position is 0.5"),
    ([0, 1, 1], ["a", None, "c"], {}, "row 1: annotator id is missing"),  # was one more annotator, "None"
    ([0, 1, 1], [1.0, np.nan, 2.0], {}, "row 1: annotator id is missing"),
    ([0, 1, 1], ["a", "b", "c"], {"fdr": 2}, r"fdr must be in \(0, 1\), got 2"),  # was accepted: all lazy
])
def test_position_bias_checks_its_answers_as_comparisons_are_checked(position, annotator, kwargs, message):
    with pytest.raises(ValueError, match=message):
        position_bias(np.array(position), np.array(annotator, dtype=object), **kwargs)


def test_files_give_positions_where_they_say_them(tmp_path):
    odd = tmp_path / "odd.csv"
    odd.write_text("a,b,c,odd_position,subject\n0,1,2,3,s1\n3,1,0,1,s2\n")
    assert read_comparisons(odd, odd_position_base=1).position.tolist() == [2, 2, 0, 0]
    by_object = tmp_path / "odd_object.csv"
    by_object.write_text("a,b,c,odd,subject\n0,1,2,2,s1\n")
    assert read_comparisons(by_object).position is None
    salmon = tmp_path / "salmon.csv"
    salmon.write_text("puid,head,left,right,winner\nu1,0,1,2,2\nu2,3,2,1,2\nu1,4,0,3,0\n")
    c = read_comparisons(salmon)
    assert c.position.tolist() == [1, 0, 0]  # the winner's side: right, left, left
    # written back as salmon, each candidate stays on its side (the position is not a column there)
    frame = to_salmon(c)
    assert frame[["left", "right"]].to_numpy().tolist() == [[1, 2], [2, 1], [0, 3]] and "position" not in frame
    assert from_frame(frame).position.tolist() == [1, 0, 0]
    ties = tmp_path / "ties.csv"
    ties.write_text("puid,head,left,right,winner,tie\nu1,0,1,2,2,0\nu2,3,2,1,,1\n")
    assert read_comparisons(ties).position is None  # a tie is no side
    plain = tmp_path / "plain.csv"
    plain.write_text("anchor,closer,farther,worker,position\n0,1,2,w,1\n1,2,0,w,0\n")
    c = read_comparisons(plain)
    assert c.position.tolist() == [1, 0]
    out = tmp_path / "out.csv"
    write_comparisons(c, out)
    assert read_comparisons(out).position.tolist() == [1, 0]


@pytest.mark.parametrize("text, message", [
    ("anchor,closer,farther,position\n0,1,2,0\n0,1,2,-1\n", "line 3: position is not a whole number >= 0"),
    ("anchor,closer,farther,position\n0,1,2,0\n0,1,2,left\n", "line 3: position is not a whole number >= 0"),
    ("a,b,c,odd_position,position\n0,1,2,0,0\n", "column 'position': in odd-one-out answers the screen position is "
                                                 "the odd one's position"),
    ("head,left,right,winner,position\n0,1,2,1,0\n", "column 'position': in salmon answers the screen position is "
                                                     "which side"),
])
def test_bad_position_columns_are_named(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InvalidComparisonsError, match=message):
        read_comparisons(path)


def test_answer_units_are_numbered_as_numpys_unique_rows():
    rng = np.random.default_rng(0)
    for trial in range(200):
        m = int(rng.integers(1, 60))
        quads = rng.integers(0, 6, size=(m, 4))
        who = rng.integers(0, 3, size=m)
        objects = np.sort(quads, axis=1)
        objects[:, 1:][objects[:, 1:] == objects[:, :-1]] = -1
        objects = np.sort(objects, axis=1)
        rows = np.column_stack([who, objects])
        expected = np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)
        np.testing.assert_array_equal(annotator_units(quads, who), expected)
        np.testing.assert_array_equal(annotator_units(quads, np.array(list("abc"))[who]), expected)
        np.testing.assert_array_equal(annotator_units(quads, who - 2 ** 62), expected)  # negative ids
        # ids too large for one int64 key take the lexsort path: the same numbering
        big = who.astype(np.int64) * 2 ** 61
        expected = np.unique(np.column_stack([big, objects]), axis=0, return_inverse=True)[1].reshape(-1)
        np.testing.assert_array_equal(annotator_units(quads, big), expected)


def test_the_annotator_table_reports_position_pickers():
    # 12 honest annotators answer odd-one-out questions on a 1-D map; 3 lazy ones always click position 0
    rng = np.random.default_rng(5)
    n = 20
    x = rng.standard_normal(n)
    shown, odd, who = [], [], []
    triples = np.array([t for t in np.ndindex(n, n, n) if t[0] < t[1] < t[2]])
    for a in range(15):
        for t in rng.permuted(triples[rng.choice(len(triples), 60, replace=False)], axis=1):  # distinct, each shuffled
            d = np.abs(x[t][:, None] - x[t][None, :]).sum(axis=1)  # the odd one: farthest from the other two
            shown.append(t)
            odd.append(0 if a >= 12 else int(np.argmax(d)))
            who.append(f"w{a:02d}")
    c = from_odd_one_out(np.array(shown), np.array(odd), annotator=who)
    fit = RobustOrdinalEmbedding(1, random_state=0).fit(c)
    table = fit.annotators_.set_index("annotator")
    lazy = [f"w{a}" for a in (12, 13, 14)]
    assert table.loc[lazy, "position_biased"].all() and (table.loc[lazy, "top_position"] == 0).all()
    assert (table.loc[lazy, "top_position_answers"] == 60).all()
    assert table.loc[lazy, "suspect"].all()
    assert table.loc[lazy, "reason"].str.contains("picks screen position 0 in 60 of 60 answers").all()
    honest = table.drop(index=lazy)
    assert not honest["suspect"].any() and (honest["reason"] == "").all()
    assert "position_biased" in table.attrs["suspect_rule"]
    # the same test as position_bias on one position per answer
    units = pd.DataFrame({"who": who, "position": odd})
    alone = position_bias(units["position"].to_numpy(), units["who"].to_numpy()).set_index("annotator")
    np.testing.assert_allclose(table["q_position"], alone.loc[table.index, "q_position"])
    # without positions the columns are absent
    shown = np.array(shown)
    by_object = from_odd_one_out(shown, shown[np.arange(len(shown)), odd], odd_is="object", annotator=who)
    plain = annotator_reliability(RobustOrdinalEmbedding(1, random_state=0).fit(by_object))
    assert "position_biased" not in plain and "position_biased" not in plain.attrs["suspect_rule"]
