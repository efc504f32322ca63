"""Pages in two frameworks: one kernel, two namespaces, two notebooks.

A code cell whose first line is ``#@tab pytorch`` is PyTorch's, one whose
first line is ``#@tab mxnet`` MXNet's (d2l's convention), with the myst
tag ``tab-pytorch`` / ``tab-mxnet`` that the web page's switcher hides
by; unmarked cells are shared. In the book's kernel
(:func:`d2lpar.pages.framework_tabs`) each framework's cells see only
their own names and the shared cells' (as in a student's notebook of that
framework); scripts/chapter_notebook.py writes NAME-pytorch.ipynb with
the shared and PyTorch cells, which imports no MXNet. The ``notebooks``
test runs those notebooks in a venv with ``pip install
".[torch,notebook]"`` only (``make test-notebooks`` creates it).
"""

import ast
import os
import re

import chapter_notebook
import jupytext
import pytest
from conftest import CHAPTERS as CHAPTER_FILES
from conftest import ROOT, run_notebook, venv_env

from d2lpar.pages import cell_framework, framework_tabs
from d2lpar.pages.tabs import framework_of, keep_framework

CHAPTERS = [name[: -len('.md')] for name in CHAPTER_FILES]
MXNET_IMPORT = re.compile(r'^\s*(import|from)\s+mxnet\b', re.M)


def code_cells(chapter):
    nb = jupytext.read(ROOT / 'book' / f'{chapter}.md')
    return [c for c in nb.cells if c.cell_type == 'code']


def tabbed(chapter):
    return any(cell_framework(c.source) for c in code_cells(chapter))


TABBED = [c for c in CHAPTERS if tabbed(c)]


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    before = set(shell.user_ns)
    yield shell
    tabs = getattr(shell, '_d2lpar_tabs', None)
    if tabs is not None:
        tabs.unregister()
    for name in set(shell.user_ns) - before:
        del shell.user_ns[name]


def run(shell, code):
    return shell.run_cell(code)


def test_each_framework_sees_its_own_names(shell):
    """After framework_tabs, a PyTorch cell's names are not seen by the
    next MXNet cell nor an MXNet cell's by a PyTorch cell; both see the
    shared cells' names; ``dp`` is d2lpar in MXNet's cells and
    d2lpar.torch in PyTorch's; a PyTorch cell that raises still leaves
    MXNet's namespace in place."""
    pytest.importorskip('torch')
    framework_tabs(shell)
    run(shell, '#@tab mxnet\nimport d2lpar as dp\nparams = "mx"')
    run(shell, '#@tab pytorch\nfrom d2lpar import torch as dp\ntorch_only = 1')
    run(shell, 'shared = 5')
    run(
        shell, '#@tab pytorch\nseen = (dp.__name__, shared, "params" in dir())'
    )
    ns = shell.user_ns
    assert 'torch_only' not in ns and 'seen' not in ns
    assert ns['dp'].__name__ == 'd2lpar' and ns['params'] == 'mx'
    run(shell, '#@tab pytorch\nparams = "pt"')
    result = run(shell, '#@tab pytorch\nout = (dp.__name__, params)\n1 / 0')
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert ns['dp'].__name__ == 'd2lpar' and ns['params'] == 'mx'
    assert 'out' not in ns
    run(shell, '#@tab pytorch\nfinal = (dp.__name__, params, shared)')
    assert 'final' not in ns
    tabs = shell._d2lpar_tabs
    assert tabs.stashed['final'] == ('d2lpar.torch', 'pt', 5)
    assert tabs.stashed['seen'] == ('d2lpar.torch', 5, False)


def test_the_swap_is_what_keeps_them_apart(shell):
    """The property above comes from the hooks: without framework_tabs a
    PyTorch-marked cell's names reach the next cell; after unregister
    they do again."""
    run(shell, '#@tab pytorch\nleaked = 1')
    assert shell.user_ns.get('leaked') == 1
    tabs = framework_tabs(shell)
    assert framework_tabs(shell) is tabs  # a second call changes nothing
    run(shell, '#@tab pytorch\nkept = 1')
    assert 'kept' not in shell.user_ns
    tabs.unregister()
    run(shell, '#@tab pytorch\nleaked_again = 1')
    assert shell.user_ns.get('leaked_again') == 1


def test_marker_is_read_and_checked():
    assert cell_framework('#@tab pytorch\nx = 1') == 'pytorch'
    assert cell_framework('#@tab mxnet') == 'mxnet'
    assert cell_framework('x = 1\n#@tab pytorch') is None
    assert cell_framework('# @tab pytorch\nx = 1') is None
    with pytest.raises(ValueError, match='jax'):
        cell_framework('#@tab jax\nx = 1')


def marker_problems(cells):
    """What :func:`framework_of` says of each cell whose #@tab marker and
    tab- tag disagree (or that has a tag of a framework never marked)."""
    found = []
    for cell in cells:
        try:
            framework_of(cell)
        except ValueError as err:
            found.append(str(err))
    return found


@pytest.mark.parametrize('chapter', CHAPTERS)
def test_marker_and_tag_agree(chapter):
    """Every code cell of every chapter: first line ``#@tab NAME`` exactly
    when it is tagged ``tab-NAME``; a page with marked cells turns the
    namespaces on in its first cell and imports each framework's dp in a
    marked cell."""
    cells = code_cells(chapter)
    assert marker_problems(cells) == []
    if chapter not in TABBED:
        return
    assert 'framework_tabs()' in cells[0].source
    assert cell_framework(cells[0].source) is None
    setups = {cell_framework(c.source): c.source for c in cells[1:3]}
    assert 'import d2lpar as dp' in setups['mxnet']
    assert 'from d2lpar import torch as dp' in setups['pytorch']


def test_marker_check_can_fail():
    """The check above finds a marker without its tag and a tag without
    its marker, and passes a shared cell and a matching pair."""
    import nbformat

    cell = nbformat.v4.new_code_cell
    assert (
        marker_problems(
            [
                cell('x = 1'),
                cell('#@tab mxnet\nx = 1', metadata={'tags': ['tab-mxnet']}),
            ]
        )
        == []
    )
    found = marker_problems(
        [
            cell('#@tab pytorch\nx = 1'),
            cell('x = 1', metadata={'tags': ['hide-cell', 'tab-mxnet']}),
            cell('#@tab mxnet\nx', metadata={'tags': ['tab-pytorch']}),
        ]
    )
    assert len(found) == 3


def imported_modules(source):
    tree = ast.parse(re.sub(r'^\s*[%!].*', 'pass', source, flags=re.M))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add(node.module)
            found |= {f'{node.module}.{a.name}' for a in node.names}
    return found


@pytest.mark.parametrize('chapter', TABBED)
def test_pytorch_notebook_imports_no_mxnet(chapter):
    """A page's PyTorch notebook has its shared and PyTorch cells only:
    no MXNet import, ``dp`` from d2lpar.torch, no marker line or tab
    tag, the PyTorch tab's text; the MXNet notebook has no PyTorch
    cell."""
    md = str(ROOT / 'book' / f'{chapter}.md')
    names = chapter_notebook.notebook_names(md)
    assert names == [
        ('mxnet', f'{chapter}.ipynb'),
        ('pytorch', f'{chapter}-pytorch.ipynb'),
    ]
    torch_nb = chapter_notebook.convert(md, framework='pytorch')
    code = [c for c in torch_nb.cells if c.cell_type == 'code']
    modules = set().union(*(imported_modules(c.source) for c in code))
    assert not {m for m in modules if m.split('.')[0] == 'mxnet'}
    assert 'd2lpar.torch' in modules
    assert not any(MXNET_IMPORT.search(c.source) for c in code)
    assert not any(
        re.search(r'^\s*import d2lpar\b', c.source, re.M) for c in code
    )
    for cell in torch_nb.cells:
        assert '#@tab' not in cell.source
        assert '{tab-' not in cell.source
        assert not any(
            t.startswith('tab-') for t in cell.metadata.get('tags', [])
        )
    text = '\n'.join(c.source for c in torch_nb.cells)
    assert 'from d2lpar import torch as dp' in text
    # d2lpar is not on PyPI: no bare 'pip install "d2lpar[...]"'; the
    # header names the wheel (or the site's wheel after an @).
    assert not re.search(r'pip install "d2lpar\[[^\]]*\]"', text)
    assert '[torch,notebook]' in torch_nb.cells[1].source  # the header
    mx_nb = chapter_notebook.convert(md)
    mx_code = '\n'.join(c.source for c in mx_nb.cells if c.cell_type == 'code')
    assert 'from d2lpar import torch' not in mx_code
    assert not re.search(r'^\s*import torch\b', mx_code, re.M)
    assert 'import d2lpar as dp' in mx_code


def test_tab_set_keeps_the_chosen_framework():
    """The switcher's tab-set becomes the chosen framework's text, less
    its link to the notebook itself (and stays whole where no item names
    the framework); other text is untouched."""
    link = 'As a notebook: <a href="../notebooks/x-pytorch.ipynb">x</a>.'
    text = (
        'Before.\n\n````{tab-set}\n:sync-group: framework\n\n'
        '```{tab-item} MXNet\n:sync: mxnet\nOn MXNet.\n```\n\n'
        f'```{{tab-item}} PyTorch\n:sync: pytorch\nOn PyTorch.\n\n{link}\n```\n'
        '````\n\nAfter.'
    )
    assert chapter_notebook.chosen_tab(text, 'pytorch') == (
        'Before.\n\nOn PyTorch.\n\nAfter.'
    )
    assert chapter_notebook.chosen_tab(text, 'mxnet') == (
        'Before.\n\nOn MXNet.\n\nAfter.'
    )
    assert chapter_notebook.chosen_tab(text, 'jax') == text


def test_keep_framework_keeps_the_shared_cells_and_its_own():
    """Of a two-framework notebook, keep_framework keeps the shared
    cells as they are and the chosen framework's without their #@tab
    line (nor the blank lines after it) and tab- tag (other tags stay),
    in order; the other framework's cells, code and markdown, go; the
    given cells are unchanged."""
    import copy

    import nbformat

    code, md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
    cells = [
        md('# Title'),
        code('x = 1', metadata={'tags': ['remove-cell']}),
        code(
            '#@tab mxnet\n\nimport d2lpar as dp',
            metadata={'tags': ['tab-mxnet']},
        ),
        code(
            '#@tab pytorch\nfrom d2lpar import torch as dp',
            metadata={'tags': ['hide-input', 'tab-pytorch']},
        ),
        md('On PyTorch.', metadata={'tags': ['tab-pytorch']}),
        md('On MXNet.', metadata={'tags': ['tab-mxnet']}),
        code('y = x + 1'),
    ]
    given = copy.deepcopy(cells)
    kept = {fw: keep_framework(cells, fw) for fw in ('mxnet', 'pytorch')}
    assert cells == given

    def shown(kept):
        return [(c.source, c.metadata.get('tags')) for c in kept]

    assert shown(kept['mxnet']) == [
        ('# Title', None),
        ('x = 1', ['remove-cell']),
        ('import d2lpar as dp', None),
        ('On MXNet.', None),
        ('y = x + 1', None),
    ]
    assert shown(kept['pytorch']) == [
        ('# Title', None),
        ('x = 1', ['remove-cell']),
        ('from d2lpar import torch as dp', ['hide-input']),
        ('On PyTorch.', None),
        ('y = x + 1', None),
    ]
    # The shared cells are copies equal to the given ones.
    assert (
        kept['pytorch'][1] == cells[1] and kept['pytorch'][1] is not cells[1]
    )
    with pytest.raises(ValueError, match='jax'):
        keep_framework(cells, 'jax')
    with pytest.raises(ValueError, match='#@tab pytorch but tagged'):
        keep_framework([code('#@tab pytorch\nimport torch')], 'mxnet')


@pytest.mark.parametrize('chapter', TABBED)
def test_shared_cells_use_names_both_frameworks_have(chapter):
    """A shared cell runs in MXNet's namespace in the book and in
    PyTorch's in the student's PyTorch notebook: every ``dp.NAME`` it
    reads exists in d2lpar and in d2lpar.torch, and it imports neither
    framework."""
    pytest.importorskip('torch')
    import d2lpar
    from d2lpar import torch as tdp

    for cell in code_cells(chapter):
        if cell_framework(cell.source):
            continue
        for name in re.findall(r'\bdp\.(\w+)', cell.source):
            assert hasattr(d2lpar, name) and hasattr(tdp, name), name
        modules = imported_modules(cell.source)
        assert not {
            m for m in modules if m.split('.')[0] in ('mxnet', 'torch')
        }


@pytest.mark.parametrize('chapter', TABBED)
def test_each_framework_shows_its_own_source(chapter):
    """Every ``dp.show_source(dp.NAME)`` of a PyTorch cell names a
    function of d2lpar.torch, and MXNet's of d2lpar; a shared cell shows
    only a function both frameworks share (the same object); a page
    shows some source in each framework, or in neither."""
    pytest.importorskip('torch')
    import d2lpar
    from d2lpar import torch as tdp

    def find(module, path):
        obj = module
        for part in path.split('.'):
            obj = getattr(obj, part)
        return obj

    shown = {'mxnet': [], 'pytorch': []}
    for cell in code_cells(chapter):
        framework = cell_framework(cell.source)
        pattern = r'dp\.show_source\(dp\.([\w.]+)\)'
        for path in re.findall(pattern, cell.source):
            if framework is None:
                assert find(d2lpar, path) is find(tdp, path), path
                continue
            find(d2lpar if framework == 'mxnet' else tdp, path)
            shown[framework].append(path)
    assert bool(shown['mxnet']) == bool(shown['pytorch']), shown


def torch_venv():
    given = os.environ.get('D2LPAR_TORCH_VENV')
    if not given:
        pytest.skip(
            'no D2LPAR_TORCH_VENV; make test-notebooks creates one '
            '(pip install ".[torch,notebook]", no MXNet)'
        )
    import pathlib

    venv = pathlib.Path(given).resolve()
    if not (venv / 'bin' / 'python').exists():
        pytest.fail(f'D2LPAR_TORCH_VENV={given} has no bin/python')
    return venv


@pytest.mark.notebooks
@pytest.mark.parametrize('chapter', TABBED)
def test_pytorch_notebook_runs_without_mxnet(chapter, tmp_path):
    """The chapter's PyTorch notebook runs top to bottom (quick mode) in
    a venv where MXNet cannot be imported."""
    import subprocess

    venv = torch_venv()
    no_mxnet = subprocess.run(
        [str(venv / 'bin' / 'python'), '-c', 'import mxnet'],
        capture_output=True,
    )
    assert no_mxnet.returncode != 0, f'{venv} has MXNet'
    path = tmp_path / f'{chapter}-pytorch.ipynb'
    chapter_notebook.main(
        str(ROOT / 'book' / f'{chapter}.md'), str(path), framework='pytorch'
    )
    run_notebook(venv, path, venv_env(venv))


SWITCHER = re.compile(
    r'^````\{tab-set\}\n:sync-group: framework\n\n'
    r'```\{tab-item\} MXNet\n:sync: mxnet\n.*?^```\n\n'
    r'```\{tab-item\} PyTorch\n:sync: pytorch\n.*?^```\n````$',
    re.M | re.S,
)


@pytest.mark.parametrize('chapter', TABBED)
def test_page_has_the_framework_switcher(chapter):
    """A page with framework cells offers the synced tab-set (MXNet,
    PyTorch) once, above its first visible framework cell, and its tabs
    link the page's two notebooks."""
    text = (ROOT / 'book' / f'{chapter}.md').read_text()
    switchers = SWITCHER.findall(text)
    assert len(switchers) == 1, chapter
    first_cell = re.search(
        r'^```\{code-cell\}[^\n]*\n(?!:tags: \[remove-cell)'
        r'(?::tags:[^\n]*\n)?#@tab ',
        text,
        re.M,
    )
    assert first_cell and SWITCHER.search(text).start() < first_cell.start()
    for name in (f'{chapter}.ipynb', f'{chapter}-pytorch.ipynb'):
        assert f'href="../notebooks/{name}"' in switchers[0]


@pytest.mark.slow
@pytest.mark.parametrize('chapter', TABBED)
@pytest.mark.parametrize('query', ['', '?framework=pytorch'])
def test_built_page_shows_the_chosen_framework(chapter, query, tmp_path):
    """After ``make book``, in a browser: the page is marked with the
    framework chosen (MXNet by default, PyTorch from the tab-set's
    ``?framework=pytorch``), has cells of both frameworks for the CSS to
    hide, and no ``#@tab`` marker line is shown."""
    import shutil
    import subprocess

    from test_book_html import FLAGS, HTML

    path = os.path.join(HTML, 'book', f'{chapter}.html')
    if not os.path.exists(path):
        pytest.fail(f'{path} does not exist: run `make book` first')
    exe = shutil.which('chromium')
    assert exe, 'chromium is not installed: run scripts/get-chromium.sh'
    run = subprocess.run(
        [exe, *FLAGS, f'--user-data-dir={tmp_path / "profile"}']
        + ['--dump-dom', f'file://{path}{query}'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout
    chosen = 'pytorch' if query else 'mxnet'
    assert re.search(rf'<html [^>]*data-framework="{chosen}"', dom)
    for framework in ('mxnet', 'pytorch'):
        assert f'tag_tab-{framework}' in dom
    assert '#@tab' not in dom
    with open(os.path.join(HTML, '_static', 'frameworks.css')) as f:
        assert 'html[data-framework="pytorch"] .tag_tab-mxnet' in f.read()
