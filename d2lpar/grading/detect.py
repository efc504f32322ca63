"""Which framework a solution is written in: read from its imports.

``python -m d2lpar check`` grades a solution against the checks of the
framework it imports, read from its source (never run for this). The
rule, by what a file imports:

- imports ``torch`` or ``d2lpar.torch`` (``from d2lpar import torch as
  dp``), and no MXNet: PyTorch;
- imports ``mxnet``, or the library's MXNet API (``import d2lpar``,
  ``from d2lpar import NAME``), and no PyTorch: MXNet;
- imports neither (a ``ring_schedule`` needs no arrays): MXNet, the
  book's first framework, where it is installed, else PyTorch;
- imports both: refused, naming the line that imports each, unless a
  line ``# d2lpar: framework=torch`` (or ``=mxnet``) says which.

Imports of the library's framework-neutral modules (``from
d2lpar.comm.schedules import Transfer``, ``from d2lpar.grading import
...``) count for neither. The marker comment, where present, decides in
every case.
"""

import ast
import importlib.util
import json
import pathlib
import re
import sys

FRAMEWORKS = ('mxnet', 'torch')
NAMES = {'mxnet': 'MXNet', 'torch': 'PyTorch'}
# The library's extra that installs each framework (pyproject.toml).
EXTRAS = {'mxnet': 'cpu', 'torch': 'torch'}
MARKER = re.compile(r'^\s*#\s*d2lpar:\s*framework\s*=\s*(\w+)\s*$', re.M)


class MixedFrameworks(ValueError):
    """A solution imports both frameworks and does not say which to use."""


def source_of(path):
    """The Python source of a ``.py`` file, or of a notebook's code cells
    (IPython's ``%magic`` and ``!shell`` lines left out)."""
    path = pathlib.Path(path)
    text = path.read_text(encoding='utf-8')
    if path.suffix != '.ipynb':
        return text
    cells = json.loads(text).get('cells', [])
    code = []
    for cell in cells:
        if cell.get('cell_type') != 'code':
            continue
        body = cell.get('source', '')
        body = ''.join(body) if isinstance(body, list) else body
        code.append(
            '\n'.join(
                line
                for line in body.splitlines()
                if not line.lstrip().startswith(('%', '!'))
            )
        )
    return '\n\n'.join(code) + '\n'


def _imports(tree):
    """``(framework, line, text)`` for every import that picks one."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top, _, rest = alias.name.partition('.')
                if top == 'torch' or alias.name.startswith('d2lpar.torch'):
                    found.append(
                        ('torch', node.lineno, f'import {alias.name}')
                    )
                elif top == 'mxnet' or alias.name == 'd2lpar':
                    found.append(
                        ('mxnet', node.lineno, f'import {alias.name}')
                    )
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module = node.module or ''
            top = module.split('.')[0]
            text = f'from {module} import ...'
            if top == 'torch' or module.startswith('d2lpar.torch'):
                found.append(('torch', node.lineno, text))
            elif top == 'mxnet':
                found.append(('mxnet', node.lineno, text))
            elif module == 'd2lpar':
                names = {a.name for a in node.names}
                if 'torch' in names:
                    found.append(('torch', node.lineno, text))
                if names - {'torch'}:
                    found.append(('mxnet', node.lineno, text))
    return sorted(found, key=lambda f: f[1])


def default_framework():
    """The framework of a solution that imports neither: MXNet where it
    is installed (the book's first), else PyTorch."""
    return 'mxnet' if importlib.util.find_spec('mxnet') else 'torch'


def missing(framework):
    """Why solutions in ``framework`` cannot run in this Python, or None
    where it is installed (``'mxnet'`` or ``'torch'``)."""
    try:
        found = importlib.util.find_spec(framework) is not None
    except (ImportError, ValueError):  # a broken or half-removed install
        found = False
    if found:
        return None
    return (
        f'{NAMES[framework]} is not installed in this Python '
        f'({sys.executable}); install d2lpar with its '
        f'"{EXTRAS[framework]}" extra (the book\'s install page gives the '
        f'command) and run this again'
    )


def framework_of(source, default=None):
    """The framework a solution's ``source`` is written in.

    Parameters
    ----------
    source : str
        Python source.
    default : str, optional
        For a source that imports neither framework (by default
        :func:`default_framework`).

    Returns
    -------
    (str, str)
        ``'mxnet'`` or ``'torch'``, and why, in words.

    Raises
    ------
    MixedFrameworks
        If it imports both and has no ``# d2lpar: framework=...`` line.
    ValueError
        If that line names another framework.
    """
    marked = MARKER.findall(source)
    if marked:
        chosen = marked[-1].lower()
        if chosen not in FRAMEWORKS:
            raise ValueError(
                f'the line "# d2lpar: framework={marked[-1]}" names no '
                f'framework the checker knows; write {FRAMEWORKS[0]} or '
                f'{FRAMEWORKS[1]}'
            )
        return chosen, f'its line "# d2lpar: framework={chosen}"'
    try:
        tree = ast.parse(source)
    except SyntaxError:
        # Importing it will fail and say where; any framework will do.
        return 'mxnet', 'it does not parse'
    found = _imports(tree)
    kinds = {f[0] for f in found}
    if len(kinds) == 2:
        first = {k: next(f for f in found if f[0] == k) for k in FRAMEWORKS}
        raise MixedFrameworks(
            f'it imports both PyTorch (line {first["torch"][1]}: '
            f'{first["torch"][2]}) and MXNet (line {first["mxnet"][1]}: '
            f'{first["mxnet"][2]}); a solution is graded in one '
            f'framework: import only one (from d2lpar import torch as dp '
            f'for PyTorch, import d2lpar as dp for MXNet), or add the '
            f'line "# d2lpar: framework=torch" (or =mxnet)'
        )
    if kinds:
        kind = kinds.pop()
        line = next(f for f in found if f[0] == kind)
        return kind, f'line {line[1]}: {line[2]}'
    default = default or default_framework()
    return (
        default,
        f'it imports neither framework ({NAMES[default]}, the default)',
    )
