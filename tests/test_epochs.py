"""The shared epoch loop: where it starts, what it calls after each
epoch, and how it numbers epochs (the worker resumes through these)."""

import pytest
from mxnet import np

from d2lpar.epochs import TrainResult, run_epochs

# Two minibatches of 4 examples per epoch; what the values are does not
# matter to the loop.
BATCHES = [(np.zeros((4, 1)), np.zeros(4)), (np.zeros((4, 1)), np.zeros(4))]


def counting_step():
    """A step that records its calls and reports loss 2 and 3 correct
    per minibatch of 4."""
    calls = []

    def step(X, y):
        calls.append(X.shape[0])
        return [2.0 * X.shape[0]], [3]

    return step, calls


def fresh():
    return TrainResult([], [], [], None, 0.1)


def test_start_epoch_runs_only_the_remaining_epochs():
    """start_epoch=2 of num_epochs=5 runs epochs 3, 4, 5: three epochs of
    two steps each, numbered on from the start."""
    step, calls = counting_step()
    accs = iter([0.3, 0.4, 0.5])
    result = run_epochs(
        step, BATCHES, lambda: next(accs), 5, fresh(), start_epoch=2
    )
    assert len(calls) == 3 * len(BATCHES)
    assert result.test_acc == [0.3, 0.4, 0.5]
    assert result.start_epoch == 2 and result.epochs_done == 5
    assert result.train_loss == [2.0] * 3
    assert result.train_acc == [3 * 2 / 8] * 3
    assert result.epoch_line(5).startswith('epoch 5/5: test acc 0.500')


def test_on_epoch_end_sees_each_recorded_epoch():
    """The hook is called once per epoch, after the epoch's accuracy is
    recorded, with the epoch's number available as epochs_done."""
    step, _ = counting_step()
    seen = []

    def hook(result):
        seen.append((result.epochs_done, result.test_acc[-1]))

    accs = iter([0.6, 0.7])
    run_epochs(
        step,
        BATCHES,
        lambda: next(accs),
        4,
        fresh(),
        start_epoch=2,
        on_epoch_end=hook,
    )
    assert seen == [(3, 0.6), (4, 0.7)]


def test_verbose_lines_continue_the_numbering(capsys):
    """A resumed run prints 'epoch 2/2', not 'epoch 1/2'."""
    step, _ = counting_step()
    run_epochs(
        step, BATCHES, lambda: 0.5, 2, fresh(), start_epoch=1, verbose=True
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith('epoch 2/2: test acc 0.500')
    assert lines[1].startswith('test acc: 0.50')


def test_nothing_left_to_run_is_no_error(capsys):
    """Resuming a run that already finished all its epochs trains
    nothing, calls nothing and prints nothing (no summary of no epoch)."""
    step, calls = counting_step()
    result = run_epochs(
        step,
        BATCHES,
        lambda: 1 / 0,
        3,
        fresh(),
        start_epoch=3,
        verbose=True,
        on_epoch_end=lambda r: 1 / 0,
    )
    assert calls == [] and result.test_acc == []
    assert capsys.readouterr().out == ''


def test_a_fresh_run_starts_at_epoch_one():
    """Without start_epoch the loop is what train() always ran."""
    step, calls = counting_step()
    result = run_epochs(step, BATCHES, lambda: 0.5, 2, fresh())
    assert len(calls) == 2 * len(BATCHES)
    assert result.start_epoch == 0 and result.epochs_done == 2


def test_negative_start_epoch_is_refused():
    step, _ = counting_step()
    with pytest.raises(ValueError, match='my_trainer: start_epoch is -1'):
        run_epochs(
            step,
            BATCHES,
            lambda: 0.5,
            2,
            fresh(),
            where='my_trainer',
            start_epoch=-1,
        )


@pytest.mark.parametrize(
    'kwargs, error, message',
    [
        (dict(lr=0), ValueError, 'train: lr must be positive, got 0'),
        (dict(init_scale=-0.1), ValueError, 'init_scale must be positive'),
        (dict(num_gpus=1.5), TypeError, 'num_gpus must be an int'),
        (dict(num_epochs=True), TypeError, 'num_epochs must be an int'),
        (dict(accumulate=0), ValueError, 'accumulate must be positive'),
        (dict(batch_size='8'), TypeError, 'batch_size must be an int'),
    ],
)
def test_train_arguments_are_checked_once_for_both_frameworks(
    kwargs, error, message
):
    """The numbers both frameworks' train() refuse, each named."""
    from d2lpar.epochs import check_train_arguments

    good = dict(num_gpus=2, batch_size=8, num_epochs=1, lr=0.1, init_scale=0.1)
    check_train_arguments(**good)  # nothing to refuse
    with pytest.raises(error, match=message):
        check_train_arguments(**{**good, **kwargs})
