"""d2lpar.bench.limit: the FLOPs of a LeNet step."""

from d2lpar.bench import limit


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
