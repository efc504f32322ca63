"""The check of homework 6: an epoch that keeps two steps in flight.

The book's loop (:func:`d2lpar.epochs.run_epochs`) reads each step's
loss and correct count only after it has queued the next step. Reading
step ``i``'s numbers waits only for step ``i``'s forward pass; while
Python then splits and queues step ``i + 2``, the devices work through
the rest of step ``i`` and step ``i + 1`` (whose forward pass reads the
parameters step ``i``'s update writes), so they have work while Python
prepares a batch. Two loops give the same parameters and are both wrong: one
reads every step's numbers right away (the devices idle while Python
prepares the next batch), one never reads until the end (Python queues
the whole epoch: every batch's inputs and activations stay alive).

To tell them apart the check puts a *gate* behind every number
``dp.train_batch`` returns: a custom operator that lets the value
through only when the student's code reads it (``.item()``,
``.asnumpy()``, ``float()``, ``npx.waitall()``) *and* the next step has
been queued. A read of step ``i`` before step ``i + 1`` is queued waits
at the gate (:data:`EARLY_SECONDS`, then passes) and is recorded; a call
of step ``i + 2`` while no number of step ``i`` has been read is
recorded too.
"""

import threading
import time

import mxnet as mx
from mxnet import np, npx

from .battery import epoch_case, epoch_cases
from .report import run_cases
from .steps import KIT

# How long a read of a step's numbers may wait for the next step to be
# queued before it counts as a read of the step in flight.
EARLY_SECONDS = 0.4
_POLL = 0.002


class _Gates:
    """The state every gate of one case looks at: which steps were
    queued and read (``order``, a :class:`d2lpar.grading.battery.
    InFlight`), and the reads under way."""

    def __init__(self, order):
        self.order = order
        self.reading = 0  # reads of the student's code under way
        self.internal = False  # inside the library's train_batch
        self.done = False  # the student's function returned
        self.lock = threading.Lock()

    def wait(self, step):
        """Block until ``step``'s number may pass (in MXNet's thread)."""
        order, since = self.order, None
        while True:
            with self.lock:
                if self.done or (order.queued[step] and self.reading):
                    break
                if self.reading and not order.queued[step]:
                    since = since or time.perf_counter()
                    if time.perf_counter() - since > EARLY_SECONDS:
                        order.read(step)  # not queued: an early read
                        break
                else:
                    since = None
            time.sleep(_POLL)
        with self.lock:
            order.passed[step] = True


_CURRENT = []  # the _Gates of the case running now


class _Gate(mx.operator.CustomOp):
    def __init__(self, step):
        super().__init__()
        self.step = step

    def forward(self, is_train, req, in_data, out_data, aux):
        _CURRENT[-1].wait(self.step)
        self.assign(out_data[0], req[0], in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0])


@mx.operator.register('d2lpar_gate')
class _GateProp(mx.operator.CustomOpProp):
    def __init__(self, step):
        super().__init__(need_top_grad=False)
        self.step = int(step)

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return in_shape, in_shape, []

    def infer_type(self, in_type):
        return in_type, in_type, []

    def create_operator(self, ctx, shapes, dtypes):
        return _Gate(self.step)


def _gate(a, step):
    shape = a.shape
    out = mx.nd.Custom(
        a.reshape((-1,)).as_nd_ndarray(),
        op_type='d2lpar_gate',
        step=str(step),
    )
    return out.as_np_ndarray().reshape(shape)


class _Watch:
    """While active: ``dp.train_batch`` returns gated numbers, reads of
    arrays and waits are counted as the student's reads."""

    READS = [
        (np.ndarray, 'asnumpy'),
        (np.ndarray, 'wait_to_read'),
        (mx.nd.NDArray, 'asnumpy'),
        (mx.nd.NDArray, 'wait_to_read'),
        (npx, 'waitall'),
        (mx.nd, 'waitall'),
    ]

    def __init__(self, order):
        self.gates, self.order = _Gates(order), order
        self.real, self.saved = [], []

    def _read(self, original):
        gates = self.gates

        def read(*args, **kwargs):
            counted = not gates.internal
            if counted:
                with gates.lock:
                    gates.reading += 1
            try:
                return original(*args, **kwargs)
            finally:
                if counted:
                    with gates.lock:
                        gates.reading -= 1

        return read

    def _train_batch(self, original):
        gates = self.gates

        def train_batch(*args, **kwargs):
            i = self.order.call()
            gates.internal = True
            try:
                losses, corrects = original(*args, **kwargs)
            finally:
                gates.internal = False
            self.real.append((losses, corrects))
            with gates.lock:
                self.order.returned(i)
            return (
                [_gate(a, i) for a in losses],
                [_gate(a, i) for a in corrects],
            )

        return train_batch

    def __enter__(self):
        import d2lpar
        from d2lpar import training

        _CURRENT.append(self.gates)
        for owner in (d2lpar, training):
            self._swap(owner, 'train_batch', self._train_batch)
        for owner, name in self.READS:
            self._swap(owner, name, self._read)
        return self

    def _swap(self, owner, name, make):
        original = getattr(owner, name)
        self.saved.append((owner, name, original))
        setattr(owner, name, make(original))

    def __exit__(self, *exc):
        with self.gates.lock:
            self.gates.done = True
        for owner, name, original in reversed(self.saved):
            setattr(owner, name, original)
        npx.waitall()  # every gate passes now that done is set
        _CURRENT.remove(self.gates)


def _epoch_case(fn, case):
    return epoch_case(fn, case, KIT, _Watch)


def check_train_epoch(fn):
    """Check a student's epoch that keeps two steps in flight.

    ``fn(train_iter, device_params, devices, lr)`` runs
    :func:`d2lpar.train_batch` (as ``dp.train_batch``) on every batch of
    ``train_iter`` and returns ``(mean_loss, accuracy)`` over the
    epoch's examples, as Python floats. It reads each step's numbers
    (``.item()``) only after it has queued the next step, as
    :func:`d2lpar.epochs.run_epochs` does: reading them at once is the
    ``synced-every-batch`` mistake, queuing step ``i + 2`` before any of
    step ``i``'s numbers was read is ``too-far-ahead``. The replicas
    must equal plain SGD over the same batches on one device.

    Parameters
    ----------
    fn : callable
        The student's ``train_epoch``.

    Returns
    -------
    Report

    Examples
    --------
    >>> import d2lpar as dp
    >>> from d2lpar.grading import reference
    >>> bool(dp.check_train_epoch(reference.train_epoch))
    True
    """
    return run_cases('check_train_epoch', fn, epoch_cases(), _epoch_case)
