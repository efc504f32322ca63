"""The concise chapter's ResNet-18 timing."""

import pytest

from d2lpar.bench import resnet, step


def test_time_resnet18_counts_resnet18s_parameters():
    # Gluon's resnet18_v1 with 10 classes on 1-channel images has
    # 11,184,970 parameters (its shapes, counted with MXNet's own net).
    median, num_params, each = step.in_fresh_process_each(
        {}, resnet.time_resnet18, [(1, 2, 3)], timeout=300
    )[0]
    assert num_params == 11_184_970
    assert len(each) == 3  # one time per timed step, the median of them
    assert median == sorted(each)[1]


def test_time_resnet18_refuses_no_steps():
    with pytest.raises(ValueError, match='steps=0'):
        resnet.time_resnet18(1, steps=0)


def _threads_after(threads):
    """cpu(0)'s OpenMP threads after a tiny ResNet-18 timing; a budget
    warning escaping the timing fails the call."""
    import warnings

    import mxnet as mx

    from d2lpar import threads as th

    with warnings.catch_warnings():
        warnings.simplefilter('error', th.ThreadBudgetWarning)
        resnet.time_resnet18(1, per_device=2, steps=1, threads=threads)
    return th.worker_threads(mx.cpu(0)), th.total_threads()


def test_time_resnet18_runs_a_device_on_the_threads_asked():
    """threads=1 times one device on one OpenMP thread (the concise
    chapter's 'one device, one thread' setting), without the budget's
    warning; by default the device keeps every core's threads."""
    # One process each: a device's threads never go up again.
    ((ran, _),) = step.in_fresh_process_each(
        {}, _threads_after, [(1,)], timeout=300
    )
    ((default, cores),) = step.in_fresh_process_each(
        {}, _threads_after, [(None,)], timeout=300
    )
    assert ran == 1
    assert default == cores
