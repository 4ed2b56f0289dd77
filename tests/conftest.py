"""Puts this folder on ``sys.path`` (pytest's default import mode does so for a conftest's
folder), so test modules in sub-folders share helpers such as :mod:`cli_testkit`."""

import pytest


@pytest.fixture(scope="session")
def underdetermined():
    """40 points in 2-d, 70 queries with 2-4 votes each: fewer than the 77 free coordinates (the self-tuning
    default fits CKL without tuning)."""
    from roembed.experiments.synthetic import make_synthetic

    return make_synthetic(n_objects=40, dim=2, n_train=70, n_validation=10, n_test=10, votes=(2, 4), rate=0.1,
                          model="vote", random_state=2)
