"""The "auto" ridge of the robust estimator keeps its weight against the mean loss as n grows."""
import warnings

import numpy as np
import pytest

from roembed import Comparisons, RobustOrdinalEmbedding


def _fit(n, alpha="auto", loss="soe"):
    rng = np.random.default_rng(n)
    t = rng.integers(0, n, size=(15 * n, 3))  # over 6 queries a free coordinate: no ridge check (_check_ridge)
    t = t[(t[:, 0] != t[:, 1]) & (t[:, 0] != t[:, 2]) & (t[:, 1] != t[:, 2])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobustOrdinalEmbedding(2, alpha=alpha, loss=loss, max_iter=3, random_state=0, n_init=1).fit(
            Comparisons(t, n_objects=n))


@pytest.mark.parametrize("n, expected", [(60, 1e-4), (100, 1e-4), (400, 2.5e-5), (1_000, 1e-5)])
def test_auto_ridge_is_the_default_up_to_100_objects_then_falls_as_one_over_n(n, expected):
    fitted = _fit(n, loss="ste")  # the class default_alpha (SOE and t-STE have their own, scaled alike)
    assert fitted._alpha() == pytest.approx(expected, rel=1e-12)
    assert fitted.chosen_params_["alpha"] == pytest.approx(expected, rel=1e-12)
    assert _fit(n).chosen_params_["alpha"] == pytest.approx(expected * 3e-6 / 1e-4, rel=1e-12)  # SOE


def test_an_explicit_ridge_is_used_as_given():
    assert _fit(400, alpha=1e-4)._alpha() == 1e-4
    assert _fit(400, alpha=1e-4).chosen_params_["alpha"] == 1e-4
    assert RobustOrdinalEmbedding()._alpha() == RobustOrdinalEmbedding.default_alpha  # before fit: the default
