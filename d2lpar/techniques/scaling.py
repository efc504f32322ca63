"""The learning rate as the number of devices grows.

With a fixed batch per device, ``k`` devices take steps on a batch ``k``
times larger, and an epoch has ``k`` times fewer steps. The linear
scaling rule (Goyal et al., 2017, "Accurate, large minibatch SGD")
multiplies the learning rate by ``k`` so that one big step moves the
parameters about as far as ``k`` small ones did; a warm-up ramps the
rate up over the first steps, where that approximation is worst.

The experiment trains a small MLP (cheap enough to repeat over seeds on
a book build) with :func:`d2lpar.train_batch`. Every seed fixes one
order of the examples per epoch, shared by every ``k``: step ``t`` with
``k`` devices uses exactly the examples of steps ``k t .. k t + k - 1``
with one.
"""

import dataclasses
import math

import numpy as onp
from mxnet import np, npx

from ..checks import check_positive
from ..model import dense
from ..parameters import get_params
from ..training import train_batch

# Rules for the learning rate on k devices, given the rate on one.
RULES = {
    'none': lambda k: 1.0,
    'linear': lambda k: float(k),
    'sqrt': lambda k: math.sqrt(k),
}

# (name, shape) of the MLP's parameters, in the order mlp() reads them.
MLP_SHAPES = (
    ('W1', (784, 64)),
    ('b1', (64,)),
    ('W2', (64, 10)),
    ('b2', (10,)),
)


def scaled_lr(base_lr, k, rule='linear'):
    """The learning rate for ``k`` devices, given the rate for one.

    Taught in :doc:`/book/scaling`.

    Parameters
    ----------
    base_lr : float
        The rate that works for one device's batch.
    k : int
        Devices (the global batch is ``k`` times one device's).
    rule : {'linear', 'sqrt', 'none'}, optional
        Multiply by ``k`` (Goyal et al.), by ``sqrt(k)``, or keep.

    Returns
    -------
    float

    Examples
    --------
    >>> scaled_lr(0.1, 4), scaled_lr(0.1, 4, 'sqrt'), scaled_lr(0.1, 4, 'none')
    (0.4, 0.2, 0.1)
    """
    check_positive('base_lr', base_lr, 'scaled_lr')
    check_positive('k', k, 'scaled_lr', integer=True)
    if rule not in RULES:
        raise ValueError(
            f'scaled_lr: unknown rule {rule!r}; use one of {sorted(RULES)}'
        )
    return base_lr * RULES[rule](k)


def warmup(peak_lr, warmup_steps, start_lr=None):
    """A schedule: ramp linearly to ``peak_lr``, then keep it.

    Taught in :doc:`/book/scaling`.

    Parameters
    ----------
    peak_lr : float
        The rate after the warm-up.
    warmup_steps : int
        Steps of the ramp (0: no warm-up).
    start_lr : float, optional
        The rate of step 0 (default ``peak_lr / (warmup_steps + 1)``,
        so the ramp climbs in equal steps and never starts at zero).

    Returns
    -------
    callable
        ``schedule(step) -> lr`` for ``step = 0, 1, ...``: rises
        linearly from ``start_lr`` at step 0 to ``peak_lr`` at step
        ``warmup_steps``, constant afterwards.

    Examples
    --------
    >>> schedule = warmup(0.4, 3)
    >>> [round(schedule(t), 2) for t in range(5)]
    [0.1, 0.2, 0.3, 0.4, 0.4]
    """
    check_positive('peak_lr', peak_lr, 'warmup')
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int):
        raise TypeError(
            f'warmup: warmup_steps must be an int, got {warmup_steps!r}'
        )
    if warmup_steps < 0:
        raise ValueError(
            f'warmup: warmup_steps must be >= 0, got {warmup_steps}'
        )
    if start_lr is None:
        start_lr = peak_lr / (warmup_steps + 1)

    def schedule(step):
        if step >= warmup_steps:
            return peak_lr
        return start_lr + (peak_lr - start_lr) * step / warmup_steps

    return schedule


def init_mlp_params(seed=0, scale=0.1):
    """Parameters of a 784-64-10 MLP: weights N(0, scale^2), biases 0.

    Taught in :doc:`/book/scaling`.

    Returns
    -------
    list of mxnet.numpy.ndarray
        ``[W1, b1, W2, b2]``, float32, shapes in ``MLP_SHAPES``.
    """
    rng = onp.random.default_rng(seed)
    return [
        np.array(
            rng.normal(0, scale, shape)
            if name.startswith('W')
            else onp.zeros(shape),
            dtype='float32',
        )
        for name, shape in MLP_SHAPES
    ]


def mlp(X, params):
    """Logits of the MLP for images ``X`` (batch, 1, 28, 28)."""
    W1, b1, W2, b2 = params
    # oneDNN's product, not np.dot: several threaded CPU devices calling
    # OpenBLAS at once hang (d2lpar.threads).
    h = npx.relu(dense(X.reshape(X.shape[0], -1), W1, b1))  # (batch, 64)
    return dense(h, W2, b2)  # (batch, 10)


@dataclasses.dataclass
class ScalingRun:
    """One run of :func:`train_scaling`.

    Attributes
    ----------
    k, batch_size : int
        Devices and the global batch (``k`` times the per-device one).
    seed : int
    steps : list of int
        Steps taken when each accuracy was measured.
    test_acc : list of float
        Test accuracy at those steps.
    lrs : list of float
        The learning rate of every step taken.
    params : list of mxnet.numpy.ndarray
        The final parameters (a copy of the first device's).
    """

    k: int
    batch_size: int
    seed: int
    steps: list
    test_acc: list
    lrs: list
    params: list

    @property
    def final_acc(self):
        """Test accuracy at the end."""
        return self.test_acc[-1]

    def steps_to(self, target):
        """First step at which the test accuracy reached ``target``, or
        None if it never did."""
        for step, acc in zip(self.steps, self.test_acc):
            if acc >= target:
                return step
        return None


def train_scaling(
    data,
    k,
    per_device_batch,
    schedule,
    num_epochs,
    seed=0,
    eval_every=None,
    devices=None,
):
    """Train the MLP with ``k`` devices' global batch; record accuracy.

    Taught in :doc:`/book/scaling`.
    Each step is :func:`d2lpar.train_batch` on ``k * per_device_batch``
    examples. It equals the step of ``k`` devices holding
    ``per_device_batch`` each (:doc:`/book/train-batch` shows it), so
    by default one context takes it, which is cheaper; pass
    ``devices=dp.devices(k)`` to really split it.

    Parameters
    ----------
    data : tuple of 4 mxnet.numpy.ndarray
        ``(X_train, y_train, X_test, y_test)``.
    k : int
        Devices whose batches one step takes together.
    per_device_batch : int
        Examples per device and step: a step takes
        ``k * per_device_batch``.
    num_epochs : int
        Passes over ``X_train``.
    schedule : callable
        ``schedule(step) -> lr``, e.g. :func:`warmup`.
    seed : int, optional
        Seed of the initial parameters and of each epoch's order of
        examples (the same for every ``k``).
    eval_every : int, optional
        Examples between evaluations (a multiple of the global batch;
        default: once per epoch).
    devices : list of mxnet.Context, optional
        Default: the one context ``X_train`` lives on.

    Returns
    -------
    ScalingRun
        Starts with the accuracy at step 0. Steps use whole global
        batches only; the last partial one of an epoch is dropped.
    """
    X_train, y_train, X_test, y_test = data
    for name, value in (
        ('k', k),
        ('per_device_batch', per_device_batch),
        ('num_epochs', num_epochs),
    ):
        check_positive(name, value, 'train_scaling', integer=True)
    batch = k * per_device_batch
    n = X_train.shape[0] // batch * batch
    eval_every = eval_every or n
    if eval_every % batch or not n:
        raise ValueError(
            f'train_scaling: eval_every={eval_every} must be a multiple '
            f'of the global batch {batch}, and the {X_train.shape[0]} '
            f'training examples must fill at least one batch'
        )
    if devices is None:
        devices = [X_train.ctx]
    device_params = [get_params(init_mlp_params(seed), d) for d in devices]
    run = ScalingRun(k, batch, seed, [], [], [], None)

    def evaluate():
        logits = mlp(X_test, device_params[0])
        correct = logits.argmax(axis=1).astype(y_test.dtype) == y_test
        run.steps.append(len(run.lrs))
        run.test_acc.append(float(correct.mean()))

    evaluate()
    for epoch in range(num_epochs):
        order = onp.random.default_rng((seed, epoch)).permutation(
            X_train.shape[0]
        )
        order = np.array(order, ctx=X_train.ctx)
        X_epoch, y_epoch = X_train[order], y_train[order]  # one gather
        for start in range(0, n, batch):
            lr = schedule(len(run.lrs))
            train_batch(
                X_epoch[start : start + batch],
                y_epoch[start : start + batch],
                device_params,
                devices,
                lr,
                net=mlp,
            )
            run.lrs.append(lr)
            if (len(run.lrs) * batch) % eval_every == 0:
                evaluate()
    run.params = [p.copy() for p in device_params[0]]
    return run


def plot_scaling(runs, title=''):
    """Test accuracy against examples seen and against steps.

    Parameters
    ----------
    runs : dict of str to list of ScalingRun
        Label to the runs of every seed of one configuration.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Two panels; each line is the mean over seeds, the band spans the
        lowest to the highest seed.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8, 3), sharey=True)
    for (label, rs), style in zip(runs.items(), _STYLES):
        accs = onp.array([r.test_acc for r in rs])
        steps = onp.array(rs[0].steps)
        for ax, x in zip(axes, (steps * rs[0].batch_size, steps)):
            (line,) = ax.plot(x, accs.mean(axis=0), style, label=label)
            ax.fill_between(
                x,
                accs.min(axis=0),
                accs.max(axis=0),
                color=line.get_color(),
                alpha=0.15,
            )
    axes[0].set_xlabel('examples seen')
    axes[1].set_xlabel('steps')
    axes[0].set_ylabel('test accuracy')
    axes[1].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


# One line style per configuration, distinguishable in grey print too.
_STYLES = ('k-', 'C0--', 'C0-', 'C0:', 'C1--', 'C1-', 'C1:', 'C2-', 'C3-')


def distance(a, b):
    """Euclidean distance between two lists of parameters.

    Taught in :doc:`/book/scaling`, which measures how far one big step
    ends from ``k`` small ones.

    Parameters
    ----------
    a : list of mxnet.numpy.ndarray
        One set of parameters (e.g. ``[W1, b1, W2, b2]`` after ``k``
        small steps), treated as one long vector.
    b : list of mxnet.numpy.ndarray
        The other set (e.g. after one big step, or the start), the same
        arrays' shapes in the same order.

    Returns
    -------
    float
        ``sqrt(sum over arrays of sum((a_i - b_i) ** 2))``.

    Raises
    ------
    ValueError
        If the lists differ in length or an array's shape differs.

    Examples
    --------
    >>> distance([np.array([3.0]), np.array([0.0])],
    ...          [np.array([0.0]), np.array([4.0])])
    5.0
    """
    if len(a) != len(b) or any(p.shape != q.shape for p, q in zip(a, b)):
        raise ValueError(
            f'distance: shapes {[p.shape for p in a]} and '
            f'{[q.shape for q in b]} differ; pass two lists of the same '
            f'parameters'
        )
    return math.sqrt(sum(float(((p - q) ** 2).sum()) for p, q in zip(a, b)))
