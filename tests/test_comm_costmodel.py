"""d2lpar.comm.costmodel: the alpha-beta model and d2l's worked examples."""

import math

import pytest

from d2lpar.comm.costmodel import allreduce_time, busiest_bytes, fit_ring

MB, GB = 1e6, 1e9


def test_d2l_pcie_example():
    """d2l's parameter-server chapter: 160 MB on 4 GPUs over 16 GB/s PCIe
    takes 60 ms through one GPU, 80 ms through the CPU, and 15 ms when
    each GPU aggregates a quarter."""
    assert allreduce_time('naive', 4, 160 * MB, 16 * GB) == pytest.approx(
        0.060
    )
    assert allreduce_time('cpu', 4, 160 * MB, 16 * GB) == pytest.approx(0.080)
    assert allreduce_time('sharded', 4, 160 * MB, 16 * GB) == pytest.approx(
        0.015
    )


def test_ring_bandwidth_term_grows_towards_2n_over_b():
    """Without latency, ring time 2(k-1)N/(kB) grows strictly with k
    towards 2N/B, and for 8 GPUs over 3 NVLinks of 18 GB/s it is 7/8 of
    d2l's 2N/B estimate."""
    two_n = 2 * 160 * MB / (54 * GB)
    times = [
        allreduce_time('ring', k, 160 * MB, 54 * GB)
        for k in (2, 3, 8, 64, 1024)
    ]
    assert all(a < b < two_n for a, b in zip(times, times[1:]))
    assert times[-1] == pytest.approx(two_n * 1023 / 1024)
    assert times[2] == pytest.approx(7 / 8 * two_n)


@pytest.mark.parametrize('k', [3, 4, 5, 8, 16])
def test_doubling_wins_small_arrays_ring_wins_large(k):
    """With latency, recursive doubling's log2(k) (+2) messages beat the
    ring's 2(k-1) for a 4 KB array, and the ring's 1/k chunks beat
    doubling's whole arrays for 160 MB."""
    link = dict(bandwidth=16 * GB, latency=10e-6)
    assert allreduce_time('doubling', k, 4e3, **link) < allreduce_time(
        'ring', k, 4e3, **link
    )
    assert allreduce_time('ring', k, 160 * MB, **link) < allreduce_time(
        'doubling', k, 160 * MB, **link
    )


def test_doubling_messages():
    """Recursive doubling sends log2(k) messages of N for a power of two,
    and two more (fold, unfold) otherwise."""
    for k, messages in [(2, 1), (3, 3), (4, 2), (5, 4), (8, 3), (12, 5)]:
        assert allreduce_time('doubling', k, 0, GB, 1.0) == messages
        assert allreduce_time('doubling', k, MB, MB, 0.0) == messages


def test_busiest_bytes_agrees_with_the_time():
    """Without latency, the ring's and the sharded algorithm's time is
    their busiest device's bytes over B (sends overlap receives)."""
    for name in ('ring', 'sharded'):
        for k in (2, 4, 7):
            assert allreduce_time(name, k, 160 * MB, 16 * GB) == pytest.approx(
                busiest_bytes(name, k, 160 * MB) / (16 * GB)
            )
    with pytest.raises(ValueError, match="'cpu' has no schedule"):
        busiest_bytes('cpu', 4, MB)


def test_unknown_algorithm_and_one_device():
    """One device costs nothing; unknown names are refused."""
    assert allreduce_time('ring', 1, MB, GB) == 0
    with pytest.raises(ValueError, match='unknown algorithm'):
        allreduce_time('tree', 4, MB, GB)


def test_memory_traffic_ceilings():
    """Against a plain copy, a perfect fused allreduce can reach 1/k of
    the copy's speed (0.5 for 2 devices) and ours 2/(7(k-1))."""
    from d2lpar.comm.costmodel import memory_traffic

    copy = memory_traffic('copy', 2, MB)
    assert copy / memory_traffic('ideal', 2, MB) == pytest.approx(0.5)
    assert copy / memory_traffic('ideal', 4, MB) == pytest.approx(0.25)
    for name in ('naive', 'sharded', 'ring'):
        assert copy / memory_traffic(name, 2, MB) == pytest.approx(2 / 7)
    with pytest.raises(ValueError, match='unknown algorithm'):
        memory_traffic('tree', 2, MB)


def test_memory_traffic_counts_the_implementation():
    """7(k-1)N is what the ring's schedule implies: (k-1)N bytes received
    in each phase; reduce-phase bytes are copied (2) and added (3),
    gather-phase bytes copied (2)."""
    from d2lpar.comm import schedules
    from d2lpar.comm.costmodel import memory_traffic

    k, n = 4, 1000
    schedule = schedules.ring_schedule(k)
    half = len(schedule) // 2
    reduce_in = sum(schedules.traffic(schedule[:half], k, n)[1])
    gather_in = sum(schedules.traffic(schedule[half:], k, n)[1])
    assert 5 * reduce_in + 2 * gather_in == memory_traffic('ring', k, 4 * n)


def test_memory_traffic_doubling_counts_its_schedule():
    """Doubling's count is its schedule's: every reducing transfer
    copies (2) and adds (3) its bytes, every overwrite copies them (2);
    on two devices that is 10N, more than the ring's 7N."""
    from d2lpar.comm import schedules
    from d2lpar.comm.costmodel import memory_traffic

    for k in (2, 3, 4, 5, 8):
        counted = sum(
            5 if t.reduce else 2
            for step in schedules.doubling_schedule(k)
            for t in step
        )
        assert memory_traffic('doubling', k, MB) == counted * MB, k
    assert memory_traffic('doubling', 2, MB) == 10 * MB
    assert memory_traffic('doubling', 2, MB) > memory_traffic('ring', 2, MB)


def test_engine_bytes_textbook_counts_and_band():
    """One parameter server: 2kN per step; a ring all-reduce: 2(k-1)N;
    the band lies around the model, and unknown engines are refused."""
    from d2lpar.comm.costmodel import engine_bytes

    assert engine_bytes('kvstore', 2, MB)[0] == 4 * MB
    assert engine_bytes('horovod', 2, MB)[0] == 2 * MB
    assert engine_bytes('horovod', 4, MB)[0] == 6 * MB
    for engine in ('kvstore', 'horovod'):
        model, low, high = engine_bytes(engine, 3, MB)
        assert low < model < high
    with pytest.raises(ValueError, match='unknown engine'):
        engine_bytes('mpi', 2, MB)


def test_crossover_is_where_ring_and_doubling_meet():
    """On four devices the two predicted times meet at 8 alpha B (ring:
    6 messages of N/4, doubling: 2 of N); doubling is the faster below
    that size and the ring above."""
    from d2lpar.comm import allreduce_time, crossover

    bandwidth, latency = 2e9, 5e-6
    at = crossover(4, bandwidth, latency)
    assert at == pytest.approx(8 * latency * bandwidth)
    ring = allreduce_time('ring', 4, at, bandwidth, latency)
    assert allreduce_time('doubling', 4, at, bandwidth, latency) == (
        pytest.approx(ring)
    )
    for nbytes, faster in ((at / 2, 'doubling'), (2 * at, 'ring')):
        times = {
            a: allreduce_time(a, 4, nbytes, bandwidth, latency)
            for a in ('ring', 'doubling')
        }
        assert min(times, key=times.get) == faster


def test_fit_ring_recovers_the_model_it_fits():
    """Times predicted by allreduce_time for a known alpha and B give
    them back (the small array's bytes aside, which the fit neglects),
    and a large time that alpha leaves no room in gives B = inf."""
    for k in (2, 4):
        alpha, bandwidth = 50e-6, 5e9
        t_small = allreduce_time('ring', k, 0, bandwidth, alpha)
        t_large = allreduce_time('ring', k, 64e6, bandwidth, alpha)
        fitted = fit_ring(k, t_small, 64e6, t_large)
        assert fitted[0] == pytest.approx(alpha)
        assert fitted[1] == pytest.approx(bandwidth)
    assert fit_ring(2, 2e-3, 64e6, 1e-3)[1] == math.inf
