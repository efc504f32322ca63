"""d2lpar.torch's homework checks name a student's mistake with the codes
of the MXNet checks (the grader's own table), their hints in PyTorch's
terms."""

import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as tdp  # noqa: E402
from d2lpar.grading.mistakes import MISTAKES, hint  # noqa: E402


def correct(data):
    total = data[0].clone()
    for a in data[1:]:
        total += a.to(total.device)
    for a in data:
        a.copy_(total.to(a.device))


def stub(data):
    raise NotImplementedError


def does_nothing(data):
    pass


def rebinds(data):
    total = sum(a.clone() for a in data)
    for i in range(len(data)):
        data[i] = total.clone()


def returns_sum(data):
    return [sum(a.clone() for a in data) for _ in data]


def averages(data):
    total = sum(a.clone() for a in data)
    for a in data:
        a.copy_(total / len(data))


def first_only(data):
    for a in data[1:]:
        data[0] += a


def in_float32(data):
    total = torch.zeros(data[0].shape)  # float32, whatever the inputs
    for a in data:
        total += a
    for a in data:
        a.copy_(total)


def doubles_first(data):
    total = data[0] + sum(a.clone() for a in data)
    for a in data:
        a.copy_(total)


def calls_library(data):
    tdp.allreduce(data)


def calls_library_imported(data):
    from d2lpar.torch import allreduce

    allreduce(data)


MISTAKEN = [
    (stub, 'raised'),
    (does_nothing, 'did-nothing'),
    (rebinds, 'not-in-place'),
    (returns_sum, 'not-in-place'),
    (averages, 'averaged'),
    (first_only, 'not-broadcast'),
    (in_float32, 'changed-dtype'),
    (doubles_first, 'wrong-sum'),
    (calls_library, 'calls-library'),
    (calls_library_imported, 'calls-library'),
]


def test_a_correct_allreduce_passes_every_case():
    report = tdp.check_allreduce(correct)
    assert report and report.cases == 30 and not report.failures
    assert tdp.check_allreduce(tdp.allreduce)


@pytest.mark.parametrize('fn, mistake', MISTAKEN)
def test_each_mistake_is_named(fn, mistake):
    report = tdp.check_allreduce(fn)
    assert not report
    assert report.mistakes[0] == mistake, str(report)
    text = str(report)
    assert f'mistake: {mistake}' in text and hint(mistake, 'torch') in text


def test_a_raising_function_shows_its_traceback():
    report = tdp.check_allreduce(stub)
    failure = report.failures[0]
    assert failure.message.startswith('NotImplementedError')
    assert 'in stub' in failure.traceback
    assert 'raise NotImplementedError' in failure.traceback


def test_the_battery_is_the_mxnet_checks():
    """The same cases, in the same order, as the MXNet check, and the
    same mistake named for the same mistakes written in MXNet."""
    pytest.importorskip('mxnet')
    from mxnet import np

    import d2lpar as dp
    from d2lpar.grading.allreduce import allreduce_cases
    from d2lpar.torch.grading import allreduce_cases as torch_cases

    assert torch_cases() == allreduce_cases()

    def m_averages(data):
        total = sum(a.as_in_ctx(data[0].ctx) for a in data)
        for a in data:
            a[:] = total / len(data)

    def m_rebinds(data):
        total = sum(a.as_in_ctx(data[0].ctx) for a in data)
        for i in range(len(data)):
            data[i] = total.as_in_ctx(data[i].ctx)

    def m_first_only(data):
        for a in data[1:]:
            data[0][:] += a.as_in_ctx(data[0].ctx)

    def m_in_float32(data):
        total = np.zeros(data[0].shape, ctx=data[0].ctx)
        for a in data:
            total += a.as_in_ctx(total.ctx).astype('float32')
        for a in data:
            a[:] = total.as_in_ctx(a.ctx)

    for m_fn, t_fn in [
        (m_averages, averages),
        (m_rebinds, rebinds),
        (m_first_only, first_only),
        (m_in_float32, in_float32),
    ]:
        theirs, mine = dp.check_allreduce(m_fn), tdp.check_allreduce(t_fn)
        assert mine.mistakes == theirs.mistakes
        assert [f.case for f in mine.failures] == [
            f.case for f in theirs.failures
        ]


# The other assignments a PyTorch solution has graded: a correct
# solution passes, a planted mistake is named, with the MXNet check's code.


def average_params(device_params):
    k = len(device_params)
    with torch.no_grad():
        for j in range(len(device_params[0])):
            tdp.allreduce([p[j] for p in device_params])
            for p in device_params:
                p[j].copy_(p[j] / k)


def average_without_no_grad(device_params):
    """Right arithmetic, but in-place writes to tensors that require
    gradients outside torch.no_grad(): PyTorch refuses them on the
    model's replicas (dp.get_params), so the check must too."""
    k = len(device_params)
    for j in range(len(device_params[0])):
        total = sum(p[j].detach().clone() for p in device_params)
        for p in device_params:
            p[j][:] = total / k


def average_summed(device_params):
    with torch.no_grad():
        for j in range(len(device_params[0])):
            tdp.allreduce([p[j] for p in device_params])


def average_rebinds(device_params):
    k = len(device_params)
    for j in range(len(device_params[0])):
        mean = sum(p[j].detach().clone() for p in device_params) / k
        for p in device_params:
            p[j] = mean.clone()


def split_batch(X, y, devices, check_lengths=True):
    n, k = X.shape[0], len(devices)
    if n < k:
        raise ValueError('fewer examples than devices')
    if check_lengths and y.shape[0] != n:
        raise ValueError('X and y have different lengths')
    X_shards, y_shards, start = [], [], 0
    for i, d in enumerate(devices):
        size = n // k + (1 if i < n % k else 0)
        X_shards.append(X[start : start + size].to(d))
        y_shards.append(y[start : start + size].to(d))
        start += size
    return X_shards, y_shards


def split_drops_remainder(X, y, devices):
    n, k = X.shape[0], len(devices)
    if n < k:
        raise ValueError('fewer examples than devices')
    size = n // k
    return (
        [X[i * size : (i + 1) * size] for i in range(k)],
        [y[i * size : (i + 1) * size] for i in range(k)],
    )


def split_no_length_check(X, y, devices):
    return split_batch(X, y, devices, check_lengths=False)


def split_mismatched_labels(X, y, devices):
    X_shards, y_shards = split_batch(X, y, devices)
    return X_shards, y_shards[::-1]


def ring(k):
    from d2lpar.comm.schedules import ring_schedule

    return ring_schedule(k)


def ring_backwards(k):
    from d2lpar.comm.schedules import Transfer

    return (
        [[Transfer((i + 1) % k, i, None, True) for i in range(k)]]
        if k > 1
        else []
    )


def ring_whole_arrays(k):
    """Every device passes its whole running sum around: right, but k-1
    whole arrays each way instead of chunks."""
    from d2lpar.comm.schedules import Transfer

    steps = [[Transfer(i, (i + 1) % k, None, True)] for i in range(k - 1)]
    steps += [
        [Transfer((k - 1 + i) % k, (k + i) % k, None, False)]
        for i in range(k - 1)
    ]
    return steps


def evaluate_accuracy_sharded(device_params, data_iter, devices):
    correct = examples = 0
    for X, y in data_iter:
        X_shards, y_shards = tdp.split_batch(X, y, devices)
        for params, Xs, ys in zip(device_params, X_shards, y_shards):
            correct += (tdp.lenet(Xs, params).argmax(dim=1) == ys).sum().item()
        examples += X.shape[0]
    return correct / examples


def evaluate_averaging_batches(device_params, data_iter, devices):
    accuracies = []
    for X, y in data_iter:
        batch = evaluate_accuracy_sharded(device_params, [(X, y)], devices)
        accuracies.append(batch)
    return sum(accuracies) / len(accuracies)


def evaluate_first_shard(device_params, data_iter, devices):
    correct = examples = 0
    for X, y in data_iter:
        X_shards, y_shards = tdp.split_batch(X, y, devices)
        logits = tdp.lenet(X_shards[0], device_params[0])
        correct += (logits.argmax(dim=1) == y_shards[0]).sum().item()
        examples += X_shards[0].shape[0]
    return correct / examples


PYTORCH_MISTAKEN = [
    (tdp.check_average_params, average_summed, 'summed'),
    (tdp.check_average_params, average_rebinds, 'not-in-place'),
    (tdp.check_split_batch, split_drops_remainder, 'dropped-examples'),
    (tdp.check_split_batch, split_mismatched_labels, 'labels-mismatched'),
    (tdp.check_split_batch, split_no_length_check, 'accepted-bad-input'),
    (tdp.check_ring_schedule, ring_backwards, 'not-a-ring'),
    (tdp.check_ring_schedule, ring_whole_arrays, 'too-much-traffic'),
    (tdp.check_evaluate, evaluate_averaging_batches, 'averaged-batches'),
    (tdp.check_evaluate, evaluate_first_shard, 'first-shard-only'),
]


@pytest.mark.parametrize(
    'check, fn',
    [
        (tdp.check_average_params, average_params),
        (tdp.check_split_batch, split_batch),
        (tdp.check_split_batch, tdp.split_batch),
        (tdp.check_ring_schedule, ring),
        (tdp.check_evaluate, evaluate_accuracy_sharded),
    ],
)
def test_a_correct_pytorch_solution_passes(check, fn):
    report = check(fn)
    assert report, str(report)
    assert report.cases > 0 and report.framework == 'torch'


def test_averaging_outside_no_grad_fails_naming_no_grad():
    """The replicas are made as dp.get_params makes them, so code that
    would crash on the model's parameters fails the check, and the
    message says where the writes belong."""
    report = tdp.check_average_params(average_without_no_grad)
    assert not report
    assert report.mistakes[0] == 'raised', str(report)
    assert 'torch.no_grad()' in report.failures[0].message
    # The same writes inside no_grad pass.
    assert tdp.check_average_params(average_params)


@pytest.mark.parametrize('check, fn, mistake', PYTORCH_MISTAKEN)
def test_a_planted_pytorch_mistake_is_named(check, fn, mistake):
    report = check(fn)
    assert not report
    assert report.mistakes[0] == mistake, str(report)
    assert f'mistake: {mistake}' in str(report)


# Names a PyTorch student has no use for: MXNet's methods and modules.
MXNET_WORDS = ('copyto', 'as_in_ctx', '.ctx', 'asnumpy', 'npx', 'attach_grad')


def test_no_hint_names_mxnet_to_a_pytorch_student():
    """Every code's hint, as a PyTorch report gives it, is free of
    MXNet's methods; the MXNet hints keep theirs."""
    for code in MISTAKES:
        text = hint(code, 'torch')
        assert not [w for w in MXNET_WORDS if w in text], (code, text)
    assert 'copyto' in hint('not-in-place', 'mxnet')


def test_a_pytorch_report_gives_the_pytorch_hint():
    report = tdp.check_allreduce(rebinds)
    text = str(report)
    assert 'hint: ' in text and 'copy_' in text and 'copyto' not in text


def test_the_shape_of_a_tree_is_not_claimed_checked():
    """PyTorch's CPU devices are one CPU: the report passes on the sum
    and says the elements each device moves were not counted."""
    report = tdp.check_tree_allreduce(correct)
    assert report and 'not counted' in report.note
    assert 'note: ' in str(report)
    assert tdp.check_allreduce(correct).note is None


def test_the_checks_table_covers_every_graded_function():
    """Every function the MXNet grader grades has a PyTorch entry: a
    check, or a report saying there is none yet."""
    from d2lpar.grading import GRADED_BY
    from d2lpar.torch.grading import CHECKS

    assert set(CHECKS) == set(GRADED_BY)
    for name, check in CHECKS.items():
        assert check.__name__ == GRADED_BY[name]
        # ... and `from d2lpar import torch as dp` gives it by that name.
        assert getattr(tdp, check.__name__) is check
        assert check.__name__ in tdp.__all__


def test_the_pages_claim_no_assignment_lacks_a_pytorch_check():
    """Every assignment has a PyTorch check (test_torch_grading_steps
    runs those of homework 4 and 6): the homework and teachers' pages
    must not send a PyTorch student to MXNet for one."""
    import pathlib

    book = pathlib.Path(__file__).parents[1] / 'book'
    for page in ('homework.md', 'teachers.md'):
        text = ' '.join((book / page).read_text().split())
        assert 'no PyTorch check' not in text, page
        assert 'ungraded' not in text, page


def sharded_via_run_schedule(data):
    from d2lpar.comm.schedules import sharded_schedule

    tdp.run_schedule(data, sharded_schedule(len(data)))


def test_a_sharded_allreduce_that_runs_the_library_schedule_fails():
    """As in MXNet, running the library's schedule is calling the
    library: calls-library, not a pass."""
    report = tdp.check_sharded_allreduce(sharded_via_run_schedule)
    assert not report
    assert report.mistakes[0] == 'calls-library', str(report)
    assert 'run_schedule' in report.failures[0].message


def test_the_checks_run_on_cpu_even_where_devices_gives_an_accelerator(
    monkeypatch,
):
    """dp.devices(1) would give Apple's mps (no float64) or a GPU; the
    checks run every case on CPU devices instead (they test the
    algorithm, not the device)."""
    import importlib

    devices_module = importlib.import_module('d2lpar.torch.devices')

    monkeypatch.setattr(devices_module, '_mps_available', lambda: True)
    assert tdp.devices(1)[0].type == 'mps'
    seen = []

    def recording(data):
        seen.extend(a.device for a in data)
        correct(data)

    def recording_average(device_params):
        seen.extend(p[0].device for p in device_params)
        average_params(device_params)

    assert tdp.check_allreduce(recording)
    assert tdp.check_average_params(recording_average)
    assert seen and {d.type for d in seen} == {'cpu'}


def test_codes_pytorch_never_names_come_only_from_the_mxnet_check():
    """The hints page says PyTorch's checks never name TORCH_NEVER_NAMED:
    only the MXNet allreduce check (and the table) writes those codes,
    and PyTorch's checks pass an allreduce that adds across devices with
    no copy and gathers everything on device 0 (MXNet's checks name
    mixed-devices and not-a-tree for it)."""
    import pathlib

    import d2lpar
    from d2lpar.grading import mistakes

    root = pathlib.Path(d2lpar.__file__).parent
    writers = {
        root / 'grading' / 'allreduce.py',
        root / 'grading' / 'mistakes.py',
    }
    for path in root.rglob('*.py'):
        if path not in writers:
            text = path.read_text()
            for code in mistakes.TORCH_NEVER_NAMED:
                assert f"'{code}'" not in text, (path, code)

    def no_copies(data):
        for a in data[1:]:
            data[0] += a
        for a in data[1:]:
            a.copy_(data[0])

    assert tdp.check_allreduce(no_copies)
    assert tdp.check_tree_allreduce(no_copies)
    said = mistakes.__doc__.split("PyTorch's checks never name")[1]
    for code in mistakes.TORCH_NEVER_NAMED:
        assert f'``{code}``' in said
