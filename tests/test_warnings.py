"""Every warning roembed gives is attributed to the caller's line (here: this file), whatever path it took
through the estimators' and readers' own frames (:func:`roembed._warn.warn`).  Hand-counted stack levels
had pointed into ``robust.py`` for the robust estimator's convergence, tuning and data warnings."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from roembed import Comparisons, RobustOrdinalEmbedding, read_comparisons
from roembed.data.diagnostics import DataWarning
from roembed.data.validation import SkippedRowsWarning
from roembed.estimators.registry import ESTIMATORS, estimator_class
from roembed.experiments import make_synthetic

FAST = {"robust-cv": dict(lams=(0.5,), cv=2)}


def emitted(fit) -> list:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fit()
    return record


def assert_from_here(record, category) -> None:
    assert any(issubclass(w.category, category) for w in record), [str(w.message) for w in record]
    assert {w.filename for w in record} == {__file__}, [(w.filename, w.lineno, str(w.message)) for w in record]


@pytest.fixture(scope="module")
def votes():
    return make_synthetic(n_objects=15, dim=2, n_train=300, n_validation=10, n_test=10, votes=(1, 3), rate=0.1,
                          model="spammers", n_annotators=4, random_state=1).train


@pytest.mark.parametrize("name", [n for n in ESTIMATORS if "max_iter" in estimator_class(n)().get_params()])
def test_convergence_warning_points_at_the_fit_call(name, votes):
    est = estimator_class(name)(n_components=2, max_iter=1, random_state=0, **FAST.get(name, {}))
    assert_from_here(emitted(lambda: est.fit(votes)), ConvergenceWarning)


@pytest.mark.parametrize("name", ["robust", "soe", "roe"])
def test_data_warning_points_at_the_fit_call(name):
    """Two groups of objects never compared with each other: a DataWarning from the shared base fit."""
    rng = np.random.default_rng(0)
    rows = [rng.permutation(np.arange(5) + offset)[:3] for offset in (0, 5) for _ in range(40)]
    record = emitted(lambda: estimator_class(name)(n_components=2, random_state=0).fit(Comparisons.from_triplets(rows)))
    assert any("group" in str(w.message) for w in record if issubclass(w.category, DataWarning))
    assert_from_here(record, DataWarning)


def test_tuning_and_gold_warnings_point_at_the_fit_call(votes):
    few = votes[:20]  # fewer queries than the tuning needs
    assert_from_here(emitted(lambda: RobustOrdinalEmbedding(2, random_state=0).fit(few)), UserWarning)
    plain = Comparisons(votes.quadruplets, gold=np.r_[1.0, np.full(len(votes) - 1, np.nan)])  # no annotator ids
    assert_from_here(emitted(lambda: RobustOrdinalEmbedding(2, random_state=0).fit(plain)), DataWarning)


def test_skipped_rows_warning_points_at_the_reader_call(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("i,j,k\n0,1,2\n0,1,x\n1,2,3\n")
    record = emitted(lambda: read_comparisons(path, on_invalid="skip"))
    assert_from_here(record, SkippedRowsWarning)


def test_warnings_of_several_fits_are_counted_by_kind():
    from roembed._warn import warn_counted

    fits = [(1, ["A: 3 of 20 starts", "B: slow"]), (1, ["A: 5 of 20 starts"]), (2, ["B: slow", "B: slow"]), (3, [])]
    with pytest.warns(UserWarning) as record:
        warn_counted(fits, "fits", label="p")
    # messages that differ only in their numbers are one kind, quoted by the first; each fit counts once
    assert [str(w.message) for w in record] == ["2 of 4 fits (p 1), e.g.: A: 3 of 20 starts",
                                                "2 of 4 fits (p 1, 2): B: slow"]
    with pytest.warns(UserWarning, match=r"^1 of 2 runs: B: slow$"):
        warn_counted([(None, ["B: slow"]), (None, [])], "runs")


def test_messages_differing_only_in_numbers_and_examples_are_one_kind():
    from roembed._warn import message_kinds

    fits = [("a", ["6 of 400 objects appear in no comparison (e.g. cure, joe): arbitrary", "slow"]),
            ("b", ["5 of 400 objects appear in no comparison (e.g. luniz): arbitrary"]),
            ("c", ["5 of 400 objects appear in no comparison (e.g. luniz): arbitrary", "2 groups (sizes 3, 1)"])]
    assert message_kinds(fits) == [
        ("6 of 400 objects appear in no comparison (e.g. cure, joe): arbitrary", {0: "a", 1: "b", 2: "c"}, True),
        ("slow", {0: "a"}, False), ("2 groups (sizes 3, 1)", {2: "c"}, False)]  # most frequent first, then as seen

