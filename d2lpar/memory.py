"""Keep freed memory for the next step instead of handing it back.

Neither framework pools CPU memory: MXNet 1.9.1's CPU storage manager
is ``NaiveStorageManager`` (``src/storage/storage.cc``; each array's
memory from ``posix_memalign``, glibc's aligned ``malloc``, given back
with ``free``), and PyTorch's CPU allocator (``c10/core/impl/
alloc_cpu.cpp``) does the same for each tensor. A training step
allocates its activations and gradients (LeNet's first ReLU output alone
is 256 x 20 x 26 x 26 floats, 14 MB) and frees them when the step ends.
With glibc's default settings much of that memory goes back to the
kernel at each ``free`` (a block over the mmap threshold is unmapped; an
emptied extra heap of an arena other than the main one is deleted; a
heap whose free top exceeds the trim threshold is shrunk), so the next
step gets fresh pages, and the kernel zeroes each one on first touch: a
page fault per page (4 KiB on this book's x86-64 machine).

Measured on the book's 2-core machine (one LeNet step of 256 examples,
20 steps, glibc 2.36, fresh processes): thousands of minor page faults
a step, varying from process to process (PyTorch's from none to over
ten thousand); with the settings below, from none to a few hundred
(:doc:`/book/memory` measures it in every build).
oneDNN's log put the forward ReLU over the first layer's output at
3.1 ms in MXNet's step before (its output pages faulted in as it wrote
them) and 0.3 ms after.

:func:`keep_freed_memory` sets three of glibc's ``mallopt`` parameters
(:data:`SETTINGS`), the same ones its ``MALLOC_*_`` environment
variables set at start-up:

- ``M_MMAP_THRESHOLD`` to 32 MiB, the highest glibc's own moving
  threshold reaches on 64-bit systems (setting any of these parameters
  turns off that adjustment, which starts at 128 KiB), so the step's
  arrays come from a heap, not from a mapping of their own; a block of
  32 MiB or more may still get its own mapping, returned when it is
  freed;
- ``M_TRIM_THRESHOLD`` to 512 MiB: free memory at the top of a heap is
  given back only beyond it;
- ``M_TOP_PAD`` to 64 MiB, the most a heap of an arena other than the
  main one can grow to (``HEAP_MAX_SIZE``): glibc keeps such an emptied
  heap while the pad is at least that (MXNet allocates an operator's
  output on its engine's worker thread, whose arena is not the main
  one).

Unlike ``MALLOC_ARENA_MAX``, these work at any time, also after MXNet's
threads have started (measured: set after ten steps, the faults still
fell to under one per step). Peak memory is unchanged (the same maximum
resident size here, 270 to 300 MB); what changes is that freed memory
stays with the process until it ends: up to 512 MiB at the free end of
the main arena's heap, and whole heaps (64 MiB at most each) of the
other arenas.

Deliberately glibc's own switches, not a preloaded allocator (jemalloc,
tcmalloc), which Intel's guides suggest for both frameworks:
preloading must happen before the process starts, so a notebook's
``import d2lpar`` could not do it (and where one is preloaded, these
glibc settings do nothing). Anything but Linux with glibc keeps
its defaults, and so does a process whose user set one of glibc's
malloc variables (:data:`USER_VARIABLES`, or ``glibc.malloc`` tunables
in ``GLIBC_TUNABLES``): the user's choice wins.
``D2LPAR_KEEP_FREED_MEMORY=0`` keeps glibc's defaults too
(:func:`d2lpar.bench.compare_allocator` measures a step both ways with
it).
"""

import ctypes
import os
import platform
import sys

# glibc's parameter numbers (malloc.h).
M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3

MIB = 1 << 20
SETTINGS = {
    M_MMAP_THRESHOLD: 32 * MIB,
    M_TRIM_THRESHOLD: 512 * MIB,
    M_TOP_PAD: 64 * MIB,
}

# The environment variables through which a user tunes glibc's malloc.
USER_VARIABLES = (
    'MALLOC_MMAP_THRESHOLD_',
    'MALLOC_TRIM_THRESHOLD_',
    'MALLOC_TOP_PAD_',
    'MALLOC_MMAP_MAX_',
    'MALLOC_ARENA_MAX',
)


# Set to 0 to keep glibc's defaults.
SWITCH = 'D2LPAR_KEEP_FREED_MEMORY'


def user_tuned(environ=None):
    """The variable through which the user tuned glibc's malloc, or None.

    Parameters
    ----------
    environ : mapping, optional
        The environment to read; ``os.environ`` by default.

    Returns
    -------
    str or None
        The first of :data:`USER_VARIABLES` that is set
        (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``,
        ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_``, ``MALLOC_ARENA_MAX``),
        else ``'GLIBC_TUNABLES'`` where that sets a ``glibc.malloc``
        tunable, else None.
    """
    if environ is None:
        environ = os.environ
    for name in USER_VARIABLES:
        if name in environ:
            return name
    if 'glibc.malloc.' in environ.get('GLIBC_TUNABLES', ''):
        return 'GLIBC_TUNABLES'
    return None


def keep_freed_memory():
    """Set glibc's mmap threshold to 32 MiB, its trim threshold to
    512 MiB and its top pad to 64 MiB (:data:`SETTINGS`), with
    ``mallopt``, so that memory a step frees stays with the process for
    the next step (the module docstring says why each).

    ``import d2lpar`` calls it; :doc:`/book/memory` says why each
    value and measures what it changes.

    Returns
    -------
    dict or str
        ``{parameter: value}`` as applied, the keys glibc's parameter
        numbers (``M_MMAP_THRESHOLD`` is -3, ``M_TRIM_THRESHOLD`` -1,
        ``M_TOP_PAD`` -2); or why nothing was set: not Linux, not glibc,
        ``D2LPAR_KEEP_FREED_MEMORY=0``, a variable of the user's
        (:func:`user_tuned`), or no ``mallopt``.
    """
    if not sys.platform.startswith('linux'):
        return f'not Linux ({sys.platform})'
    libc_name = platform.libc_ver()[0]
    if libc_name != 'glibc':
        return f'not glibc ({libc_name or "unknown C library"})'
    if os.environ.get(SWITCH) == '0':
        return f"{SWITCH}=0: glibc's defaults kept"
    tuned = user_tuned()
    if tuned:
        return f'{tuned} is set: the user tunes malloc'
    # CDLL(None): the C library this process already runs on.
    mallopt = getattr(ctypes.CDLL(None), 'mallopt', None)
    if mallopt is None:
        return 'no mallopt in this C library'
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    applied = {}
    for parameter, value in SETTINGS.items():
        if mallopt(parameter, value) == 1:  # glibc returns 1 on success
            applied[parameter] = value
    return applied
