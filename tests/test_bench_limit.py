"""d2lpar.bench.limit: the FLOPs of a LeNet step."""

import numpy as onp
import pytest
from mxnet import np
from numpy.testing import assert_allclose

from d2lpar.bench import limit, timing


def test_lenet_flops_counts_every_product():
    """Multiply-adds of LeNet's layers, from their output sizes (26x26 and
    9x9 after the convolutions): forward once, backward twice, less the
    first layer's input gradient; 2 operations each."""
    macs = [20 * 1 * 3 * 3 * 26 * 26, 50 * 20 * 5 * 5 * 9 * 9, 800 * 128,
            128 * 10]  # fmt: skip
    expected = 2 * (3 * sum(macs) - macs[0])
    assert limit.lenet_flops() == expected
    assert limit.lenet_flops(256) == 256 * expected
    conv = 2 * (2 * macs[0] + 3 * macs[1])
    assert limit.lenet_flops(layers='conv') == conv
    assert limit.lenet_flops(layers='dense') == expected - conv


def test_each_timed_product_is_a_full_matrix_product():
    """The rate counts 2 n**3 operations per call: each product must
    compute all of A times B (np.dot) or A times B transposed (oneDNN's
    inner product), not a cheaper shortcut."""
    rng = onp.random.default_rng(0)
    A_, B_ = rng.standard_normal((2, 16, 16)).astype('float32')
    A, B = np.array(A_), np.array(B_)
    got = {name: fn().asnumpy() for name, fn in limit.products(A, B).items()}
    assert_allclose(got['np.dot (OpenBLAS)'], A_ @ B_, rtol=1e-4, atol=1e-4)
    assert_allclose(
        got['npx.fully_connected (oneDNN)'], A_ @ B_.T, rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize(
    'seconds', [(0.5, 0.1), (0.1, 0.5)], ids=['oneDNN', 'OpenBLAS']
)
def test_matmul_rate_is_the_faster_products_rate(monkeypatch, seconds):
    """Each product is timed (it really runs: an n x n product) and its
    rate is 2 n**3 operations over its median seconds; the limit takes
    the faster product, whichever it is (timing np.dot alone put the
    limit 2-5 times too low where OpenBLAS ran slow)."""
    n, timed = 32, iter(seconds)
    shapes = []

    def median_seconds(fn, repeats, warmup):
        shapes.append(fn().shape)
        return next(timed)

    monkeypatch.setattr(timing, 'median_seconds', median_seconds)
    rates = limit.matmul_rates(n, repeats=1)
    assert shapes == [(n, n), (n, n)]
    assert list(rates) == list(limit.products(np.ones(1), np.ones(1)))
    assert list(rates.values()) == [2 * n**3 / s / 1e9 for s in seconds]
    timed = iter(seconds)
    assert limit.matmul_rate(n, repeats=1) == 2 * n**3 / min(seconds) / 1e9
