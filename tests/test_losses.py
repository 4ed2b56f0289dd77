"""Every loss: finite-difference checks of the margin, the penalty and the robust envelope."""
import numpy as np
import pytest

from roembed.losses import LOSSES, Hinge, Sigmoid, get_loss, robust_curvature, robust_penalty

ALL = [LOSSES["squared"](), LOSSES["hinge"](), LOSSES["squared_hinge"](), LOSSES["logistic"](),
       LOSSES["tstudent"](alpha=3.0), LOSSES["ckl"](mu=0.2)]
IDS = [loss.name for loss in ALL]
EPS = 1e-6


def _away_from_kinks(s):
    return s[np.abs(s - 1.0) > 1e-3]


@pytest.mark.parametrize("loss", ALL, ids=IDS)
def test_margin_derivatives_match_finite_differences(loss):
    rng = np.random.default_rng(0)
    d_near, d_far = rng.uniform(0.1, 3.0, 50), rng.uniform(0.1, 3.0, 50)
    _, ds_near, ds_far = loss.margin(d_near, d_far)
    fd_near = (loss.margin(d_near + EPS, d_far)[0] - loss.margin(d_near - EPS, d_far)[0]) / (2 * EPS)
    fd_far = (loss.margin(d_near, d_far + EPS)[0] - loss.margin(d_near, d_far - EPS)[0]) / (2 * EPS)
    np.testing.assert_allclose(np.broadcast_to(ds_near, fd_near.shape), fd_near, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.broadcast_to(ds_far, fd_far.shape), fd_far, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("loss", ALL, ids=IDS)
def test_margin_is_positive_exactly_when_the_comparison_holds(loss):
    rng = np.random.default_rng(1)
    d_near, d_far = rng.uniform(0.1, 3.0, 200), rng.uniform(0.1, 3.0, 200)
    s, _, _ = loss.margin(d_near, d_far)
    np.testing.assert_array_equal(s > 0, d_near < d_far)


@pytest.mark.parametrize("loss", ALL, ids=IDS)
def test_penalty_derivative_matches_finite_differences(loss):
    s = _away_from_kinks(np.linspace(-4, 4, 81) + 0.013)
    value, slope = loss.penalty(s)
    fd = (loss.penalty(s + EPS)[0] - loss.penalty(s - EPS)[0]) / (2 * EPS)
    np.testing.assert_allclose(slope, fd, rtol=1e-5, atol=1e-7)
    assert np.all(np.asarray(value) >= 0)


@pytest.mark.parametrize("loss", ALL, ids=IDS)
def test_reversed_penalty_is_the_penalty_at_minus_s(loss):
    """``phi(-s)`` and its derivative in ``s`` (the logistic family reads them off ``phi(s)``, no second softplus)."""
    s = -_away_from_kinks(np.linspace(-30, 30, 241) + 0.013)
    value, slope = loss.penalty(s)
    reversed_value, reversed_slope = loss.reversed_penalty(s, value, slope)
    np.testing.assert_allclose(reversed_value, loss.penalty(-s)[0], rtol=1e-12, atol=1e-14 * 30)
    np.testing.assert_allclose(reversed_slope, -loss.penalty(-s)[1], rtol=1e-12, atol=1e-15)
    fd = (loss.reversed_penalty(s + EPS, *loss.penalty(s + EPS))[0]
          - loss.reversed_penalty(s - EPS, *loss.penalty(s - EPS))[0]) / (2 * EPS)
    np.testing.assert_allclose(reversed_slope, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("loss", ALL, ids=IDS)
@pytest.mark.parametrize("cap", [0.3, 0.8])
def test_robust_penalty_is_the_minimum_over_gamma(loss, cap):
    s = np.linspace(-4, 3, 29) + 0.013
    two_sided = loss.name == "squared"
    value, slope, gamma = robust_penalty(loss, s, np.full_like(s, cap), two_sided)
    grid = np.linspace(-10, 10, 200001)
    lo = grid if two_sided else grid[grid >= 0]
    brute = np.array([np.min(loss.penalty(si + lo)[0] + cap * np.abs(lo)) for si in s])
    np.testing.assert_allclose(value, brute, atol=1e-6)
    np.testing.assert_allclose(loss.penalty(s + gamma)[0] + cap * np.abs(gamma), value, atol=1e-10)
    fd = (robust_penalty(loss, s + EPS, cap, two_sided)[0] - robust_penalty(loss, s - EPS, cap, two_sided)[0]) / (2 * EPS)
    keep = np.abs(s - 1.0) > 1e-3
    np.testing.assert_allclose(slope[keep], fd[keep], rtol=1e-5, atol=1e-6)


def test_robust_penalty_with_a_large_cap_is_the_plain_loss():
    s = np.linspace(-3, 3, 13)
    for loss in ALL[1:]:
        value, _, gamma = robust_penalty(loss, s, np.full_like(s, 100.0))
        np.testing.assert_allclose(value, loss.penalty(s)[0])
        assert np.all(gamma == 0)


def test_logistic_family_is_the_negative_log_likelihood():
    d_near, d_far, a, mu = np.array([0.5, 2.0]), np.array([1.5, 0.3]), 2.0, 0.1
    def nll(loss):
        return loss.penalty(loss.margin(d_near, d_far)[0])[0]
    np.testing.assert_allclose(nll(get_loss("ste")), -np.log(1 / (1 + np.exp(d_near - d_far))))
    k = lambda d: (1 + d / a) ** (-(a + 1) / 2)  # noqa: E731
    np.testing.assert_allclose(nll(get_loss("tste", alpha=a)), -np.log(k(d_near) / (k(d_near) + k(d_far))))
    np.testing.assert_allclose(nll(get_loss("ckl", mu=mu)), -np.log((mu + d_far) / (2 * mu + d_near + d_far)))


def test_logistic_penalty_is_softplus_and_sigmoid_at_every_scale():
    """The likelihood losses' value and slope come from one exponential (``NumpyOps.softplus_sigmoid``):
    within a few roundings of ``log(1 + e^-s)`` and ``-1 / (1 + e^s)`` from small margins to ones where a
    naive ``exp`` overflows, finite everywhere, and with the exact limits far out."""
    from scipy.special import expit

    rng = np.random.default_rng(5)
    s = np.concatenate([rng.standard_normal(2000) * scale for scale in (1e-9, 1e-2, 1.0, 30.0, 700.0)]
                       + [[0.0, -0.0, 1e-310, -1e-310, 745.0, -745.0, 1e4, -1e4]])
    value, slope = get_loss("ste").penalty(s)
    np.testing.assert_allclose(value, np.logaddexp(0.0, -s), rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(slope, -expit(-s), rtol=1e-15, atol=1e-300)
    assert np.isfinite(value).all() and np.isfinite(slope).all()
    assert value[-1] == 1e4 and slope[-1] == -1.0 and value[-2] == 0.0 and slope[-2] == 0.0
    assert value[s == 0][0] == np.log(2.0) and slope[s == 0][0] == -0.5


def test_get_loss_names_and_errors():
    assert isinstance(get_loss("GNMDS"), Hinge)
    assert get_loss(Hinge()) == Hinge()
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("nope")


def test_losses_agree_on_torch_tensors():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    d_near, d_far = rng.uniform(0.1, 3.0, 20), rng.uniform(0.1, 3.0, 20)
    for loss in ALL:
        s_np = loss.margin(d_near, d_far)[0]
        s_t = loss.margin(torch.tensor(d_near), torch.tensor(d_far))[0]
        np.testing.assert_allclose(s_t.numpy(), s_np, rtol=1e-12)
        v_np, _, _ = robust_penalty(loss, s_np, np.full_like(s_np, 0.5))
        v_t, _, _ = robust_penalty(loss, s_t, torch.full_like(s_t, 0.5))
        np.testing.assert_allclose(v_t.numpy(), v_np, rtol=1e-10)


def test_sigmoid_is_symmetric_smooth_and_has_no_envelope():
    from roembed.losses import Sigmoid

    loss = Sigmoid(slope=3.0)
    s = np.linspace(-3, 3, 25) + 0.01
    value, slope = loss.penalty(s)
    np.testing.assert_allclose(value + loss.penalty(-s)[0], 1.0)  # phi(s) + phi(-s) = 1
    fd = (loss.penalty(s + EPS)[0] - loss.penalty(s - EPS)[0]) / (2 * EPS)
    np.testing.assert_allclose(slope, fd, rtol=1e-6, atol=1e-9)
    assert np.all(slope < 0) and np.max(-slope) <= 3.0 / 4 + 1e-12
    assert loss.penalty(np.array([0.0]))[0][0] == pytest.approx(0.5)
    np.testing.assert_allclose(loss.margin(np.array([1.0]), np.array([4.0]))[0], [1.0], rtol=1e-9)  # Euclidean
    with pytest.raises(NotImplementedError, match="no closed-form outlier envelope"):
        robust_penalty(loss, s, np.full_like(s, 0.5))
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("sigmoid")  # refinement only, not a choice of loss


@pytest.mark.parametrize("loss", ALL + [Sigmoid(1.5)], ids=IDS + ["sigmoid"])
def test_second_derivatives_match_finite_differences(loss):
    rng = np.random.default_rng(2)
    d_near, d_far = rng.uniform(0.1, 3.0, 50), rng.uniform(0.1, 3.0, 50)
    snn, sff = (np.broadcast_to(v, d_near.shape) for v in loss.margin_curvature(d_near, d_far))
    fd_nn = (loss.margin(d_near + EPS, d_far)[1] - loss.margin(d_near - EPS, d_far)[1]) / (2 * EPS)
    fd_ff = (loss.margin(d_near, d_far + EPS)[2] - loss.margin(d_near, d_far - EPS)[2]) / (2 * EPS)
    np.testing.assert_allclose(snn, np.broadcast_to(fd_nn, d_near.shape), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(sff, np.broadcast_to(fd_ff, d_near.shape), rtol=1e-5, atol=1e-7)
    # the margins are separable: d s / d d_near does not move with d_far
    fd_nf = (loss.margin(d_near, d_far + EPS)[1] - loss.margin(d_near, d_far - EPS)[1]) / (2 * EPS)
    np.testing.assert_allclose(np.broadcast_to(fd_nf, d_near.shape), 0.0, atol=1e-7)
    s = _away_from_kinks(np.linspace(-4, 4, 81) + 0.013)
    fd = (loss.penalty(s + EPS)[1] - loss.penalty(s - EPS)[1]) / (2 * EPS)
    np.testing.assert_allclose(np.broadcast_to(loss.curvature(s), s.shape), fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("loss", ALL, ids=IDS)
def test_robust_curvature_is_zero_beyond_the_knees(loss):
    cap, two_sided = 0.5, loss.name == "squared"
    s = np.linspace(-4, 3, 57) + 0.013
    s = s[(np.abs(s - 1.0) > 1e-3) & (np.abs(s - loss.knee(np.asarray(cap))) > 1e-3)]
    if two_sided:
        s = s[np.abs(s - loss.upper_knee(cap)) > 1e-3]
    curvature = robust_curvature(loss, s, cap, two_sided)
    fd = (robust_penalty(loss, s + EPS, cap, two_sided)[1] - robust_penalty(loss, s - EPS, cap, two_sided)[1]) / (2 * EPS)
    np.testing.assert_allclose(np.broadcast_to(curvature, s.shape), fd, rtol=1e-5, atol=1e-7)
    gamma = robust_penalty(loss, s, cap, two_sided)[2]
    assert np.all(np.broadcast_to(curvature, s.shape)[gamma != 0] == 0)
