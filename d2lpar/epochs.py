"""The epoch loop every trainer shares, what it records, and the numbers
every ``train`` checks first (:func:`check_train_arguments`).

:func:`run_epochs` is written once: :func:`d2lpar.train` (from scratch)
and :func:`d2lpar.train_concise` (Gluon) call it with their own step, and
any other trainer (a homework's, a worker's) can too. It times finished
work only, records per-epoch train loss, train accuracy, test accuracy
and seconds in a :class:`TrainResult`, prints only when asked, and draws
a live plot only where a display exists.
"""

import dataclasses

from . import _d2l as d2l  # not d2l: it pins numpy 1.23.5 (_d2l.py)
from .validation import check_positive


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` (or :func:`d2lpar.train_concise`) measured.

    Attributes
    ----------
    test_acc : list of float
        Test accuracy after each epoch.
    epoch_seconds : list of float
        Training time of each epoch (finished work only).
    devices : list of mxnet.Context
        The devices that trained.
    batch_size : int or None
        Examples per minibatch, summed over devices (None if unknown).
    lr : float
        Learning rate.
    figure : matplotlib.figure.Figure or None
        The curves, when plotted.
    train_loss : list of float
        Mean per-example training loss of each epoch.
    train_acc : list of float
        Training accuracy of each epoch (measured while training).
    start_epoch : int
        Epochs finished before this run (a resumed run); the lists hold
        epochs ``start_epoch + 1`` onwards.
    """

    test_acc: list
    epoch_seconds: list
    devices: list
    batch_size: int
    lr: float
    figure: object = None
    train_loss: list = dataclasses.field(default_factory=list)
    train_acc: list = dataclasses.field(default_factory=list)
    start_epoch: int = 0

    @property
    def epochs_done(self):
        """The number of the last finished epoch, counting from 1."""
        return self.start_epoch + len(self.test_acc)

    @property
    def final_test_acc(self):
        """Test accuracy after the last epoch."""
        return self.test_acc[-1]

    @property
    def sec_per_epoch(self):
        """Mean training seconds per epoch (d2l's ``timer.avg()``)."""
        return sum(self.epoch_seconds) / len(self.epoch_seconds)

    def summary(self):
        """The chapter's one-line summary."""
        return (
            f'test acc: {self.final_test_acc:.2f}, '
            f'{self.sec_per_epoch:.1f} sec/epoch on {self.devices}'
        )

    def epoch_line(self, num_epochs):
        """The progress line of the last epoch, out of ``num_epochs``."""
        return (
            f'epoch {self.epochs_done}/{num_epochs}: test acc '
            f'{self.test_acc[-1]:.3f}, train loss '
            f'{self.train_loss[-1]:.3f}, train acc '
            f'{self.train_acc[-1]:.3f}, {self.epoch_seconds[-1]:.1f} sec'
        )


def check_train_arguments(
    num_gpus, batch_size, num_epochs, lr, init_scale, accumulate=1,
    where='train',
):  # fmt: skip
    """Refuse what ``train`` cannot use, in either framework.

    :func:`d2lpar.train` and :func:`d2lpar.torch.train` check their
    numbers here before anything runs.

    Raises
    ------
    TypeError
        If ``num_gpus``, ``batch_size``, ``num_epochs`` or
        ``accumulate`` is not an int, or ``lr`` or ``init_scale`` not a
        number.
    ValueError
        If any of them is zero or negative.
    """
    for name, value in (
        ('num_gpus', num_gpus),
        ('batch_size', batch_size),
        ('num_epochs', num_epochs),
        ('accumulate', accumulate),
    ):
        check_positive(name, value, where, integer=True)
    check_positive('lr', lr, where)
    check_positive('init_scale', init_scale, where)


def in_notebook():
    """True inside a Jupyter kernel, where a figure can be displayed."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return hasattr(get_ipython(), 'kernel')


class LivePlot:
    """A run's curves, redrawn after every epoch where a display exists.

    Unlike ``d2l.Animator`` it never clears the output (which prints
    terminal escape codes outside Jupyter) and shows nothing in a
    script: there the figure is only returned, in ``result.figure``.
    """

    def __init__(self, num_epochs):
        from matplotlib.figure import Figure  # no GUI backend needed

        self.fig = Figure(figsize=(4.5, 3))
        self.ax = self.fig.add_subplot()
        self.num_epochs = num_epochs
        self.handle = None

    def update(self, result):
        self.ax.clear()
        epochs = range(result.start_epoch + 1, result.epochs_done + 1)
        for name in ('train_loss', 'train_acc', 'test_acc'):
            self.ax.plot(
                epochs,
                getattr(result, name),
                'o-',
                label=name.replace('_', ' '),
            )
        self.ax.set(xlabel='epoch', xlim=(0.8, self.num_epochs + 0.2))
        self.ax.legend()
        if in_notebook():
            from IPython.display import display

            if self.handle is None:
                self.handle = display(self.fig, display_id=True)
            else:
                self.handle.update(self.fig)


def _add(metric, pending):
    """Add a step's summed loss, correct count and size (waits for it)."""
    if pending is not None:
        losses, corrects, n = pending
        metric.add(
            sum(float(l) for l in losses), sum(float(c) for c in corrects), n
        )


def run_epochs(
    step,
    train_iter,
    evaluate,
    num_epochs,
    result,
    *,
    plot=False,
    verbose=False,
    where='train',
    start_epoch=0,
    on_epoch_end=None,
    wait=None,
):
    """The epoch loop: every trainer of the library runs this one.

    Each epoch runs ``step`` on every minibatch, timing finished work
    only, then records the epoch's train loss, train accuracy, test
    accuracy and seconds in ``result``. A step's losses and counts are
    read only after the next step is queued: reading them waits for that
    step's forward pass, not for its backward pass or update, and only
    ``wait`` at the end of the epoch waits for everything.

    Parameters
    ----------
    step : callable
        ``step(X, y) -> (losses, corrects)``: one training step; the
        summed losses and correct-prediction counts of its pieces
        (MXNet scalars or numbers), as :func:`d2lpar.train_batch`
        returns.
    train_iter : iterable of (X, y)
        Minibatches of one epoch; iterated once per epoch.
    evaluate : callable
        ``evaluate() -> float``, the test accuracy now.
    num_epochs : int
        The last epoch: epochs ``start_epoch + 1`` to ``num_epochs`` run
        (none if ``start_epoch >= num_epochs``).
    result : TrainResult
        Filled in place; a ``batch_size`` of None is set from the first
        minibatch.
    plot : bool, optional
        Draw the curves (see :class:`LivePlot`) into ``result.figure``.
    verbose : bool, optional
        Print a line per epoch and the summary line at the end.
    where : str, optional
        The public function running the loop, for messages.
    start_epoch : int, optional
        Epochs finished before (to resume a run); stored in
        ``result.start_epoch``, so epoch numbers continue from it.
    on_epoch_end : callable, optional
        ``on_epoch_end(result)``, called after each epoch is recorded
        (a worker saves its checkpoint and prints there).
    wait : callable, optional
        ``wait()`` returns when every queued operation has finished, so
        that an epoch's time counts finished work only; default MXNet's
        ``npx.waitall`` (``d2lpar.torch`` passes PyTorch's own).

    Returns
    -------
    TrainResult
        ``result``.

    Raises
    ------
    ValueError
        If ``start_epoch`` is negative, or an epoch yields no examples.
    """
    if start_epoch < 0:
        raise ValueError(
            f'{where}: start_epoch is {start_epoch}; pass the number of '
            f'epochs already finished (0 for a fresh run)'
        )
    result.start_epoch = start_epoch
    live = LivePlot(num_epochs) if plot else None
    result.figure = live.fig if live else result.figure
    for _ in range(start_epoch, num_epochs):
        metric = d2l.Accumulator(3)  # loss sum, correct, examples
        timer = d2l.Timer()
        pending = None  # the previous step's (losses, corrects, n)
        for X, y in train_iter:
            losses, corrects = step(X, y)
            # Read the previous step's numbers only now: while Python
            # waits for them, the devices already run this step. (d2l
            # waits after every step, which leaves the devices idle while
            # Python prepares the next one.) They come out of its forward
            # pass, which waited for the step before it to finish: what
            # is queued stays within parts of three steps, which bounds
            # the memory.
            _add(metric, pending)
            pending = (losses, corrects, X.shape[0])
            if result.batch_size is None:
                result.batch_size = X.shape[0]
        _add(metric, pending)
        (wait or _mxnet_waitall)()  # time finished work only
        result.epoch_seconds.append(timer.stop())
        if metric[2] == 0:
            raise ValueError(
                f'{where}: the training data yielded no '
                f'examples; check train_iter is not empty'
            )
        result.train_loss.append(metric[0] / metric[2])
        result.train_acc.append(metric[1] / metric[2])
        result.test_acc.append(evaluate())
        if live:
            live.update(result)
        if verbose:
            print(result.epoch_line(num_epochs), flush=True)
        if on_epoch_end:
            on_epoch_end(result)
    if verbose and result.test_acc:
        print(result.summary(), flush=True)
    return result


def _mxnet_waitall():
    # Imported here, not at the top: the loop is framework-neutral, and
    # d2lpar.torch runs it without MXNet.
    from mxnet import npx

    npx.waitall()
