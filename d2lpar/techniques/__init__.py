"""Techniques beyond the basic step: each a module of the same verbs.

The later parts of the book change one thing about the first part's
step, and each module here holds one such change, with the same verb
for the step it makes (``train_batch``) on the first part's skeleton
(:func:`d2lpar.training.device_gradients`, :func:`d2lpar.training.sgd`):

===============  ====================================================
accumulation     gradients summed over several minibatches per update
averaging        local SGD: parameters averaged every few steps
batchnorm        BatchNorm with local or synchronised statistics
replicas         checksums that find replicas drifting apart
optim            optimizer state (momentum, Adam) kept per replica
zero             that state sharded across devices (ZeRO)
overlap          communication overlapped with the backward pass
scaling          learning-rate scaling and warm-up for large batches
concise          the same step with Gluon's Trainer
===============  ====================================================

Each module is reached as ``dp.NAME`` (``dp.zero.train_batch``,
``dp.optim.train_batch``): ``import d2lpar`` imports them all.
"""

from . import (
    accumulation,
    averaging,
    batchnorm,
    concise,
    optim,
    overlap,
    replicas,
    scaling,
    zero,
)

__all__ = [
    'accumulation',
    'averaging',
    'batchnorm',
    'concise',
    'optim',
    'overlap',
    'replicas',
    'scaling',
    'zero',
]
