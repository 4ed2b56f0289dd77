"""Round trips of every conversion, and what each format means."""
import numpy as np
import pandas as pd
import pytest

from roembed.data import (
    Comparisons, InvalidComparisonsError, SkippedRowsWarning, as_comparisons, from_cblearn, from_frame,
    from_odd_one_out, to_array, to_cblearn, to_frame, to_salmon,
)

TRIPLETS = np.array([[0, 1, 2], [3, 2, 1], [2, 0, 3], [1, 3, 0], [0, 2, 1]])
QUADS = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2], [0, 2, 1, 3]])
NAMES = ["ant", "bee", "cat", "dog"]


def _same(a: Comparisons, b: Comparisons):
    assert np.array_equal(a.quadruplets, b.quadruplets)
    assert np.allclose(a.weight, b.weight)
    assert a.n_objects == b.n_objects and a.object_names == b.object_names
    for key in ("annotator", "timestamp", "response_time"):
        va, vb = getattr(a, key), getattr(b, key)
        assert (va is None) == (vb is None) and (va is None or list(va) == list(vb)), key


def _rich(quads):
    m = len(quads)
    return Comparisons(quads, weight=np.arange(1, m + 1) / 2, annotator=[f"w{r % 2}" for r in range(m)],
                       timestamp=np.arange(m) * 10, response_time=np.linspace(0.5, 2, m), object_names=NAMES)


@pytest.mark.parametrize("array", [TRIPLETS, QUADS])
def test_plain_array_round_trip(array):
    assert np.array_equal(to_array(Comparisons(array)), array)


@pytest.mark.parametrize("array", [TRIPLETS, QUADS])
@pytest.mark.parametrize("fmt", ["list-order", "list-boolean", "list-count"])
def test_cblearn_round_trip_keeps_the_answers(array, fmt):
    c = Comparisons(array)
    out = to_cblearn(c, fmt)
    back = from_cblearn(out) if fmt == "list-order" else from_cblearn(*out, format=fmt)
    _same(back.aggregate().to_comparisons(), c.aggregate().to_comparisons())


def test_cblearn_formats_have_known_values():
    c = Comparisons(TRIPLETS[:2])  # (0,1,2) agrees with its standard query, (3,2,1) does not
    queries, answers = to_cblearn(c, "list-boolean")
    assert queries.tolist() == [[0, 1, 2], [3, 1, 2]] and answers.tolist() == [True, False]
    queries, counts = to_cblearn(c.with_weight([2, 3]), "list-count")
    assert counts.tolist() == [2, -3]
    assert len(to_cblearn(c.with_weight([2, 3]), "list-order")) == 5  # integer weights repeat rows
    # signed counts unroll to responses; False / -1 reverse the query
    back = from_cblearn([[0, 1, 2], [3, 1, 2]], [2, -1], format="list-count")
    assert back.triplets.tolist() == [[0, 1, 2], [0, 1, 2], [3, 2, 1]]
    assert from_cblearn([[0, 1, 2]], [False]).triplets.tolist() == [[0, 2, 1]]


def test_cblearn_bad_inputs():
    with pytest.raises(InvalidComparisonsError, match="row 1: list-count response 0"):
        from_cblearn([[0, 1, 2], [0, 2, 1]], [1, 0], format="list-count")
    with pytest.raises(InvalidComparisonsError, match="row 0: list-boolean response 2"):
        from_cblearn([[0, 1, 2]], [2], format="list-boolean")
    with pytest.raises(InvalidComparisonsError, match="2 responses for 1 queries"):
        from_cblearn([[0, 1, 2]], [True, False])
    with pytest.raises(InvalidComparisonsError, match="not a whole number"):
        to_cblearn(Comparisons(TRIPLETS[:1], weight=[0.5]), "list-order")


def test_cblearn_agrees_with_cblearn_itself():
    utils = pytest.importorskip("cblearn.utils")
    rng = np.random.default_rng(0)
    shared = rng.integers(0, 5, size=(400, 4))  # includes quadruplets whose pairs share an object
    shared = shared[(shared[:, 0] != shared[:, 1]) & (shared[:, 2] != shared[:, 3])
                    & ~(np.sort(shared[:, :2], 1) == np.sort(shared[:, 2:], 1)).all(1)]
    for array in (TRIPLETS, QUADS, shared):
        c = Comparisons(array)
        for fmt in ("list-boolean", "list-count"):
            theirs = utils.check_query_response(to_array(c), result_format=fmt)
            ours = to_cblearn(c, fmt)
            assert np.array_equal(theirs[0], ours[0]) and np.array_equal(theirs[1], ours[1])


class _COO:
    """What roembed reads of pydata sparse's ``COO``, the type of cblearn's ``tensor-count`` result."""

    def __init__(self, coords, data, shape):
        self.coords, self.data, self.shape = np.asarray(coords), np.asarray(data), shape
        self.ndim = len(shape)

    def __array__(self, *args, **kwargs):  # as sparse.COO: no automatic densifying
        raise RuntimeError("Cannot convert a sparse array to dense automatically.")


@pytest.mark.parametrize("sparse", [True, False])
def test_cblearn_tensor_count_is_read_sparse_or_dense(sparse):
    """cblearn's ``tensor-count`` (an n x n x n tensor of signed response counts, sparse as cblearn returns it)
    was "Cannot convert a sparse array to dense automatically" from ``fit``; its entries are ``list-count``
    responses to the queries they index (checked against cblearn's own conversion in the next test)."""
    queries, counts = np.array([[0, 1, 2], [3, 1, 2], [2, 0, 3]]), np.array([2, -1, 1])
    if sparse:
        tensor = _COO(np.column_stack([queries.T, [[1], [2], [3]]]), np.append(counts, 0), (5, 5, 5))  # + a stored 0
    else:
        tensor = np.zeros((5, 5, 5), dtype=int)
        tensor[tuple(queries.T)] = counts
    read = from_cblearn(tensor)
    assert read.n_objects == 5
    assert sorted(map(tuple, read.triplets.tolist())) == [(0, 1, 2), (0, 1, 2), (2, 0, 3), (3, 2, 1)]
    assert np.array_equal(as_comparisons(tensor).quadruplets, read.quadruplets)
    with pytest.raises(InvalidComparisonsError, match="tensor-count comparisons take no responses"):
        from_cblearn(tensor, [1, 1, 1])
    with pytest.raises(InvalidComparisonsError, match=r"an n x n x n \(or n\^4\) array, got shape \(3, 3\)"):
        from_cblearn(queries, format="tensor-count")


def test_cblearn_tensor_count_agrees_with_cblearn_itself():
    datasets = pytest.importorskip("cblearn.datasets")
    utils = pytest.importorskip("cblearn.utils")
    points = np.random.default_rng(0).normal(size=(12, 2))
    theirs = datasets.make_random_triplets(points, size=200, result_format="tensor-count", random_state=0)
    listed = from_cblearn(*utils.check_query_response(theirs, result_format="list-count"))
    assert sorted(map(tuple, from_cblearn(theirs).quadruplets.tolist())) == \
        sorted(map(tuple, listed.quadruplets.tolist()))


@pytest.mark.parametrize("array", [TRIPLETS, QUADS])
@pytest.mark.parametrize("names", [False, True])
def test_frame_round_trip_with_metadata(array, names):
    c = _rich(array)
    frame = to_frame(c, names=names)
    expected_cols = ["anchor", "closer", "farther"] if array.shape[1] == 3 else ["i", "j", "l", "k"]
    assert list(frame.columns[: len(expected_cols)]) == expected_cols
    assert {"weight", "annotator", "timestamp", "response_time"} <= set(frame.columns)
    _same(from_frame(frame, names=NAMES), c)
    if names:  # without the name list the names found in the frame are the objects, sorted
        assert from_frame(frame).object_names == tuple(NAMES)


@pytest.mark.parametrize("columns", [
    ["anchor", "closer", "farther"], ["i", "j", "k"], ["Anchor", "Near", "Far"], ["anchor", "positive", "negative"],
])
def test_frame_detects_triplet_column_names(columns):
    frame = pd.DataFrame(TRIPLETS, columns=columns)
    frame["Worker ID"] = list("aabbc")
    c = from_frame(frame)
    assert np.array_equal(c.triplets, TRIPLETS) and list(c.annotator) == list("aabbc")


def test_frames_that_cannot_be_read_by_column_name_are_named():
    frame = pd.DataFrame({"anchor": [0, 1], "closer": [1, 2], "farther": [2, 0]})
    with pytest.raises(InvalidComparisonsError, match="input: column 'anchor' appears more than once"):
        from_frame(pd.concat([frame, frame[["anchor"]]], axis=1))  # was "'DataFrame' object has no attribute 'dtype'"
    for not_a_table in (frame["anchor"], frame.to_numpy()):  # was "... has no attribute 'columns'"
        with pytest.raises(TypeError, match="from_frame takes a table with named columns"):
            from_frame(not_a_table)
    with pytest.raises(InvalidComparisonsError, match="'anchor' is the table's index, not a column: "
                                                      r"frame.reset_index\(\) makes it one"):
        from_frame(frame.set_index("anchor"))
    assert from_frame(frame.set_index("anchor").reset_index()).quadruplets.tolist() == [[0, 1, 0, 2], [1, 2, 1, 0]]


def test_frame_extra_columns_are_kept_or_mapped():
    frame = pd.DataFrame(TRIPLETS, columns=["anchor", "closer", "farther"]).assign(judge=1, notes=list("vwxyz"))
    c = from_frame(frame)
    assert sorted(c.extra) == ["judge", "notes"] and list(c.extra["notes"]) == list("vwxyz")
    assert list(c[[4, 0]].extra["notes"]) == ["z", "v"] and list(to_frame(c)["notes"]) == list("vwxyz")
    c = from_frame(frame, columns={"judge": "annotator", "notes": None})
    assert list(c.annotator) == [1] * 5 and c.extra == {}
    with pytest.raises(InvalidComparisonsError, match="found no comparison columns"):
        from_frame(pd.DataFrame({"x": [0], "y": [1], "z": [2]}))


def test_frame_names_and_invalid_rows():
    frame = pd.DataFrame({"anchor": ["ant", "bee", "ant", None], "closer": ["bee", "cat", "ant", "cat"],
                          "farther": ["cat", "emu", "dog", "bee"]})
    with pytest.raises(InvalidComparisonsError, match=r"row 1: unknown object name \(not in names\): \(bee, cat, emu\)"):
        from_frame(frame, names=NAMES)
    with pytest.warns(SkippedRowsWarning, match="skipped 3"):
        c, report = from_frame(frame, names=NAMES, on_invalid="skip", return_report=True)
    assert report.n_skipped == 3 and len(report.examples) == 3 and "row 2" in report.examples[1]
    assert c.triplets.tolist() == [[0, 1, 2]] and c.object_names == tuple(NAMES)


def test_names_given_as_a_text_or_path_are_refused():
    """``from_frame(frame, names="names.txt")`` failed with "object name '/' appears more than once in names", and
    ``Comparisons(rows, object_names="abc")`` named three objects a, b and c: a text is no sequence of names."""
    from pathlib import Path

    frame = pd.DataFrame({"anchor": [0, 1], "closer": [1, 2], "farther": [2, 0]})
    for names in ("names.txt", Path("names.txt"), "abc"):
        with pytest.raises(TypeError, match=r"names: got a text or path \('(names.txt|abc)'\); give a sequence of "
                                            r"names \(a names file: roembed.data.read_names\(path\)"):
            from_frame(frame, names=names)
    with pytest.raises(TypeError, match=r"object_names: got a text or path \('abc'\)"):
        Comparisons([[0, 1, 2]], object_names="abc")
    assert Comparisons([[0, 1, 2]], object_names=["a", "b", "c"]).object_names == ("a", "b", "c")


@pytest.mark.parametrize("index, said", [
    ([10, 12, 14, 16], "row with index 14"),  # a filtered table: frame.loc[14], not the row at position 2
    (["a", "b", "c", "d"], "row with index 'c'"),
    ([("s1", 0), ("s1", 1), ("s2", 0), ("s2", 1)], r"row with index \('s2', 0\)"),
    ([0, 1, 2, 2], "row 2"),  # repeated labels name no single row: the position instead
    ([0, 1, 2, 3], "row 2"),
])
def test_a_bad_row_of_a_table_is_named_by_its_index_label(index, said):
    frame = pd.DataFrame({"anchor": [0, 1, 2, 3], "closer": [1, 2, 2, 0], "farther": [2, 3, 0, 1]})
    frame.index = pd.MultiIndex.from_tuples(index) if isinstance(index[0], tuple) else pd.Index(index)
    with pytest.raises(InvalidComparisonsError, match=rf"^{said}: the first pair repeats an object"):
        from_frame(frame)
    with pytest.warns(SkippedRowsWarning, match=rf"e\.g\. {said}:"):
        c = from_frame(frame, on_invalid="skip")
    assert c.triplets.tolist() == [[0, 1, 2], [1, 2, 3], [3, 0, 1]]


def test_salmon_round_trip_and_winner_semantics():
    c = _rich(TRIPLETS)
    frame = to_salmon(c, names=True)
    assert {"head", "left", "right", "winner", "puid"} <= set(frame.columns)
    assert (frame["winner"] == frame["left"]).sum() + (frame["winner"] == frame["right"]).sum() == len(c)
    _same(from_frame(frame, names=NAMES), c)
    raw = pd.DataFrame({"head": [0, 0], "left": [1, 2], "right": [2, 1], "winner": [2, 2], "puid": ["u", "v"],
                        "network_latency": [0.1, 0.2], "head_filename": ["a.png", "a.png"]})
    salmon = from_frame(raw)  # bookkeeping columns of salmon exports are ignored
    assert salmon.triplets.tolist() == [[0, 2, 1], [0, 2, 1]] and list(salmon.annotator) == ["u", "v"]
    raw.loc[1, "winner"] = 0
    with pytest.raises(InvalidComparisonsError, match="row 1: winner is neither the left nor the right object"):
        from_frame(raw)
    # the answer recorded as the side chosen (was "winner is neither left nor right" on a winner of "left")
    sides = pd.DataFrame({"head": ["ant", "bee", "cat"], "left": ["bee", "cat", "left"], "right": ["cat", "ant", "bee"],
                          "winner": ["left", " Right", "left"]})  # an object named "left" is an object
    by_side = from_frame(sides)
    assert by_side.object_names == ("ant", "bee", "cat", "left")
    assert by_side.triplets.tolist() == [[0, 1, 2], [1, 0, 2], [2, 3, 1]]
    assert by_side.position.tolist() == [0, 1, 0]  # the side chosen: 0 left, 1 right


def test_odd_one_out_gives_two_triplets_per_answer():
    shown = np.array([[0, 1, 2], [3, 1, 0]])
    c = from_odd_one_out(shown, [2, 0], annotator=["p", "q"])
    assert c.triplets.tolist() == [[0, 1, 2], [1, 0, 2], [1, 0, 3], [0, 1, 3]]
    assert list(c.annotator) == ["p", "p", "q", "q"]
    by_object = from_odd_one_out(shown, [2, 3], odd_is="object")
    assert np.array_equal(by_object.triplets, c.triplets)
    frame = pd.DataFrame(shown, columns=["a", "b", "c"]).assign(odd=[2, 3], participant=["p", "q"])
    _same(from_frame(frame), c)
    frame = pd.DataFrame(shown, columns=["item1", "item2", "item3"]).assign(odd_position=[2, 0])
    assert np.array_equal(from_frame(frame).triplets, c.triplets)


def test_odd_one_out_bad_inputs_name_the_answer():
    # the objects printed as numbers (numpy 2 printed "shown (np.int64(0), ...")
    with pytest.raises(InvalidComparisonsError, match=r"row 1: the three objects shown are not distinct: "
                                                      r"shown \(0, 1, 1\), odd 0$"):
        from_odd_one_out([[0, 1, 2], [0, 1, 1]], [0, 0])
    # metadata counted per answer (was "got 2 annotator values for 4 comparisons" for one id too few)
    for key, values in (("annotator", ["p"]), ("weight", [1.0]), ("gold", [1, 0, 1])):
        with pytest.raises(InvalidComparisonsError, match=f"got {len(values)} {key} values for 2 answers"):
            from_odd_one_out([[0, 1, 2], [1, 2, 3]], [0, 1], **{key: values})
    with pytest.raises(TypeError, match="extra must be a mapping"):  # was "truth value ... is ambiguous"
        from_odd_one_out([[0, 1, 2], [1, 2, 3]], [0, 1], extra=np.ones(2))
    with pytest.raises(InvalidComparisonsError, match="row 0: the odd-one-out position is not 0, 1 or 2"):
        from_odd_one_out([[0, 1, 2]], [3])
    # positions counted from 1 (THINGS, MATLAB exports): the line says so
    frame = pd.DataFrame([[0, 1, 2], [3, 4, 5]], columns=["a", "b", "c"]).assign(odd_position=[1, 3])
    with pytest.raises(InvalidComparisonsError, match=r"row 1: the odd-one-out position is not 0, 1 or 2 "
                                                      r"\(column odd_position holds 1, 2 and 3: .*odd_position_base=1"):
        from_frame(frame)
    with pytest.raises(InvalidComparisonsError, match=r"position is not 0, 1 or 2: "):  # no hint for 0-based data
        from_frame(frame.assign(odd_position=[0, 3]))
    # ... and read with odd_position_base=1 they are the same answers as 0-based
    assert np.array_equal(from_frame(frame, odd_position_base=1).triplets,
                          from_frame(frame.assign(odd_position=[0, 2])).triplets)
    with pytest.raises(InvalidComparisonsError, match=r"row 0: the odd-one-out position is not 1, 2 or 3: "):
        from_frame(frame.assign(odd_position=[0, 3]), odd_position_base=1)
    with pytest.raises(InvalidComparisonsError, match="odd_position_base=1 but there is no odd_position column"):
        from_frame(pd.DataFrame([[0, 1, 2]], columns=["a", "b", "c"]).assign(odd=[2]), odd_position_base=1)
    with pytest.raises(ValueError, match="odd_position_base must be 0 or 1"):
        from_frame(frame, odd_position_base=2)
    # True reads as 1 (the message said "odd_position_base=True"); n_objects that is no count is refused by name
    # (it was blamed on row 0: "object index out of range (n_objects=1.5)")
    assert np.array_equal(from_frame(frame, odd_position_base=True).triplets,
                          from_frame(frame, odd_position_base=1).triplets)
    for n_objects in (1.5, True, 0, -1, "5"):
        with pytest.raises(ValueError, match=rf"n_objects must be a positive integer or None, got {n_objects!r}"):
            from_frame(frame, n_objects=n_objects)
    with pytest.raises(InvalidComparisonsError, match="row 0: the odd one is not among the objects shown"):
        from_odd_one_out([[0, 1, 2]], [5], odd_is="object")
    with pytest.raises(InvalidComparisonsError, match="row 1: weight is negative"):
        from_odd_one_out([[0, 1, 2], [1, 2, 3]], [0, 0], weight=[1, -1])


def test_as_comparisons_accepts_a_frame():
    frame = pd.DataFrame(TRIPLETS, columns=["anchor", "closer", "farther"])
    assert np.array_equal(as_comparisons(frame).triplets, TRIPLETS)
    # pd.DataFrame(array) names no columns (0, 1, 2): its rows are the array's, indices or names
    assert np.array_equal(as_comparisons(pd.DataFrame(TRIPLETS)).triplets, TRIPLETS)
    assert np.array_equal(as_comparisons(pd.DataFrame(QUADS)).quadruplets, QUADS)
    named = as_comparisons(pd.DataFrame(np.array(NAMES)[TRIPLETS]))
    assert named.object_names == tuple(NAMES) and np.array_equal(named.triplets, TRIPLETS)
    with pytest.raises(InvalidComparisonsError, match=r"unknown columns \['1', '2', '3'\]"):  # not the default
        as_comparisons(pd.DataFrame(TRIPLETS, columns=[1, 2, 3]))
    with pytest.raises(InvalidComparisonsError, match=r"unknown columns .*name the columns"):  # 5: not an array's
        as_comparisons(pd.DataFrame(np.c_[TRIPLETS, TRIPLETS[:, :2]]))


@pytest.mark.parametrize("library", ["polars", "pyarrow"])
def test_as_comparisons_reads_polars_and_pyarrow_frames_by_column_name(library):
    """np.asarray reads another library's frame by position: columns farther, closer, anchor were taken as
    anchor, closer, farther, and a salmon frame of 4 columns as quadruplets."""
    lib = pytest.importorskip(library)
    table = lib.table if library == "pyarrow" else lib.DataFrame
    reordered = {"farther": TRIPLETS[:, 2], "closer": TRIPLETS[:, 1], "anchor": TRIPLETS[:, 0]}
    assert np.array_equal(as_comparisons(table(reordered)).triplets, TRIPLETS)
    winner = np.where(np.arange(len(TRIPLETS)) % 2, TRIPLETS[:, 1], TRIPLETS[:, 2])
    salmon = {"head": TRIPLETS[:, 0], "left": TRIPLETS[:, 1], "right": TRIPLETS[:, 2], "winner": winner}
    expected = as_comparisons(pd.DataFrame(salmon))
    for frame in (table(salmon), table({**salmon, "puid": ["u", "v", "u", "w", "v"]})):
        got = from_frame(frame)
        assert np.array_equal(got.quadruplets, expected.quadruplets) and len(got) == len(TRIPLETS)
    assert as_comparisons(table({**salmon, "puid": ["u", "v", "u", "w", "v"]})).annotator is not None
    names = {key: np.array(NAMES)[column] for key, column in reordered.items()}
    named = as_comparisons(table(names))
    assert named.object_names == tuple(NAMES) and np.array_equal(named.triplets, TRIPLETS)
    with pytest.raises(InvalidComparisonsError, match="row 1: object name is missing"):  # a null, by row
        as_comparisons(table({**names, "anchor": ["ant", None, "cat", "bee", "ant"]}))
    if library == "polars":  # pl.DataFrame(array) names its columns column_0, ...: read as the array
        assert np.array_equal(as_comparisons(lib.DataFrame(TRIPLETS)).triplets, TRIPLETS)
        assert np.array_equal(as_comparisons(lib.DataFrame(QUADS)).quadruplets, QUADS)


def test_lazy_frames_are_computed_once_and_read_by_column_name():
    """A polars LazyFrame was "got shape ()"; a dask DataFrame was read column by column."""
    reordered = {"farther": TRIPLETS[:, 2], "closer": TRIPLETS[:, 1], "anchor": TRIPLETS[:, 0]}
    polars = pytest.importorskip("polars")
    assert np.array_equal(as_comparisons(polars.DataFrame(reordered).lazy()).triplets, TRIPLETS)
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(pd.DataFrame(reordered), npartitions=2)
    assert np.array_equal(as_comparisons(frame).triplets, TRIPLETS)


def test_as_comparisons_accepts_an_array_of_names_and_renumbers_by_name():
    names = np.array(["d", "b", "c", "a"])
    c = as_comparisons(names[TRIPLETS])  # numbered in sorted order, as the readers number string ids
    assert c.object_names == ("a", "b", "c", "d")
    assert [[c.object_names[o] for o in row] for row in c.triplets] == names[TRIPLETS].tolist()
    assert as_comparisons(names[TRIPLETS].astype(object)).object_names == ("a", "b", "c", "d")
    part = as_comparisons(np.array([["c", "d", "b"]]))  # numbered among its own three names ...
    assert part.triplets.tolist() == [[1, 2, 0]]
    wider = part.renumbered(("a", "b", "c", "d", "e"))  # ... and as another set numbers them
    assert wider.triplets.tolist() == [[2, 3, 1]] and wider.n_objects == 5
    with pytest.raises(InvalidComparisonsError, match="object 'd' is not among the 3 object names"):
        part.renumbered(("a", "b", "c"))
    with pytest.raises(InvalidComparisonsError, match="no object names"):
        as_comparisons(TRIPLETS).renumbered(("a", "b"))
    kept = Comparisons([[3, 7, 9], [7, 3, 9]]).take_objects([1, 3, 7, 9])  # another set's objects
    assert kept.triplets.tolist() == [[1, 2, 3], [2, 1, 3]] and kept.n_objects == 4
    assert Comparisons([[3, 7, 9]]).take_objects([3, 7, 9, 12]).n_objects == 4  # beyond this set's own range
    with pytest.raises(InvalidComparisonsError, match="object 9 is not among the 2 objects kept"):
        Comparisons([[3, 7, 9]]).take_objects([3, 7])
    with pytest.raises(ValueError, match="sorted, distinct"):
        Comparisons([[3, 7, 9]]).take_objects([9, 7, 3])
    with pytest.raises(InvalidComparisonsError, match=r"row 0: index 'x' is not an integer object index"):
        as_comparisons(np.array([[0, 1, "x"]], dtype=object))  # mixed: not names


def test_salmon_target_filenames_become_names_when_one_to_one():
    raw = pd.DataFrame({"head": [0, 1], "left": [1, 2], "right": [2, 0], "winner": [2, 2], "puid": ["u", "v"],
                        "head_filename": ["a.png", "b.png"], "left_filename": ["b.png", "c.png"],
                        "right_filename": ["c.png", "a.png"]})
    c = from_frame(raw)
    assert c.object_names == ("a.png", "b.png", "c.png") and c.triplets.tolist() == [[0, 2, 1], [1, 2, 0]]
    raw.loc[1, "right_filename"] = "z.png"  # index 0 now has two file names: no names rather than wrong ones
    with pytest.warns(UserWarning, match="not used.*0: a.png"):
        assert from_frame(raw).object_names is None


def test_object_names_map_to_indices_and_back():
    c = Comparisons(TRIPLETS, object_names=NAMES)
    assert c.object_index(["dog", "ant"]).tolist() == [3, 0]
    assert [c.object_names[o] for o in c.object_index(NAMES)] == NAMES
    with pytest.raises(InvalidComparisonsError, match="unknown object name 'yak'"):
        c.object_index("yak")
    with pytest.raises(InvalidComparisonsError, match="no object names"):
        Comparisons(TRIPLETS).object_index("ant")
