"""d2lpar.techniques.scaling: the learning-rate rules, the warm-up schedule, and the
scaling experiment's loop."""

import math

import mxnet as mx
import numpy as onp
import pytest
from mxnet import np
from numpy.testing import assert_allclose

import d2lpar as dp
from d2lpar.techniques import scaling


def test_scaled_lr_rules():
    """linear multiplies by k, sqrt by sqrt(k), none keeps the rate."""
    assert_allclose(dp.scaled_lr(0.1, 4), 0.4)
    assert_allclose(dp.scaled_lr(0.1, 8, 'linear'), 0.8)
    assert_allclose(dp.scaled_lr(0.1, 4, 'sqrt'), 0.2)
    assert_allclose(dp.scaled_lr(0.1, 2, 'sqrt'), 0.1 * math.sqrt(2))
    assert dp.scaled_lr(0.1, 4, 'none') == 0.1
    assert dp.scaled_lr(0.3, 1) == 0.3


def test_scaled_lr_refuses_bad_arguments():
    """An unknown rule, a non-positive k or rate is refused by name."""
    with pytest.raises(ValueError, match="unknown rule 'square'"):
        dp.scaled_lr(0.1, 2, 'square')
    with pytest.raises(ValueError, match='k must be positive'):
        dp.scaled_lr(0.1, 0)
    with pytest.raises(ValueError, match='base_lr must be positive'):
        dp.scaled_lr(-0.1, 2)


def test_warmup_ramps_linearly_then_stays():
    """With 4 warm-up steps to 0.5: 0.1, 0.2, 0.3, 0.4 (equal steps from
    peak/5), then 0.5 at step 4 and for ever after."""
    schedule = dp.warmup(0.5, 4)
    assert_allclose(
        [schedule(t) for t in range(8)],
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5, 0.5],
    )


def test_warmup_from_a_given_start_and_without_warmup():
    """start_lr sets step 0's rate; 0 warm-up steps is a constant rate."""
    schedule = dp.warmup(1.0, 2, start_lr=0.2)
    assert_allclose([schedule(t) for t in range(4)], [0.2, 0.6, 1.0, 1.0])
    assert [dp.warmup(0.3, 0)(t) for t in range(3)] == [0.3] * 3


def test_warmup_refuses_bad_arguments():
    """Negative or non-integer warm-up lengths are refused."""
    with pytest.raises(ValueError, match='warmup_steps must be >= 0'):
        dp.warmup(0.1, -1)
    with pytest.raises(TypeError, match='warmup_steps must be an int'):
        dp.warmup(0.1, 2.5)


def small_data(n=48, n_test=20, seed=0):
    rng = onp.random.default_rng(seed)
    return (
        np.array(rng.uniform(size=(n, 1, 28, 28)), dtype='float32'),
        np.array(rng.integers(0, 10, n), dtype='int32'),
        np.array(rng.uniform(size=(n_test, 1, 28, 28)), dtype='float32'),
        np.array(rng.integers(0, 10, n_test), dtype='int32'),
    )


def test_train_scaling_records_steps_rates_and_evaluations():
    """k=2, 4 per device on 48 examples: 6 steps per epoch, 12 in two
    epochs, rates from the schedule, an evaluation at step 0 and every
    16 examples (2 steps)."""
    run = dp.train_scaling(
        small_data(), 2, 4, dp.warmup(0.4, 3), 2, eval_every=16
    )
    assert run.batch_size == 8
    assert_allclose(run.lrs, [0.1, 0.2, 0.3] + [0.4] * 9)
    assert run.steps == list(range(0, 13, 2))
    assert len(run.test_acc) == len(run.steps)


def test_train_scaling_on_k_contexts_equals_one_context():
    """The experiment's shortcut is exact up to rounding: the same run on
    2 real CPU contexts ends with the parameters of one context
    (rtol 1e-5, atol 1e-6)."""
    data = small_data()
    one = dp.train_scaling(data, 2, 5, dp.warmup(0.3, 2), 2, seed=3)
    two = dp.train_scaling(
        data,
        2,
        5,
        dp.warmup(0.3, 2),
        2,
        seed=3,
        devices=[mx.cpu(0), mx.cpu(1)],
    )
    for p, q in zip(one.params, two.params):
        assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-5, atol=1e-6)


def test_train_scaling_shares_the_order_of_examples_across_k():
    """Seed s fixes the order: one step of k=2 with the linear rule from
    the same start equals one step on the concatenation of k=1's first
    two batches at twice the rate (it is that batch)."""
    data = small_data()
    big = dp.train_scaling(data, 2, 4, dp.warmup(0.2, 0), 1, seed=1)
    X, y = data[0], data[1]
    order = onp.random.default_rng((1, 0)).permutation(48)
    params = [dp.get_params(dp.init_mlp_params(1), mx.cpu(0))]
    for start in range(0, 48, 8):
        idx = np.array(order[start : start + 8])
        dp.train_batch(X[idx], y[idx], params, [mx.cpu(0)], 0.2, net=dp.mlp)
    for p, q in zip(big.params, params[0]):
        assert_allclose(p.asnumpy(), q.asnumpy(), rtol=1e-5, atol=1e-6)


def test_steps_to_finds_the_first_step_at_the_target():
    """steps_to returns the first recorded step at or above the target,
    None when no evaluation reached it."""
    run = scaling.ScalingRun(
        1, 8, 0, [0, 4, 8, 12], [0.1, 0.6, 0.5, 0.7], [], []
    )
    assert run.steps_to(0.6) == 4
    assert run.steps_to(0.65) == 12
    assert run.steps_to(0.8) is None
    assert run.final_acc == 0.7


def test_train_scaling_refuses_eval_every_off_the_batch():
    """eval_every must be a multiple of the global batch."""
    with pytest.raises(ValueError, match='eval_every=10 must be a multiple'):
        dp.train_scaling(
            small_data(), 2, 4, dp.warmup(0.1, 0), 1, eval_every=10
        )


def test_plot_scaling_draws_one_line_per_configuration_per_panel():
    """Two panels (examples, steps), a mean line per configuration."""
    runs = {
        label: [
            scaling.ScalingRun(k, 8 * k, s, [0, 1, 2], [0.1, 0.3, 0.5], [], [])
            for s in range(3)
        ]
        for k, label in ((1, 'k=1'), (2, 'k=2'))
    }
    fig = dp.plot_scaling(runs)
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 2]
    assert list(fig.axes[0].get_lines()[1].get_xdata()) == [0, 16, 32]


def test_distance_equals_the_norm_of_the_concatenated_difference():
    """distance treats a list of arrays as one vector: it equals numpy's
    norm of all differences concatenated (rtol 1e-5)."""
    rng = onp.random.default_rng(0)
    shapes = [shape for _, shape in scaling.MLP_SHAPES]
    a = [rng.normal(size=s).astype('float32') for s in shapes]
    b = [rng.normal(size=s).astype('float32') for s in shapes]
    expected = onp.linalg.norm(
        onp.concatenate([(p - q).ravel() for p, q in zip(a, b)])
    )
    got = dp.scaling.distance(
        [np.array(p) for p in a], [np.array(q) for q in b]
    )
    assert_allclose(got, expected, rtol=1e-5)
    assert (
        dp.scaling.distance([np.array(p) for p in a], [np.array(p) for p in a])
        == 0
    )


def test_distance_refuses_lists_of_different_parameters():
    """Different lengths or shapes are refused, not silently zipped."""
    with pytest.raises(ValueError, match='distance: shapes'):
        dp.scaling.distance([np.zeros(3)], [np.zeros(3), np.zeros(2)])
    with pytest.raises(ValueError, match='distance: shapes'):
        dp.scaling.distance([np.zeros(3)], [np.zeros(4)])
