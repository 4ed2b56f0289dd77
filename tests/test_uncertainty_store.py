"""``bootstrap(..., store=DIR)``: a resumed or extended run equals one uninterrupted run, bit for bit."""
import json

import joblib
import numpy as np
import pytest
from sklearn.base import clone

from roembed import RobustOrdinalEmbedding
from roembed import uncertainty
from roembed.experiments import make_synthetic
from roembed.uncertainty import StoreError, bootstrap, replicate_seeds

SEED = 3


@pytest.fixture(scope="module")
def problem():
    data = make_synthetic(n_objects=15, dim=2, n_train=400, n_validation=10, votes=(2, 4), n_annotators=5,
                          n_test=10, rate=0.2, model="spammers", random_state=0)
    # fixed settings (no self-tuning): a replicate in a tenth of a second; flags and annotators all the same
    est = RobustOrdinalEmbedding(2, loss="soe", weighting="net", refine=None, n_init=1, annotators=None,
                                 max_iter=100, random_state=0)
    full = clone(est).fit(data.train)
    return est, data.train, full, bootstrap(est, data.train, 6, fitted=full, random_state=SEED)


def assert_same(a, b):
    """Every statistic the result gives, bit for bit."""
    assert a.seeds == b.seeds
    assert np.array_equal(a.replicates, b.replicates) and np.array_equal(a.oob_errors, b.oob_errors)
    assert np.array_equal(a.stability_per_replicate, b.stability_per_replicate)
    assert np.array_equal(a.flag_counts, b.flag_counts) and np.array_equal(a.present_counts, b.present_counts)
    assert np.array_equal(a.annotator_agreement, b.annotator_agreement, equal_nan=True)
    assert a.objects().equals(b.objects()) and a.flag_frequency().equals(b.flag_frequency())


def stored(folder):
    return sorted(p.name for p in folder.iterdir())


def test_seeds_of_a_longer_run_extend_those_of_a_shorter_one():
    assert replicate_seeds(SEED, 10)[:4] == replicate_seeds(SEED, 4)
    assert replicate_seeds(np.random.RandomState(1), 10)[:4] == replicate_seeds(np.random.RandomState(1), 4)
    gen = replicate_seeds(np.random.default_rng(1), 10)  # NumPy's Generator, as a RandomState is taken
    assert gen[:4] == replicate_seeds(np.random.default_rng(1), 4) and gen != replicate_seeds(np.random.default_rng(2), 10)
    assert len(set(replicate_seeds(SEED, 100))) == 100


def test_resume_after_an_interruption_equals_an_uninterrupted_run(problem, tmp_path, monkeypatch):
    est, train, full, uninterrupted = problem
    store = tmp_path / "store"
    seeds = replicate_seeds(SEED, 6)
    real = uncertainty._replicate

    def interrupted(estimator, comparisons, units, seed, *args):
        if seed == seeds[4]:
            raise KeyboardInterrupt  # Ctrl-C during the fifth replicate
        return real(estimator, comparisons, units, seed, *args)

    monkeypatch.setattr(uncertainty, "_replicate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bootstrap(est, train, 6, fitted=full, random_state=SEED, store=store)
    # the manifest and the four finished replicates, nothing half-written
    assert stored(store) == ["manifest.json"] + [f"replicate-{i:04d}.npz" for i in range(4)]
    assert json.loads((store / "manifest.json").read_text())["seeds"] == seeds
    monkeypatch.setattr(uncertainty, "_replicate", real)
    resumed = bootstrap(est, train, 6, fitted=full, random_state=SEED, store=store)
    assert resumed.n_from_store == 4
    assert_same(resumed, uninterrupted)
    again = bootstrap(est, train, 6, fitted=full, random_state=SEED, store=store)
    assert again.n_from_store == 6
    assert_same(again, uninterrupted)


def test_more_replicates_extend_the_store_and_fewer_read_its_first(problem, tmp_path):
    est, train, full, six = problem
    store = tmp_path / "store"
    three = bootstrap(est, train, 3, fitted=full, random_state=SEED, store=store)
    assert three.n_from_store == 0 and np.array_equal(three.replicates, six.replicates[:3])
    extended = bootstrap(est, train, 6, fitted=full, random_state=SEED, store=store)
    assert extended.n_from_store == 3
    assert_same(extended, six)
    assert len(json.loads((store / "manifest.json").read_text())["seeds"]) == 6
    first = bootstrap(est, train, 2, fitted=full, random_state=SEED, store=store)
    assert first.n_from_store == 2 and np.array_equal(first.replicates, six.replicates[:2])
    assert len(json.loads((store / "manifest.json").read_text())["seeds"]) == 6  # not shrunk


def test_unreadable_replicates_and_stray_temporaries_are_recomputed(problem, tmp_path):
    est, train, full, six = problem
    store = tmp_path / "store"
    bootstrap(est, train, 6, fitted=full, random_state=SEED, store=store)
    one = store / "replicate-0001.npz"
    one.write_bytes(one.read_bytes()[:100])  # truncated by a crash of the disk, say
    (store / "replicate-0003.npz").unlink()
    (store / "replicate-0004.npz").write_text("not a replicate")
    (store / ".replicate-0005.npz.x1y2.tmp").write_bytes(b"PK\x03\x04 torn")  # a write that never finished
    resumed = bootstrap(est, train, 6, fitted=full, random_state=SEED, store=store)
    assert resumed.n_from_store == 3
    assert_same(resumed, six)
    # the bad files were replaced by whole ones: the next run reads all six
    assert bootstrap(est, train, 6, fitted=full, random_state=SEED, store=store).n_from_store == 6


def test_a_replicate_stored_under_another_seed_is_recomputed(problem, tmp_path):
    est, train, full, six = problem
    store = tmp_path / "store"
    bootstrap(est, train, 3, fitted=full, random_state=SEED, store=store)
    (store / "replicate-0002.npz").replace(store / "replicate-0003.npz")  # misplaced: seed 2's replicate at 3
    res = bootstrap(est, train, 4, fitted=full, random_state=SEED, store=store)
    assert res.n_from_store == 2 and np.array_equal(res.replicates, six.replicates[:4])


@pytest.mark.parametrize("change, field", [
    (dict(random_state=SEED + 1), "seeds"),
    (dict(unit="annotator"), "unit"),
    (dict(k=3), "k"),
    (dict(warm_start=False), "warm_start"),
    (dict(estimator="max_iter=99"), "estimator parameter max_iter"),
    (dict(comparisons="reweighted"), "comparisons"),
    (dict(fitted="another"), "reference"),
])
def test_a_store_of_another_run_is_refused_in_one_line(problem, tmp_path, change, field):
    est, train, full, _ = problem
    store = tmp_path / "store"
    bootstrap(est, train, 2, fitted=full, random_state=SEED, store=store)
    before = {name: (store / name).read_bytes() for name in stored(store)}
    kwargs = dict(estimator=est, comparisons=train, n_replicates=2, fitted=full, random_state=SEED, store=store)
    kwargs.update(change)
    if change.get("comparisons") == "reweighted":
        kwargs["comparisons"] = train.with_weight(np.where(np.arange(len(train)) == 0, 2.0, train.weight))
        kwargs["fitted"] = full  # same reference: only the data differ
    if change.get("estimator") == "max_iter=99":
        kwargs["estimator"] = clone(est).set_params(max_iter=99)
    if change.get("fitted") == "another":
        kwargs["fitted"] = clone(est).set_params(random_state=1).fit(train)
    with pytest.raises(StoreError) as info:
        bootstrap(**kwargs)
    message = str(info.value)
    assert "\n" not in message and str(store) in message and field in message, message
    assert isinstance(info.value, ValueError)
    assert {name: (store / name).read_bytes() for name in stored(store)} == before  # nothing overwritten


def test_a_start_table_is_fingerprinted_by_every_cell():
    """An estimator's ``init`` table (a warm start) decides the replicates: two tables that differ in a middle row
    print alike (pandas shows the first and last rows), and were one parameter to the store."""
    import pandas as pd

    names = [f"o{i}" for i in range(200)]
    a = pd.DataFrame({"x1": np.arange(200.0), "x2": np.zeros(200)}, index=pd.Index(names, name="name"))
    b = a.copy()
    b.loc["o100", "x2"] = 1.0
    assert repr(a) == repr(b)
    est_a, est_b = RobustOrdinalEmbedding(2, init=a), RobustOrdinalEmbedding(2, init=b)
    assert uncertainty._digest(est_a) != uncertainty._digest(est_b)
    assert uncertainty._digest(est_a) == uncertainty._digest(RobustOrdinalEmbedding(2, init=a.copy()))


def test_store_needs_a_fixed_seed_and_a_folder(problem, tmp_path, monkeypatch):
    est, train, full, _ = problem
    with pytest.raises(ValueError, match="fixed random_state"):
        bootstrap(est, train, 2, fitted=full, random_state=None, store=tmp_path / "s")
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="not a folder"):
        bootstrap(est, train, 2, fitted=full, random_state=SEED, store=tmp_path / "file")
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    (orphan / "replicate-0000.npz").write_bytes(b"")
    with pytest.raises(StoreError, match="no manifest"):
        bootstrap(est, train, 2, fitted=full, random_state=SEED, store=orphan)
    # '' was the working folder: manifest.json and replicate files written among the user's own
    monkeypatch.chdir(tmp_path)
    for bad in ("", 5):
        with pytest.raises(ValueError, match="store must be a folder path"):
            bootstrap(est, train, 2, fitted=full, random_state=SEED, store=bad)
    assert not (tmp_path / "manifest.json").exists()


class ListsOnly(joblib.parallel.ThreadingBackend):
    """A backend that cannot stream results, as joblib's multiprocessing and Ray's (without forking here)."""

    supports_return_generator = False


def test_a_backend_that_returns_lists_only_stores_in_batches(problem, tmp_path, monkeypatch):
    est, train, full, six = problem
    seeds, events = replicate_seeds(SEED, 6), []
    real_replicate, real_save = uncertainty._replicate, uncertainty.ReplicateStore.save

    def replicate(estimator, comparisons, units, seed, *args):
        events.append(("fit", seeds.index(seed)))
        return real_replicate(estimator, comparisons, units, seed, *args)

    def save(self, index, result):
        events.append(("save", index))
        real_save(self, index, result)

    monkeypatch.setattr(uncertainty, "_replicate", replicate)
    monkeypatch.setattr(uncertainty.ReplicateStore, "save", save)
    joblib.register_parallel_backend("lists-only", ListsOnly)
    with joblib.parallel_config(backend="lists-only"):
        with pytest.raises(ValueError, match="does not support"):
            joblib.Parallel(n_jobs=2, return_as="generator_unordered")
        res = bootstrap(est, train, 6, fitted=full, random_state=SEED, store=tmp_path / "store", n_jobs=2)
    assert_same(res, six)
    # batches of twice the 2 workers: the first four are stored before the fifth starts
    first_of_second = min(events.index(("fit", 4)), events.index(("fit", 5)))  # its two threads race
    assert sorted(events[:first_of_second]) == [("fit", i) for i in range(4)] + [("save", i) for i in range(4)]
    assert sorted(e for e in events if e[0] == "save") == [("save", i) for i in range(6)]
    monkeypatch.setattr(uncertainty, "_replicate", real_replicate)
    assert bootstrap(est, train, 6, fitted=full, random_state=SEED, store=tmp_path / "store").n_from_store == 6


def test_a_manifest_that_is_not_one_is_refused(problem, tmp_path):
    est, train, full, _ = problem
    store = tmp_path / "store"
    store.mkdir()
    for text in ("{torn", "[1, 2]", '{"format": 1}'):
        (store / "manifest.json").write_text(text)
        with pytest.raises(StoreError, match="manifest"):
            bootstrap(est, train, 2, fitted=full, random_state=SEED, store=store)
        assert (store / "manifest.json").read_text() == text
