"""Communication: the allreduce algorithms after the first part.

Every name below is reached as ``dp.comm.NAME``:

- :mod:`d2lpar.comm.schedules`: an allreduce as a list of steps of
  transfers (:class:`Transfer`), for the naive, sharded, ring and
  recursive-doubling algorithms; their :func:`traffic` and
  :func:`trace`;
- :mod:`d2lpar.comm.costmodel`: the alpha-beta cost model
  (:func:`allreduce_time`, :func:`busiest_bytes`, :func:`memory_traffic`)
  and the bytes a parameter server or Horovod sends
  (:func:`engine_bytes`);
- :mod:`d2lpar.comm.algorithms`: running a schedule on MXNet arrays
  (:func:`run_schedule`, :func:`ring_allreduce`, ...) and
  :data:`ALGORITHMS`, every allreduce of the book by name;
- :mod:`d2lpar.comm.kvstore`: MXNet's own allreduce
  (:func:`kvstore_allreduce`);
- :mod:`d2lpar.comm.buckets`: many small arrays reduced as a few large
  ones (:func:`bucketed_allreduce`, :func:`make_buckets`).

The schedules and the cost model are framework-neutral (plain Python:
they import neither MXNet nor PyTorch) and are imported with this
package; the rest runs MXNet and is imported the first time one of its
names is used, so another framework can share the schedules and the
cost model without MXNet.
"""

import importlib

from . import costmodel, schedules
from .costmodel import (
    ENGINE_BYTES,
    MESSAGE_PATTERNS,
    allreduce_time,
    busiest_bytes,
    crossover,
    engine_bytes,
    fit_ring,
    memory_traffic,
)
from .schedules import (
    SCHEDULES,
    Transfer,
    all_gather_schedule,
    doubling_schedule,
    naive_schedule,
    reduce_scatter_schedule,
    ring_schedule,
    sharded_schedule,
    trace,
    traffic,
)

# MXNet's part: name -> module of this package that defines it, imported
# on first use (PEP 562).
_MXNET = {
    'ALGORITHMS': 'algorithms',
    'doubling_allreduce': 'algorithms',
    'flat_view': 'algorithms',
    'free_buffers': 'algorithms',
    'ring_allreduce': 'algorithms',
    'run_schedule': 'algorithms',
    'sharded_allreduce': 'algorithms',
    'kvstore_allreduce': 'kvstore',
    'bucketed_allreduce': 'buckets',
    'make_buckets': 'buckets',
}


def __getattr__(name):
    """A name of MXNet's part (and its module) on its first use."""
    if name not in _MXNET:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    module = importlib.import_module(f'.{_MXNET[name]}', __name__)
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MXNET))


__all__ = [
    'costmodel',
    'schedules',
    'ENGINE_BYTES',
    'MESSAGE_PATTERNS',
    'allreduce_time',
    'busiest_bytes',
    'crossover',
    'engine_bytes',
    'fit_ring',
    'memory_traffic',
    'SCHEDULES',
    'Transfer',
    'all_gather_schedule',
    'doubling_schedule',
    'naive_schedule',
    'reduce_scatter_schedule',
    'ring_schedule',
    'sharded_schedule',
    'trace',
    'traffic',
    *_MXNET,
]
