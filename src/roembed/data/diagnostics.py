"""What the data can and cannot support: checks run before every fit.

Each check returns a sentence (or nothing); :func:`warn_data_problems` emits them as
:class:`DataWarning`.  The fit always runs; the warnings say where its result
means less than it looks.  The decisions (documented in ``docs/cli.md``):

* **objects without comparisons** (unused ids): their coordinates are arbitrary
  (the random start).  Warned; ``roembed fit`` fits only the used objects when
  they are fewer than half of the ids.
* **disconnected comparison graph**: objects fall into groups with no comparison
  between them, so where one group sits relative to another means nothing.
  Warned with the group sizes; ``roembed fit`` writes each object's ``group``.
* **dimension >= number of objects**: ``n`` points fit in ``n - 1`` dimensions;
  more dimensions are not identifiable.  Warned (``roembed fit`` refuses).
* **fewer queries than free coordinates**: ``n`` points in ``p`` dimensions have
  ``F = n p - p (p + 1) / 2`` coordinates that shift and rotation leave free.  Each query (both
  directions of a comparison) sees one difference of distances, so with ``m < F`` queries the map
  can change shape in at least ``F - m`` directions without changing any query's margin (to first
  order; a change of scale changes them all): even exact margins could not pin it down, let
  alone their signs.  Warned.
* **objects only in comparisons of weight 0**: as free as objects in no comparison (a weight 0 often marks
  a row to leave out).  Warned.
* **pure contradiction**: every comparison answered both ways with equal total
  weight carries no order; the embedding is arbitrary (error 0.5).  Warned.
* **names that differ only in case or Unicode form** (``Dog`` and ``dog``, a composed and a
  decomposed ``café``): they are different objects to the fit, which splits one object's comparisons
  between two points; a typing slip in a crowd export, rarely two things.  Warned with examples; the
  names are kept as written (merging them would guess).
* **extreme weights**: when one response outweighs the others by a factor of a
  million or more, the fit follows that response alone; the weighted training error
  then says little.  Warned; ``roembed fit`` reports weighted and unweighted errors.
"""
from __future__ import annotations

import unicodedata

import numpy as np

from .._kernels import component_roots
from .._warn import warn
from .comparisons import ComparisonGraph, Comparisons
from .validation import count_noun

__all__ = ["DataWarning", "object_groups", "data_problems", "free_coordinates", "too_few_queries",
           "warn_data_problems", "warn_unfitted_objects", "EXTREME_WEIGHT_RATIO"]

#: largest / median positive weight from which the weights are called extreme
EXTREME_WEIGHT_RATIO = 1e6


#: The words of the warning about objects without comparisons (the report omits its own note when it is there).
UNUSED = "appear in no comparison"


class DataWarning(UserWarning):
    """The data cannot fully support what was asked; the fit ran, but read its result with care."""


def object_groups(comparisons: Comparisons) -> np.ndarray:
    """Connected group of each object (0, 1, ... by size, largest first); -1 for objects in no comparison.

    Objects are linked when they occur in one comparison.
    """
    n = comparisons.n_objects
    labels = component_roots(comparisons.quadruplets, n)  # union-find: no n x n or 3m-entry sparse matrix
    used = np.zeros(n, bool)
    used[comparisons.used_objects] = True
    labels = np.where(used, labels, -1)
    ids, sizes = np.unique(labels[used], return_counts=True)
    rank = np.full(labels.max() + 2, -1)
    rank[ids[np.argsort(-sizes, kind="stable")]] = np.arange(len(ids))
    return np.where(used, rank[labels], -1)


def free_coordinates(n_objects: int, n_components: int) -> int:
    """``n p - p (p + 1) / 2``: the coordinates of ``n`` points in ``p`` dimensions that shift (``p``) and
    rotation (``p (p - 1) / 2``) leave free, scale included; the fewest queries whose margins can fix a shape."""
    p = n_components
    return n_objects * p - p * (p + 1) // 2


def too_few_queries(graph: ComparisonGraph, n_components: int) -> bool:
    """Whether ``graph`` has fewer distinct queries with votes than the :func:`free_coordinates` of its objects
    with comparisons in ``n_components`` dimensions: the comparisons cannot pin the map down (warned by
    :func:`data_problems`; the self-tuning default then fits CKL without tuning, ``RobustOrdinalEmbedding._loose``)."""
    free = free_coordinates(len(graph.comparisons.used_objects), n_components)
    # a query is at most two edges: count only if it can matter
    return len(graph) < 2 * free and graph.n_voted_queries < free


def _examples(values, k: int = 5) -> str:
    values = [str(v) for v in values]
    return ", ".join(values[:k]) + (", ..." if len(values) > k else "")


def name_twins(names) -> list[tuple[str, ...]]:
    """Groups of two or more different ``names`` that are equal once case-folded and Unicode-normalised
    (NFKC), each spelling once, in order of first appearance; empty when there are none (a name repeated
    exactly, as THINGS' two "bat"s, is no twin)."""
    folded = [name.casefold() if name.isascii() else unicodedata.normalize("NFKC", name).casefold()
              for name in names]
    if len(set(folded)) == len(folded):  # the usual answer: half a second for 10^6 names
        return []
    groups: dict[str, dict[str, None]] = {}
    for key, name in zip(folded, names):
        groups.setdefault(key, {})[name] = None
    return [tuple(group) for group in groups.values() if len(group) > 1]


def _only_weightless(comparisons: Comparisons) -> np.ndarray:
    """The objects that occur in comparisons, but only in ones of weight 0 (a weight 0 often marks a row to leave
    out): as free as objects in no comparison, yet not among them."""
    weight = comparisons.weight
    if not (weight == 0).any():
        return np.zeros(0, dtype=np.int64)
    weighed = np.zeros(comparisons.n_objects, dtype=bool)
    weighed[comparisons.quadruplets[weight > 0].reshape(-1)] = True
    return np.setdiff1d(comparisons.used_objects, np.flatnonzero(weighed), assume_unique=True)


def _pure_contradiction(graph: ComparisonGraph) -> bool:
    """Whether every edge's votes equal its opposite edge's (to 1e-9).  An edge with votes and no opposite
    settles it at once, without the opposing votes of every edge (at 10^8 comparisons 3 s each time)."""
    votes, reverse = graph.votes, graph.reverse_edge
    if np.any((reverse < 0) & (votes != 0)):
        return False
    opposing = graph.opposing_votes
    return bool(np.all(np.abs(votes - opposing) <= 1e-9 * (votes + opposing)))


def data_problems(graph: ComparisonGraph, n_components: int | None = None) -> list[str]:
    """Sentences describing what the comparisons cannot support (empty when all is well)."""
    comparisons = graph.comparisons
    names = comparisons.object_names
    problems = []
    n, used = comparisons.n_objects, comparisons.used_objects
    if len(used) < n:
        unused = np.setdiff1d(np.arange(n), used)
        shown = [names[o] for o in unused] if names is not None else unused
        hint = ""
        if names is None and 2 * len(used) < n:  # ids, not indices (database numbers, file ids)?
            hint = (f" (most indices occur in no comparison, and the fit carries every one of the {n} points: if the "
                    "numbers are ids rather than indices 0, 1, ..., pass them as names, e.g. X.astype(str), or fit "
                    f"comparisons.drop_unused_objects(), and the map holds the {len(used)} objects compared)")
        elif names is None and unused[0] == 0 and len(used) and used.min() == 1:  # MATLAB-style numbers?
            hint = (" (no comparison uses object 0: if the indices count from 1, subtract 1, or read the file with "
                    "index_base=1 / roembed fit --index-base 1)")
        problems.append(f"{len(unused)} of {n} objects {UNUSED} (e.g. {_examples(shown)}): "
                        f"their coordinates are arbitrary{hint}")
    weightless = _only_weightless(comparisons)
    if len(weightless):
        shown = [names[o] for o in weightless] if names is not None else weightless
        problems.append(f"{len(weightless)} of {n} objects occur only in comparisons of weight 0 (e.g. "
                        f"{_examples(shown)}): those count for nothing, so their coordinates are arbitrary")
    twins = name_twins(names) if names is not None else []
    if twins:
        shown = ["/".join(group) for group in twins]
        problems.append(f"object names that differ only in case or Unicode form ({count_noun(len(twins), 'group')}: "
                        f"{_examples(shown)}) are separate objects in the map; if they name the same thing, "
                        "make them match in the data")
    groups = object_groups(comparisons)
    n_groups = groups.max() + 1
    if n_groups > 1:
        sizes = np.bincount(groups[groups >= 0])
        problems.append(f"the comparisons split the objects into {n_groups} groups with no comparison between "
                        f"them (sizes {_examples(sizes.tolist())}): where one group lies relative to another "
                        "means nothing")
    if n_components is not None and n_components >= len(used):
        n_used, dims = count_noun(len(used), "object"), count_noun(n_components, "dimension")
        problems.append(f"{dims} for {n_used} with comparisons: {count_noun(len(used), 'point')} fit in "
                        f"{count_noun(max(len(used) - 1, 1), 'dimension')}, the rest are arbitrary")
    elif n_components is not None and too_few_queries(graph, n_components):
        free = free_coordinates(len(used), n_components)
        queries = count_noun(graph.n_voted_queries, "distinct query", "distinct queries")
        if graph.n_voted_queries < graph.n_queries:
            queries += f" of weight above 0 (and {graph.n_queries - graph.n_voted_queries} of weight 0)"
        problems.append(f"{queries} for {count_noun(len(used), 'object')} in {count_noun(n_components, 'dimension')}: "
                        f"fewer than the {free} coordinates that shift and rotation leave free, so the comparisons "
                        "cannot pin the map down (some changes of shape move no query's margin); use fewer "
                        "dimensions or more comparisons; a bootstrap (roembed.bootstrap, roembed fit --bootstrap) "
                        "shows how loose it is")
    if graph.votes.sum() > 0 and _pure_contradiction(graph):
        problems.append("every comparison was answered both ways with equal weight (pure contradiction): "
                        "the data hold no order and the embedding is arbitrary")
    w = comparisons.weight
    positive = w[w > 0]
    if len(positive) > 1 and positive.max() >= EXTREME_WEIGHT_RATIO * positive.min():  # else no ratio can be
        ratio = positive.max() / np.median(positive)
        if ratio >= EXTREME_WEIGHT_RATIO:
            r = int(np.argmax(w))
            problems.append(f"extreme weights: response {r} has weight {w[r]:.3g}, {ratio:.2g} times the median; "
                            "the fit follows the heaviest responses and a weighted error says little about the rest")
    return problems


def warn_data_problems(graph: ComparisonGraph, n_components: int | None = None) -> list[str]:
    """Emits each of :func:`data_problems` as a :class:`DataWarning`; returns them."""
    problems = data_problems(graph, n_components)
    for problem in problems:
        warn(problem, DataWarning)
    return problems


def warn_unfitted_objects(fitted: Comparisons, comparisons: Comparisons, what: str) -> int:
    """Warns (:class:`DataWarning`) when some of ``comparisons``, numbered as the objects of the fit to
    ``fitted``, have an object that no comparison of the fit showed: its coordinates are the start's, so a
    prediction or a score on such a comparison is arbitrary too (in a score they count, near chance, without a
    word).  ``what`` names the use ("scored", "predicted").  Returns how many comparisons have one.  Objects
    are compared first (the fit's own comparisons, scored by ``roembed fit``, need no per-row mask: at 10^8
    rows that mask is 400 MB)."""
    if not len(np.setdiff1d(comparisons.used_objects, fitted.used_objects, assume_unique=True)):
        return 0
    used = np.zeros(max(fitted.n_objects, comparisons.n_objects), bool)
    used[fitted.used_objects] = True
    unseen = ~used[comparisons.quadruplets].all(axis=1)
    count = int(unseen.sum())
    if count:
        row = comparisons.quadruplets[np.argmax(unseen)]
        first = row[~used[row]][0]
        names = comparisons.object_names
        label = repr(names[first]) if names is not None else str(first)
        warn(f"{count} of {len(comparisons)} comparisons {what} have an object the fit saw in no comparison (the "
             f"first: {label}): its coordinates are arbitrary, and so is the answer on them", DataWarning)
    return count
