"""d2lpar.bench.frameworks: MXNet's step beside PyTorch's, and by kind."""

import warnings

import pytest

from d2lpar.bench import frameworks as fw

# Operator names as each framework's profiler printed them for LeNet's
# step here (MXNet 1.9.1's aggregate table, torch.profiler's
# key_averages), with the kind each belongs to.
NAMES = {
    'Convolution': 'convolution',
    '_backward_Convolution': 'convolution',
    'aten::mkldnn_convolution': 'convolution',
    'aten::convolution_backward': 'convolution',
    'Pooling': 'pooling',
    '_backward_Pooling': 'pooling',
    'aten::avg_pool2d': 'pooling',
    'aten::avg_pool2d_backward': 'pooling',
    '_npx_relu': 'ReLU',
    '_backward_relu': 'ReLU',
    'Activation': 'ReLU',
    '_backward_Activation': 'ReLU',
    'aten::clamp_min': 'ReLU',
    'aten::threshold_backward': 'ReLU',
    'FullyConnected': 'dense',
    '_backward_FullyConnected': 'dense',
    'aten::mm': 'dense',
    '_np_transpose': 'rest',
    'DeleteVariable': 'rest',
    'aten::fill_': 'rest',
    'aten::log_softmax': 'rest',
    'aten::sum': 'rest',
    'autograd::engine::evaluate_function: ConvolutionBackward0': 'rest',
    'ReluBackward0': 'rest',
    'AvgPool2DBackward0': 'rest',
}


def test_op_kind_sorts_both_frameworks_names():
    """Each profiler name falls into its kind; PyTorch's autograd nodes,
    named for the operator whose backward they call but holding only the
    engine's own time, count as the rest, not as that operator."""
    assert {n: fw.op_kind(n) for n in NAMES} == NAMES


def test_by_kind_adds_every_operator_once():
    ops = {'Convolution': 3.0, 'aten::mm': 2.0, 'DeleteVariable': 0.5,
           'Pooling': 1.0, '_npx_relu': 0.25}  # fmt: skip
    kinds = fw.by_kind(ops)
    assert list(kinds) == list(fw.KINDS)
    assert kinds == {'convolution': 3.0, 'pooling': 1.0, 'ReLU': 0.25,
                     'dense': 2.0, 'rest': 0.5}  # fmt: skip


def test_round_order_alternates():
    assert fw.round_order(['mxnet', 'pytorch'], 0) == ['mxnet', 'pytorch']
    assert fw.round_order(['mxnet', 'pytorch'], 1) == ['pytorch', 'mxnet']


@pytest.mark.parametrize('framework', fw.FRAMEWORKS)
def test_profile_counts_nothing_twice(framework):
    """The operators' times add up to no more than the profiled steps'
    wall-clock time (PyTorch's self times, not totals, which count a
    convolution once per nested call), the kinds to the operators' sum,
    and the convolutions take time."""
    if framework not in fw.available_frameworks():
        pytest.skip(f'{framework} is not installed')
    p = fw.profile_step(framework, batch_size=64, steps=3)
    total = sum(p['operators'].values())
    assert sum(p['kinds'].values()) == pytest.approx(total)
    assert 0 < total <= p['profiled_ms']
    assert p['kinds']['convolution'] > 0


def test_compare_keeps_every_core_for_one_device_in_every_round():
    """Every round times each framework on 1 and 2 devices and profiles
    one; MXNet's one device gets every core in the second round too
    (after two devices ran), with no ThreadBudgetWarning (a context that
    ran with fewer threads would keep them)."""
    import d2lpar as dp

    if fw.available_frameworks() != list(fw.FRAMEWORKS):
        pytest.skip('needs both frameworks')
    with warnings.catch_warnings():
        warnings.simplefilter('error', dp.threads.ThreadBudgetWarning)
        result = fw.compare_frameworks(rounds=2, steps=2, profile_steps=1,
                                       batch_size=32)  # fmt: skip
    for f in fw.FRAMEWORKS:
        assert {k: len(v) for k, v in result['ms'][f].items()} == {1: 2, 2: 2}
        assert all(len(v) == 2 for v in result['kinds'][f].values())
    assert result['torch_threads'] == result['cores']
    one = fw._mxnet_devices(1)[0]
    assert dp.worker_threads(one) == dp.threads.total_threads()
    table = fw.format_frameworks(result).splitlines()
    assert table[0].split() == ['MXNet', 'PyTorch']
    assert [line.split()[0] for line in table[4:9]] == list(fw.KINDS)


# oneDNN's verbose lines as MXNet 1.9.1 (oneDNN 2.4) and PyTorch 2.13
# (oneDNN 3.12) printed them here, shortened in the middle.
ONEDNN_2 = """dnnl_verbose,info,oneDNN v2.4.4 (commit abc)
dnnl_verbose,info,cpu,runtime:OpenMP
dnnl_verbose,exec,cpu,convolution,x64:gemm:jit,forward_training,src_f32,,alg:convolution_direct,mb256_ic1oc20,201.078
dnnl_verbose,exec,cpu,pooling_v2,simple_nchw:any,backward_data,src_f32,,alg:pooling_avg,mb256ic20,38.5742
not a log line
"""
ONEDNN_3 = """onednn_verbose,v1,info,oneDNN v3.12.0 (commit 80afa71)
onednn_verbose,v1,primitive,info,template:operation,engine,primitive
onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32,,,20x1x3x3,0.00415039
onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,backward_weights,src:f32,,alg:convolution_direct,mb256,46.0139
"""


def test_parse_onednn_verbose_reads_both_versions():
    """The version and every executed primitive, in oneDNN 2's and 3's
    formats; info and template lines are not primitives."""
    assert fw.parse_onednn_verbose(ONEDNN_2) == (
        'oneDNN v2.4.4',
        [('convolution', 'x64:gemm:jit', 'forward_training', 201.078),
         ('pooling_v2', 'simple_nchw:any', 'backward_data', 38.5742)],
    )  # fmt: skip
    version, rows = fw.parse_onednn_verbose(ONEDNN_3)
    assert version == 'oneDNN v3.12.0'
    assert rows == [
        ('reorder', 'jit:uni', 'undef', 0.00415039),
        ('convolution', 'jit:avx2', 'backward_weights', 46.0139),
    ]
    assert fw.implementations(rows, 'convolution', 'reorder') == [
        'jit:avx2',
        'jit:uni',
    ]


@pytest.mark.parametrize('framework', fw.FRAMEWORKS)
def test_onednn_kernels_catch_the_log(framework):
    """A step's log is caught (MXNet's from a child process, PyTorch's
    from this process's file descriptor 1): a version, and convolutions
    forward and backward."""
    if framework not in fw.available_frameworks():
        pytest.skip(f'{framework} is not installed')
    version, rows = fw.onednn_kernels(framework, batch_size=16)
    assert version.startswith('oneDNN v')
    kinds = {kind for p, _, kind, _ in rows if p == 'convolution'}
    assert {'forward_training', 'backward_data'} <= kinds


def test_compare_relu_times_both_relus_every_round():
    times = fw.compare_relu(
        rounds=2, steps=2, warmup=1, shape=(4, 3, 5, 5), fresh_process=False
    )
    assert list(times) == ['npx.relu', 'Activation']
    for name, ms in times.items():
        assert len(ms) == 2, name
        assert all(0 < t < 10_000 for t in ms), (name, ms)


@pytest.mark.parametrize('rounds, steps', [(0, 5), (3, 0)])
def test_compare_relu_names_a_bad_count(rounds, steps):
    with pytest.raises(ValueError, match=f'rounds={rounds}, steps={steps}'):
        fw.compare_relu(rounds=rounds, steps=steps)


@pytest.mark.slow
def test_compare_relu_in_a_fresh_process_returns_its_rounds():
    times = fw.compare_relu(rounds=2, steps=2, warmup=1, shape=(4, 3, 5, 5))
    assert {name: len(ms) for name, ms in times.items()} == {
        'npx.relu': 2,
        'Activation': 2,
    }
