"""What importing d2lpar changes in the process, in one place.

Two moments, so that ``from d2lpar import torch`` never needs MXNet:

**``import d2lpar``** (``d2lpar/__init__.py`` calls :func:`prepare`)
does only what costs little and imports no MXNet, so that a script or
chapter may import MXNet itself right after it:

1. **A warning on an untested Python.** d2lpar is tested on Python 3.11
   and 3.12: MXNet 1.9.1 needs numpy < 2, which has no wheels for
   Python 3.13+.
2. **``MXNET_CPU_TEMP_COPY`` is set to** :data:`CPU_TEMP_COPY` **(64)**
   unless already set (a value the user set wins). All CPU contexts
   share one pool of scratch buffers, 4 by default, handed out
   round-robin; with 4, two CPU contexts wait for each other's buffers
   and run one after the other (the :doc:`/book/training` chapter measures
   it). MXNet reads the variable when it is imported, so it is set
   first.
3. **Freed memory stays with the process** (glibc's ``mallopt``,
   :mod:`d2lpar.memory`): neither framework pools CPU memory, and
   with glibc's defaults each step's freed arrays went back to the
   kernel and came back as page faults (thousands a step in MXNet's
   LeNet step here; :doc:`/book/memory` measures it). Linux with glibc only; a user's own
   ``MALLOC_*_`` variables win.
4. **numpy's removed type aliases are restored** where missing
   (``np.bool``, ``np.int``, ...; :mod:`d2lpar._compat`), since MXNet
   1.9.1 reads ``np.bool`` while it imports; with numpy 1.23.5 nothing
   changes.

**The first ``import mxnet`` of the process** (by ``dp.train``,
``dp.devices``, any module of MXNet's part, or the reader's own ``from
mxnet import np``) does the rest, once, through an import hook that
:func:`prepare` puts on ``sys.meta_path`` (:func:`start` runs at once if
MXNet was imported before d2lpar):

5. **MXNet is imported**; a missing or broken install fails with the
   command that fixes it, not with a bare ``No module named 'mxnet'``.
6. **``npx.set_np()``**: MXNet's NumPy interface, as in d2l, so arrays
   are ``mxnet.np.ndarray``.
7. **A fork hook** (``os.register_at_fork``): MXNet restarts its engine
   on ``fork()``, in the parent and in the child, and every CPU worker
   thread comes back with MXNet's default OpenMP threads; the hook puts
   each device's thread budget back in the parent and forgets it in the
   child (:func:`d2lpar.threads.engine_restarted_in_parent`,
   :func:`d2lpar.threads.engine_restarted_in_child`).
8. **``cpu(0)``'s worker gets every core**
   (:func:`d2lpar.threads.claim_every_core`): a worker's OpenMP threads
   may later go down but never up, since MXNet's cached oneDNN
   operators crash when run with more threads than they were built for.
   Where ``d2lpar.torch`` was imported first, PyTorch's operators get
   every core back too (:func:`d2lpar.torch.use_every_core`): importing
   MXNet leaves the process's OpenMP setting, which PyTorch reads, at one
   thread.
9. **Only where** ``D2LPAR_MXNET_CODE_CACHE`` **names a folder** (the book
   build sets it, ``scripts/build-book.sh``): the Python wrappers MXNet
   generates for its ~2,500 operators while it imports (source text it
   compiles one by one, a third to a half of ``import mxnet``'s seconds)
   are compiled once and kept there (:class:`_CompiledOps`), so every
   later process of the build (each chapter's kernel, each benchmark's
   workers) loads them instead. The functions are the same: the same
   source, compiled by the same Python, keyed by its hash.

The PyTorch twin (``d2lpar.torch``) and the framework-neutral modules it
shares import no MXNet, so items 5 to 8 never happen there. The
benchmarks (``dp.bench``), several processes (``dp.multiprocess``), the
grader (``dp.grading``) and matplotlib (the figures) are imported the
first time a name of theirs is used (``d2lpar.__getattr__``).
"""

import hashlib
import importlib.abc
import importlib.util
import marshal
import os
import re
import sys
import types
import warnings

# Why 64 scratch buffers: see item 2 above.
CPU_TEMP_COPY = '64'


def _warn_untested_python():
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        warnings.warn(
            f'd2lpar is tested on Python 3.11 and 3.12, this is '
            f'{sys.version.split()[0]}: MXNet 1.9.1 needs numpy < 2, which '
            f'has no wheels for Python 3.13+; make a Python 3.11 or 3.12 '
            f'venv (see README)',
            stacklevel=4,
        )


def _missing_mxnet(err=None):
    cause = f' ({err})' if err else ''
    return ImportError(
        f'd2lpar needs MXNet 1.9.1, which is not installed in '
        f'{sys.prefix}{cause}; install it with: pip install '
        f'"d2lpar[cpu]" (CPU), or pip install mxnet-cu112==1.9.1 (a '
        f'CUDA build, matching your CUDA).',
        name='mxnet',
    )


def _broken_mxnet(err):
    """The ImportError naming the fix when MXNet fails while importing."""
    if isinstance(err, ImportError) and err.name == 'distutils':
        # Python 3.12 removed distutils
        return ImportError(
            'MXNet 1.9.1 imports distutils, which Python 3.12 removed; '
            'setuptools brings it back: pip install setuptools'
        )
    if isinstance(err, AttributeError):  # a numpy name MXNet uses is gone
        return ImportError(
            f'MXNet 1.9.1 failed to import beside numpy '
            f'{sys.modules["numpy"].__version__} ({err}); d2lpar is tested '
            f'with numpy 1.23.5 and 1.26.4: pip install "numpy>=1.23.5,<2"'
        )
    return _missing_mxnet(err)


class _SetUpAfterImport(importlib.abc.Loader):
    """MXNet's own loader, then :func:`start` (items 6 to 8)."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # MXNet is loading now: the hook has done its work (it stayed on
        # sys.meta_path until here, so a find_spec('mxnet') that only
        # probed did not disarm it).
        sys.meta_path[:] = [
            f for f in sys.meta_path if not isinstance(f, _MXNetFinder)
        ]
        ops = _CompiledOps.from_environment()
        if ops is not None:
            sys.meta_path.insert(0, ops)
        try:
            self.loader.exec_module(module)
        except (ImportError, AttributeError) as err:
            raise _broken_mxnet(err) from err
        finally:  # tools that read the loader (inspect) see MXNet's own
            module.__loader__ = module.__spec__.loader = self.loader
            if ops is not None:
                ops.finish()
        start()


# Item 9: where the compiled operator wrappers are kept, if anywhere.
CODE_CACHE_VAR = 'D2LPAR_MXNET_CODE_CACHE'
# The modules of MXNet 1.9.1 whose import generates a wrapper per
# operator and compiles it with exec(source, None, namespace) (the
# numpy/_register modules call the same functions of these two).
_OP_REGISTERS = ('mxnet.ndarray.register', 'mxnet.symbol.register')


# The call that takes an operator's handle in each generated wrapper.
_HANDLE_CALL = re.compile(r'\b(?:_imperative_invoke|_symbol_creator)\((\d+),')


def _with_constant(code, old, new):
    """``code`` (and the code objects it holds) with the constant ``old``
    replaced by ``new``."""
    consts = tuple(
        _with_constant(c, old, new)
        if isinstance(c, types.CodeType)
        else (new if type(c) is int and c == old else c)
        for c in code.co_consts
    )
    return code.replace(co_consts=consts)


class _CompiledOps(importlib.abc.MetaPathFinder):
    """Item 9: while MXNet imports, its two operator-registering modules
    get an ``exec`` of their own (a module global, found before the
    builtin) that compiles each generated source only if the cache file
    lacks it, until MXNet has imported; the file is rewritten then.

    The file is one ``marshal`` dump of {blake2b(generic source): code}
    (the source with its handle replaced, :meth:`compile`), named
    by Python's bytecode magic number (a code object is only valid for
    the Python that compiled it); it is replaced atomically, so
    processes starting together at most compile the same code twice,
    and a file that cannot be read counts as empty.
    """

    def __init__(self, folder):
        tag = importlib.util.MAGIC_NUMBER.hex()
        self.path = os.path.join(folder, f'mxnet-ops-{tag}.marshal')
        self.codes = None
        self.compiled = 0
        self.modules = []  # those given the caching exec

    @classmethod
    def from_environment(cls):
        folder = os.environ.get(CODE_CACHE_VAR, '')
        return cls(folder) if folder else None

    def find_spec(self, name, path=None, target=None):
        if name not in _OP_REGISTERS:
            return None
        sys.meta_path.remove(self)  # the real search, without this finder
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _WithCompiledOps(spec.loader, self)
        return spec

    def load(self):
        """The cached code objects (read once)."""
        if self.codes is None:
            try:
                with open(self.path, 'rb') as f:
                    self.codes = marshal.load(f)
                if not isinstance(self.codes, dict):
                    self.codes = {}
            except (OSError, EOFError, ValueError, TypeError):
                self.codes = {}
        return self.codes

    def exec(self, source, globals_=None, locals_=None):
        """The builtin ``exec``, with ``source`` compiled at most once."""
        if globals_ is None:  # the caller's namespace, as the builtin does
            frame = sys._getframe(1)
            globals_ = frame.f_globals
            if locals_ is None:
                locals_ = frame.f_locals
        if isinstance(source, str):
            source = self.compile(source)
        return exec(source, globals_, locals_)

    def compile(self, source):
        """``compile(source, '<string>', 'exec')``, from the cache if it
        has it.

        Each wrapper's source holds its operator's handle, a pointer
        that differs in every process (``_imperative_invoke(<handle>,
        ...)``): the cache keeps the code of the source with the handle
        replaced by as many 9s, and puts this process's handle back into
        the function's constants. A source with no handle, or an
        unexpected one, is compiled as usual.
        """
        handles = set(_HANDLE_CALL.findall(source))
        if len(handles) != 1:
            return compile(source, '<string>', 'exec')
        (handle,) = handles
        # As many digits, so that every column (Python 3.11 keeps them
        # for tracebacks) is where the source puts it.
        stand_in = '9' * len(handle)
        if stand_in in source:
            return compile(source, '<string>', 'exec')
        generic = _HANDLE_CALL.sub(
            lambda m: m.group(0).replace(handle, stand_in), source
        )
        key = hashlib.blake2b(generic.encode(), digest_size=16).digest()
        codes = self.load()
        code = codes.get(key)
        if code is None:
            code = codes[key] = compile(generic, '<string>', 'exec')
            self.compiled += 1
        return _with_constant(code, int(stand_in), int(handle))

    def finish(self):
        """Once MXNet has imported: the builtin ``exec`` back in the
        register modules, and the file rewritten if this process
        compiled anything new."""
        sys.meta_path.remove(self)
        for module in self.modules:
            module.__dict__.pop('exec', None)
        if not self.compiled:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            temporary = f'{self.path}.{os.getpid()}'
            with open(temporary, 'wb') as f:
                marshal.dump(self.codes, f)
            os.replace(temporary, self.path)
        except OSError as err:
            warnings.warn(
                f'{CODE_CACHE_VAR}: could not write {self.path} ({err}); '
                f'MXNet imported as usual, without the cache',
                stacklevel=2,
            )


class _WithCompiledOps(importlib.abc.Loader):
    """The register module's own loader, with the caching ``exec`` in
    its namespace until MXNet has imported (its numpy modules, imported
    later, call the register module's functions too); a custom operator
    registered afterwards is compiled by the builtin, as usual."""

    def __init__(self, loader, ops):
        self.loader = loader
        self.ops = ops

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__dict__['exec'] = self.ops.exec
        self.ops.modules.append(module)
        try:
            self.loader.exec_module(module)
        finally:
            module.__loader__ = module.__spec__.loader = self.loader


class _MXNetFinder(importlib.abc.MetaPathFinder):
    """Item 5: the first ``import mxnet`` of the process, by d2lpar or
    anyone, runs :func:`start` right after MXNet has loaded.

    Deliberately an import hook rather than ``import mxnet`` in
    ``__init__``: the PyTorch twin must import without MXNet, and a
    chapter's ``import d2lpar as dp`` then ``from mxnet import gluon``
    must still get ``npx.set_np()`` before its first layer.
    """

    def find_spec(self, name, path=None, target=None):
        if name != 'mxnet':
            return None
        # The real search, without this finder (else it finds itself);
        # it stays armed until MXNet actually loads
        # (_SetUpAfterImport.exec_module takes it off).
        where = sys.meta_path.index(self)
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        except ImportError as err:
            raise _missing_mxnet(err) from err
        finally:
            sys.meta_path.insert(where, self)
        if spec is None:
            raise _missing_mxnet()
        spec.loader = _SetUpAfterImport(spec.loader)
        return spec


def prepare():
    """Run items 1 to 4 of the module docstring and arm item 5 (from
    __init__): MXNet loaded already is set up now."""
    _warn_untested_python()
    os.environ.setdefault('MXNET_CPU_TEMP_COPY', CPU_TEMP_COPY)

    from .memory import keep_freed_memory

    keep_freed_memory()

    from ._compat import restore_numpy_aliases

    restore_numpy_aliases()
    if sys.modules.get('mxnet') is not None:  # imported before d2lpar
        start()
    elif not any(isinstance(f, _MXNetFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MXNetFinder())


_started = False


def start():
    """Run items 6 to 8 of the module docstring, once per process (MXNet
    is imported when this runs)."""
    global _started
    if _started:
        return
    _started = True
    import mxnet as mx

    mx.npx.set_np()

    from . import threads

    # Python runs these on os.fork(), multiprocessing's fork start and
    # subprocess with preexec_fn: the cases where MXNet's handlers run too.
    os.register_at_fork(
        after_in_parent=threads.engine_restarted_in_parent,
        after_in_child=threads.engine_restarted_in_child,
    )
    threads.claim_every_core(mx.cpu(0))
    # Importing MXNet leaves the process's OpenMP setting at one thread,
    # which PyTorch reads: where the PyTorch twin was imported first, give
    # PyTorch's operators every core again (as its import does when MXNet
    # came first).
    twin = sys.modules.get('d2lpar.torch')
    if twin is not None:
        twin.use_every_core()
