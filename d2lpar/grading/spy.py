"""Watch a student's function: the library calls it makes, its copies.

A check must grade the algorithm, not only the sum: a
``tree_allreduce`` that calls ``dp.allreduce`` gives the right sum and
is not a tree. :class:`Spy` records, while it is active, every call of
the library's collectives made from code outside ``d2lpar`` (the
student's), every copy between two devices (``copyto``, which
``as_in_ctx`` and a cross-device ``a[:] = b`` go through), and every
other operation whose arrays live on different devices.

That last one matters because MXNet checks only that an operator's
inputs are all on CPUs or all on GPUs (``GetContext`` in
``src/imperative/imperative_utils.h``): between two CPU contexts,
``a + b`` or ``a[:] += b`` reads the other context's array with no copy,
so counting copies alone would miss the data it moves. Every operator
call goes through one of two checks in ``mxnet.ndarray.register`` (the
generated operator functions' globals), which the spy wraps.
"""

import importlib
import sys

import mxnet as mx
from mxnet import np

# The library's collectives: an allreduce a student writes must call
# none of them. Name -> the module defining it.
COLLECTIVES = {
    'allreduce': 'd2lpar.collectives',
    'sharded_allreduce': 'd2lpar.comm.algorithms',
    'ring_allreduce': 'd2lpar.comm.algorithms',
    'doubling_allreduce': 'd2lpar.comm.algorithms',
    'run_schedule': 'd2lpar.comm.algorithms',
    'kvstore_allreduce': 'd2lpar.comm.kvstore',
    'bucketed_allreduce': 'd2lpar.comm.buckets',
}


def _from_student(depth=2):
    """True when the frame ``depth`` up is not the library's code."""
    name = sys._getframe(depth).f_globals.get('__name__', '')
    return not (name == 'd2lpar' or name.startswith('d2lpar.'))


_ACTIVE = []  # the Spy objects recording now, innermost last
_SAVED = []  # (owner, name, original) while the patches are installed


def _record():
    return _ACTIVE[-1] if _ACTIVE else None


def _watch(name, fn):
    def watched(*args, **kwargs):
        spy = _record()
        if spy is not None and _from_student():
            spy.library_calls.append(name)
        return fn(*args, **kwargs)

    watched.__name__ = watched.__qualname__ = name
    watched.__wrapped__ = fn
    return watched


def _copy(original):
    def copyto(src, other):
        spy = _record()
        if spy is None or spy.depth:
            return original(src, other)
        dst = other if isinstance(other, mx.Context) else other.ctx
        if dst != src.ctx:
            spy.transfers.append((src.ctx.device_id, dst.device_id, src.size))
        spy.depth += 1
        try:
            return original(src, other)
        finally:
            spy.depth -= 1

    return copyto


# The functions every generated MXNet operator calls with its name, its
# input arrays and ``out`` before it runs (mxnet/ndarray/register.py).
_OPERATOR_HOOKS = ('_verify_all_np_ndarrays', '_verify_all_legacy_ndarrays')


def _arrays(value):
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays(v)]
    return [value] if isinstance(value, mx.nd.NDArray) else []


def _operator(original):
    def verify(op_name, func_name, args, out):
        spy = _record()
        if spy is not None and not spy.depth and op_name != '_copyto':
            contexts = {a.ctx for a in _arrays(args) + _arrays(out)}
            if len(contexts) > 1:
                spy.mixed.append((func_name, sorted(map(str, contexts))))
        return original(op_name, func_name, args, out)

    return verify


def install(forbidden=None):
    """Patch the collectives, ``copyto`` and the operators' input
    checks (once); return True if this
    call installed them. The grader installs them before it imports a
    submission, so ``from d2lpar import allreduce`` is watched too."""
    import d2lpar

    if _SAVED:
        return False
    forbidden = COLLECTIVES if forbidden is None else forbidden
    for name, where in forbidden.items():
        module = importlib.import_module(where)
        watched = _watch(name, getattr(module, name))
        for owner in (module, d2lpar, d2lpar.comm):
            if hasattr(owner, name):
                _SAVED.append((owner, name, getattr(owner, name)))
                setattr(owner, name, watched)
    for cls in (np.ndarray, mx.nd.NDArray):
        _SAVED.append((cls, 'copyto', cls.copyto))
        cls.copyto = _copy(cls.copyto)
    from mxnet.ndarray import register

    for name in _OPERATOR_HOOKS:
        _SAVED.append((register, name, getattr(register, name)))
        setattr(register, name, _operator(getattr(register, name)))
    return True


def uninstall():
    """Undo :func:`install`."""
    while _SAVED:
        owner, name, value = _SAVED.pop()
        setattr(owner, name, value)


class Spy:
    """Record library calls, cross-device copies and operations that
    mix devices while active.

    Attributes
    ----------
    library_calls : list of str
        The library's collectives (:data:`COLLECTIVES`) that code outside
        ``d2lpar`` called, in order.
    transfers : list of tuple
        ``(src_device_id, dst_device_id, elements)`` per cross-device
        copy (a copy made inside another is not counted twice).
    mixed : list of tuple
        ``(operator, contexts)`` per operation other than a copy whose
        arrays (inputs and ``out``) live on more than one device.
    """

    def __init__(self):
        self.library_calls, self.transfers, self.mixed = [], [], []
        self.depth, self._installed = 0, False

    def __enter__(self):
        self._installed = install()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        _ACTIVE.remove(self)
        if self._installed:
            uninstall()

    def moved(self, k):
        """Elements each of ``k`` devices sent and received."""
        sent, received = [0] * k, [0] * k
        for src, dst, n in self.transfers:
            sent[src] += n
            received[dst] += n
        return sent, received
