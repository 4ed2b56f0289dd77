"""Loaders for the real comparison data sets kept beside the repository.

Each loader takes the data set's folder (as described in its ``PROVENANCE.md``)
and returns :class:`Comparisons` with object names.  Nothing is downloaded.

Index space: by default only objects that occur in some comparison are kept and
renumbered in their original order (``objects="used"``); ``objects="all"`` keeps
the file's full index space, including objects nobody compared (an embedding
cannot place those).  Names always follow their objects.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from .comparisons import Comparisons
from .answers import from_odd_one_out
from .io import read_comparisons
from .validation import InvalidComparisonsError, RowLocator

__all__ = ["load_music", "load_music_genres", "load_material", "load_things"]


def _folder(path, required: tuple[str, ...]) -> Path:
    """The data folder ``path``, which holds the files ``required``.  A file of it given instead (a natural
    slip: it said "music_triplets_0based.csv: missing music_triplets_0based.csv") is named as such."""
    path = Path(path).expanduser()
    if path.is_file():
        raise FileNotFoundError(f"{path}: a file; give the data folder that holds it ({path.parent}), with "
                                f"{', '.join(required)}")
    missing = [name for name in required if not (path / name).is_file()]
    if missing:
        inside = sorted(sub for sub in path.glob("*/") if all((sub / name).is_file() for name in required)) \
            if path.is_dir() else []
        raise FileNotFoundError(f"{path}: missing {', '.join(missing)} " + (
            f"(the data folder is {inside[0]}, in it)" if inside else "(is this the right data folder?)"))
    return path


def _select_objects(comparisons: Comparisons, objects: str) -> Comparisons:
    if objects == "used":
        return comparisons.drop_unused_objects()
    if objects == "all":
        return comparisons
    raise ValueError(f"objects must be 'used' or 'all', got {objects!r}")


def load_music(path, *, objects: str = "used", return_report: bool = False):
    """aset400 music-artist triplets (van der Maaten & Weinberger 2012), 9,107 rows.

    Reads ``music_triplets_0based.csv`` (``anchor, closer, farther``: d(anchor, closer)
    < d(anchor, farther)) and ``artist_names.tsv`` (412 names; the mapping is inferred,
    see PROVENANCE.md).  The 17 rows that repeat an artist cannot be comparisons: they
    are dropped with a :class:`SkippedRowsWarning` and counted in the :class:`SkipReport`
    returned as a second value when ``return_report=True``.  There are no annotators.
    With ``objects="used"`` (default) 400 artists remain; ``"all"`` keeps 412.
    """
    path = _folder(path, ("music_triplets_0based.csv", "artist_names.tsv"))
    names = pd.read_csv(path / "artist_names.tsv", sep="\t", dtype={"name": str}).sort_values("index0")["name"]
    comparisons, report = read_comparisons(path / "music_triplets_0based.csv", format="triplets", names=names.tolist(),
                                           on_invalid="skip", return_report=True)
    comparisons = _select_objects(comparisons, objects)
    return (comparisons, report) if return_report else comparisons


def load_music_genres(path) -> pd.Series:
    """Genre lists of the aset400 artists: a Series indexed by artist name.

    Align with loaded comparisons by name: ``genres[list(comparisons.object_names)]``.
    17 artists have an empty list.
    """
    path = _folder(path, ("artist_genres.tsv",))
    table = pd.read_csv(path / "artist_genres.tsv", sep="\t", keep_default_na=False, dtype={"name": str})
    genres = [g.split(";") if g else [] for g in table["genres"]]
    return pd.Series(genres, index=pd.Index(table["name"], name="artist"), name="genres")


def load_material(path, split: str = "train", *, objects: str = "used") -> Comparisons:
    """Material-appearance triplets (Lagunas et al. 2019), one row per vote.

    Row ``x`` of ``answers_processed_<split>.json`` is a query ``[ref, A, B]`` with
    ``agreement[x] = [votes for A, votes for B]``.  It becomes ``agreement[x, 0]``
    responses ``(ref, A, B)`` and ``agreement[x, 1]`` responses ``(ref, B, A)``, so tied
    and split votes are kept in both directions (train: 92,892 responses, test: 11,800).
    There are no annotator ids.  Names come from ``material_names.txt`` (100 materials).
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    answers_file = f"answers_processed_{split}.json"
    path = _folder(path, (answers_file, "material_names.txt"))
    with open(path / answers_file) as fh:
        raw = json.load(fh)
    queries = np.asarray(raw["answers"], dtype=np.int64)
    votes = np.asarray(raw["agreement"], dtype=np.int64)
    if queries.shape != (len(queries), 3) or votes.shape != (len(queries), 2) or (votes < 0).any():
        raise InvalidComparisonsError(f"{path / answers_file}: 'answers' must be (N, 3) and 'agreement' (N, 2) counts")
    names = (path / "material_names.txt").read_text().split()
    directions = np.concatenate([queries, queries[:, [0, 2, 1]]])
    triplets = np.repeat(directions, np.concatenate([votes[:, 0], votes[:, 1]]), axis=0)
    comparisons = Comparisons(triplets, object_names=names, where=RowLocator(str(path / answers_file)))
    return _select_objects(comparisons, objects)


def load_things(path, *, objects: str = "used") -> Comparisons:
    """THINGS odd-one-out answers (Hebart et al. 2020): 20,000 answers from 325 participants.

    ``test_triplets.csv`` (tab-separated, no header) holds three 1-based object indices,
    the 1-based position of the odd one and the participant id.  Each answer becomes two
    triplets ``(a, b, odd)`` and ``(b, a, odd)`` (40,000 rows) with the participant as
    annotator.  Names are the THINGS ``uniqueID`` (unique, e.g. ``bat1``/``bat2``) from
    ``object_names_triplet_order.tsv``.  ``objects="used"`` keeps the 1,503 objects that
    occur; ``"all"`` keeps the 1,854 THINGS concepts.
    """
    path = _folder(path, ("test_triplets.csv", "object_names_triplet_order.tsv"))
    csv = path / "test_triplets.csv"
    table = pd.read_csv(csv, sep="\t", header=None).to_numpy()
    if table.ndim != 2 or table.shape[1] != 5:
        raise InvalidComparisonsError(f"{csv}: expected 5 tab-separated columns, got {table.shape[1]}")
    names = pd.read_csv(path / "object_names_triplet_order.tsv", sep="\t").sort_values("index0")
    comparisons = from_odd_one_out(
        table[:, :3] - 1, table[:, 3] - 1, annotator=table[:, 4], object_names=names["uniqueID"].astype(str).tolist(),
        where=RowLocator(str(csv), lines=np.arange(len(table)) + 1),
    )
    return _select_objects(comparisons, objects)
