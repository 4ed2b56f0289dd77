"""Every fitted map comes centred and turned to its principal axes (``orient_embedding``): a fit is defined only
up to rotation, reflection and translation, and two seeds that found the same minimum must draw one picture."""
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import ortho_group

import roembed
from roembed.experiments import make_synthetic
from roembed.projections import orient_embedding


def _is_oriented(Y, atol=1e-8):
    """Centred, orthogonal columns of non-increasing spread, each with its longer tail on the positive side."""
    spread = (Y ** 2).sum(axis=0)
    gram = Y.T @ Y
    return (np.allclose(Y.mean(axis=0), 0, atol=atol) and np.allclose(gram - np.diag(spread), 0, atol=atol * len(Y))
            and (np.diff(spread) <= atol).all() and ((Y ** 3).sum(axis=0) > 0).all())


@pytest.mark.parametrize("p", [1, 2, 3, 10])
def test_orientation_forgets_rotation_reflection_and_translation_and_keeps_distances(p):
    rng = np.random.default_rng(p)
    X = rng.exponential(size=(40, p)) * np.linspace(3, 1, p)  # distinct spreads and skewed: axes and signs defined
    Q = ortho_group.rvs(p, random_state=p) if p > 1 else np.array([[-1.0]])
    moved = X @ Q + rng.normal(size=p) * 5
    a, b = orient_embedding(X), orient_embedding(moved)
    np.testing.assert_allclose(a, b, atol=1e-9)
    np.testing.assert_allclose(pdist(a), pdist(X), rtol=1e-10)
    assert _is_oriented(a) and not _is_oriented(moved)


def test_orientation_leaves_a_map_with_non_finite_coordinates_as_it_is():
    X = np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]])
    assert orient_embedding(X) is X


def test_two_seeds_that_find_the_same_minimum_give_one_map():
    """The default at p = 2 from two seeds that make the same choice: before, the same map in two orientations
    (rotated and reflected).  (Seeds also draw the tuning's hold-out, so other seeds may choose another refinement
    and reach another map.)"""
    data = make_synthetic(n_objects=25, dim=2, n_train=1500, n_validation=10, n_test=10, votes=(1, 1), rate=0.1,
                          model="vote", random_state=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = (roembed.RobustOrdinalEmbedding(2, random_state=seed).fit(data.train) for seed in (0, 7))
        c, d = (roembed.SOE(2, random_state=seed).fit(data.train) for seed in (0, 7))
    assert a.chosen_params_["refine"] == b.chosen_params_["refine"]
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)  # the same minimum ...
    np.testing.assert_allclose(a.embedding_, b.embedding_, atol=1e-2 * np.abs(a.embedding_).max())  # ... one picture
    np.testing.assert_allclose(c.embedding_, d.embedding_, atol=1e-2 * np.abs(c.embedding_).max())
    assert _is_oriented(a.embedding_) and _is_oriented(c.embedding_)
