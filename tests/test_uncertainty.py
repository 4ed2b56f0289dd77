import warnings

import numpy as np
import pytest
from scipy.stats import special_ortho_group

from roembed import RobustOrdinalEmbedding, local_uncertainty, select_dimension
from roembed.data import Comparisons
from roembed.experiments import make_synthetic
from roembed.uncertainty import bootstrap, resample, resampling_units


def small_problem(seed=0, rate=0.0, model="vote"):
    return make_synthetic(n_objects=25, dim=2, n_train=1200, n_validation=100, votes=(3, 6), n_annotators=12,
                          n_test=300, rate=rate, model=model, random_state=seed)


@pytest.fixture(scope="module")
def boot():
    data = small_problem(seed=3, rate=0.2, model="spammers")
    est = RobustOrdinalEmbedding(2, max_iter=300, random_state=0)
    return data, bootstrap(est, data.train, 30, n_jobs=1, random_state=1)


def test_resample_multiplies_weights_by_the_draws_of_whole_units():
    c = Comparisons([[0, 1, 2], [0, 2, 1], [1, 0, 2], [2, 0, 1]], annotator=["a", "a", "b", "c"])
    units = resampling_units(c, "query")
    assert units[0, 0] == units[1, 0] and len(np.unique(units)) == 3  # both directions: one query
    for seed in range(5):
        sample, in_bag = resample(c, units, seed)
        assert in_bag[0] == in_bag[1]
        # the total multiplicity is the number of units drawn
        mult = np.zeros(len(c))
        mult[in_bag] = sample.weight
        first = [np.flatnonzero(units[:, 0] == u)[0] for u in range(3)]
        assert mult[first].sum() == 3
    crossed = resampling_units(c, "query+annotator")
    assert crossed.shape == (4, 2) and crossed[:, 1].tolist() == [0, 0, 1, 2]
    assert resampling_units(c, "object")[:, 0].tolist() == [0, 0, 1, 2]
    with pytest.raises(ValueError, match="unit must be"):
        resampling_units(c, "person")


def test_bootstrap_covers_planted_points(boot):
    data, res = boot
    assert res.replicates.shape == (30, 25, 2)
    cover = res.coverage(data.X_true)
    assert 0.7 <= cover <= 1.0  # nominal 0.9; with zero-width regions it would be ~0
    # the full fit lies in every region; an aligned rotated, rescaled copy of the truth is covered alike
    assert res.contains(res.embedding, align=False).all()
    R = special_ortho_group.rvs(2, random_state=0)
    assert (res.contains(5 * data.X_true @ R + 1) == res.contains(data.X_true)).all()
    # a region at 50% is smaller than at 90%
    res.confidence = 0.5
    assert res.coverage(data.X_true) < cover
    res.confidence = 0.9


def test_points_that_are_not_one_per_object_in_the_map_are_refused(boot):
    """A point (p,) was broadcast to every object; other shapes were numpy's "operands could not be broadcast"."""
    data, res = boot
    for points in (np.zeros(2), data.X_true[:10]):
        with pytest.raises(ValueError, match=r"points must hold one point per object .* shape \(25, 2\); got"):
            res.mahalanobis2(points)
    with pytest.raises(ValueError, match="points have 3 coordinates and the map 2"):
        res.coverage(np.c_[data.X_true, data.X_true[:, :1]])
    assert res.coverage(data.X_true[:, :1]) >= 0  # fewer dimensions: padded by the alignment, as documented
    with pytest.raises(ValueError, match=r"basis must be \(2, 2\)"):
        res.ellipses_2d(np.eye(3)[:, :2])


def test_bootstrap_tables(boot):
    data, res = boot
    objects = res.objects()
    assert {"x1", "x2", "axis_major", "axis_minor", "angle", "radius", "stability", "dispersion"} <= set(objects)
    assert (objects["axis_major"] >= objects["axis_minor"]).all()
    assert objects["stability"].between(0, 1).all()
    # a mean of multiples of 1/10 over 30 replicates, written as the decimal it is (0.88, not 0.8800000000000001,
    # in uncertainty.csv)
    shares = res.stability_per_replicate
    assert np.allclose(shares * 10, np.round(shares * 10))
    assert objects["stability"].tolist() == [round(count / 300, 12) for count in np.round(shares * 10).sum(axis=0)]
    assert not objects["stability"].map(repr).str.contains("0000000|9999999").any()
    flags = res.flag_frequency()
    assert len(flags) == len(res.estimator.graph_) and flags["flag_frequency"].between(0, 1).all()
    assert (flags["n_replicates"] <= 30).all() and (flags["n_flagged"] <= flags["n_replicates"]).all()
    in_full = flags.groupby("flagged_in_full_fit")["flag_frequency"].mean()
    assert in_full[True] > 0.5 > in_full[False]  # flagged edges keep being flagged
    ann = res.annotators()
    assert len(ann) == 12 and (ann["agreement_low"] <= ann["agreement"]).all()
    assert (ann["agreement"] <= ann["agreement_high"]).all()
    # planted spammers are the least reliable
    assert set(ann["annotator"].head(len(data.spammers))) == set(data.spammers)
    err = res.heldout_error()
    assert err.low <= err.value <= err.high and 0 < err.value < 0.5
    # one line that says what it is (the dataclass's repr printed every replicate array: ~50 lines)
    assert repr(res) == (f"BootstrapResult(30 replicates by query, 25 objects in 2 dimensions, 90% regions; "
                         f"out-of-bag error {err.value:.4f} [{err.low:.4f}, {err.high:.4f}])")


def test_regions_are_hotelling_t2_of_the_sample_covariance(boot):
    import dataclasses

    from scipy.stats import chi2, f as f_dist

    _, res = boot
    B, p = res.n_replicates, 2
    assert np.array_equal(res.covariances, res.sample_covariances)
    assert res.radius2 == pytest.approx(p * (B - 1) / (B - p) * f_dist.ppf(0.9, p, B - p))
    assert chi2.ppf(0.9, p) < res.radius2 < 1.2 * chi2.ppf(0.9, p)
    res.calibration = "chi2"
    assert res.radius2 == pytest.approx(chi2.ppf(0.9, p))
    res.calibration = "hotelling"
    # no more replicates than dimensions: singular covariances, no regions
    few = dataclasses.replace(res, replicates=res.replicates[:2])
    assert not few.has_region.any() and np.isnan(few.coverage(res.embedding))
    assert not few.contains(res.embedding, align=False).any()


def test_resampled_queries_count_as_copies_under_every_weighting():
    from roembed.estimators.robust_fit import edge_weights

    # query q0 = (0; 1, 2): 3 votes for 1 and 1 against; q1 = (0; 1, 3): 2 votes for 3; q2 = (1; 0, 2): 1 vote
    c = Comparisons([[0, 1, 2]] * 3 + [[0, 2, 1], [0, 3, 1], [0, 3, 1], [1, 0, 2]], annotator=list("abcdabc"))
    units = resampling_units(c, "query")
    for seed in range(20):
        sample, in_bag = resample(c, units, seed)
        draws = np.zeros(len(c))
        draws[in_bag] = sample.copies
        if draws[0] < 2:
            continue  # want a query drawn at least twice
        g = sample.aggregate()
        assert np.allclose(g.votes, np.bincount(g.response_edge, weights=c.weight[in_bag] * draws[in_bag]))
        edge = g.response_edge[0]  # the edge "1 closer to 0 than 2"
        assert g.copies[edge] == draws[0]
        # majority: one vote per draw (not one per query); net: (3 - 1) per draw; paper: 3^2 per draw
        assert edge_weights(g, "majority")[edge] == draws[0]
        assert edge_weights(g, "net")[edge] == pytest.approx(2 * draws[0])
        assert edge_weights(g, "consensus")[edge] == pytest.approx(0.5 * draws[0])  # (3 - 1) / (3 + 1) per draw
        assert edge_weights(g, "paper")[edge] == pytest.approx(9 * draws[0])
        assert edge_weights(g, "vote")[edge] == pytest.approx(3 * draws[0])
        break
    else:
        pytest.fail("no seed drew query 0 twice")
    # an annotator drawn twice doubles their votes, not the query's draws
    sample, in_bag = resample(c, resampling_units(c, "annotator"), 0, "annotator")
    assert (sample.copies == 1).all() and not np.array_equal(sample.weight, c.weight[in_bag])
    # crossed: the copies are the query's draws, the weight carries both factors' draws
    crossed = resampling_units(c, "query+annotator")
    checked = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)  # the draws resample makes: queries, then annotators
        q_draws = np.bincount(rng.integers(0, 3, 3), minlength=3)[crossed[:, 0]]
        a_draws = np.bincount(rng.integers(0, 4, 4), minlength=4)[crossed[:, 1]]
        sample, in_bag = resample(c, crossed, seed, "query+annotator")
        assert len(sample) > 0  # a draw of nothing is drawn again
        if not (q_draws * a_draws).any():
            continue
        assert np.array_equal(in_bag, q_draws * a_draws > 0)
        assert np.array_equal(sample.copies, q_draws[in_bag])
        assert np.array_equal(sample.weight, (q_draws * a_draws)[in_bag])
        checked += 1
    assert checked >= 10


def test_copies_are_kept_and_checked():
    from roembed.data import InvalidComparisonsError

    c = Comparisons([[0, 1, 2], [0, 2, 1], [1, 0, 2]], weight=[1, 2, 3], copies=[2, 2, 1])
    assert c[[0, 2]].copies.tolist() == [2, 1]
    assert c.with_weight([1, 1, 1]).copies.tolist() == [2, 2, 1]
    assert Comparisons.concat([c, c[:1]]).copies.tolist() == [2, 2, 1, 2]
    assert Comparisons.concat([Comparisons([[0, 1, 2]]), c[:1]]).copies.tolist() == [1, 2]
    assert Comparisons([[0, 1, 2]]).copies.tolist() == [1.0]
    for bad, match in (([0, 1, 1], "row 0: copies is 0"), ([1, -1, 1], "row 1: copies is negative"),
                       ([1, 1, np.nan], "row 2: copies is NaN"), ([1, 1], "got 2 copies values")):
        with pytest.raises(InvalidComparisonsError, match=match):
            Comparisons([[0, 1, 2], [0, 2, 1], [1, 0, 2]], copies=bad)


def test_a_dataset_given_as_copies_fits_like_the_dataset():
    # every query counted twice (votes doubled, copies 2) is the same problem under every weighting
    data = small_problem(seed=6, rate=0.2, model="majority")
    c = data.train
    twice = c.with_weight(2 * c.weight, copies=np.full(len(c), 2.0))
    for weighting in ("majority", "net", "consensus"):
        est = RobustOrdinalEmbedding(2, weighting=weighting, max_iter=100, random_state=0)
        assert np.allclose(est.fit(c).embedding_, est.fit(twice).embedding_, atol=1e-6)
    # one vote per query: every weighting gives a query drawn twice the weight 2 that "vote" gives it
    # (with the copies ignored, majority voting would give it 1 and another embedding)
    single = make_synthetic(n_objects=20, dim=2, n_train=600, n_validation=10, votes=(1, 1), n_test=10,
                            rate=0.2, model="vote", random_state=7).train
    drawn = np.where(np.arange(len(single)) % 2 == 0, 2.0, 1.0)
    sample = single.with_weight(drawn, copies=drawn)
    fits = {w: RobustOrdinalEmbedding(2, weighting=w, loss="soe", refine=None, max_iter=100, random_state=0)
            .fit(sample).embedding_ for w in ("vote", "majority", "net", "consensus")}
    assert all(np.allclose(fits[w], fits["vote"], atol=1e-6) for w in ("majority", "net", "consensus"))
    ignored = RobustOrdinalEmbedding(2, weighting="majority", loss="soe", refine=None, max_iter=100,
                                     random_state=0).fit(single.with_weight(drawn)).embedding_
    assert not np.allclose(ignored, fits["vote"], atol=1e-3)


def test_an_undersampled_object_is_the_least_stable():
    data = small_problem(seed=4, rate=0.1)  # noisy votes: a unique optimum, whose spread is the uncertainty
    c = data.train
    involves0 = (c.quadruplets == 0).any(axis=1)
    keep = ~involves0 | (np.random.default_rng(0).random(len(c)) < 0.05)
    res = bootstrap(RobustOrdinalEmbedding(2, max_iter=300, random_state=0), c[keep], 20, unit="query",
                    random_state=0)
    objects = res.objects()
    assert objects["dispersion"].idxmax() == 0
    assert objects.loc[0, "stability"] < objects["stability"].median()


def test_bootstrap_is_reproducible():
    data = small_problem(seed=5)
    est = RobustOrdinalEmbedding(2, max_iter=200, random_state=0)
    a = bootstrap(est, data.train, 2, random_state=7)
    b = bootstrap(est, data.train, 2, random_state=7)  # another backend: tests/test_dask.py
    assert np.array_equal(a.replicates, b.replicates) and np.array_equal(a.oob_errors, b.oob_errors)
    c = bootstrap(est, data.train, 2, random_state=8)
    assert not np.array_equal(a.replicates, c.replicates)


@pytest.mark.parametrize("kwargs, match", [(dict(unit="person"), "unit"), (dict(n_replicates=1), "n_replicates"),
                                           (dict(calibration="magic"), "calibration"),
                                           (dict(confidence=1.5), "confidence"),
                                           # a value of the wrong type was Python's own TypeError or OverflowError
                                           (dict(confidence="high"), "confidence must be a number"),
                                           (dict(k=float("inf")), "k must be an integer"),
                                           (dict(threads_per_fit=1.5), "threads_per_fit must be an integer"),
                                           (dict(n_jobs=0), "n_jobs must be 1 or more"),
                                           (dict(n_jobs="all"), "n_jobs must be an integer"),
                                           (dict(verbose="x"), "verbose must be an integer")])
def test_bootstrap_bad_parameters(kwargs, match):
    data = small_problem()
    with pytest.raises(ValueError, match=match):
        bootstrap(RobustOrdinalEmbedding(2), data.train, **{"n_replicates": 3, **kwargs})


@pytest.mark.parametrize("call, order", [
    (lambda est, c: bootstrap(c, est, 3), r"call bootstrap\(estimator, comparisons, n_replicates\)"),
    (lambda est, c: select_dimension(c), r"select_dimension\(comparisons=\.\.\.\)"),
    (lambda est, c: select_dimension(c, est), r"call select_dimension\(estimator, comparisons\)"),
    # was "the estimator is not fitted: pass the comparisons to fit it on": the comparisons taken for the estimator
    (lambda est, c: local_uncertainty(c), r"call local_uncertainty\(fitted_estimator\)"),
    (lambda est, c: local_uncertainty(c, est), r"local_uncertainty\(estimator, comparisons\)")])
def test_comparisons_given_first_get_the_argument_order(call, order):
    data = small_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the one error, nothing before it
        for comparisons in (data.train, data.train.quadruplets[:, :3]):  # Comparisons or a plain array
            with pytest.raises(TypeError, match=rf"^the first argument is the estimator .*got "
                                                rf"{type(comparisons).__name__}: .*{order}"):
                call(RobustOrdinalEmbedding(2), comparisons)


def test_a_full_fit_of_other_comparisons_is_refused():
    from roembed import SOE

    data, other = small_problem(seed=0), small_problem(seed=1)  # the same 25 objects, other responses
    fitted = SOE(2, random_state=0).fit(other.train)
    with pytest.raises(ValueError, match="fitted was not fitted on these comparisons"):
        bootstrap(SOE(2), data.train, 3, fitted=fitted, random_state=0)
    fitted_here = SOE(2, random_state=0).fit(data.train)
    result = bootstrap(SOE(2), data.train, 3, fitted=fitted_here, random_state=0)
    assert result.estimator is fitted_here and np.array_equal(result.embedding, fitted_here.embedding_)


def test_an_estimator_fitted_on_the_comparisons_is_the_full_fit():
    """``est.fit(C)`` then ``bootstrap(est, C)``: the regions are around ``est``'s own map (refitted, an unseeded
    estimator gave another map, so the regions were around a map the user did not have); fitted on other data,
    it is refitted on these, and left as it was."""
    from roembed import SOE

    data, other = small_problem(seed=0), small_problem(seed=1)
    mine = SOE(2).fit(data.train)  # unseeded: a refit would land elsewhere
    result = bootstrap(mine, data.train, 3, random_state=0)
    assert result.estimator is mine and np.array_equal(result.embedding, mine.embedding_)
    elsewhere = SOE(2, random_state=0).fit(other.train)
    before = elsewhere.embedding_.copy()
    result = bootstrap(elsewhere, data.train, 3, random_state=0)
    assert result.estimator is not elsewhere and np.array_equal(elsewhere.embedding_, before)
    np.testing.assert_array_equal(result.embedding, SOE(2, random_state=0).fit(data.train).embedding_)


def test_the_objects_table_leaves_the_fit_alone():
    """With pandas before 3.0 (no copy-on-write) the table was a view of the fit's embedding, and writing NaN for an
    object without comparisons wrote it into ``embedding_`` (caught by the fuzz test on CI's lowest versions)."""
    comparisons = Comparisons(np.array([[2, 3, 1], [1, 2, 3], [3, 1, 2]]), n_objects=4)  # object 0 is in none
    result = bootstrap(RobustOrdinalEmbedding(1, random_state=0), comparisons, 3, n_jobs=1, random_state=0)
    before = result.estimator.embedding_.copy()
    table = result.objects()
    assert np.isnan(table.loc[0, "x1"]) and np.isfinite(table.loc[1:, "x1"]).all()
    np.testing.assert_array_equal(result.estimator.embedding_, before)
    np.testing.assert_array_equal(result.embedding, before)
    assert np.isfinite(before).all()


def test_a_bootstrap_over_few_units_says_so():
    """Two annotators as the resampling unit give three distinct resamples: the regions looked like any others."""
    data = small_problem()
    two = Comparisons(data.train.quadruplets, annotator=np.arange(len(data.train)) % 2)
    estimator = RobustOrdinalEmbedding(2, loss="soe", weighting="vote", refine=None, max_iter=200, random_state=0)
    with pytest.warns(UserWarning, match=r"^the bootstrap resamples 2 annotators \(unit='query\+annotator'\): over "
                                         r"fewer than 20 units it has few distinct resamples, and its regions and "
                                         r"intervals are unreliable; resample by query, the default unit$"):
        bootstrap(estimator, two, 3, unit="query+annotator", random_state=0)
    with warnings.catch_warnings(record=True) as caught:  # its queries are many: no such warning by query
        warnings.simplefilter("always")
        bootstrap(estimator, two, 3, random_state=0)
    assert not any("units it has few" in str(w.message) for w in caught)
    assert len(np.unique(resampling_units(two, "query"))) >= 20


def test_too_few_replicates_for_a_percentile_interval_say_so():
    """Three replicates gave "out-of-bag error 0.2218 (90% interval 0.2162-0.2251)": the 5th and 95th percentiles
    of three values, about their range.  A two-sided interval at ``confidence`` needs 2 / (1 - confidence)
    replicates to leave one beyond each end: 20 at 90%, 4 at 50%."""
    from roembed.uncertainty import percentile_replicates

    assert [percentile_replicates(c) for c in (0.5, 0.8, 0.9, 0.95)] == [4, 10, 20, 40]
    data = small_problem()
    estimator = RobustOrdinalEmbedding(2, loss="soe", weighting="vote", refine=None, max_iter=200, random_state=0)
    with pytest.warns(UserWarning, match=r"^with 3 replicates the 90% intervals \(out-of-bag error, annotators' "
                                         r"agreement\) are about the replicates' range: a percentile interval needs "
                                         r"20 or more"):
        bootstrap(estimator, data.train, 3, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bootstrap(estimator, data.train, 4, confidence=0.5, random_state=0)
    assert not any("replicates' range" in str(w.message) for w in caught)


def test_annotator_unit_needs_annotators():
    c = Comparisons(small_problem().train.quadruplets)
    from roembed.data import InvalidComparisonsError
    with pytest.raises(InvalidComparisonsError, match="annotator"):
        bootstrap(RobustOrdinalEmbedding(2), c, 3, unit="annotator")


def test_pictures(boot, tmp_path):
    from matplotlib.patches import Ellipse

    from roembed.plotting import plot_embedding, plot_flag_frequency, save_figure

    data, res = boot
    fig = plot_embedding(res.embedding, uncertainty=res)
    ellipses = [p for p in fig.axes[0].patches if isinstance(p, Ellipse)]
    assert len(ellipses) == len(res.used_objects)
    # the drawn ellipse of an object has the region's axes (p = 2: the region itself)
    o = int(res.used_objects[0])
    axes = sorted([ellipses[0].width / 2, ellipses[0].height / 2])
    table = res.objects()
    assert axes == pytest.approx([table.loc[o, "axis_minor"], table.loc[o, "axis_major"]])
    fig = plot_flag_frequency(res.flag_frequency())
    assert save_figure(fig, tmp_path / "flags")[0].stat().st_size > 0
    # the view fits the points, not one loose region (music's widened it twofold, squeezing the points)
    from dataclasses import replace

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    loose = res.replicates.copy()
    loose[:, o] += np.random.default_rng(0).normal(scale=20 * np.ptp(res.embedding), size=loose[:, o].shape)
    loose_res = replace(res, replicates=loose)
    assert loose_res.objects().loc[o, "axis_major"] > 10 * np.ptp(res.embedding)
    fig = plot_embedding(res.embedding, uncertainty=loose_res)
    FigureCanvasAgg(fig).draw()  # applies the equal aspect
    spans = [np.ptp(fig.axes[0].get_xlim()), np.ptp(fig.axes[0].get_ylim())]
    assert max(spans) < 1.5 * np.ptp(res.embedding, axis=0).max()


def test_ellipsoid_shadow_for_p_above_2():
    from roembed.plotting import plot_embedding

    data = make_synthetic(n_objects=20, dim=3, n_train=900, n_validation=10, votes=(2, 3), n_annotators=1,
                          n_test=10, random_state=0)
    res = bootstrap(RobustOrdinalEmbedding(3, max_iter=200, random_state=0), data.train, 6, random_state=0)
    centres, cov = res.ellipses_2d()
    assert cov.shape == (20, 2, 2) and np.allclose(cov, cov.transpose(0, 2, 1))
    assert np.allclose(cov[:, 0, 0], res.covariances[:, 0, 0] * res.radius2)
    table = res.objects()
    # the major semi-axis is at least the mean radius
    assert "angle" not in table and (table["axis_major"] >= table["radius"] * (1 - 1e-9)).all()
    assert len(plot_embedding(res.embedding, uncertainty=res).axes[0].patches) == 20
    # the table gives each shadow on the principal plane the maps are drawn on (the report draws it from there)
    from roembed.uncertainty import principal_plane

    V = principal_plane(res.embedding)
    shadow = np.einsum("pa,ipq,qb->iab", V, res.covariances, V) * res.radius2
    vals, vecs = np.linalg.eigh(shadow)
    assert np.allclose(table["shadow_major"], np.sqrt(vals[:, 1])) and np.allclose(table["shadow_minor"],
                                                                                   np.sqrt(vals[:, 0]))
    angle = np.radians(table["shadow_angle"].to_numpy())  # the major axis' direction (either way along it)
    assert np.allclose(np.abs(np.cos(angle) * vecs[:, 0, 1] + np.sin(angle) * vecs[:, 1, 1]), 1.0)
    assert (table["shadow_minor"] >= table["axis_minor"] * (1 - 1e-9)).all()  # a shadow is no thinner ...
    assert (table["shadow_major"] <= table["axis_major"] * (1 + 1e-9)).all()  # ... nor longer than the region


def test_principal_plane_known_answer():
    """Spread 5 along the third coordinate and 2 along the first: the plane is theirs, in that order."""
    from roembed.uncertainty import principal_plane

    X = np.random.default_rng(0).normal(size=(400, 3)) * [2.0, 0.1, 5.0]
    V = principal_plane(X)
    assert V.shape == (3, 2) and np.allclose(V.T @ V, np.eye(2))
    assert np.allclose(np.abs(V), [[0, 1], [0, 0], [1, 0]], atol=0.02)


def test_threads_per_fit_caps_the_objectives_threads_too():
    import numba

    from roembed._threads import limit_threads
    from roembed.objective import default_threads

    before = numba.get_num_threads()
    with limit_threads(1):
        assert default_threads() == 1  # the objective's own pool, not only BLAS
    assert numba.get_num_threads() == before
    with pytest.raises(RuntimeError), limit_threads(1):
        raise RuntimeError
    assert numba.get_num_threads() == before  # restored after an error as well


def test_replicates_keep_the_full_fits_choice_unless_retune(monkeypatch):
    import roembed.estimators.robust as robust

    searches = []
    real = robust.holdout_mask
    monkeypatch.setattr(robust, "holdout_mask", lambda *a, **k: searches.append(1) or real(*a, **k))
    data = small_problem(seed=4)
    full = RobustOrdinalEmbedding(2, max_iter=200, random_state=0).fit(data.train)
    assert len(searches) == 1
    fixed = bootstrap(RobustOrdinalEmbedding(2, max_iter=200, random_state=0), data.train, 3, fitted=full,
                      n_jobs=1, random_state=2)
    assert len(searches) == 1  # no replicate searched again
    # the same as bootstrapping an estimator with the choice set by hand
    by_hand = RobustOrdinalEmbedding(2, max_iter=200, random_state=0).set_params(**robust.tuned_params(full))
    assert set(robust.tuned_params(full)) == {"loss", "weighting", "refine", "alpha"} | (
        {"refine_alpha"} if full.chosen_params_["refine"] is not None else set())
    same = bootstrap(by_hand, data.train, 3, fitted=full, n_jobs=1, random_state=2)
    np.testing.assert_array_equal(fixed.replicates, same.replicates)
    bootstrap(RobustOrdinalEmbedding(2, max_iter=200, random_state=0), data.train, 3, fitted=full, n_jobs=1,
              random_state=2, retune=True)
    assert len(searches) == 4  # one search per replicate


def test_replicates_start_from_the_full_fit_alone_and_their_warnings_are_counted():
    from roembed.uncertainty import _warm

    est = _warm(RobustOrdinalEmbedding(2, n_init=10), np.zeros((3, 2)))
    assert est.n_init == 1 and est.init.shape == (3, 2)
    data = small_problem(seed=2)
    # max_iter=2 cannot converge: every replicate warns, and the caller hears it once, with the count
    with pytest.warns(UserWarning, match=r"^4 of 4 bootstrap replicates: ConvergenceWarning") as record:
        bootstrap(RobustOrdinalEmbedding(2, loss="soe", weighting="vote", refine=None, max_iter=2, random_state=0),
                  data.train, 4, random_state=0)
    assert sum("bootstrap replicates" in str(w.message) for w in record) == 1


def test_a_replicate_that_draws_only_tied_queries_is_fitted_and_counted_not_fatal():
    """One query decided 3 to 0, two tied 1 to 1: the full fit keeps consensus weights, and a replicate that draws
    only the tied queries decides nothing under them. It stopped the whole bootstrap (and `roembed fit
    --bootstrap`) with "all comparison weights are zero"."""
    data = [[0, 1, 2]] * 3 + [[1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]
    estimator = RobustOrdinalEmbedding(1, weighting="consensus", random_state=0)
    with pytest.warns(UserWarning, match=r"^\d of 8 bootstrap replicates: UserWarning: weighting='consensus' "
                                         r"decides no comparison here"):
        result = bootstrap(estimator, data, 8, n_jobs=1, random_state=0)
    assert result.replicates.shape == (8, 3, 1) and np.isfinite(result.replicates).all()


def test_replicates_the_estimator_refuses_are_counted_and_left_out_and_stored_as_such(tmp_path, monkeypatch):
    """``TwoStageEmbedding`` on a resample that drew only tied queries has nothing left after majority voting
    (ValueError): it stopped the whole bootstrap.  Such replicates are now left out with one warning that counts
    them; the store keeps them as refused, so a rerun reads them instead of fitting them again."""
    from roembed import TwoStageEmbedding
    from roembed import uncertainty

    rng = np.random.default_rng(0)
    queries = np.array([rng.choice(12, 3, replace=False) for _ in range(60)])
    rows = [row for t, (a, b, c) in enumerate(queries)
            for row in [(a, b, c), (a, c, b)] + ([(a, b, c)] if t < 3 else [])]  # 57 ties, 3 decided
    data = Comparisons.from_triplets(np.array(rows), n_objects=12)
    est = TwoStageEmbedding(2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the data's own warnings
        full = est.fit(data)
    with pytest.warns(UserWarning, match=r"^(\d+) of 40 bootstrap replicates could not be fitted \(the first: "
                                         r"ValueError: no comparisons left after majority voting") as record:
        result = bootstrap(full, data, 40, random_state=0, store=tmp_path / "s")
    n_failed = int(str(next(w.message for w in record if "could not be fitted" in str(w.message))).split()[0])
    assert 0 < n_failed < 40 and result.n_replicates == 40 - n_failed == len(result.seeds)
    assert np.isfinite(result.replicates).all() and len(result.oob_errors) == 40 - n_failed
    calls = []
    real = uncertainty._replicate
    monkeypatch.setattr(uncertainty, "_replicate", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.warns(UserWarning, match=rf"^{n_failed} of 40 bootstrap replicates could not be fitted"):
        again = bootstrap(full, data, 40, random_state=0, store=tmp_path / "s")
    assert not calls and again.n_from_store == 40
    np.testing.assert_array_equal(again.replicates, result.replicates)


def test_too_few_fitted_replicates_is_an_error():
    from roembed.uncertainty import _fitted_replicates

    ok = {"aligned": np.zeros((3, 1)), "oob_error": 0.1}
    refused = {"seed": 1, "failed": "ValueError: nothing"}
    assert _fitted_replicates([ok, ok], [1, 2]) == ([ok, ok], [1, 2])
    with pytest.raises(ValueError, match=r"^2 of 3 bootstrap replicates could not be fitted \(the first: ValueError: "
                                         r"nothing\): the resamples hold too little"):
        _fitted_replicates([refused, ok, refused], [1, 2, 3])


@pytest.mark.parametrize("warm_start, retune", [(True, False), (False, False), (True, True)])
def test_an_auto_dimension_is_chosen_once_and_every_replicate_fits_at_it(monkeypatch, warm_start, retune):
    import roembed.dimension as dimension

    selections = []
    real = dimension.select_dimension
    monkeypatch.setattr(dimension, "select_dimension", lambda *a, **k: selections.append(1) or real(*a, **k))
    data = small_problem(seed=5)
    est = RobustOrdinalEmbedding("auto", max_iter=200, random_state=0)
    full = RobustOrdinalEmbedding("auto", max_iter=200, random_state=0).fit(data.train)
    assert len(selections) == 1
    result = bootstrap(est, data.train, 3, fitted=full, warm_start=warm_start, retune=retune, n_jobs=1,
                       random_state=0)
    assert len(selections) == 1  # no replicate chose a dimension of its own
    assert result.replicates.shape == (3, data.train.n_objects, full.n_components_)
    assert est.n_components == "auto"  # the caller's estimator is left as it was


def test_out_of_bag_responses_share_their_objects_with_no_response_in_the_bag():
    """By query, an odd-one-out answer's other triplet was in the bag while this one was scored out of it (THINGS
    at p = 2: out-of-bag error 0.33 against 0.47 on new triples)."""
    from roembed.model_selection import object_sets
    from roembed.uncertainty import _out_of_bag

    # an answer on (0, 1, 2) as its two triplets, one on (0, 1, 3), and (4, 5, 6) asked twice
    c = Comparisons(np.array([(0, 1, 2), (1, 0, 2), (0, 1, 3), (1, 0, 3), (4, 5, 6), (4, 6, 5)]))
    in_bag = np.array([True, False, False, False, False, False])
    assert _out_of_bag(object_sets(c), in_bag).tolist() == [False, False, True, True, True, True]
    assert _out_of_bag(object_sets(c), np.ones(6, bool)).tolist() == [False] * 6
    units = resampling_units(c, "object_set")[:, 0]
    assert units[0] == units[1] and units[2] == units[3] and units[4] == units[5] and len(set(units)) == 3


def test_out_of_bag_rank_trials_are_whole_trials(monkeypatch):
    """A rank trial's 13 triplets compare different sets of objects: out of the bag by set, a triplet was scored
    while the replicate fitted its trial's others.  The bootstrap now leaves whole trials out of the bag, and a
    store records that it did (so that one written before is refused, not mixed)."""
    from roembed import SOE, uncertainty
    from roembed.data import from_rank_trials
    from roembed.uncertainty import _manifest, _out_of_bag

    rng = np.random.default_rng(0)
    c = from_rank_trials(np.array([rng.choice(20, 9, replace=False) for _ in range(30)]), n_select=2)
    seen = []
    monkeypatch.setattr(uncertainty, "_out_of_bag", lambda sets, in_bag: seen.append(sets) or _out_of_bag(sets, in_bag))
    bootstrap(SOE(2, random_state=0), c, 3, random_state=0)
    assert len(seen) == 3 and all(np.array_equal(sets, c.extra["trial"]) for sets in seen)
    manifest = lambda data: _manifest(SOE(2), data, np.zeros((20, 2)), "query", 10, True, 1, [1])
    assert manifest(c)["groups_by_trial"] is True
    assert "groups_by_trial" not in manifest(Comparisons(c.triplets, n_objects=20))
