"""The chapter notebooks served with the book run in plain Jupyter.

Each chapter becomes a notebook (scripts/chapter_notebook.py, the code
scripts/build-book.sh uses for the downloads); the fast tests check that
no Sphinx-only syntax is left in it. The ``notebooks`` tests execute the
notebooks top to bottom with nbclient in a student's environment, a venv
with only ``pip install ".[cpu,notebook]"`` (no jupyter-book, no clone on
the path), in quick mode: ``make test-notebooks`` creates the venv and
runs them (all chapters; D2LPAR_NOTEBOOKS=a,b picks some). Without that
venv they are skipped, saying so.
"""

import ast
import builtins
import os
import re

import chapter_notebook
import jupytext
import nbformat
import pytest
from conftest import CHAPTERS as CHAPTER_FILES
from conftest import ROOT, plain_venv, run_notebook, venv_env

CHAPTERS = [name[: -len('.md')] for name in CHAPTER_FILES]
SPHINX_ONLY = (
    '{literalinclude}',
    '{glue',
    '{admonition}',
    '{doc}',
    '{py:',
    '{eval-rst}',
    ':class: dropdown',
)


def wanted(chapter):
    """D2LPAR_NOTEBOOKS=training,concise runs only those (default all)."""
    names = os.environ.get('D2LPAR_NOTEBOOKS', '')
    if names and chapter not in names.split(','):
        pytest.skip(f'{chapter} not in D2LPAR_NOTEBOOKS={names}')


def md_code_cells(chapter):
    """The chapter's code cells as jupytext reads them (of a page in two
    frameworks, the shared and MXNet cells, as its MXNet notebook has
    them: tests/test_pages_tabs.py checks the PyTorch one)."""
    nb = jupytext.read(ROOT / 'book' / f'{chapter}.md')
    cells = [c for c in nb.cells if c.cell_type == 'code']
    return chapter_notebook.one_framework(cells, 'mxnet')


def removed(cell):
    return 'remove-cell' in cell.metadata.get('tags', [])


@pytest.mark.parametrize('chapter', CHAPTERS)
def test_notebook_has_no_sphinx_only_syntax(chapter):
    """The notebook shows the source of each literalinclude as a code
    cell, keeps every visible code cell of the chapter (less its glue
    calls), and has no directive or role a plain Jupyter would show as
    raw text."""
    md = (ROOT / 'book' / f'{chapter}.md').read_text()
    nb = chapter_notebook.convert(str(ROOT / 'book' / f'{chapter}.md'))
    markdown = '\n'.join(
        c.source for c in nb.cells if c.cell_type == 'markdown'
    )
    for syntax in SPHINX_ONLY:
        assert syntax not in markdown, syntax
    sources = [c for c in nb.cells if 'source' in c.metadata.get('tags', [])]
    assert len(sources) == md.count('{literalinclude}')
    code = [c.source for c in nb.cells if c.cell_type == 'code']
    for cell in md_code_cells(chapter):
        if removed(cell):
            continue
        if 'glue_text' not in cell.source:
            assert cell.source in code, cell.source[:200]
        else:  # its lines less the glue calls', in order
            assert any(
                is_subsequence(c.split('\n'), cell.source.split('\n'))
                for c in code
            ) or not glue_free(cell.source), cell.source[:200]


@pytest.mark.parametrize('chapter', CHAPTERS)
def test_notebook_does_not_link_itself(chapter):
    """The page's "This chapter as a notebook" link (in a tab or not)
    is not in the notebook it points to."""
    md = ROOT / 'book' / f'{chapter}.md'
    tabbed = re.search(r'^#@tab pytorch', md.read_text(), re.M)
    for framework in ('mxnet', 'pytorch') if tabbed else ('mxnet',):
        nb = chapter_notebook.convert(str(md), framework=framework)
        for cell in nb.cells:
            if cell.cell_type == 'markdown':
                assert 'This chapter as a' not in cell.source, cell.source


def is_subsequence(lines, of):
    it = iter(of)
    return all(line in it for line in lines)


def glue_free(source):
    """The statements of ``source`` that are not glue calls (as text)."""
    tree = ast.parse(re.sub(r'^%.*', 'pass', source, flags=re.M))
    return [
        s
        for s in tree.body
        if not (
            isinstance(s, ast.Expr)
            and 'glue_text' in ast.unparse(s.value).split('(')[0]
        )
    ]


@pytest.mark.parametrize('chapter', CHAPTERS)
def test_notebook_has_no_plumbing(chapter):
    """What only served the build is gone: no glue call, no assert the
    book's reader did not see, no cell tagged remove-cell; what a later
    cell reads is still defined before it (the names each code cell
    reads are bound by an earlier cell, an import or the cell itself)."""
    nb = chapter_notebook.convert(str(ROOT / 'book' / f'{chapter}.md'))
    shown = '\n'.join(
        c.source for c in md_code_cells(chapter) if not removed(c)
    )
    bound = set(dir(builtins)) | {'get_ipython', 'display'}
    for cell in nb.cells:
        if cell.cell_type != 'code':
            continue
        assert 'glue_text' not in cell.source, cell.source[:200]
        assert 'remove-cell' not in cell.metadata.get('tags', [])
        tree = ast.parse(re.sub(r'^%.*', 'pass', cell.source, flags=re.M))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                assert (
                    ast.get_source_segment(
                        re.sub(r'^%.*', 'pass', cell.source, flags=re.M), node
                    ).split('\n')[0]
                    in shown
                )
        bound |= chapter_notebook.bound_names(tree)
        for stmt in tree.body:
            bound |= chapter_notebook.bound_names(stmt)
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.comprehension)):
                bound |= chapter_notebook.targets_of(node.target)
            if isinstance(node, (ast.Lambda, ast.FunctionDef)):
                bound |= {a.arg for a in node.args.args}
            if isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
            if isinstance(node, ast.withitem) and node.optional_vars:
                bound |= chapter_notebook.targets_of(node.optional_vars)
            if isinstance(node, ast.NamedExpr):
                bound.add(node.target.id)
        unbound = chapter_notebook.reads(tree) - bound
        assert not unbound, (unbound, cell.source[:300])


# The front matter of a MyST page, for the converter's tests' pages.
PAGE_HEADER = (
    '---\njupytext:\n  text_representation:\n    extension: .md\n'
    '    format_name: myst\nkernelspec:\n  display_name: Python 3\n'
    '  language: python\n  name: python3\n---\n\n# Page\n\n'
)


def converted(tmp_path, body):
    """The converted notebook of a MyST page whose body is ``body``."""
    page = tmp_path / 'page.md'
    page.write_text(PAGE_HEADER + body)
    return chapter_notebook.convert(str(page))


def test_plumbing_goes_and_what_is_read_stays(tmp_path):
    """The pruning can fail and keeps what it must: from removed cells
    the glue, the asserts, the ``del`` of names and the names nothing
    reads go (a cell of only that goes whole), a name a visible cell reads stays, and a
    visible cell loses only its glue calls."""
    nb = converted(
        tmp_path,
        '```{code-cell} ipython3\n:tags: [remove-cell]\n'
        '%matplotlib inline\nimport os\nimport d2lpar as dp\n'
        'n = 3\nunused = n + 1\nassert unused == 4\n'
        "for k in range(2):\n    dp.glue_text(f'x{k}', str(k))\n```\n\n"
        'Text {glue:md}`x0`.\n\n'
        '```{code-cell} ipython3\nm = n * 2\n'
        "dp.glue_text('m', str(m))\nprint(m)\n```\n\n"
        '```{code-cell} ipython3\n:tags: [remove-cell]\n'
        "import os as other\nassert m == 6\ndp.glue_text('k', str(m))\n"
        'del other\n```\n',
    )
    code = [c.source for c in nb.cells if c.cell_type == 'code']
    assert code == [
        '%matplotlib inline\nn = 3',  # dp is read by glue calls only
        'm = n * 2\nprint(m)',
    ]
    text = [c.source for c in nb.cells if c.cell_type == 'markdown']
    assert 'Text `x0`.' in text
    glued = chapter_notebook.plain_markdown('Text {glue:md}`x0`.', {'x0': '7'})
    assert glued == 'Text 7.'


def test_python_roles_become_code_font():
    """A {py:...} role shows its own text, else its target (a ``~``
    target its last part), in code font, as Sphinx shows it."""
    plain = chapter_notebook.plain_markdown
    assert plain('{py:func}`d2lpar.f` x') == '`d2lpar.f` x'
    assert plain('{py:func}`dp.f <d2lpar.f>`') == '`dp.f`'
    assert plain('{py:mod}`~d2lpar.comm`') == '`comm`'


@pytest.mark.parametrize('chapter', CHAPTERS)
def test_solutions_fold_after_the_exercises(chapter):
    """All the exercises come first; then a Solutions section, collapsed
    in JupyterLab, holds every solution (each solution admonition and
    every code cell of the chapter's Exercises section), each cell
    folded (source_hidden) and none before it."""
    md = (ROOT / 'book' / f'{chapter}.md').read_text()
    nb = chapter_notebook.convert(str(ROOT / 'book' / f'{chapter}.md'))
    if '## Exercises' not in md:
        assert not any('## Solutions' in c.source for c in nb.cells)
        return
    heads = [c.source.split('\n')[0] for c in nb.cells]
    assert heads.count('## Exercises') == 1
    assert heads.count('## Solutions') == 1
    ex, sol = heads.index('## Exercises'), heads.index('## Solutions')
    assert ex < sol
    assert nb.cells[sol].metadata[chapter_notebook.COLLAPSED] is True
    for cell in nb.cells[:sol]:
        assert 'solution' not in cell.metadata.get('tags', [])
        assert not cell.source.startswith('**Solution')
    for cell in nb.cells[sol + 1 :]:
        assert 'solution' in cell.metadata['tags']
        assert cell.metadata['jupyter']['source_hidden'] is True
        if cell.cell_type == 'code':
            assert cell.metadata['jupyter']['outputs_hidden'] is True
    texts = [c for c in nb.cells[sol + 1 :] if c.cell_type == 'markdown']
    titled = [c for c in texts if c.source.startswith('**Solution')]
    # One admonition of all the solutions keeps no title: the section's
    # heading gives it.
    each = re.findall(r'\{admonition\} Solution(?!s[ \t]*$)', md, re.M)
    assert len(titled) == len(each)
    assert not any(c.source.startswith('**Solutions**') for c in texts)
    after = md[md.index('## Exercises') :]
    visible = [
        re.sub(r'\A(:tags:[^\n]*\n)?#@tab mxnet\n', r'\1', c)
        for c in re.findall(
            r'```\{code-cell\}[^\n]*\n(.*?)^```', after, re.S | re.M
        )
        if 'remove-cell' not in c.split('\n')[0]
        and '#@tab pytorch' not in c.split('\n')[:2]
    ]
    code = [c for c in nb.cells[sol + 1 :] if c.cell_type == 'code']
    shown = [  # the others keep what a removed cell computed for them
        c
        for c in code
        if any(
            is_subsequence(c.source.split('\n'), v.split('\n'))
            for v in visible
        )
    ]
    assert len(shown) == len(visible)
    # The exercises' own text stays where it was, before the solutions.
    prompts = re.findall(r'^(?:### )?(\d+)\. ', after, re.M)
    between = '\n'.join(c.source for c in nb.cells[ex:sol])
    for number in sorted(set(prompts), key=int):
        assert re.search(rf'^(### )?{number}\. ', between, re.M), number


@pytest.mark.parametrize(
    'site, repo',
    [('', ''), ('https://example.org/book/', 'https://git.example.org/r')],
)
def test_header_gives_a_command_that_works_from_the_site(
    site, repo, monkeypatch
):
    """The first cell under the title says how to install the d2lpar the
    book ran: from the site's dist/ folder where its address is known,
    else the wheel downloaded from it; from the repository where that is
    known; with d2l for a chapter that imports it."""
    import importlib.metadata

    monkeypatch.setenv('D2LPAR_SITE_URL', site)
    monkeypatch.setenv('D2LPAR_REPOSITORY_URL', repo)
    version = importlib.metadata.version('d2lpar')
    wheel = f'd2lpar-{version}-py3-none-any.whl'
    for chapter, extras in (
        ('split-batch', 'cpu,notebook'),
        ('intro', 'cpu,notebook,d2l'),
    ):
        nb = chapter_notebook.convert(str(ROOT / 'book' / f'{chapter}.md'))
        header = nb.cells[1]
        assert header.metadata['tags'] == ['install']
        if site:
            assert (
                f'`pip install "d2lpar[{extras}] @ '
                f'https://example.org/book/dist/{wheel}"`'
            ) in header.source
        else:
            assert f'`pip install "./{wheel}[{extras}]"`' in header.source
        git = f'`pip install "d2lpar[{extras}] @ git+{repo}"`'
        assert (git in header.source) == bool(repo)


def test_header_says_the_d2l_extra_needs_python_311():
    """d2l pins numpy 1.23.5, which has no wheel for Python 3.12 (Colab's):
    a header whose command has the d2l extra says to leave it out there;
    one without it says nothing of d2l."""
    for chapter, has_d2l in (('intro', True), ('split-batch', False)):
        nb = chapter_notebook.convert(str(ROOT / 'book' / f'{chapter}.md'))
        header = nb.cells[1].source
        assert ('`d2l` extra needs Python 3.11' in header) == has_d2l
        assert ('leave `d2l`' in header) == has_d2l


@pytest.mark.parametrize('chapter', CHAPTERS)
def test_d2lpar_is_imported_before_mxnet(chapter):
    """Beside numpy 1.26 (Python 3.12) MXNet 1.9.1 imports only after
    d2lpar restored numpy's aliases: no notebook imports MXNet first."""
    nb = chapter_notebook.convert(str(ROOT / 'book' / f'{chapter}.md'))
    code = '\n'.join(c.source for c in nb.cells if c.cell_type == 'code')
    first_mxnet = re.search(r'^(import|from) mxnet\b', code, re.M)
    if first_mxnet:
        assert 'import d2lpar as dp' in code[: first_mxnet.start()]


@pytest.mark.notebooks
@pytest.mark.parametrize('chapter', CHAPTERS)
def test_notebook_runs_in_plain_jupyter(chapter, tmp_path):
    """The chapter's notebook runs top to bottom (D2LPAR_QUICK=1) in the
    plain venv with its own d2lpar, and every source cell displays the
    code of the function it names."""
    wanted(chapter)
    venv = plain_venv()
    path = tmp_path / f'{chapter}.ipynb'
    chapter_notebook.main(str(ROOT / 'book' / f'{chapter}.md'), str(path))
    run_notebook(venv, path, venv_env(venv))
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if 'source' in cell.metadata.get('tags', []):
            shown = str(cell.outputs)
            name = cell.source.splitlines()[0].split('.')[-1].rstrip(')')
            assert f'def {name}' in shown or f'class {name}' in shown, name


def test_a_nested_glue_only_loop_goes_whole(tmp_path):
    """A loop of only glue calls inside a kept loop goes with its header:
    no stray ``pass`` is left at the inner body's indentation (the buckets
    page's notebook once failed to parse on one)."""
    nb = converted(
        tmp_path,
        '```{code-cell} ipython3\nimport d2lpar as dp\n'
        'for name in "ab":\n    print(name)\n'
        '    for key in "xy":\n'
        '        dp.glue_text(name + key, key)\n'
        '    dp.glue_text(name, name)\n```\n',
    )
    code = [c.source for c in nb.cells if c.cell_type == 'code']
    assert code == ['import d2lpar as dp\nfor name in "ab":\n    print(name)']
    ast.parse(code[0])
