"""The concise version in PyTorch (d2lpar.torch.concise): DDP over Gloo.

Its step must be the hand-written step of d2lpar.torch.train_batch, in
one process and over several; spawn must hand back rank 0's result and
fail loudly when a process raises.
"""

import os

import pytest

torch = pytest.importorskip('torch')

from d2lpar import torch as dp  # noqa: E402
from d2lpar.torch import concise  # noqa: E402


def batches(n, batch_size=16, seed=0):
    train_iter, _ = dp.load_fashion_mnist(
        batch_size, num_train=n * batch_size, num_test=16, seed=seed
    )
    return list(train_iter)


def hand_written_steps(data, lr=0.2, k=2):
    """The start and the result of each hand-written step on k devices,
    each step from where the last one ended."""
    devices = dp.devices(k)
    device_params = [
        dp.get_params(dp.init_lenet_params(0, 0.1), d) for d in devices
    ]
    starts, afters = [], []
    for X, y in data:
        starts.append([p.detach().clone() for p in device_params[0]])
        dp.train_batch(X, y, device_params, devices, lr=lr)
        afters.append([p.detach().clone() for p in device_params[-1]])
    return starts, afters


def largest(pairs):
    return max((a - b).abs().max().item() for a, b in pairs)


def test_train_batch_in_one_process_is_the_hand_written_step():
    """Without DDP (one process, no group), the concise step (mean loss,
    torch.optim.SGD) moves every parameter as d2lpar.torch.train_batch
    on one device does, to float32 rounding (1e-6 of the move)."""
    data = batches(1)
    starts, afters = hand_written_steps(data, k=1)
    model = dp.worker.LeNet(starts[0])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
    losses, corrects = concise.train_batch(*data[0], model, optimizer)
    mine = [p.detach() for p in model.params]
    moved = largest(zip(afters[0], starts[0]))
    assert moved > 0
    assert largest(zip(mine, afters[0])) <= 1e-6 * moved
    assert 0 <= corrects[0].item() <= 16 and losses[0].item() > 0


@pytest.mark.slow
def test_ddp_steps_on_two_processes_equal_the_hand_written_steps():
    """Each DDP step over two Gloo processes, from the hand-written
    step's start, ends where the hand-written step on two devices did,
    to float32 rounding (1e-4 of the largest move)."""
    data = batches(3)
    starts, afters = hand_written_steps(data)
    ddp_afters = concise.ddp_steps(starts, data, lr=0.2, workers=2)
    assert len(ddp_afters) == 3
    moved = max(largest(zip(a, s)) for a, s in zip(afters, starts))
    gap = max(largest(zip(a, d)) for a, d in zip(afters, ddp_afters))
    assert moved > 0 and gap <= 1e-4 * moved


@pytest.mark.slow
def test_spawn_returns_rank_zero_result_and_raises_a_failure():
    """spawn runs the function in every process of one group and returns
    rank 0's result; a process that raises makes spawn raise, naming the
    error."""
    import torch.distributed as dist
    import torch.multiprocessing as mp

    assert concise.spawn(dist.get_world_size, 3) == 3
    assert concise.spawn(dist.get_rank, 2) == 0
    with pytest.raises(mp.ProcessRaisedException, match='invalid literal'):
        concise.spawn(int, 2, 'not a number')
    with pytest.raises(ValueError, match='workers'):
        concise.spawn(dist.get_rank, 0)


@pytest.mark.slow
def test_train_concise_trains_as_the_hand_written_steps():
    """Two DDP processes, two epochs on seeded minibatches, end with the
    parameters of the hand-written step on two devices taken on the same
    minibatches, to 1e-4 of the distance travelled (float32 rounding);
    each process ran on its share of the cores. At lr 0.05: at 0.2 these
    small batches make any two correct runs drift apart (the
    hand-written step on one device and on two end 6% of the distance
    apart after these 8 steps; at 0.05, 5e-6), which would hide a
    wrong step."""
    kwargs = dict(num_train=4 * 64, num_test=64, seed=0)
    result = concise.train_concise(
        2, lr=0.05, num_epochs=2, batch_size=64, **kwargs
    )
    train_iter, _ = dp.load_fashion_mnist(64, **kwargs)
    data = list(train_iter) + list(train_iter)  # epochs 1 and 2
    starts, afters = hand_written_steps(data, lr=0.05)
    assert len(result.test_acc) == 2 and len(result.devices) == 2
    travelled = largest(zip(afters[-1], starts[0]))
    assert travelled > 0
    assert largest(zip(result.params, afters[-1])) <= 1e-4 * travelled
    if not os.environ.get('OMP_NUM_THREADS') and hasattr(
        os, 'sched_getaffinity'
    ):
        cores = len(os.sched_getaffinity(0))
        assert result.threads == max(1, cores // 2)


def test_arguments_are_checked_before_any_process_starts():
    """A bad learning rate or epoch count is refused at once."""
    with pytest.raises(ValueError, match='lr'):
        concise.train_concise(2, lr=0)
    with pytest.raises(ValueError, match='num_epochs'):
        concise.train_concise(2, num_epochs=0)
    with pytest.raises(ValueError, match='lr'):
        concise.ddp_steps([], [], lr=-1)
