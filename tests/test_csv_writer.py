"""roembed._csv.write_frame writes what DataFrame.to_csv(index=False) writes, byte for byte (hypothesis)."""
import io

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from roembed import _csv
from roembed._csv import write_frame

_TEXT = st.one_of(st.none(), st.text(alphabet=st.sampled_from(list('ab ,;|"\t\r\né7-\x00')), max_size=6))
_FLOAT = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e15, 1e16, -3.0, 9007199254740993.0, 1e-5, 123456.0]))
_COLUMN = st.sampled_from(["int", "uint", "float", "bool", "text", "int32", "float32", "mixed"])


def _values(kind, draw, n):
    if kind in ("int", "int32"):
        v = draw(st.lists(st.integers(-(2**63) + 1 if kind == "int" else -(2**31), 2**63 - 1 if kind == "int"
                                      else 2**31 - 1), min_size=n, max_size=n))
        return np.asarray(v, np.int64 if kind == "int" else np.int32)
    if kind == "uint":
        return np.asarray(draw(st.lists(st.integers(0, 2**64 - 1), min_size=n, max_size=n)), np.uint64)
    if kind in ("float", "float32"):
        v = np.asarray(draw(st.lists(_FLOAT, min_size=n, max_size=n)), np.float64)
        return v if kind == "float" else v.astype(np.float32)
    if kind == "bool":
        return np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    if kind == "mixed":  # not all text: left to pandas
        return np.asarray(draw(st.lists(st.one_of(st.integers(0, 9), _TEXT), min_size=n, max_size=n)), object)
    return np.asarray(draw(st.lists(_TEXT, min_size=n, max_size=n)), object)


@st.composite
def frames(draw):
    n = draw(st.integers(0, 12))
    kinds = draw(st.lists(_COLUMN, min_size=1, max_size=5))
    names = draw(st.lists(st.text(alphabet=st.sampled_from(list('xy ,"\n')), min_size=1, max_size=3),
                          min_size=len(kinds), max_size=len(kinds), unique=True))
    return pd.DataFrame({name: _values(kind, draw, n) for name, kind in zip(names, kinds)})


def _written(frame, writer, **options):
    buffer = io.StringIO(newline="")
    writer(frame, buffer, **options)
    return buffer.getvalue()


@given(frames(), st.booleans(), st.sampled_from([",", "\t", ";"]))
@settings(max_examples=300, deadline=None)
def test_written_as_pandas_writes(frame, header, sep):
    expected = _written(frame, lambda f, fh, **o: f.to_csv(fh, index=False, **o), header=header, sep=sep)
    assert _written(frame, write_frame, header=header, sep=sep) == expected


def test_blocks_join_into_one_table(monkeypatch):
    """Rows written block by block (each with its own pool of texts) read as the table written at once."""
    rng = np.random.RandomState(0)
    frame = pd.DataFrame({"edge": np.arange(1000), "votes": rng.randint(1, 4, 1000).astype(float),
                          "gamma": np.where(rng.rand(1000) < 0.3, rng.randn(1000), 0.0),
                          "annotators": rng.choice(["w1", "w2;w3", 'say "hi", then'], 1000),
                          "flagged": rng.rand(1000) < 0.2})
    monkeypatch.setattr(_csv, "BLOCK_ROWS", 7)
    text = _written(frame, write_frame)
    assert text == frame.to_csv(index=False)
    back = pd.read_csv(io.StringIO(text), keep_default_na=False, float_precision="round_trip")
    assert back["gamma"].tolist() == frame["gamma"].tolist() and back["annotators"].tolist() == frame["annotators"].tolist()


def test_a_comparison_table_is_not_left_to_pandas(monkeypatch):
    frame = pd.DataFrame({"edge": np.arange(3), "i": np.array([0, 5, 2], np.int32), "votes": [1.0, 2.0, 0.5],
                          "annotators": ["a", "b;c", None], "gamma": [0.0, -0.0, 1e-300], "flagged": [True, False, True]})
    expected = frame.to_csv(index=False)
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda *a, **k: (_ for _ in ()).throw(AssertionError("pandas")))
    assert _written(frame, write_frame) == expected
    assert expected.splitlines()[1:] == ["0,0,1.0,a,0.0,True", "1,5,2.0,b;c,-0.0,False", "2,2,0.5,,1e-300,True"]
