"""Data shared by the robust estimator's tests (test_robust*.py)."""
import numpy as np
import pytest

from roembed.estimators.robust_fit import STAGES, RobustProblem, RobustSettings, fit_robust
from roembed.experiments.synthetic import make_synthetic


@pytest.fixture(scope="module")
def planted():
    """30 points in 2-d, 10% of the queries answered unanimously the wrong way."""
    return make_synthetic(n_objects=30, dim=2, n_train=2000, n_validation=1000, n_test=3000, votes=(3, 5),
                          rate=0.1, model="unanimous", random_state=11)


@pytest.fixture(scope="module")
def majority():
    """40 points in 2-d, 25% of the queries with most of their 3-7 votes flipped."""
    return make_synthetic(n_objects=40, dim=2, n_train=1500, n_validation=10, n_test=3000, votes=(3, 7), rate=0.25,
                          model="majority", random_state=5)


@pytest.fixture(scope="module")
def refine_setup(majority):
    """A robust SOE fit of the majority-flip data (the start of a refinement) and its settings."""
    problem = RobustProblem.build(majority.train.aggregate(), "soe", "net")
    settings = RobustSettings(alpha=1e-4, refine=2.0, refine_alpha=1e-4, solve=dict(max_iter=1000, tol=1e-9))
    start = np.random.default_rng(0).normal(scale=0.1, size=(majority.train.n_objects, 2))
    return problem, settings, fit_robust(problem, settings, start, STAGES[:3]), majority.test
