"""``random_state`` read one way everywhere: None, an integer, a ``RandomState`` (scikit-learn's habit) or a
``Generator`` (NumPy's, from ``np.random.default_rng``).

scikit-learn's ``check_random_state`` refuses a ``Generator`` with "cannot be used to seed a
numpy.random.RandomState instance"; roembed takes it, drawing from it (and so advancing it) as it draws from a
``RandomState``: a fit given the same freshly made generator twice gives the same result.
"""
from __future__ import annotations

import numbers

import numpy as np

ACCEPTED = "None, an int, a numpy RandomState or a numpy Generator"


def check_random_state_type(random_state, name: str = "random_state") -> None:
    """Raises ``ValueError`` naming ``name`` unless ``random_state`` is one of :data:`ACCEPTED`."""
    if random_state is None or isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if not 0 <= random_state < 2**32:  # NumPy's RandomState takes these seeds
            raise ValueError(f"{name} must be an integer seed from 0 to 2**32 - 1, got {random_state!r}")
        return
    raise ValueError(f"{name} must be {ACCEPTED}, got {random_state!r}")


def draw_seed(random_state) -> int | None:
    """One integer from ``random_state``: None stays None, an integer is itself, a ``RandomState`` or
    ``Generator`` gives its next draw below 2^31."""
    check_random_state_type(random_state)
    if random_state is None:
        return None
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31))
    return int(random_state)


def as_random_state(random_state) -> np.random.RandomState:
    """scikit-learn's ``check_random_state``, also taking a ``Generator`` (a ``RandomState`` seeded from its next
    draw); None, an integer and a ``RandomState`` give what ``check_random_state`` gives."""
    check_random_state_type(random_state)
    if isinstance(random_state, np.random.Generator):
        return np.random.RandomState(draw_seed(random_state))
    from sklearn.utils import check_random_state

    return check_random_state(random_state)
