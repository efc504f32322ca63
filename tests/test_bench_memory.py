"""d2lpar.bench.memory: one step with glibc's malloc defaults and with
freed memory kept, each in a fresh process."""

import platform
import sys

import pytest

import d2lpar as dp


@pytest.mark.slow
@pytest.mark.skipif(
    not sys.platform.startswith('linux') or platform.libc_ver()[0] != 'glibc',
    reason='the settings are glibc on Linux only',
)
def test_mxnets_step_faults_under_the_defaults_and_not_when_kept():
    """The switch reaches the fresh processes: under glibc's defaults
    MXNet's step takes thousands of page faults (its arrays come back
    from the kernel), with the memory kept next to none."""
    result = dp.bench.compare_allocator(
        frameworks=('mxnet',), rounds=1, steps=4, warmup=3
    )
    (defaults,), (kept,) = result['mxnet']['defaults'], result['mxnet']['kept']
    assert defaults['faults'] > 1000, defaults
    assert kept['faults'] < 100, kept


def test_format_allocator_gives_each_round():
    run = {'ms': 40.04, 'faults': 6761.4, 'kernel_ms': 10.0}
    result = {'mxnet': {'defaults': [run, run], 'kept': [run]}}
    lines = dp.bench.format_allocator(result).splitlines()
    assert len(lines) == 3
    assert lines[1].split() == [
        'mxnet',
        'defaults',
        '40.0',
        '40.0;',
        '6,761',
        '6,761',
    ]
    assert lines[2].split() == ['mxnet', 'kept', '40.0;', '6,761']
