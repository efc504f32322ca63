"""d2lpar.bench.step: the step benchmark measures and reports honestly."""

import multiprocessing
import os
import subprocess
import sys
import time

import pytest

from d2lpar.bench import step as bench
from d2lpar.cli import main


def test_fresh_process_sees_the_variable_and_parent_keeps_its_own():
    """The child starts with the variable asked for (MXNet reads it once,
    at start), and the parent's environment is left as it was."""
    before = os.environ.get('MXNET_CPU_TEMP_COPY')
    seen = bench._in_fresh_process(
        {'MXNET_CPU_TEMP_COPY': '7'}, os.getenv, ('MXNET_CPU_TEMP_COPY',), 120
    )
    assert seen == '7'
    assert os.environ.get('MXNET_CPU_TEMP_COPY') == before


def test_compare_steps_keeps_every_round_of_every_setting(monkeypatch):
    """Each round runs every pool size in its own process (their order
    alternating), each child's times land in their own setting's rounds,
    and the row's step is the median of its rounds."""
    calls = []

    def child(env, fn, arg_list, timeout):
        pool = env['MXNET_CPU_TEMP_COPY']
        calls.append((pool, [a[0] for a in arg_list]))
        r = sum(1 for c in calls if c[0] == pool)  # this pool's round
        return [int(pool) * k * r / 1000 for k, *_ in arg_list]

    monkeypatch.setattr(bench, 'in_fresh_process_each', child)
    rows = bench.compare_steps((1, 2), ('4', '64'), rounds=3)
    assert calls == [
        ('4', [1, 2]), ('64', [1, 2]),
        ('64', [1, 2]), ('4', [1, 2]),
        ('4', [1, 2]), ('64', [1, 2]),
    ]  # fmt: skip
    got = {(r['temp_copy'], r['devices']): r for r in rows}
    assert got['64', 2]['rounds'] == [0.128, 0.256, 0.384]
    assert got['64', 2]['sec_per_step'] == 0.256
    assert got['4', 1]['rounds'] == [0.004, 0.008, 0.012]


@pytest.mark.slow
def test_compare_steps_measures_in_a_child():
    """A real child process times real steps: positive seconds, one per
    round, for exactly the settings asked for."""
    rows = bench.compare_steps(
        (1, 2), ('4',), batch_size=8, repeats=1, rounds=1
    )
    assert sorted((r['devices'], r['temp_copy']) for r in rows) == [
        (1, '4'),
        (2, '4'),
    ]
    for r in rows:
        assert len(r['rounds']) == 1 and 0 < r['rounds'][0] < 60


def test_format_steps_speedups():
    """Speed-ups are computed against 1 device with the same pool."""
    rows = [
        dict(devices=1, temp_copy='4', sec_per_step=0.1),
        dict(devices=2, temp_copy='4', sec_per_step=0.2),
        dict(devices=1, temp_copy='64', sec_per_step=0.1),
        dict(devices=2, temp_copy='64', sec_per_step=0.05),
    ]
    lines = bench.format_steps(rows).splitlines()
    assert lines[2].split()[-1] == '0.50x'
    assert lines[4].split()[-1] == '2.00x'
    rows[3]['rounds'] = [0.04, 0.05, 0.07]
    assert bench.format_steps(rows).splitlines()[4].split()[-4:] == [
        '2.00x', '40.0', '50.0', '70.0'
    ]  # fmt: skip


def test_format_steps_without_one_device_has_no_speedups():
    """Two devices alone (the pool comparison): no speed-up column, which
    would need one device's step, and every round."""
    rows = [
        dict(devices=2, temp_copy='4', sec_per_step=0.2, rounds=[0.2, 0.3]),
        dict(devices=2, temp_copy='64', sec_per_step=0.1, rounds=[0.1, 0.1]),
    ]
    lines = bench.format_steps(rows).splitlines()
    assert 'speed-up' not in lines[0] and 'x' not in ''.join(lines[1:])
    assert lines[1].split() == ['4', '2', '200.0', '200.0', '300.0']


@pytest.mark.parametrize('preset, expected', [(None, '64'), ('8', '8')])
def test_import_sets_temp_copy_unless_user_did(preset, expected):
    """Importing d2lpar enlarges MXNet's CPU scratch pool so CPU contexts
    can run side by side, but never overrides a value the user set."""
    env = {k: v for k, v in os.environ.items() if k != 'MXNET_CPU_TEMP_COPY'}
    if preset:
        env['MXNET_CPU_TEMP_COPY'] = preset
    out = subprocess.run(
        [
            sys.executable,
            '-c',
            'import os, d2lpar; print(os.environ["MXNET_CPU_TEMP_COPY"])',
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip() == expected


def test_allreduce_command_prints_table_and_targets(tmp_path, capsys):
    """`python -m d2lpar bench allreduce` prints a line per algorithm,
    then a verdict per target for sizes from 16 MB, and writes the
    rows where --out says."""
    import json

    out = tmp_path / 'rows.json'
    assert (
        main(
            [
                'bench',
                'allreduce',
                '--devices',
                '2',
                '--sizes-mb',
                '16',
                '--repeats',
                '1',
                '--out',
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out.splitlines()
    verdicts = printed[
        printed.index('targets (sizes of 16 MB and more):') + 1 :
    ]
    assert len(verdicts) == 3
    assert all(
        v.startswith('k=2 16 MB: ') and v.endswith((': met', ': missed'))
        for v in verdicts
    )
    from d2lpar.bench import allreduce as ab

    rows_per_size = len(ab.BASELINES) + len(ab.ALGORITHMS)
    assert len(json.load(open(out))) == rows_per_size


def _pid_and(x):
    return os.getpid(), x


def test_in_fresh_process_each_runs_every_setting_in_one_child_in_order():
    got = bench.in_fresh_process_each({}, _pid_and, [(1,), (2,), (3,)], 120)
    pids = {pid for pid, _ in got}
    assert [x for _, x in got] == [1, 2, 3]
    assert len(pids) == 1 and os.getpid() not in pids


def test_round_order_alternates_after_one_device():
    # One device first: after several it would keep one thread.
    assert bench.round_order((1, 2, 4), 0) == [1, 2, 4]
    assert bench.round_order((1, 2, 4), 1) == [1, 4, 2]
    assert bench.round_order((2, 4), 1) == [4, 2]


def _starts_a_process():
    child = multiprocessing.get_context('spawn').Process(
        target=time.sleep, args=(0,)
    )
    child.start()
    child.join()
    return child.exitcode


def _raises():
    raise KeyError('from the child')


def test_fresh_process_may_start_processes_and_passes_errors_back():
    # d2l's loader starts worker processes: a daemonic child could not.
    assert bench._in_fresh_process({}, _starts_a_process, (), 120) == 0
    with pytest.raises(KeyError, match='from the child'):
        bench._in_fresh_process({}, _raises, (), 120)


def test_fresh_process_that_runs_too_long_is_stopped():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match='sleep'):
        bench._in_fresh_process({}, time.sleep, (60,), 3)
    assert time.monotonic() - start < 30
