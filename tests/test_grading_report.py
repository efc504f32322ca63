"""d2lpar.grading.report: what every check's Report shows a student (a
stub's traceback, the first failure in text, markdown and HTML, each
failure's case, message and hint)."""

import pytest
from conftest import stub_none

import d2lpar as dp
from d2lpar.grading import MISTAKES

CHECKS = [
    dp.check_allreduce,
    dp.check_ring_schedule,
    dp.check_split_batch,
    dp.check_evaluate,
    dp.check_train_batch,
    dp.check_grad_accumulation,
    dp.check_average_params,
    dp.check_train_epoch,
]


def stub_raises(*args, **kwargs):
    raise NotImplementedError


def averaged_allreduce(data):
    # The right sum on every device, divided by the number of devices.
    total = sum(a.copyto(data[0].ctx) for a in data)
    for a in data:
        a[:] = (total / len(data)).copyto(a.ctx)


@pytest.mark.parametrize('check', CHECKS, ids=[c.__name__ for c in CHECKS])
def test_stub_fails_showing_its_traceback(check):
    """A stub raising NotImplementedError fails every case as `raised`,
    and the report shows the student's own line."""
    report = check(stub_raises)
    assert report.mistakes == ['raised']
    assert len(report.failures) == report.cases
    text = str(report)
    assert 'NotImplementedError' in text
    assert 'in stub_raises' in text
    assert 'raise NotImplementedError' in text


@pytest.mark.parametrize('check', CHECKS, ids=[c.__name__ for c in CHECKS])
def test_stub_returning_none_fails_clearly(check):
    """A stub that does nothing fails as `did-nothing` or `bad-return`
    (never a vague code), with a message naming what was expected."""
    report = check(stub_none)
    assert not report
    assert set(report.mistakes) <= {'did-nothing', 'bad-return'}
    assert 'expected' in report.failures[0].message


def test_report_shows_first_failure_everywhere():
    """str, markdown and HTML all show the first failing case, the
    mistake, expected vs got and the hint."""
    report = dp.check_allreduce(averaged_allreduce)
    first = report.failures[0]
    assert first.mistake == 'averaged'
    for text in (str(report), report._repr_markdown_(), report._repr_html_()):
        assert first.case in text
        assert 'averaged' in text
        assert 'expected every array' in text
        assert 'divided by the number of devices' in text


def test_failure_items_carry_case_message_and_hint():
    """Each failure names its case in words and its message says
    expected vs got."""
    report = dp.check_allreduce(averaged_allreduce)
    assert report.failures
    for f in report.failures:
        assert f.mistake == 'averaged'
        assert f.case.startswith('k=')
        assert 'expected' in f.message
        assert f.to_dict()['hint'] == MISTAKES['averaged']
