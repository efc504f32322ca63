"""d2lpar.torch.check_allreduce names a student's mistake, with the
codes and hints of the MXNet check (the grader's own table)."""

import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as tdp  # noqa: E402
from d2lpar.grading.mistakes import MISTAKES  # noqa: E402


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
    assert f'mistake: {mistake}' in text and MISTAKES[mistake] in text


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
        total = sum(a.copy() for a in data)
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
