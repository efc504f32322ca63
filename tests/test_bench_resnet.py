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
