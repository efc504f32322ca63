"""d2lpar.bench.profile: where a step's time goes."""

import pytest

from d2lpar.bench import profile as bp
from d2lpar.bench.limit import lenet_flops

PROFILE_TABLE = """Profile Statistics:
operator
=================
Name                          Total Count        Time (ms)    Min Time (ms)    Max Time (ms)    Avg Time (ms)
----                          -----------        ---------    -------------    -------------    -------------
_backward_Convolution                  20         575.2400           8.6020          53.6180          28.7620
Pooling                                20         242.9100           4.5430          19.8110          12.1455

"""


def test_operator_ms_divides_totals_by_steps_largest_first():
    ops = bp._operator_ms(PROFILE_TABLE, 10)
    assert list(ops) == ['_backward_Convolution', 'Pooling']
    assert ops['Pooling'] == pytest.approx(24.291)


def test_format_profile_gives_each_step_against_its_own_limit():
    profile = {
        'one': dict(step_ms=60.0, limit_ms=30.0, gflops=113.0,
                    phases={'forward': 20.0, 'backward': 40.0},
                    operators={'Convolution': 12.5}),
    }  # fmt: skip
    first, op = bp.format_profile(profile).splitlines()
    assert first.startswith(
        'one: step 60.0 ms = 2.0x the limit (30.0 ms at 113 GFLOP/s on '
        'every core, measured in the same process)'
    )
    assert first.endswith('forward 20.0, backward 40.0 (ms)')
    assert op.split() == ['Convolution', '12.5', 'ms/step']


def test_format_profile_sets_few_threads_against_their_own_limit():
    """A step on fewer threads than cores is shown against the limit on
    every core and, on the next line, against its own threads' limit."""
    profile = {
        'one, 1 thread': dict(step_ms=90.0, limit_ms=30.0, gflops=120.0,
                              gflops_own=60.0, limit_own_ms=60.0,
                              phases={'forward': 90.0},
                              operators={'Convolution': 12.5}),
    }  # fmt: skip
    first, own, op = bp.format_profile(profile).splitlines()
    assert '= 3.0x the limit (30.0 ms at 120 GFLOP/s on every core' in first
    assert own.strip() == (
        '= 1.5x the limit on its own threads (60.0 ms at 60 GFLOP/s)'
    )
    assert op.split()[0] == 'Convolution'


def test_format_profile_sums_the_operators_it_does_not_name():
    ops = {'Convolution': 10.0, 'Pooling': 6.0, 'relu': 3.0, 'add': 1.0}
    profile = {
        'one': dict(step_ms=60.0, limit_ms=30.0, gflops=113.0,
                    phases={'forward': 60.0}, operators=ops),
    }  # fmt: skip
    lines = bp.format_profile(profile, top=2).splitlines()
    assert [line.split()[0] for line in lines[1:3]] == [
        'Convolution',
        'Pooling',
    ]
    assert lines[3].split() == ['2', 'other', 'operators', '4.0', 'ms/step']
    assert len(lines) == 4


def test_operator_labels_show_in_a_legend():
    # matplotlib drops labels that start with an underscore
    assert bp.operator_label('_backward_Convolution') == (
        'Convolution (backward)'
    )
    assert bp.operator_label('_npx_relu') == 'relu'
    assert bp.operator_label('_backward_np_dot') == 'dot (backward)'
    assert bp.operator_label('Pooling') == 'Pooling'


def test_plot_profile_names_the_chosen_operators_and_sums_the_rest():
    """names= puts exactly those operators in the legend, in that order,
    however they rank, and every other operator into "other" (the bar
    still adds up to all operators)."""
    ops = {'Convolution': 10.0, 'DeleteVariable': 5.0, '_npx_relu': 1.0,
           'Pooling': 3.0}  # fmt: skip
    profile = {'one': dict(operators=ops)}
    fig = bp.plot_profile(profile, names=['_npx_relu', 'Convolution'])
    ax = fig.axes[0]
    assert ax.get_legend_handles_labels()[1] == [
        'relu',
        'Convolution',
        'other',
    ]
    widths = [patch.get_width() for patch in ax.patches]
    assert widths == pytest.approx([1.0, 10.0, 8.0])
    # Without names: the largest, so the small ReLU is in "other".
    fig = bp.plot_profile(profile, top=2)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels == ['Convolution', 'DeleteVariable', 'other']


@pytest.mark.slow
def test_profile_training_gives_every_configuration_in_order():
    """The budgeted configurations share a process, the unbudgeted one
    has its own, and each ran with its own threads (no budget leaks from
    one to the next); results come back under their labels, in order,
    each with all four phases and the step's operators (convolutions
    among them), and waiting is what the synchronised phases add. Every
    plain step's time and every synchronised step's phase sum are kept,
    Python queues a step in less than the step, and one device's
    operators add up to at most a profiled step's time."""
    from d2lpar.threads import available_cores

    configs = (('two', 2, True), ('one, 1 thread', 1, False),
               ('one', 1, True))  # fmt: skip
    result = bp.profile_training(configs, batch_size=16, steps=2)
    assert list(result) == ['two', 'one, 1 thread', 'one']
    assert result['two']['threads'] == [1, 1]
    assert result['one, 1 thread']['threads'] == [1]
    assert result['one']['threads'] == [available_cores()]
    # fewer threads than cores: the product on them too, and its limit
    few = result['one, 1 thread']
    assert ('gflops_own' in few) == (available_cores() > 1)
    assert 'gflops_own' not in result['one']
    if 'gflops_own' in few:
        assert few['limit_own_ms'] == pytest.approx(
            1000 * lenet_flops(16) / (few['gflops_own'] * 1e9)
        )
    for r in result.values():
        assert set(r['phases']) == {'forward', 'backward', 'allreduce',
                                    'update'}  # fmt: skip
        assert 'Convolution' in r['operators']
        assert r['waiting'] == pytest.approx(
            max(0.0, sum(r['phases'].values()) - r['step_ms'])
        )
        # every plain and synchronised step of the 2 is kept (a median
        # of two is their mean); Python has queued a step before the
        # devices finish it
        assert len(r['step_times']) == len(r['phase_sums']) == 2
        assert r['step_ms'] == pytest.approx(sum(r['step_times']) / 2)
        assert sum(r['phases'].values()) == pytest.approx(
            sum(r['phase_sums']) / 2
        )
        assert 0 < r['queue_ms'] <= r['step_ms']
    # One device runs one operator at a time: under the profiler they
    # add up to at most a profiled step's wall-clock time.
    for label in ('one, 1 thread', 'one'):
        r = result[label]
        assert sum(r['operators'].values()) <= r['profiled_ms']
    for r in result.values():
        # the limit at the rate measured in the same process
        assert r['limit_ms'] == pytest.approx(
            1000 * lenet_flops(16) / (r['gflops'] * 1e9)
        )
