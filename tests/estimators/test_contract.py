"""One fitted-attribute contract for every registered estimator, and scikit-learn's
estimator checks through a triplet adapter (as cblearn does: the checks feed feature
matrices, which the adapter turns into triplets answered by Euclidean distance)."""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from roembed import Comparisons
from roembed.estimators.registry import ESTIMATORS, FITTED, FITTED_ROBUST, ROBUST, estimator_class
from roembed.experiments import make_synthetic

FAST = {"robust-cv": dict(lams=(0.5, 2.0), cv=2)}


def build(name, **params):
    return estimator_class(name)(**{"n_components": 2, "random_state": 0, **FAST.get(name, {}), **params})


@pytest.fixture(scope="module")
def votes():
    return make_synthetic(n_objects=15, dim=2, n_train=300, n_validation=10, n_test=10, votes=(1, 3), rate=0.1,
                          model="spammers", n_annotators=4, random_state=1).train


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_fitted_attribute_contract(name, votes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = build(name).fit(votes)
    for attr in FITTED:
        assert hasattr(est, attr), f"{name} lacks {attr}"
    assert est.embedding_.shape == (15, 2) and np.isfinite(est.embedding_).all()
    X = est.embedding_  # centred, on its principal axes (most spread first), the longer tail on the positive side
    scale = (X ** 2).sum()
    assert np.abs(X.mean(axis=0)).max() < 1e-8 * np.sqrt(scale) and abs(X[:, 0] @ X[:, 1]) < 1e-8 * scale
    assert (X[:, 0] ** 2).sum() >= (X[:, 1] ** 2).sum() and ((X ** 3).sum(axis=0) > 0).all()
    assert est.transform() is est.transform(votes) is est.embedding_  # X is ignored, so it may be left out
    assert isinstance(est.n_iter_, (int, np.integer)) and est.n_iter_ >= 1
    assert isinstance(est.objective_, float) and np.isfinite(est.objective_)
    assert est.history_.ndim == 1 and len(est.history_) >= 1 and np.isfinite(est.history_).all()
    if name in ROBUST:
        for attr in FITTED_ROBUST:
            assert hasattr(est, attr), f"{name} lacks {attr}"
        n_edges = len(est.graph_)
        assert est.gamma_.shape == (n_edges,) and est.outlier_mask_.shape == (n_edges,)
        assert est.outlier_mask_.dtype == bool and isinstance(est.outliers_, pd.DataFrame)
        assert len(est.outliers_) == est.outlier_mask_.sum()
        table = est.annotators_
        assert isinstance(table, pd.DataFrame) and set(table["annotator"]) == set(votes.annotator)
    else:
        assert not hasattr(est, "gamma_") and not hasattr(est, "outlier_mask_")


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_set_output_gives_the_coordinates_as_a_table_of_the_objects(name, votes):
    """scikit-learn's ``set_output`` (and its global ``transform_output``): the coordinates as a table with one
    row per object (indexed by name or number, not by the comparisons' rows), columns ``x1..xp`` as in
    ``embedding.csv``; a copy (editing it leaves the fit alone); ``"default"`` the array itself again."""
    import sklearn
    from sklearn.base import clone

    polars = pytest.importorskip("polars")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = build(name).set_output(transform="pandas")
        table = est.fit_transform(votes)
    assert isinstance(table, pd.DataFrame) and list(table.columns) == ["x1", "x2"]
    assert table.index.name == "object" and list(table.index) == list(range(15))
    np.testing.assert_array_equal(table.to_numpy(), est.embedding_)
    before = est.embedding_.copy()
    table.iloc[0, 0] = 1e9
    np.testing.assert_array_equal(est.embedding_, before)
    assert list(est.get_feature_names_out()) == ["x1", "x2"]
    assert clone(est)._sklearn_output_config == {"transform": "pandas"}
    assert est.set_output() is est and isinstance(est.transform(), pd.DataFrame)  # None: unchanged
    frame = est.set_output(transform="polars").transform()
    assert isinstance(frame, polars.DataFrame) and frame.columns == ["x1", "x2"]
    np.testing.assert_array_equal(frame.to_numpy(), est.embedding_)
    assert est.set_output(transform="default").transform() is est.embedding_
    with pytest.raises(ValueError, match=r"set_output\(transform=...\) must be one of 'default', 'pandas', "
                                         r"'polars' or None, got 'numpy'"):
        est.set_output(transform="numpy")
    plain = clone(est).set_params(random_state=0)
    del plain._sklearn_output_config
    with warnings.catch_warnings(), sklearn.config_context(transform_output="pandas"):
        warnings.simplefilter("ignore")
        assert isinstance(plain.fit(votes).transform(), pd.DataFrame)
    assert isinstance(plain.transform(), np.ndarray)


def test_set_output_indexes_named_objects_by_name(votes):
    names = [f"item{o:02d}" for o in range(15)]
    named = Comparisons(votes.quadruplets, annotator=votes.annotator, object_names=names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = build("soe").set_output(transform="pandas").fit_transform(named)
    assert table.index.name == "name" and list(table.index) == names


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_numpy_generator_seeds_a_fit_as_an_int_does(name, votes):
    """``random_state=np.random.default_rng(s)`` (NumPy's own habit, which scikit-learn's ``check_random_state``
    refuses): two fresh generators of one seed give one map, another seed another; a value of no accepted type
    is refused in one line naming random_state."""
    def fit(random_state):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build(name, random_state=random_state).fit(votes).embedding_
    first = fit(np.random.default_rng(5))
    np.testing.assert_array_equal(first, fit(np.random.default_rng(5)))
    assert not np.allclose(first, fit(np.random.default_rng(6)))
    for bad in ("0", 1.5, True):
        with pytest.raises(ValueError, match="random_state must be None, an int, a numpy RandomState or a numpy "
                                             "Generator, got"):
            build(name, random_state=bad).fit(votes)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_an_unfitted_estimator_says_so(name):
    """scikit-learn's NotFittedError (not a bare AttributeError naming ``embedding_``) from each method."""
    est, triplets = build(name), np.array([[0, 1, 2], [1, 2, 0]])
    for call in (lambda: est.score(triplets), lambda: est.predict(triplets), lambda: est.transform(triplets),
                 lambda: est.decision_function(triplets)):
        with pytest.raises(NotFittedError, match=f"This {type(est).__name__} instance is not fitted yet"):
            call()


@pytest.mark.parametrize("name", ["robust", "soe"])
def test_a_score_with_every_weight_zero_is_refused(name):
    """It was NaN, silently (0 / 0); one zero among others still scores the rest."""
    triplets = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1], [3, 0, 1], [0, 3, 2]] * 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = build(name).fit(triplets)
    with pytest.raises(ValueError, match="every comparison's weight is zero"):
        est.score(triplets, sample_weight=np.zeros(len(triplets)))
    weight = np.zeros(len(triplets))
    weight[0] = 1
    assert est.score(triplets, sample_weight=weight) == est.score(triplets[:1])


@pytest.mark.parametrize("name", ["robust", "soe"])
def test_named_objects_are_scored_by_name_not_by_position(name):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    queries = np.array([rng.choice(12, 3, replace=False) for _ in range(400)])
    closer = ((X[queries[:, 0]] - X[queries[:, 1]]) ** 2).sum(1) < ((X[queries[:, 0]] - X[queries[:, 2]]) ** 2).sum(1)
    triplets = np.where(closer[:, None], queries, queries[:, [0, 2, 1]])
    names = np.array([f"item{o:02d}" for o in range(12)])
    frame = pd.DataFrame(names[triplets], columns=["anchor", "closer", "farther"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = build(name).fit(frame)
    later = (triplets >= 4).all(axis=1)  # a test set without items 0-3: its own numbering would shift by 4
    by_index = est.score(triplets[later])
    assert by_index > 0.9
    assert est.score(frame[later]) == by_index and est.score(names[triplets[later]]) == by_index
    assert np.array_equal(est.predict(names[triplets[later]]), est.predict(triplets[later]))
    with pytest.raises(Exception, match="'item99' is not among the 12 object names"):
        est.score(np.array([["item01", "item02", "item99"]]))
    plain = build(name).fit(triplets)
    with pytest.raises(Exception, match="fitted on object indices"):
        plain.score(frame)


@pytest.mark.parametrize("name", ["robust", "soe", "roe"])
def test_comparisons_of_an_object_the_fit_never_saw_are_scored_with_a_warning(name):
    """Object 7's every comparison left out of the fit: its coordinates are the start's, so its comparisons
    count in a score (and get a prediction) without meaning; a DataWarning counts them, and only them."""
    from roembed.data.diagnostics import DataWarning

    rng = np.random.default_rng(4)
    X = rng.normal(size=(10, 2))
    queries = np.array([rng.choice(10, 3, replace=False) for _ in range(300)])
    closer = ((X[queries[:, 0]] - X[queries[:, 1]]) ** 2).sum(1) < ((X[queries[:, 0]] - X[queries[:, 2]]) ** 2).sum(1)
    triplets = np.where(closer[:, None], queries, queries[:, [0, 2, 1]])
    has_7 = (triplets == 7).any(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fit's own warning about object 7
        est = build(name).fit(Comparisons.from_triplets(triplets[~has_7], n_objects=10))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none where every object was fitted
        est.score(triplets[~has_7]), est.predict(triplets[~has_7])
    message = rf"^{has_7.sum()} of 300 comparisons scored have an object the fit saw in no comparison \(the first: 7\)"
    with pytest.warns(DataWarning, match=message) as record:
        score = est.score(triplets)
    assert len(record) == 1 and 0 < score < 1
    with pytest.warns(DataWarning, match=r"^1 of 2 comparisons predicted have an object .* \(the first: 7\)"):
        est.predict(np.array([triplets[~has_7][0], triplets[has_7][0]]))
    names = [f"o{o}" for o in range(10)]  # names given with the indices: the fit knows 'o7', unseen
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named = build(name).fit(Comparisons.from_triplets(triplets[~has_7], object_names=names))
    with pytest.warns(DataWarning, match=r"\(the first: 'o7'\)"):
        named.score(Comparisons.from_triplets(triplets, object_names=names))


# -- scikit-learn's checks through a triplet adapter -----------------------------------------
def features_to_triplets(X, n_objects=None):
    """A feature matrix (n points) -> 10 n triplets among its rows (the first ``n_objects``),
    answered by Euclidean distance, as Comparisons over all rows."""
    if isinstance(X, Comparisons):  # already converted (predict calls decision_function)
        return X
    X = np.asarray(X)
    if np.iscomplexobj(X):
        raise ValueError("Complex data not supported")
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-d array, got {X.ndim}-d")
    n = len(X) if n_objects is None else min(len(X), n_objects)
    if n < 3:
        raise ValueError(f"need at least 3 samples to form triplets, got {n}")
    rng = np.random.default_rng(0)
    t = np.stack([rng.choice(n, 3, replace=False) for _ in range(10 * n)])
    d = ((X[t[:, 0]] - X[t[:, 1]]) ** 2).sum(1) - ((X[t[:, 0]] - X[t[:, 2]]) ** 2).sum(1)
    return Comparisons(np.where((d <= 0)[:, None], t, t[:, [0, 2, 1]]), n_objects=n_objects or len(X))


def adapted(name):
    """The registered estimator with fit/predict/score taking feature matrices (their rows are the objects)."""
    cls = estimator_class(name)

    class TripletAdapted(cls):
        def fit(self, X, y=None, sample_weight=None):
            return super().fit(features_to_triplets(X))

        def fit_transform(self, X, y=None, sample_weight=None):
            return self.fit(X).embedding_

        def predict(self, X):
            return super().predict(features_to_triplets(X, getattr(self, "n_objects_", None)))

        def decision_function(self, X):
            return super().decision_function(features_to_triplets(X, getattr(self, "n_objects_", None)))

        def score(self, X, y=None, sample_weight=None):
            return super().score(features_to_triplets(X, getattr(self, "n_objects_", None)))

    TripletAdapted.__name__ = TripletAdapted.__qualname__ = cls.__name__
    return TripletAdapted(**{"n_components": 2, "random_state": 0, **FAST.get(name, {})})


# Checks that cannot hold for comparison input (cblearn skips the same kinds):
NOT_FOR_COMPARISONS = {
    "check_estimators_nan_inf": "features are only used to answer triplets",
    "check_estimator_sparse_array": "comparisons are not a sparse feature matrix",
    "check_estimator_sparse_matrix": "comparisons are not a sparse feature matrix",
    "check_estimator_sparse_data": "comparisons are not a sparse feature matrix",
    "check_estimator_sparse_tag": "comparisons are not a sparse feature matrix",
    "check_n_features_in": "the input has no features: n_features_in_ means nothing",
    "check_n_features_in_after_fitting": "the input has no features",
    "check_fit2d_1sample": "one object forms no triplet (refused with its own message)",
    "check_fit2d_1feature": "features are only used to answer triplets",
    "check_fit2d_predict1d": "a query is a row of indices, not a sample",
    "check_methods_subset_invariance": "an embedding is of all objects together, not per sample",
    "check_methods_sample_order_invariance": "an embedding is of all objects together, not per sample",
    "check_transformer_general": "transform returns the fitted embedding of the objects",
    "check_transformer_data_not_an_array": "transform returns the fitted embedding of the objects",
    "check_transformer_preserve_dtypes": "the embedding is float64 whatever the comparisons' dtype",
    "check_fit_check_is_fitted": "the adapter refits on sampled triplets",
    "check_estimators_empty_data_messages": "empty comparisons are refused with roembed's own message",
    "check_pipeline_consistency": "a pipeline would transform the features, not comparisons",
    "check_dict_unchanged": "predict takes triplets, not samples",
    "check_dont_overwrite_parameters": "the adapter subclass is not the estimator",
    "check_estimators_pickle": "the adapter class is local to the test",
    "check_readonly_memmap_input": "the adapter copies the input into triplets",
    "check_f_contiguous_array_estimator": "the adapter copies the input into triplets",
    "check_estimators_overwrite_params": "the adapter subclass is not the estimator",
    "check_positive_only_tag_during_fit": "features are only used to answer triplets",
    "check_sample_weights_shape": "weights are per comparison; the adapter's samples are objects",
    "check_sample_weight_equivalence_on_dense_data": "weights are per comparison, not per object",
    "check_sample_weights_invariance": "weights are per comparison, not per object (scikit-learn < 1.6's name)",
    "check_all_zero_sample_weights_error": "weights are per comparison, not per object",
}
SKLEARN_CHECKED = [n for n in ESTIMATORS if n != "robust-cv"]  # robust-cv: robust's checks, times a grid


@parametrize_with_checks([adapted(name) for name in SKLEARN_CHECKED])
def test_scikit_learn_checks(estimator, check):
    name = getattr(check, "func", check).__name__
    if name in NOT_FOR_COMPARISONS:
        pytest.skip(NOT_FOR_COMPARISONS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
