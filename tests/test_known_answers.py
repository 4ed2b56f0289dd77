"""Known-answer (gold) questions marked in the input: read, kept with their responses, used by the default fit."""
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from roembed import RobustOrdinalEmbedding
from roembed.cli import main
from roembed.data import Comparisons, InvalidComparisonsError, as_comparisons, read_comparisons, write_comparisons
from roembed.data.diagnostics import DataWarning


def test_the_reader_reads_every_spelling_of_a_mark(tmp_path):
    values = ["1", "yes", "right", "Correct", "TRUE", "0", "no", "wrong", "incorrect", "", "1.0", "0.0"]
    rows = [f"{r % 5},{(r + 1) % 5},{(r + 2) % 5},w{r % 3},{v}" for r, v in enumerate(values)]
    path = tmp_path / "v.csv"
    path.write_text("anchor,closer,farther,worker,gold_correct\n" + "\n".join(rows) + "\n")
    C = read_comparisons(path)
    expected = [1, 1, 1, 1, 1, 0, 0, 0, 0, np.nan, 1, 0]
    np.testing.assert_array_equal(C.gold, expected)
    assert "gold_correct" not in C.extra and "with gold answers" in repr(C)
    # written and read back: the same marks, the empty ones empty
    back = read_comparisons(write_comparisons(C, tmp_path / "w.csv"))
    np.testing.assert_array_equal(back.gold, expected)
    assert ",gold" in (tmp_path / "w.csv").read_text().splitlines()[0]


def test_json_and_parquet_keep_the_marks(tmp_path):
    path = tmp_path / "v.json"
    path.write_text('[{"anchor": 0, "closer": 1, "farther": 2, "worker": "a", "gold": true},'
                    ' {"anchor": 1, "closer": 2, "farther": 0, "worker": "b", "gold": null},'
                    ' {"anchor": 2, "closer": 0, "farther": 1, "worker": "b", "gold": false}]')
    C = read_comparisons(path)
    np.testing.assert_array_equal(C.gold, [1, np.nan, 0])
    pytest.importorskip("pyarrow")
    np.testing.assert_array_equal(read_comparisons(write_comparisons(C, tmp_path / "v.parquet")).gold, C.gold)


def test_an_odd_one_out_mark_goes_to_both_triplets(tmp_path):
    path = tmp_path / "o.csv"
    path.write_text("a,b,c,odd,subject,gold\n0,1,2,2,s,1\n1,2,3,1,s,\n0,2,3,0,t,0\n")
    C = read_comparisons(path)
    np.testing.assert_array_equal(C.gold, [1, 1, np.nan, np.nan, 0, 0])


def test_marks_follow_their_responses():
    C = Comparisons([[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 2, 1]], gold=[1, np.nan, 0, True])
    np.testing.assert_array_equal(C[[2, 0]].gold, [0, 1])
    np.testing.assert_array_equal(Comparisons.concat([C, C[:1]]).gold, [1, np.nan, 0, 1, 1])
    # a reversed answer to a known question is right where it was wrong
    np.testing.assert_array_equal(C.flipped([0, 1, 2]).gold, [0, np.nan, 1, 1])
    # cblearn's y only says how a row is written: the answers and their marks stay
    written = as_comparisons(C, y=[True, False, True, True])
    np.testing.assert_array_equal(written.quadruplets[1], [1, 0, 1, 2])
    np.testing.assert_array_equal(written.gold, C.gold)
    with pytest.raises(InvalidComparisonsError, match="row 1: gold is 2, expected 1 \\(right\\), 0 \\(wrong\\)"):
        C.with_gold([1, 2, 0, 1])
    with pytest.raises(InvalidComparisonsError, match="got 2 gold values for 4 comparisons"):
        C.with_gold([1, 0])


def crowd_with_known_answers(seed=0):
    """30 honest annotators (40 answers, 10% slips) and 8 spammers with 8 random answers each; a quarter of the
    honest and half of the spammers' answers are to known-answer questions."""
    rng = np.random.default_rng(seed)
    n = 20
    X = rng.standard_normal((n, 2))
    rows, who, gold = [], [], []

    def answers(k, truthful):
        t = rng.integers(0, n, size=(3 * k, 3))
        t = t[(t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2])][:k]
        right = np.linalg.norm(X[t[:, 0]] - X[t[:, 1]], axis=1) < np.linalg.norm(X[t[:, 0]] - X[t[:, 2]], axis=1)
        says = np.where(truthful, right, ~right)
        return np.where(says[:, None], t, t[:, [0, 2, 1]]), says == right

    for name, count, k, p_true, p_gold in (("h", 30, 40, 0.9, 0.25), ("s", 8, 8, 0.5, 0.5)):
        for a in range(count):
            q, right = answers(k, rng.random(k) < p_true)
            rows.append(q)
            who += [f"{name}{a}"] * k
            gold.append(np.where(rng.random(k) < p_gold, right.astype(float), np.nan))
    return Comparisons(np.concatenate(rows), n_objects=n, annotator=who, gold=np.concatenate(gold))


def fit_quietly(C, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustOrdinalEmbedding(2, random_state=0).fit(C, **kwargs)


def test_marks_in_the_data_anchor_the_spammers():
    C = crowd_with_known_answers()
    plain = Comparisons(C.quadruplets, n_objects=C.n_objects, annotator=C.annotator)
    marked, unmarked = fit_quietly(C), fit_quietly(plain)
    spammers = [f"s{a}" for a in range(8)]
    honest = [f"h{a}" for a in range(30)]
    with_marks = marked.annotator_types_.loc[spammers, "follows"].mean()
    without = unmarked.annotator_types_.loc[spammers, "follows"].mean()
    assert with_marks < 0.5 and with_marks < without - 0.2, (with_marks, without)
    assert marked.annotator_types_.loc[honest, "follows"].min() > 0.95
    table = marked.annotators_.set_index("annotator")
    assert table.loc[spammers, "suspect"].sum() > unmarked.annotators_.set_index("annotator").loc[spammers,
                                                                                                   "suspect"].sum()
    assert not table.loc[honest, "suspect"].any()
    # the table counts each annotator's known answers and says so where it flags one
    right = pd.Series(C.gold == 1).groupby(np.asarray(C.annotator)).sum()
    np.testing.assert_array_equal(table.loc[right.index, "gold_right"], right.to_numpy())
    flagged = table[table["suspect"] & (table["gold_answers"] > 0)]
    assert len(flagged) and all(f"known-answer responses: {r.gold_right} of {r.gold_answers} right" in r.reason
                                for r in flagged.itertuples())
    assert marked.chosen_params_["gold_answers"] == np.count_nonzero(~np.isnan(C.gold))
    # marks passed to fit are the same as marks carried by the data
    explicit = fit_quietly(plain, gold=C.gold)
    np.testing.assert_array_equal(explicit.embedding_, marked.embedding_)
    np.testing.assert_array_equal(explicit.annotator_types_, marked.annotator_types_)


def test_marks_passed_to_fit_reach_the_fit_of_a_chosen_dimension():
    C = crowd_with_known_answers()
    plain = Comparisons(C.quadruplets, n_objects=C.n_objects, annotator=C.annotator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = RobustOrdinalEmbedding("auto", random_state=0).fit(plain, gold=C.gold)
    assert est.chosen_params_["gold_answers"] == np.count_nonzero(~np.isnan(C.gold))
    assert est.chosen_params_["gold_error"] is not None


def test_marks_that_cannot_be_used_are_not_dropped_silently():
    C = crowd_with_known_answers()
    no_ids = Comparisons(C.quadruplets, n_objects=C.n_objects, gold=C.gold)
    with pytest.warns(DataWarning, match="known-answer \\(gold\\) marks are not used: the comparisons have no "
                                         "annotator ids"):
        RobustOrdinalEmbedding(2, random_state=0, max_iter=30).fit(no_ids)
    with pytest.warns(DataWarning, match="not used: annotators=None"):
        RobustOrdinalEmbedding(2, random_state=0, max_iter=30, annotators=None).fit(C)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # all marks empty: nothing to say
        unmarked = C.with_gold(np.full(len(C), np.nan))
        est = RobustOrdinalEmbedding(2, random_state=0, max_iter=30, annotators=None).fit(unmarked)
    assert est.chosen_params_["gold_answers"] == 0


def test_roembed_fit_reads_a_gold_column(tmp_path):
    C = crowd_with_known_answers()
    path = write_comparisons(C, tmp_path / "crowd.csv")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["fit", str(path), "--dim", "2", "--out", str(out)])
    assert result.exit_code == 0, (result.output, result.exception)
    n_marked = int(np.count_nonzero(~np.isnan(C.gold)))
    assert f"annotator types on ({n_marked} responses to known-answer questions anchor them" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["files"] == sorted(p.name for p in out.iterdir())
    assert summary["chosen"]["gold_answers"] == n_marked
    table = pd.read_csv(out / "annotators.csv")
    assert table["gold_answers"].sum() == n_marked
    assert table.loc[table["annotator"].str.startswith("s"), "suspect"].sum() >= 4


def test_the_slip_rate_on_known_answers_is_estimated():
    """Known answers that honest annotators miss 30% of the time: a fixed 5% slip rate calls some of them random;
    the estimated rate comes out near 0.3 and keeps every one."""
    from roembed.annotator_model import fit_annotator_types
    from roembed.losses import TStudent

    C = crowd_with_known_answers(seed=1)
    rng = np.random.default_rng(2)
    honest = np.char.startswith(np.asarray(C.annotator, dtype=str), "h")
    marked = ~np.isnan(C.gold)
    gold = np.where(marked & honest, (rng.random(len(C)) < 0.7).astype(float), C.gold)  # disputed known answers
    graph = C.aggregate()
    X = fit_quietly(C).embedding_
    runs = {eps: fit_annotator_types(graph, X, TStudent(alpha=1.0), gold=gold, gold_error=eps)
            for eps in (0.05, "auto")}
    follows = {eps: r.posterior["follows"] for eps, r in runs.items()}
    names = np.unique(np.asarray(C.annotator))
    h = [a for a in names if a.startswith("h")]
    s = [a for a in names if a.startswith("s")]
    assert runs["auto"].gold_error == pytest.approx(0.3, abs=0.06)
    assert runs[0.05].gold_error == 0.05
    assert (follows[0.05][h] < 0.5).sum() >= 2 and follows["auto"][h].min() > 0.99
    assert follows[0.05][s].mean() < 0.2  # (the price: such weak known answers say less about the spammers)
    assert np.all(np.diff(runs["auto"].objective_history) <= 1e-12)  # the estimate keeps J monotone
    with pytest.raises(ValueError, match="gold_error must be 'auto' or in \\(0, 0.5\\)"):
        fit_annotator_types(graph, X, TStudent(alpha=1.0), gold=gold, gold_error=0.7)


def test_the_two_triplets_of_an_odd_one_out_answer_weigh_as_one_known_answer():
    from roembed.annotator_model import gold_unit_share

    quads = np.array([[0, 1, 0, 2], [1, 0, 1, 2], [0, 1, 0, 3], [3, 4, 3, 5], [0, 1, 0, 2]])
    who = np.array([0, 0, 0, 0, 1])
    gold = np.array([True, True, True, False, True])
    np.testing.assert_array_equal(gold_unit_share(quads, who, gold), [0.5, 0.5, 1.0, 0.0, 1.0])
