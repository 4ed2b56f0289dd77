"""Bad in-memory input: each case raises InvalidComparisonsError naming the row and the problem."""
import warnings
from pathlib import Path

import numpy as np
import pytest

from roembed import read_comparisons
from roembed.data import (Comparisons, InvalidComparisonsError, SkippedRowsWarning, SkipReport, annotator_index,
                          as_comparisons)
from roembed.data.validation import RowLocator

GOOD = [[0, 1, 2], [1, 2, 0]]


@pytest.mark.parametrize("rows, kwargs, message", [
    (GOOD + [[0, 1, 5]], {"n_objects": 4}, "row 2: object index out of range (n_objects=4): (0, 1, 5)"),
    (GOOD + [[0, -1, 2]], {}, "row 2: negative object index"),
    ([[0, 1, 2, 3], [1, 1, 2, 3]], {}, "row 1: the first pair repeats an object (i == j)"),
    ([[0, 1, 2, 3], [0, 1, 2, 2]], {}, "row 1: the second pair repeats an object (l == k)"),
    ([[0, 1, 2, 3], [0, 1, 1, 0]], {}, "row 1: both pairs are the same pair ((i, j) == (l, k))"),
    (GOOD + [[0, 2, 2]], {}, "row 2: both pairs are the same pair (closer == farther): (0, 2, 2)"),
    (GOOD + [[2, 2, 0]], {}, "row 2: the first pair repeats an object (closer == anchor)"),
    (GOOD + [[2, 0, 2]], {}, "row 2: the second pair repeats an object (farther == anchor)"),
    ([[0, 1, 2], [1, 1, 2], [-1, 0, 1]], {}, "row 1: the first pair repeats an object (closer == anchor)"),  # earliest row first
    (np.array(GOOD + [[0, 1.5, 2]]), {}, "row 2: index is not an integer: (0.0, 1.5, 2.0)"),
    (np.array(GOOD + [[0, np.nan, 2]]), {}, "row 2: index is missing (NaN) or infinite"),
    (np.array(GOOD + [["0", "x", "2"]], dtype=object), {}, "row 2: index 'x' is not an integer object index"),
    (GOOD, {"weight": [1, np.nan]}, "row 1: weight is NaN"),
    (GOOD, {"weight": [-1, 1]}, "row 0: weight is negative"),
    (GOOD, {"weight": [1, np.inf]}, "row 1: weight is infinite"),
    (GOOD, {"weight": [1, 2, 3]}, "got 3 weights for 2 comparisons"),
    (GOOD, {"annotator": ["a", None]}, "row 1: annotator id is missing"),
    (GOOD, {"annotator": np.array([7, "7"], dtype=object)},
     "row 1: annotator id '7' is text, the first is 7: give the ids all as text or all as numbers"),
    (GOOD, {"annotator": ["a", "b", "c"]}, "got 3 annotator values for 2 comparisons"),
    ([], {}, "no comparisons: the input is empty"),
    (np.zeros((0, 3), dtype=int), {}, "no comparisons: the input is empty"),
    ([[0, 1, 2], [0, 1, 2, 3]], {}, "row 1: has 4 indices but row 0 has 3: triplets (3) and quadruplets (4) cannot be mixed"),
    ([[0, 1], [1, 0]], {}, "expected rows of 3 (triplets) or 4 (quadruplets) object indices"),
    ((tuple(row) for row in GOOD), {}, "object indices, got a generator: make it a list or an array"),
    ({(0, 1, 2), (1, 0, 2)}, {}, "object indices, got a set: make it a list or an array"),
    (GOOD, {"object_names": ["a", "b"], "n_objects": 3}, "n_objects=3 but 2 object names"),
    # n_objects 3.5 was cut to 3 (and 2.5 blamed on row 0, "out of range (n_objects=2)"); True read as 1
    (GOOD, {"n_objects": 3.5}, "n_objects must be a positive integer or None, got 3.5"),
    (GOOD, {"n_objects": True}, "n_objects must be a positive integer or None, got True"),
    (GOOD, {"n_objects": "3"}, "n_objects must be a positive integer or None, got '3'"),  # was Python's TypeError
    (GOOD, {"n_objects": float("nan")}, "n_objects must be a positive integer or None, got nan"),
    # a column of ids, shape (2, 1): was "got 2 annotator values for 2 comparisons"
    (GOOD, {"annotator": [["a"], ["b"]]}, "annotator: give one value per comparison, shape (2,); got shape (2, 1)"),
    (GOOD, {"timestamp": [[1], [2]]}, "timestamp: give one value per comparison, shape (2,); got shape (2, 1)"),
    (GOOD, {"extra": {"rt": [[1], [2]]}}, "extra column 'rt': give one value per comparison"),
    # copies were checked as "weight is NaN"
    (GOOD, {"copies": [1, np.nan]}, "row 1: copies is NaN"),
    (GOOD, {"copies": [1, -2]}, "row 1: copies is negative"),
    # dates were read as days since 1970 (weight 18262)
    (GOOD, {"weight": np.array(["2020-01-01"] * 2, dtype="datetime64[D]")}, "weights must be real numbers"),
    (GOOD, {"gold": np.array([1, 0], dtype="timedelta64[s]")}, "gold values must be 1 (right), 0 (wrong) or NaN"),
])
def test_bad_arrays_raise_with_the_row(rows, kwargs, message):
    with pytest.raises(InvalidComparisonsError) as info:
        Comparisons(rows, **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize("rows, message", [
    # through fit's door (as_comparisons) numpy met them first: "inhomogeneous shape", or "got a ndarray"
    ([[0, 1, 2], [1, 2]], "row 1: has 2 indices but row 0 has 3"),
    (None, "object indices, got None: make it a list or an array"),
    ({"anchor": [0], "closer": [1], "farther": [2]}, "got a dict: make it a list or an array (a dict of columns: "
                                                     "pandas.DataFrame(it))"),
    ((tuple(row) for row in GOOD), "object indices, got a generator: make it a list or an array"),
    # a file name given to fit: was "got shape ()" (str) or "got a PosixPath: make it a list" (Path)
    ("votes.csv", "got a text or path ('votes.csv'): to fit a file, read it first with roembed.read_comparisons(path)"),
    (Path("data/votes.csv"), "got a text or path ('data/votes.csv'): to fit a file, read it first with "
                             "roembed.read_comparisons(path)"),
    (7, "object indices, got one value (7)"),
])
def test_what_is_no_array_of_rows_is_named_as_given(rows, message):
    with pytest.raises(InvalidComparisonsError) as info:
        as_comparisons(rows)
    assert str(info.value).endswith(message) and "cannot be mixed" not in str(info.value)


@pytest.mark.parametrize("kwargs, message", [
    ({"object_names": 3}, "object_names: give a sequence of names, one per object; got int 3"),  # was "not iterable"
    ({"object_names": np.array([["a"], ["b"], ["c"]])}, "got shape (3, 1)"),  # named the objects "['a']"
    ({"extra": np.ones(2)}, "extra must be a mapping of column names to values, one per comparison; got ndarray"),
    ({"extra": 0}, "extra must be a mapping"),  # was accepted (falsy) and ignored
])
def test_wrong_kinds_of_metadata_are_named(kwargs, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        Comparisons(GOOD, **kwargs)


def test_annotator_ids_may_mix_integers_and_floats():
    # numbers of two types sort together: kept as given (only numbers beside text are refused)
    c = Comparisons(GOOD, annotator=np.array([1, 2.5], dtype=object))
    assert c.annotator.tolist() == [1, 2.5] and annotator_index(c)[0].tolist() == [1, 2.5]


def test_responses_and_sample_weights_are_checked():
    with pytest.raises(InvalidComparisonsError, match="row 1: response y=2 is not True/False or"):
        as_comparisons(GOOD, y=[1, 2])
    with pytest.raises(InvalidComparisonsError, match="row 0: weight is negative"):
        as_comparisons(GOOD, sample_weight=[-1, 1])
    c = as_comparisons(GOOD, y=[True, False], sample_weight=[2, 3])
    assert c.triplets.tolist() == [[0, 1, 2], [1, 0, 2]] and c.weight.tolist() == [2, 3]
    # one number weighs every row, as scikit-learn's sample_weight does (was "got 1 weights for 2 comparisons")
    assert as_comparisons(GOOD, sample_weight=2.5).weight.tolist() == [2.5, 2.5]
    assert as_comparisons(GOOD, sample_weight=np.int64(3)).weight.tolist() == [3, 3]
    with pytest.raises(InvalidComparisonsError, match="weight is negative"):
        as_comparisons(GOOD, sample_weight=-1.0)
    with pytest.raises(InvalidComparisonsError, match="got 1 weights for 2 comparisons"):
        as_comparisons(GOOD, sample_weight=True)


def test_row_locator_names_file_lines_and_expanded_rows():
    assert RowLocator()(3) == "row 3"
    assert RowLocator("f.csv", np.array([2, 5]))(1) == "f.csv line 5"
    assert RowLocator(None, np.array([0, 0, 1, 1]))(3) == "row 1"  # two rows made from input row 1
    report = SkipReport()
    report.add(np.array([0, 1]), "bad", RowLocator("f.csv", np.array([2, 3])), max_examples=1)
    assert report.n_skipped == 2 and str(report) == "skipped 2 invalid row(s) of f.csv, e.g. line 2: bad"
    # the file is named once when every example comes from it (music: five long paths on one line before)
    report = SkipReport()
    report.add(np.array([0, 1]), "bad at line 9: x", RowLocator("dir with line x/f.csv", np.array([2, 3])))
    assert str(report) == "skipped 2 invalid row(s) of dir with line x/f.csv, e.g. line 2: bad at line 9: x; " \
                          "line 3: bad at line 9: x"
    several = RowLocator(None, np.array([2, 3]), np.array(["a.csv", "b.csv"], dtype=object))
    report = SkipReport()
    report.add(np.array([0, 1]), "bad", several)
    assert str(report) == "skipped 2 invalid row(s), e.g. a.csv line 2: bad; b.csv line 3: bad"
    report = SkipReport()
    report.add(np.array([0]), "bad", RowLocator())
    assert str(report) == "skipped 1 invalid row(s), e.g. row 0: bad"


def test_skip_report_gives_the_share_of_the_rows_read(tmp_path):
    report = SkipReport(n_rows=800)
    report.add(np.array([0, 1]), "bad", RowLocator("f.csv", np.array([2, 3])), max_examples=1)
    assert str(report) == "skipped 2 invalid row(s) of f.csv (0.2% of 800 rows read), e.g. line 2: bad"
    report.n_rows = 3  # over half: the options that read the rows are the likelier fault than the rows
    assert str(report) == ("skipped 2 invalid row(s) of f.csv (66.7% of 3 rows read: over half; are the names, the "
                           "index base and the columns right?), e.g. line 2: bad")
    # read through a file: a names file too short drops most rows (was "skipped 4 invalid row(s)" alone)
    path, names = tmp_path / "votes.csv", tmp_path / "names.txt"
    path.write_text("anchor,closer,farther\n0,1,2\n1,2,3\n2,3,4\n3,4,5\n4,5,6\n0,2,1\n")
    names.write_text("a\nb\nc\n")
    with pytest.warns(SkippedRowsWarning, match=r"^skipped 4 invalid row\(s\) of \S*votes.csv \(66.7% of 6 rows "
                                                r"read: over half; are the names.*line 3: object index out of range"):
        c = read_comparisons(path, names=str(names), on_invalid="skip")
    assert len(c) == 2
    names.write_text("\n".join("abcdefg") + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_comparisons(path, names=str(names), on_invalid="skip")) == 6


def test_drop_unused_objects_renumbers_in_order_and_keeps_names():
    c = Comparisons([[4, 1, 2], [2, 4, 1]], n_objects=6, object_names=list("abcdef"), annotator=["x", "y"])
    d = c.drop_unused_objects()
    assert c.used_objects.tolist() == [1, 2, 4]
    assert d.n_objects == 3 and d.object_names == ("b", "c", "e") and d.triplets.tolist() == [[2, 0, 1], [1, 2, 0]]
    assert list(d.annotator) == ["x", "y"] and d.drop_unused_objects() is d


def test_containers_are_immutable():
    c = Comparisons(GOOD, weight=[1, 2])
    with pytest.raises(ValueError):
        c.quadruplets[0, 0] = 3
    with pytest.raises(ValueError):
        c.weight[0] = 5
    g = c.aggregate()
    with pytest.raises(ValueError):
        g.votes[0] = 0


def test_to_frame_is_a_frame_of_its_own_to_edit():
    """Before pandas 3 the frame sat on the read-only arrays: ``df.loc[0, "i"] = 3`` raised "assignment destination
    is read-only" (CI's lowest versions, pandas 2.0.3), and an edit of a writable column would have reached the
    comparisons."""
    c = Comparisons(GOOD, weight=[1, 2], annotator=["a", "b"])
    df = c.to_frame()
    for column in df.columns:
        df.loc[0, column] = df.loc[1, column]
    assert df.iloc[0].tolist() == df.iloc[1].tolist()
    assert c.to_frame().iloc[0].tolist() != c.to_frame().iloc[1].tolist()  # the comparisons are as they were


@pytest.mark.parametrize("rows, weights, pure", [
    ([[0, 1, 0, 2], [0, 2, 0, 1]], None, True),  # each comparison answered both ways once
    ([[0, 1, 0, 2], [0, 2, 0, 1], [0, 1, 0, 2]], None, False),  # 2 votes against 1
    ([[0, 1, 0, 2], [0, 2, 0, 1], [1, 2, 1, 3]], None, False),  # an edge with no opposite
    ([[0, 1, 0, 2], [0, 2, 0, 1], [1, 2, 1, 3]], [1.0, 1.0, 0.0], True),  # ... but with no weight
    ([[0, 1, 0, 2], [0, 2, 0, 1]], [0.5, 0.5 + 1e-12], True),  # equal to 1e-9
])
def test_pure_contradiction_is_found_with_and_without_the_shortcut(rows, weights, pure):
    """data_problems' check: every edge's votes equal its opposite's; an edge with votes and no opposite
    answers it without the opposing votes."""
    from roembed.data.diagnostics import _pure_contradiction, data_problems

    comparisons = Comparisons(np.array(rows), n_objects=4, weight=weights)
    graph = comparisons.aggregate()
    assert _pure_contradiction(graph) is pure
    assert any("pure contradiction" in p for p in data_problems(graph)) is pure


def margin_jacobian(X, quadruplets):
    """Rows: the gradient in ``X`` of each query's margin ``|x_l - x_k|^2 - |x_i - x_j|^2``."""
    J = np.zeros((len(quadruplets),) + X.shape)
    for row, (i, j, l, k) in enumerate(quadruplets):
        J[row, i] -= 2 * (X[i] - X[j])
        J[row, j] += 2 * (X[i] - X[j])
        J[row, l] += 2 * (X[l] - X[k])
        J[row, k] -= 2 * (X[l] - X[k])
    return J.reshape(len(quadruplets), -1)


@pytest.mark.parametrize("n, p, free", [(3, 2, 3), (4, 3, 6), (30, 1, 29), (100, 10, 945)])
def test_free_coordinates_known_answers(n, p, free):
    """A triangle has three side lengths, a tetrahedron six edges, points on a line n - 1 gaps."""
    from roembed.data.diagnostics import free_coordinates

    assert free_coordinates(n, p) == free


def test_data_problems_count_in_words():
    """Known answers for the messages' counts, singular and plural: a one-row repr, one query over three objects
    in one dimension (2 free coordinates), and three dimensions for three objects."""
    from roembed.data.diagnostics import data_problems

    assert repr(Comparisons(np.array([[0, 1, 2]]), n_objects=3)) == "Comparisons(1 triplet over 3 objects)"
    assert repr(Comparisons(np.array([[0, 1, 2, 3]] * 2), n_objects=4)) == "Comparisons(2 quadruplets over 4 objects)"
    one = Comparisons(np.array([[0, 1, 2]]), n_objects=3).aggregate()
    assert [s.split(":")[0] for s in data_problems(one, n_components=1)] == [
        "1 distinct query for 3 objects in 1 dimension"]
    assert [s for s in data_problems(one, n_components=3) if "dimensions for" in s] == [
        "3 dimensions for 3 objects with comparisons: 3 points fit in 2 dimensions, the rest are arbitrary"]


def test_objects_only_in_comparisons_of_weight_zero_are_said_to_be_free():
    """A weight 0 marks a row to leave out: an object in such rows alone counts for nothing and sat at the origin,
    like a central object, without a word (it is "in a comparison", so the unused-objects warning missed it)."""
    from roembed.data.diagnostics import data_problems

    quads = np.array([[0, 1, 2], [1, 2, 3], [2, 3, 0], [3, 0, 1], [4, 0, 1], [5, 4, 2]])
    c = Comparisons(quads, object_names=list("abcdef"), weight=[1, 1, 1, 1, 0, 0])
    problem, = [p for p in data_problems(c.aggregate()) if "weight 0" in p]
    assert problem == ("2 of 6 objects occur only in comparisons of weight 0 (e.g. e, f): those count for nothing, "
                       "so their coordinates are arbitrary")
    assert not any("weight 0" in p for p in data_problems(c.with_weight([1, 1, 1, 1, 0, 1]).aggregate()))
    assert not any("weight 0" in p for p in data_problems(Comparisons(quads).aggregate()))


def test_ids_taken_for_indices_are_named_with_what_to_do():
    """An array of ids (database numbers) read as indices: the fit would carry every index up to the largest (in a
    Python fit of 30 objects numbered up to 5,970,728 that took 10 minutes and 4.7 GB); the warning says how to fit
    the objects compared alone, and the fit of names does so.  A few unused indices get no such hint."""
    from roembed.data.diagnostics import data_problems

    ids = np.array([[5000, 7003, 9012], [7003, 5000, 20111], [9012, 20111, 5000]])
    problem, = data_problems(Comparisons(ids).aggregate())
    assert problem.startswith("20108 of 20112 objects appear in no comparison")
    assert "pass them as names, e.g. X.astype(str), or fit comparisons.drop_unused_objects()" in problem
    assert "the map holds the 4 objects compared" in problem
    assert as_comparisons(ids.astype(str)).n_objects == Comparisons(ids).drop_unused_objects().n_objects == 4
    few, = data_problems(Comparisons(np.array([[0, 1, 2], [1, 2, 3]]), n_objects=5).aggregate())
    assert few.startswith("1 of 5 objects appear in no comparison") and "pass them as names" not in few


@pytest.mark.parametrize("p", [1, 2, 3])
def test_free_coordinates_are_what_every_margin_together_fixes(p):
    """With every triplet query, the only motions that change no margin (to first order) are shifts and
    rotations: n p minus their number is free_coordinates (a change of scale moves every margin)."""
    from roembed.data.diagnostics import free_coordinates

    n = 7
    X = np.random.RandomState(p).standard_normal((n, p))
    every = [(a, b, a, c) for a in range(n) for b in range(n) for c in range(n) if len({a, b, c}) == 3 and b < c]
    rank = np.linalg.matrix_rank(margin_jacobian(X, every))
    assert rank == free_coordinates(n, p)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_fewer_queries_than_free_coordinates_are_warned(p):
    """With one query fewer than free_coordinates (m margins cannot fix more than m coordinates) data_problems
    says so, naming the counts; with exactly free_coordinates queries it says nothing."""
    from roembed.data.diagnostics import data_problems, free_coordinates

    n, rng = 8, np.random.RandomState(10 + p)
    free = free_coordinates(n, p)
    every = [(a, b, a, c) for a in range(n) for b in range(n) for c in range(n) if len({a, b, c}) == 3 and b < c]
    while True:  # the first free - 1 queries use every object (else another warning speaks first)
        chosen = [every[r] for r in rng.permutation(len(every))[:free]]
        if len(np.unique(np.array(chosen[:-1]))) == n:
            break
    for m in (free - 1, free):
        problems = data_problems(Comparisons(np.array(chosen[:m]), n_objects=n).aggregate(), n_components=p)
        loose = [s for s in problems if "distinct queries" in s]
        if m < free:
            dims = {1: "1 dimension", 2: "2 dimensions", 3: "3 dimensions"}[p]
            assert loose == [f"{m} distinct queries for {n} objects in {dims}: fewer than the {free} "
                             "coordinates that shift and rotation leave free, so the comparisons cannot pin the map "
                             "down (some changes of shape move no query's margin); use fewer dimensions or more "
                             "comparisons; a bootstrap (roembed.bootstrap, roembed fit --bootstrap) shows how "
                             "loose it is"]
        else:
            assert problems == []


@pytest.mark.parametrize("names, twins", [
    (["Dog", "cat", "dog", "DOG", "cow"], [("Dog", "dog", "DOG")]),
    # a composed and a decomposed é
    (["caf\u00e9", "tea", "cafe\u0301", "Tea"], [("caf\u00e9", "cafe\u0301"), ("tea", "Tea")]),
    (["Stra\u00dfe", "STRASSE", "street"], [("Stra\u00dfe", "STRASSE")]),  # casefold: ß is ss
    (["bat", "bat", "ball"], []),  # a name repeated exactly (THINGS' two bats) is no twin
    (["a", "b", "c"], []),
])
def test_name_twins_known_answers(names, twins):
    from roembed.data.diagnostics import name_twins

    assert name_twins(names) == twins


def test_names_differing_only_in_case_are_warned_by_the_fit():
    """A crowd export that writes "Dog" in some rows and "dog" in others gets two objects for one: the fit
    warns, naming them, and keeps them apart (no guessed merge); names distinct in every way: no such warning."""
    from roembed import SOE
    from roembed.data.diagnostics import DataWarning, data_problems

    rows = np.array([["dog", "cat", "cow"], ["Dog", "cow", "hen"], ["cat", "hen", "dog"], ["hen", "cat", "cow"]])
    with pytest.warns(DataWarning, match=r"differ only in case or Unicode form \(1 group: Dog/dog\) are separate "
                                         "objects in the map"):
        est = SOE(1, random_state=0).fit(rows)
    assert len(est.embedding_) == 5  # Dog, cat, cow, dog, hen
    graph = SOE(1, random_state=0).fit(np.char.lower(rows)).graph_
    assert not any("case" in p for p in data_problems(graph))


def test_messages_print_object_numbers_as_numbers():
    """Under numpy 2 a tuple of an array's row printed as "(np.int64(0), np.int64(1), ...)"."""
    from roembed.report.page import AxesError

    with pytest.raises(InvalidComparisonsError, match=r"row 0 is a quadruplet, not a triplet: \(0, 1, 2, 3\)$"):
        Comparisons([[0, 1, 2, 3], [0, 1, 0, 2]]).triplets
    assert str(AxesError(np.array([0, 5]), 2)).endswith("got (0, 5)")


def test_renumbering_and_stacking_name_what_does_not_fit():
    named = Comparisons([[0, 1, 2], [3, 0, 1]], object_names=["a", "b", "c", "d"])
    with pytest.raises(TypeError, match="object_names: got a text or path"):
        named.renumbered("abcd")  # was taken as four one-letter names
    with pytest.raises(InvalidComparisonsError, match="object_names name 'a' twice"):  # was pandas' InvalidIndexError
        named.renumbered(["a", "b", "c", "d", "a"])
    assert named.renumbered(["d", "c", "b", "a", "e"]).quadruplets.tolist() == [[3, 2, 3, 1], [0, 3, 0, 2]]
    with pytest.raises(TypeError, match="concat takes Comparisons; part 1 is a list"):  # was an AttributeError
        Comparisons.concat([named, [[0, 1, 2]]])
    other = Comparisons([[0, 1, 2], [3, 0, 1]], object_names=["a", "b", "c", "x"])
    with pytest.raises(InvalidComparisonsError, match="part 1 has other object names"):
        Comparisons.concat([named, other])
    with pytest.raises(InvalidComparisonsError, match="part 1 has 3 objects against 4"):
        Comparisons.concat([named, Comparisons([[0, 1, 2]])])
    with pytest.raises(InvalidComparisonsError, match="part 1 has object names where the other has none"):
        Comparisons.concat([Comparisons([[0, 1, 2], [3, 0, 1]]), named])


def test_object_names_naming_two_objects_alike_are_refused():
    """Were kept: the map had two objects of one name, and every lookup by name found the first."""
    with pytest.raises(InvalidComparisonsError, match=r"object_names name 'a' twice \(objects 0 and 2\)"):
        Comparisons([[0, 1, 2]], object_names=["a", "b", "a"])
    assert Comparisons([[0, 1, 2]], object_names=["a", "b", "A"]).object_names == ("a", "b", "A")
