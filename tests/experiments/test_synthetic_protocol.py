"""The synthetic protocol and its contamination models: sizes, labels, rates, ground truth."""
from pathlib import Path

import numpy as np
import pytest

from roembed.data import canonical_quadruplets
from roembed.experiments import CONTAMINATION_MODELS, MusicProtocol, SyntheticProtocol, make_synthetic
from roembed.experiments.synthetic import all_triplet_queries
from roembed.objective import quadruplet_distances

MUSIC = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "music-aset400-ste"


def _agrees_with_truth(X, comparisons):
    d_near, d_far = quadruplet_distances(X, comparisons.quadruplets)
    return d_near < d_far


def test_all_triplet_queries_count_and_distinct():
    q = all_triplet_queries(7)
    assert len(q) == 7 * 6 * 5 // 2
    assert len(np.unique(q, axis=0)) == len(q)
    assert np.all((q[:, 0] != q[:, 1]) & (q[:, 0] != q[:, 2]) & (q[:, 1] < q[:, 2]))


def test_paper_sizes_and_clean_labels():
    d = make_synthetic(rate=0.0, random_state=3)
    n_queries = 100 * 99 * 98 // 2
    assert len(d.validation) == 10_000 and len(d.train_triplets) == 10_000
    assert len(d.test) == n_queries - 20_000  # about 465,000
    votes = np.bincount(d.vote_triplet)
    assert votes.min() >= 15 and votes.max() <= 50
    assert np.all(_agrees_with_truth(d.X_true, d.validation)) and np.all(_agrees_with_truth(d.X_true, d.test))
    assert np.all(_agrees_with_truth(d.X_true, d.train)) and not d.flipped.any()
    # the three splits are disjoint queries
    keys = [set(map(tuple, np.sort(c.triplets[:, 1:], axis=1) + 1000 * c.triplets[:, :1]))
            for c in (d.validation, d.test)]
    train_keys = set(map(tuple, np.sort(d.train_triplets[:, 1:], axis=1) + 1000 * d.train_triplets[:, :1]))
    assert not (keys[0] & keys[1]) and not (train_keys & keys[0]) and not (train_keys & keys[1])


SMALL = dict(n_objects=30, dim=3, n_train=3000, n_validation=500, n_test=500)


@pytest.mark.parametrize("model", CONTAMINATION_MODELS)
def test_ground_truth_marks_exactly_the_contaminated_votes(model):
    d = make_synthetic(**SMALL, rate=0.2, model=model, random_state=1)
    agrees = _agrees_with_truth(d.X_true, d.train)
    np.testing.assert_array_equal(agrees, ~d.flipped)
    assert d.flipped.any()
    # validation and test are never contaminated
    assert np.all(_agrees_with_truth(d.X_true, d.validation))


def test_vote_model_hits_its_rate():
    for q in (0.1, 0.25):
        d = make_synthetic(**SMALL, rate=q, model="vote", random_state=2)
        n = len(d.flipped)
        assert abs(d.flipped.mean() - q) < 4 * np.sqrt(q * (1 - q) / n)


@pytest.mark.parametrize("model", ["majority", "unanimous"])
def test_triplet_models_hit_their_rate(model):
    q = 0.15
    d = make_synthetic(**SMALL, rate=q, model=model, random_state=4)
    n = len(d.train_triplets)
    touched = np.bincount(d.vote_triplet, weights=d.flipped, minlength=n) > 0
    assert touched.sum() == round(q * n)
    # every touched triplet has a flipped majority (all votes for 'unanimous'); the others none
    np.testing.assert_array_equal(d.triplet_majority_flipped, touched)
    if model == "unanimous":
        all_flipped = np.bincount(d.vote_triplet, weights=~d.flipped, minlength=n) == 0
        np.testing.assert_array_equal(all_flipped, touched)


def test_spammer_model():
    q = 0.3
    d = make_synthetic(**SMALL, rate=q, model="spammers", n_annotators=40, random_state=5)
    annotator = np.asarray(d.train.annotator)
    assert len(d.spammers) == round(q * 40)
    assert not d.flipped[~np.isin(annotator, d.spammers)].any()  # honest annotators never flip
    per_spammer = np.array([d.flipped[annotator == a].mean() for a in d.spammers])
    # each spammer either always flips or answers at random (flip rate about 1/2)
    assert np.all((per_spammer == 1.0) | (np.abs(per_spammer - 0.5) < 0.1))
    share = np.isin(annotator, d.spammers).mean()
    assert abs(share - q) < 0.05  # votes are spread uniformly over annotators


def test_bad_arguments():
    with pytest.raises(ValueError, match="contamination model"):
        make_synthetic(**SMALL, model="nope")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        make_synthetic(**SMALL, rate=1.5)
    with pytest.raises(ValueError, match=r"only 30 triplet queries .* n_train \+ n_validation = 40 .* lower n_train"):
        make_synthetic(n_objects=5, n_train=20, n_validation=20)


@pytest.mark.parametrize("kwargs, message", [
    ({"votes": (3, 2)}, r"votes must be \(fewest, most\) with fewest <= most, got \(3, 2\)"),  # "low >= high"
    ({"votes": (1.5, 2)}, "votes must be an integer, got 1.5"),  # drew whole votes from a fraction
    ({"votes": (0, 0)}, "votes must be >= 1, got 0"),  # "no comparisons: the input is empty"
    ({"votes": 3}, "votes must be a pair"),  # "cannot unpack non-iterable int object"
    ({"n_annotators": 0}, "n_annotators must be >= 1, got 0"),  # numpy's "high <= 0"
    ({"dim": 0}, "dim must be >= 1, got 0"),  # went through: every object at one point
    ({"n_train": -1}, "n_train must be >= 1, got -1"),  # "negative dimensions are not allowed"
    ({"n_test": 0}, "n_test must be >= 1, got 0"),
    ({"rate": float("nan")}, "rate must be a finite number, got nan"),
    ({"rate": "x"}, "rate must be a number, got 'x'"),  # a TypeError from the comparison
])
def test_each_bad_argument_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_synthetic(**{**SMALL, **kwargs})


def test_same_seed_same_points_at_every_rate():
    a = make_synthetic(**SMALL, rate=0.0, random_state=9)
    b = make_synthetic(**SMALL, rate=0.25, model="unanimous", random_state=9)
    np.testing.assert_array_equal(a.X_true, b.X_true)
    np.testing.assert_array_equal(a.test.quadruplets, b.test.quadruplets)


def test_a_numpy_generator_seeds_the_protocol_as_an_int_does():
    a, b = (make_synthetic(**SMALL, rate=0.25, random_state=np.random.default_rng(4)) for _ in range(2))
    np.testing.assert_array_equal(a.X_true, b.X_true)
    np.testing.assert_array_equal(a.train.quadruplets, b.train.quadruplets)
    assert not np.array_equal(a.X_true, make_synthetic(**SMALL, random_state=np.random.default_rng(5)).X_true)
    with pytest.raises(ValueError, match="random_state must be None, an int"):
        make_synthetic(**SMALL, random_state="4")


def test_protocol_wrong_edge_matches_flips():
    proto = SyntheticProtocol(**SMALL)
    split = proto.draw("unanimous", 0.2, seed=0)
    graph = split.train.aggregate()
    wrong = split.wrong_edge(graph.edges)
    # under 'unanimous' each flipped triplet becomes one wrong edge holding all its votes
    assert wrong.sum() == round(0.2 * SMALL["n_train"])
    assert graph.votes[wrong].sum() == split.n_contaminated


@pytest.mark.skipif(not MUSIC.is_dir(), reason="music data folder absent")
def test_music_protocol_split_and_flips():
    proto = MusicProtocol(str(MUSIC))
    clean = proto.draw("flip", 0.0, seed=0)
    assert (len(clean.train), len(clean.validation), len(clean.test)) == (5000, 2000, 9090 - 7000)
    assert clean.n_contaminated == 0
    split = proto.draw("flip", 0.25, seed=0)
    assert split.n_contaminated == 1250
    # same seed, same split: the flipped rows are exactly the training rows that changed
    changed = np.any(split.train.quadruplets != clean.train.quadruplets, axis=1)
    assert changed.sum() == 1250
    wrong = split.wrong_edge(canonical_quadruplets(split.train.quadruplets))
    np.testing.assert_array_equal(wrong[changed], True)
    assert wrong[~changed].mean() < 0.01  # only a clean row that coincides with a flipped one
    with pytest.raises(ValueError, match="flip"):
        proto.draw("vote", 0.1, seed=0)


def test_a_draw_prints_in_one_line_what_it_holds():
    """The dataclass's repr printed every array (``print(data)`` in a notebook: thousands of lines)."""
    from roembed.experiments import make_synthetic

    data = make_synthetic(n_objects=30, dim=2, n_train=1500, n_validation=10, n_test=300, rate=0.1,
                          model="spammers", n_annotators=10, random_state=0)
    text = repr(data)
    assert "\n" not in text and len(text) < 400
    assert text.startswith("SyntheticData(30 objects in 2 dimensions, model='spammers', rate=0.1: train Comparisons(")
    assert f"({int(data.flipped.sum())} of {len(data.flipped)} votes flipped, 1 spammer)" in text
