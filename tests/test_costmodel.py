"""d2lpar.costmodel: the alpha-beta model and d2l's worked examples."""
import pytest

from d2lpar.costmodel import allreduce_time

MB, GB = 1e6, 1e9


def test_d2l_pcie_example():
    """d2l's parameter-server chapter: 160 MB on 4 GPUs over 16 GB/s PCIe
    takes 60 ms through one GPU, 80 ms through the CPU, and 15 ms when
    each GPU aggregates a quarter."""
    assert allreduce_time('naive', 4, 160 * MB, 16 * GB) == \
        pytest.approx(0.060)
    assert allreduce_time('cpu', 4, 160 * MB, 16 * GB) == \
        pytest.approx(0.080)
    assert allreduce_time('sharded', 4, 160 * MB, 16 * GB) == \
        pytest.approx(0.015)


def test_ring_bandwidth_term_independent_of_k():
    """Without latency, ring time approaches 2N/B as k grows, and for 8
    GPUs over 3 NVLinks of 18 GB/s it is below d2l's 2N/B estimate."""
    times = [allreduce_time('ring', k, 160 * MB, 54 * GB)
             for k in (2, 8, 64, 1024)]
    assert times == sorted(times)
    assert times[-1] == pytest.approx(2 * 160 * MB / (54 * GB), rel=1e-2)
    assert times[1] == pytest.approx(7 / 8 * 2 * 160 * MB / (54 * GB))


def test_latency_dominates_small_messages():
    """For tiny arrays the ring's 2(k-1) messages cost more than the
    naive root's bandwidth saving: latency wins."""
    small = dict(nbytes=4e3, bandwidth=10 * GB, latency=10e-6)
    assert allreduce_time('ring', 8, **small) > \
        0.9 * allreduce_time('naive', 8, **small)


def test_unknown_algorithm_and_one_device():
    """One device costs nothing; unknown names are refused."""
    assert allreduce_time('ring', 1, MB, GB) == 0
    with pytest.raises(ValueError, match='unknown algorithm'):
        allreduce_time('tree', 4, MB, GB)
