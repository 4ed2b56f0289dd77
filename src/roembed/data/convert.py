"""Conversions between :class:`Comparisons` and other comparison formats."""
from __future__ import annotations

import numpy as np

from .comparisons import Comparisons
from .validation import InvalidComparisonsError, RowLocator, index_array


def _first(mask) -> int:
    return int(np.flatnonzero(mask)[0])


def from_odd_one_out(
    shown, odd, *, odd_is: str = "position", annotator=None, weight=None, timestamp=None,
    response_time=None, n_objects=None, object_names=None, where: RowLocator | None = None,
) -> Comparisons:
    """Odd-one-out answers to triplets: two triplets per answer.

    ``shown`` is (m, 3): the objects shown; ``odd`` is (m,): the 0-based position
    (``odd_is="position"``) or the object index (``odd_is="object"``) of the odd one.
    With ``a``, ``b`` the other two, the answer says d(a, b) < d(a, odd) and
    d(b, a) < d(b, odd): rows ``2r`` and ``2r + 1`` are ``(a, b, odd)`` and ``(b, a, odd)``,
    each with answer ``r``'s metadata.
    """
    where = where or RowLocator()
    shown = np.asarray(shown)
    if shown.ndim != 2 or shown.shape[1] != 3:
        raise InvalidComparisonsError(f"odd-one-out answers need (m, 3) shown objects, got shape {shown.shape}")
    if len(shown) == 0:
        raise InvalidComparisonsError("no comparisons: the input is empty")
    shown = index_array(shown, where)
    odd = index_array(np.asarray(odd).reshape(-1), where, what="odd one")
    if len(odd) != len(shown):
        raise InvalidComparisonsError(f"got {len(odd)} odd-one-out answers for {len(shown)} shown triples")
    repeated = (shown[:, 0] == shown[:, 1]) | (shown[:, 0] == shown[:, 2]) | (shown[:, 1] == shown[:, 2])
    if repeated.any():
        r = _first(repeated)
        raise InvalidComparisonsError(f"{where(r)}: the three objects shown are not distinct: {tuple(shown[r])}")
    if odd_is == "object":
        hit = shown == odd[:, None]
        if not hit.any(axis=1).all():
            r = _first(~hit.any(axis=1))
            raise InvalidComparisonsError(f"{where(r)}: odd one {odd[r]} is not among the objects shown {tuple(shown[r])}")
        position = hit.argmax(axis=1)
    elif odd_is == "position":
        if ((odd < 0) | (odd > 2)).any():
            r = _first((odd < 0) | (odd > 2))
            raise InvalidComparisonsError(f"{where(r)}: odd-one-out position {odd[r]} is not 0, 1 or 2")
        position = odd
    else:
        raise ValueError(f"odd_is must be 'position' or 'object', got {odd_is!r}")
    others = np.array([[1, 2], [0, 2], [0, 1]])[position]
    rows = np.arange(len(shown))
    a, b, c = shown[rows, others[:, 0]], shown[rows, others[:, 1]], shown[rows, position]
    triplets = np.stack([np.stack([a, b, c], 1), np.stack([b, a, c], 1)], axis=1).reshape(-1, 3)

    def twice(values):
        return None if values is None else np.repeat(np.asarray(values), 2)

    lines = np.arange(len(shown)) if where.lines is None else np.asarray(where.lines)
    return Comparisons(
        triplets, n_objects=n_objects, weight=twice(weight), annotator=twice(annotator), timestamp=twice(timestamp),
        response_time=twice(response_time), object_names=object_names,
        where=RowLocator(where.source, np.repeat(lines, 2)),
    )
