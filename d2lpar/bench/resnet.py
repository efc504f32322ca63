"""ResNet-18 steps with the concise (Gluon) trainer, for the concise
chapter's exercise: far more arithmetic per image than LeNet.

Run each setting list in a fresh process
(:func:`d2lpar.bench.in_fresh_process_each`), in an order in which
no device's threads must go up again: one device with every core first,
then fewer threads per device (a worker never gets back threads it gave
up, see :mod:`d2lpar.threads`).
"""


def time_resnet18(num_devices, per_device=32, steps=2, seed=0, threads=None):
    """Seconds per image of a data-parallel ResNet-18 step, in this process.

    Gluon's ``resnet18_v1`` (10 classes) on random 28x28 images, trained
    with :func:`d2lpar.concise.train_batch` and a ``'device'`` kvstore.
    The first step allocates memory and is not timed; each timed step
    is ended by ``npx.waitall()`` (:func:`d2lpar.bench.seconds_each`).

    Parameters
    ----------
    num_devices : int
        Devices from :func:`d2lpar.devices`.
    per_device : int, optional
        Images per device per step.
    steps : int, optional
        Timed steps (at least 1).
    seed : int, optional
    threads : int, optional
        OpenMP threads for each device, instead of the library's budget
        (:func:`d2lpar.thread_budget`: one device every core, k devices
        a share each). A device never gets more threads than it had
        before in this process.

    Returns
    -------
    seconds_per_image : float
        The median over the timed steps.
    num_params : int
        The model's parameter count.
    step_seconds_per_image : list of float
        Each timed step's seconds per image: comparisons between
        settings should look at their spread, not only the medians.

    Raises
    ------
    ValueError
        If ``steps`` is below 1.
    """
    if steps < 1:
        raise ValueError(f'time_resnet18: steps={steps!r}; time at least 1')
    import warnings

    import numpy as onp
    from mxnet import gluon, init, np
    from mxnet.gluon.model_zoo import vision

    import d2lpar as dp
    from d2lpar.bench.timing import seconds_each

    devices = dp.devices(num_devices)
    if threads is not None:
        dp.thread_budget(devices, per_device=threads)
    net = vision.resnet18_v1(classes=10)
    net.initialize(init.Xavier(), ctx=devices)
    trainer = gluon.Trainer(
        net.collect_params(), 'sgd', {'learning_rate': 0.1}, kvstore='device'
    )
    batch = num_devices * per_device
    rng = onp.random.default_rng(seed)
    X = np.array(rng.uniform(size=(batch, 1, 28, 28)), dtype='float32')
    y = np.array(rng.integers(0, 10, batch), dtype='int32')
    with warnings.catch_warnings():
        if threads is not None:  # the step's budget would ask for more
            warnings.simplefilter('ignore', dp.threads.ThreadBudgetWarning)
        times = seconds_each(
            lambda: dp.concise.train_batch(X, y, net, trainer, devices),
            repeats=steps,
            warmup=1,
        )
    per_image = [t / batch for t in times]
    params = net.collect_params().values()
    num_params = sum(p.data(devices[0]).size for p in params)
    return onp.median(per_image).item(), num_params, per_image
