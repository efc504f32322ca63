"""The four d2l helpers the library trains with, written out here.

``d2l`` (1.0.3) pins numpy 1.23.5, which has no wheel for Python 3.12,
so d2lpar must import and train without it: ``sgd``, ``accuracy``,
``Accumulator`` and ``Timer`` below do what d2l's functions of the same
names do (``tests/test_compat.py`` compares them with d2l's where d2l is
installed). Modules import this one as ``d2l`` so that their code reads
as the book's, which teaches d2l's names. Only the pages that compare
with d2l itself import d2l (the ``book`` extra installs it).
"""

import time


def sgd(params, lr, batch_size):
    """Minibatch SGD in place: ``param -= lr * param.grad / batch_size``."""
    for param in params:
        param[:] = param - lr * param.grad / batch_size


def accuracy(y_hat, y):
    """The number of correct predictions, as a float (as d2l's).

    ``y_hat`` holds one row of scores per example (or the predicted
    classes themselves); ``y`` the true classes.
    """
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.astype(y.dtype) == y
    return float(cmp.astype(y.dtype).sum())


class Accumulator:
    """Running sums of ``n`` numbers (``add`` adds one value to each)."""

    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self):
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


class Timer:
    """Wall-clock intervals: ``stop`` records the time since ``start``.

    It starts when made. Unlike d2l's (``time.time``) it reads
    ``time.perf_counter``, which never jumps with the system clock.
    """

    def __init__(self):
        self.times = []
        self.start()

    def start(self):
        self.tik = time.perf_counter()

    def stop(self):
        self.times.append(time.perf_counter() - self.tik)
        return self.times[-1]

    def avg(self):
        return sum(self.times) / len(self.times)

    def sum(self):
        return sum(self.times)

    def cumsum(self):
        out, total = [], 0.0
        for t in self.times:
            total += t
            out.append(total)
        return out
