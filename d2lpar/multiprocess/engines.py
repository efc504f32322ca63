"""How the workers of a multi-process job exchange arrays.

The worker (:mod:`d2lpar.multiprocess.worker`) needs only three things from its
communication engine: its rank among the workers, a broadcast of rank 0's
initial values, and a sum of arrays over all workers. MXNet's parameter
server (ps-lite, through the kvstore) and Horovod (ring all-reduce over
gloo) both provide them, so the same worker trains on either.
"""

import os

import mxnet as mx

# Plain tables, kept in d2lpar.workers so that the command line builds
# without MXNet (the torch engine's worker runs where it is missing).
from ..workers import ENGINES, KVSTORES

# Every distributed kvstore this process created. Its destructor waits
# at a barrier of all workers before ps-lite's Finalize (a barrier of
# every process of the job): freed while an exception unwinds (the other
# workers still training), it would block this process forever. Kept
# here, it is freed only at interpreter shutdown, which a failed worker
# skips (see d2lpar.multiprocess.guard).
_KEEP_ALIVE = []


class EngineError(RuntimeError):
    """An engine cannot start here; the message says what to do."""


class ParameterServer:
    """MXNet's distributed kvstore: workers push to servers, then pull.

    Started by :func:`d2lpar.multiprocess.launch`, which sets the ``DMLC_*``
    variables ps-lite reads.

    Parameters
    ----------
    kind : str, optional
        One of :data:`~d2lpar.workers.KVSTORES`: ``'dist_sync'`` (the
        servers sum every worker's gradient on the CPU; each worker
        updates its copy), ``'dist_device_sync'`` (as ``'dist_sync'``,
        summing on the workers' devices first) or ``'dist_async'`` (the
        servers update the weights with each push as it arrives; see
        :meth:`set_optimizer`).

    Raises
    ------
    EngineError
        If the process was not started as a ps-lite worker.
    ValueError
        If ``kind`` is not a mode of :data:`~d2lpar.workers.KVSTORES`.
    """

    name = 'kvstore'

    def __init__(self, kind='dist_sync'):
        if kind not in KVSTORES:
            raise ValueError(
                f'unknown kvstore {kind!r}: use one of {", ".join(KVSTORES)}'
            )
        if os.environ.get('DMLC_ROLE') != 'worker':
            raise EngineError(
                'the kvstore engine runs inside a ps-lite job: start the '
                'workers with `python -m d2lpar launch --workers 2 -- '
                'python -m d2lpar worker ...`'
            )
        self.kv = mx.kv.create(kind)
        _KEEP_ALIVE.append(self.kv)
        self.rank, self.num_workers = self.kv.rank, self.kv.num_workers
        self.asynchronous = kind == 'dist_async'
        self.batch_size = None  # the servers' divisor (set_optimizer)
        self._keys = set()

    def broadcast_(self, arrays):
        """Overwrite ``arrays`` with rank 0's values (init, then pull)."""
        for key, a in enumerate(arrays):
            self.kv.init(key, a)  # the servers keep rank 0's value
            self._keys.add(key)
        for key, a in enumerate(arrays):
            self.kv.pull(key, out=a)

    def sum_(self, arrays, first_key=0):
        """Replace each array by its sum over all workers.

        Arrays are stored under keys ``first_key, first_key + 1, ...``;
        every worker must use the same keys for the same arrays.

        Raises
        ------
        EngineError
            With ``dist_async``, whose servers update rather than sum.
        """
        if self.asynchronous:
            raise EngineError(
                'dist_async has no sum: its servers apply each push as an '
                'update; use update_ and sync_, or kvstore dist_sync'
            )
        keys = range(first_key, first_key + len(arrays))
        for key, a in zip(keys, arrays):
            if key not in self._keys:  # every worker meets it at once
                self.kv.init(key, a)
                self._keys.add(key)
        # push then pull: pushpull of several keys fails in MXNet 1.9's
        # dist_sync (ps-lite "msg.data.size() >= 2" check).
        for key, a in zip(keys, arrays):
            self.kv.push(key, a)
        for key, a in zip(keys, arrays):
            self.kv.pull(key, out=a)

    def set_optimizer(self, lr, batch_size):
        """Make the servers take an SGD step with every push (async).

        The worker pushes the gradient *summed* over its examples; the
        servers divide it by the global ``batch_size`` (``rescale_grad``)
        and take a step of ``lr``, so a push is one worker's share of a
        synchronous step. This is this book's choice: MXNet's ``Module``
        divides by the global batch only for ``_sync`` kvstores, and by
        the worker's own batch for ``dist_async``.
        """
        self.kv.set_optimizer(
            mx.optimizer.SGD(
                learning_rate=lr, rescale_grad=1 / batch_size, wd=0
            )
        )
        self.batch_size = batch_size

    def update_(self, grads, params, batch_size):
        """Push ``grads``; overwrite ``params`` with the servers' weights.

        With ``dist_async`` the servers apply each push at once, with no
        barrier: the weights pulled back hold this worker's update and
        every other update that arrived meanwhile. Keys as :meth:`sum_`.
        ``grads`` are sums over a global minibatch of ``batch_size``.
        """
        if self.batch_size is None:  # ps-lite would abort the server
            raise EngineError(
                'update_ before set_optimizer: the servers '
                'have no optimizer to apply the push with'
            )
        if batch_size != self.batch_size:  # a short last minibatch: the
            for g in grads:  # servers divide by the full one
                g *= self.batch_size / batch_size
        for key, g in enumerate(grads):
            self.kv.push(key, g)
        for key, p in enumerate(params):
            self.kv.pull(key, out=p)

    def barrier(self):
        """Return once every worker has called it (ps-lite's barrier)."""
        self.kv._barrier()

    def sync_(self, params):
        """Give every worker the servers' current weights (a barrier).

        Each worker waits until its own pushes are applied, meets the
        others at a barrier, pulls, and meets them again before anyone
        pushes anew: all workers then hold the same weights.
        """
        # This worker's last pulls come back after its pushes: once they
        # are read, its pushes have reached the servers before the barrier.
        for p in params:
            p.wait_to_read()
        self.kv._barrier()
        for key, p in enumerate(params):
            self.kv.pull(key, out=p)
        for p in params:
            p.wait_to_read()
        self.kv._barrier()


class Horovod:
    """Horovod's collectives (ring all-reduce over gloo here).

    Started by ``horovodrun -np 2 -H localhost:2 --gloo python -m d2lpar
    worker --engine horovod ...``. Horovod is an optional extra:
    ``make horovod`` builds it against the installed MXNet.

    Raises
    ------
    EngineError
        If Horovod (with MXNet support) is not installed.
    """

    name = 'horovod'
    asynchronous = False

    def __init__(self):
        try:
            import horovod.mxnet as hvd
        except ImportError as e:
            raise EngineError(
                f'the horovod engine needs Horovod built with MXNet '
                f'support ({e}); install it with `make horovod` '
                f'(see README)'
            ) from e
        hvd.init()
        self.hvd = hvd
        self.rank, self.num_workers = hvd.rank(), hvd.size()

    def broadcast_(self, arrays):
        """Overwrite ``arrays`` with rank 0's values."""
        for key, a in enumerate(arrays):
            self.hvd.broadcast_(a, root_rank=0, name=f'init{key}')

    def barrier(self):
        """Return once every worker has called it.

        ``horovod.mxnet`` has no barrier (its PyTorch API has one): a
        one-value allreduce, which every worker must join, serves.
        """
        self.hvd.allreduce(mx.nd.zeros(1), name='barrier').wait_to_read()

    def sum_(self, arrays, first_key=0):
        """Replace each array by its sum over all workers, in place.

        Horovod matches arrays across workers by name, built here from
        the same keys the parameter server uses.
        """
        self.hvd.grouped_allreduce_(
            arrays, op=self.hvd.Sum, name=f'sum{first_key}'
        )


def make_engine(name, kvstore='dist_sync'):
    """Return the engine called ``name`` (one of :data:`ENGINES`).

    Parameters
    ----------
    name : str
        ``'kvstore'`` or ``'horovod'``.
    kvstore : str, optional
        The kvstore mode (one of :data:`~d2lpar.workers.KVSTORES`) for
        the ``'kvstore'`` engine; Horovod takes only ``'dist_sync'``,
        what it does.

    Raises
    ------
    ValueError
        If ``name`` is not an engine, or ``kvstore`` not a mode of it.
    """
    if name == 'kvstore':
        return ParameterServer(kvstore)
    if name == 'horovod':
        if kvstore != 'dist_sync':
            raise ValueError(
                f'--kvstore {kvstore} is a mode of the parameter server; '
                f'Horovod always sums synchronously with its all-reduce. '
                f'Drop --kvstore, or use --engine kvstore under launch'
            )
        return Horovod()
    raise ValueError(
        f'unknown engine {name!r}: use one of {", ".join(ENGINES)}'
    )
