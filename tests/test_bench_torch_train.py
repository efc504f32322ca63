"""Tests of d2lpar.bench.torch_train: what its rows' labels claim."""

import os

import pytest

from d2lpar.bench import torch_train


def test_ddp_label_says_what_ddp_does_with_lenet(tmp_path):
    """The torch-ddp row's label says LeNet's gradients fill one bucket
    and nothing overlaps the backward pass; DDP, wrapping the benchmark
    worker's LeNet with its defaults, puts every gradient in one bucket
    (so its one allreduce waits for the backward pass's last gradient).
    A model or a DDP default that split them would fail this test, and
    the label would have to change."""
    torch = pytest.importorskip('torch')
    import torch.distributed as dist

    from d2lpar.torch.model import init_lenet_params
    from d2lpar.torch.worker import LeNet

    label = torch_train.HOLDS['torch-ddp']
    assert 'one bucket' in label and 'nothing overlaps' in label
    assert 'overlapping' not in label

    dist.init_process_group(
        'gloo', init_method=f'file://{os.path.join(tmp_path, "store")}',
        rank=0, world_size=1,
    )  # fmt: skip
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(
            LeNet(init_lenet_params(0, 0.1))
        )
        ddp(torch.ones(4, 1, 28, 28)).sum().backward()
        sizes = ddp._get_ddp_logging_data()['bucket_sizes']
    finally:
        dist.destroy_process_group()
    grad_bytes = sum(
        p.numel() * p.element_size() for p in ddp.module.parameters()
    )
    # One bucket holding every gradient's bytes.
    assert [int(s) for s in str(sizes).split(',')] == [grad_bytes]
