"""Argument checks shared by the public functions.

Every public function of ``d2lpar`` validates what a student passes in and
fails early with a message that names the function, says what was wrong and
what to do, instead of letting MXNet fail later with a C++ backtrace.
"""
import numbers

import mxnet as mx


def check_positive(name, value, where, integer=False):
    """Raise unless ``value`` is a positive number (an int if asked).

    Parameters
    ----------
    name : str
        The argument's name, for the message.
    value : object
        What the caller passed.
    where : str
        The public function doing the check, for the message.
    integer : bool, optional
        Require a whole number (``bool`` is refused).

    Raises
    ------
    TypeError
        If ``value`` is not a number (or not an integer when required).
    ValueError
        If ``value`` is zero or negative.
    """
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        wanted = 'an int' if integer else 'a number'
        raise TypeError(f'{where}: {name} must be {wanted}, got '
                        f'{type(value).__name__} {value!r}')
    if value <= 0:
        raise ValueError(f'{where}: {name} must be positive, got {value}; '
                         f'pass a value greater than 0')


def check_devices(devices, where):
    """Raise unless ``devices`` is a non-empty list of distinct contexts.

    Parameters
    ----------
    devices : sequence of mxnet.Context
        The devices a caller wants to use.
    where : str
        The public function doing the check, for the message.

    Raises
    ------
    TypeError
        If ``devices`` is not a list/tuple of ``mx.Context``.
    ValueError
        If it is empty or names the same device twice.
    """
    if not isinstance(devices, (list, tuple)):
        raise TypeError(f'{where}: devices must be a list of mx.Context, '
                        f'got {type(devices).__name__}; '
                        f'use d2lpar.devices(n)')
    if not devices:
        raise ValueError(f'{where}: the device list is empty; pass at '
                         f'least one, e.g. d2lpar.devices(1)')
    for device in devices:
        if not isinstance(device, mx.Context):
            raise TypeError(f'{where}: {device!r} is not an mx.Context; '
                            f'use d2lpar.devices(n)')
    if len(set(devices)) != len(devices):
        # Two shards on one context would silently do the work of one
        # device twice over: the very bug of d2l's try_gpu fallback.
        raise ValueError(f'{where}: devices {list(devices)} name the same '
                         f'context twice; pass distinct contexts, e.g. '
                         f'd2lpar.devices(2)')
