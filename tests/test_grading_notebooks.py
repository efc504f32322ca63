"""The assignment notebooks: students get no solution, teachers' run,
in both frameworks (one file each, cells marked ``#@tab mxnet`` /
``#@tab pytorch``)."""

import ast
import os
import pathlib
import re
import subprocess
import sys

import jupytext
import nbformat
import pytest
from conftest import pythonpath_without_torch

from d2lpar.grading.detect import framework_of, source_of
from d2lpar.grading.notebooks import (
    MARKERS,
    build,
    cell_framework,
    execute,
    framework_version,
    install_cell,
    student_version,
)
from d2lpar.pages.install import install_note

HOMEWORK = pathlib.Path(__file__).resolve().parent.parent / 'homework'
ASSIGNMENTS = sorted(HOMEWORK.glob('[0-9]*.md'))
FRAMEWORKS = ('mxnet', 'pytorch')
VERSIONS = [(p, f) for p in ASSIGNMENTS for f in FRAMEWORKS]


def _id(version):
    path, framework = version
    return f'{path.stem}-{framework}'


def _solution_lines(cell):
    lines = cell.source.splitlines()
    begin, end = (
        next(i for i, line in enumerate(lines) if line.strip() == m)
        for m in MARKERS
    )
    return [l.strip() for l in lines[begin + 1 : end] if l.strip()]


def _is_solution(cell):
    return cell.metadata.get('nbgrader', {}).get('solution', False)


def _teacher(version):
    path, framework = version
    return framework_version(jupytext.read(path), framework)


def _imported_modules(nb):
    """Every module a notebook's code cells import (dotted names)."""
    names = []
    for cell in nb.cells:
        if cell.cell_type != 'code':
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names += [f'{node.module}.{a.name}' for a in node.names]
    return names


def test_six_assignments():
    """The six assignments the issue lists are there."""
    assert [p.stem for p in ASSIGNMENTS] == [
        '01-allreduce',
        '02-ring-schedule',
        '03-split-batch',
        '04-grad-accumulation',
        '05-averaging',
        '06-overlap',
    ]


@pytest.mark.parametrize('path', ASSIGNMENTS, ids=lambda p: p.stem)
def test_every_assignment_has_both_frameworks(path):
    """Each file marks cells for both frameworks, every marked code cell
    carries the book's #@tab line and tab- tag together, and each
    framework's version has one solution cell per grade_id (what
    nbgrader requires), the same grade_ids in both."""
    nb = jupytext.read(path)
    marked = {cell_framework(c) for c in nb.cells} - {None}
    assert marked == set(FRAMEWORKS)
    ids = {}
    for framework in FRAMEWORKS:
        cells = framework_version(nb, framework).cells
        grade_ids = [
            c.metadata['nbgrader']['grade_id']
            for c in cells
            if _is_solution(c)
        ]
        assert len(grade_ids) == len(set(grade_ids)), grade_ids
        ids[framework] = sorted(grade_ids)
        for c in cells:
            assert not c.source.lstrip().startswith('#@tab')
            assert not any(
                t.startswith('tab-') for t in c.metadata.get('tags', [])
            )
    assert ids['mxnet'] == ids['pytorch']


def test_framework_version_refuses_a_half_marked_cell():
    """A code cell with a #@tab line but no tab- tag (or the other way
    round) is an error, not silently shared."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('#@tab pytorch\nimport torch')]
    with pytest.raises(ValueError, match='#@tab pytorch but tagged'):
        framework_version(nb, 'mxnet')
    nb.cells = [
        nbformat.v4.new_code_cell('x = 1', metadata={'tags': ['tab-mxnet']})
    ]
    with pytest.raises(ValueError, match='tagged tab-mxnet'):
        framework_version(nb, 'pytorch')


@pytest.mark.parametrize('version', VERSIONS, ids=_id)
def test_student_version_has_no_solution(version):
    """Every solution region is replaced by nbgrader's stub, every
    answer by its placeholder, and no line of a solution is left."""
    teacher = _teacher(version)
    student = student_version(teacher)
    pairs = list(zip(teacher.cells, student.cells))
    assert len(teacher.cells) == len(student.cells)
    code = [
        (t, s) for t, s in pairs if _is_solution(t) and t.cell_type == 'code'
    ]
    answers = [
        (t, s)
        for t, s in pairs
        if _is_solution(t) and t.cell_type == 'markdown'
    ]
    assert code and answers
    for t, s in code:
        assert 'raise NotImplementedError()' in s.source
        left = [
            l
            for l in _solution_lines(t)
            if l in [x.strip() for x in s.source.splitlines()]
        ]
        assert left == [], f'solution lines left in {_id(version)}: {left}'
    for _, s in answers:
        assert s.source == 'YOUR ANSWER HERE'
    text = '\n'.join(c.source for c in student.cells)
    assert not any(m in text for m in MARKERS)


@pytest.mark.parametrize('path', ASSIGNMENTS, ids=lambda p: p.stem)
def test_pytorch_notebooks_import_no_mxnet(path):
    """The PyTorch version imports no MXNet anywhere (neither mxnet nor
    d2lpar's MXNet API), and the grader reads it as PyTorch; the MXNet
    version reads as MXNet."""
    pytorch = _teacher((path, 'pytorch'))
    modules = _imported_modules(pytorch)
    assert 'd2lpar.torch' in modules
    mxnet = [m for m in modules if m.split('.')[0] == 'mxnet' or m == 'd2lpar']
    assert mxnet == [], mxnet
    assert 'mxnet' not in '\n'.join(
        c.source for c in pytorch.cells if c.cell_type == 'code'
    )
    mx = _imported_modules(_teacher((path, 'mxnet')))
    assert 'd2lpar' in mx or any(m.startswith('mxnet') for m in mx)
    assert 'd2lpar.torch' not in mx


@pytest.mark.parametrize('path', ASSIGNMENTS, ids=lambda p: p.stem)
def test_mxnet_notebooks_import_d2lpar_before_mxnet(path):
    """Every MXNet code cell that imports mxnet imports d2lpar before
    it: d2lpar prepares numpy for MXNet 1.9.1 (with numpy >= 1.24 an
    mxnet imported first fails on np.bool), as the install page says."""
    first = []
    for cell in _teacher((path, 'mxnet')).cells:
        if cell.cell_type != 'code':
            continue
        d2lpar_seen = False
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module]
            else:
                continue
            if any(n.split('.')[0] == 'd2lpar' for n in names):
                d2lpar_seen = True
            if any(n.split('.')[0] == 'mxnet' for n in names):
                first.append(d2lpar_seen)
    assert all(first), first


def test_pytorch_student_files_read_as_pytorch(tmp_path):
    """python -m d2lpar check reads each PyTorch student notebook as
    PyTorch and each MXNet one as MXNet (from their imports)."""
    build(HOMEWORK, tmp_path)
    for p in sorted(tmp_path.iterdir()):
        expected = 'torch' if p.stem.endswith('-pytorch') else 'mxnet'
        assert framework_of(source_of(p))[0] == expected, p.name


@pytest.mark.parametrize('version', VERSIONS, ids=_id)
def test_every_code_solution_is_followed_by_its_check(version):
    """The code cell right after each function to write calls its
    check, so a student sees the diagnosis at once."""
    cells = [c for c in _teacher(version).cells if c.cell_type == 'code']
    for i, cell in enumerate(cells):
        if _is_solution(cell):
            name = cell.source.split('def ', 1)[1].split('(', 1)[0]
            follow = cells[i + 1].source
            assert follow.startswith('dp.check_')
            assert re.search(rf'\({name}(\)|, shape=)', follow), follow


def test_build_writes_student_notebooks_only_where_asked(tmp_path):
    """build() puts student notebooks, both frameworks', in the served
    folder and teacher notebooks elsewhere (nothing with solutions in
    the served one)."""
    student, teacher = tmp_path / 'extra', tmp_path / 'teacher'
    written = build(HOMEWORK, student, teacher)
    assert [p.name for p in written] == [
        p.stem + suffix + '.ipynb'
        for p in ASSIGNMENTS
        for suffix in ('', '-pytorch')
    ]
    for p in student.iterdir():
        assert MARKERS[0] not in p.read_text()
    assert sorted(p.name for p in teacher.iterdir()) == sorted(
        p.name for p in written
    )
    assert all(MARKERS[0] in p.read_text() for p in teacher.iterdir())


def test_every_notebook_says_how_to_install_and_runs_no_pip(tmp_path):
    """Every notebook, student's and teacher's, has under its title a
    markdown cell with the install sentences of the chapters' notebooks
    for its framework (MXNet's extras cpu,notebook; PyTorch's
    torch,notebook, no MXNet); no code cell runs pip (not even a %pip
    or !pip line), so executing or grading a notebook installs
    nothing."""
    student, teacher = tmp_path / 'student', tmp_path / 'teacher'
    written = build(HOMEWORK, student, teacher)
    for path in written + sorted(teacher.iterdir()):
        nb = nbformat.read(path, as_version=4)
        pytorch = path.stem.endswith('-pytorch')
        extras = 'torch,notebook' if pytorch else 'cpu,notebook'
        title, note = nb.cells[:2]
        assert title.cell_type == 'markdown'
        assert title.source.startswith('# Homework '), title.source
        assert note.cell_type == 'markdown', path.name
        assert note.metadata['tags'] == ['install']
        assert install_note(extras=extras) in note.source, path.name
        assert f'[{extras}]' in note.source
        for cell in nb.cells:
            if cell.cell_type == 'code':
                assert 'pip' not in cell.source, (path.name, cell.source)
    assert install_cell('pytorch').source != install_cell('mxnet').source


# A two-framework assignment: each framework's cell only runs with it.
TINY = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Homework 0: two cells

```{code-cell} ipython3
:tags: [tab-mxnet]
#@tab mxnet
print('the MXNet cell ran')
```

```{code-cell} ipython3
:tags: [tab-pytorch]
#@tab pytorch
import torch
```
"""


def test_execute_runs_only_the_frameworks_installed(tmp_path):
    """Without PyTorch, --execute runs the MXNet teacher notebook and
    writes the PyTorch one unexecuted, its line saying so, why and what
    to install, instead of stopping at its `import torch`."""
    source = tmp_path / 'homework'
    source.mkdir()
    (source / '00-tiny.md').write_text(TINY)
    path = pythonpath_without_torch(tmp_path)
    run = subprocess.run(
        [sys.executable, '-m', 'd2lpar.grading.notebooks', str(source)]
        + [str(tmp_path / 'handout'), '--teacher', str(tmp_path / 'key')]
        + ['--execute'],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=path),
    )
    assert run.returncode == 0, run.stderr[-3000:]
    mx, pt = run.stdout.strip().splitlines()
    assert mx == f'homework: wrote {tmp_path}/handout/00-tiny.ipynb'
    assert pt.startswith(
        f'homework: wrote {tmp_path}/handout/00-tiny-pytorch.ipynb (its '
        'teacher version was not executed: PyTorch is not installed in '
        'this Python'
    ), pt
    assert 'install d2lpar with its "torch" extra' in pt
    ran = nbformat.read(tmp_path / 'key' / '00-tiny.ipynb', as_version=4)
    [cell] = [c for c in ran.cells if c.cell_type == 'code']
    assert cell.outputs[0]['text'] == 'the MXNet cell ran\n'
    key = tmp_path / 'key' / '00-tiny-pytorch.ipynb'
    [cell] = [
        c
        for c in nbformat.read(key, as_version=4).cells
        if c.cell_type == 'code'
    ]
    assert cell.outputs == []


# Appended to a teacher notebook run: which frameworks the kernel loaded.
LOADED = "import sys\nprint(sorted({'mxnet', 'torch'} & set(sys.modules)))"


@pytest.mark.slow
@pytest.mark.parametrize('version', VERSIONS, ids=_id)
def test_teacher_notebook_executes_and_passes(version):
    """The teacher version runs top to bottom and every check in it
    passes (its output says so); the PyTorch version never loads MXNet
    (the MXNet one, for its part, never loads PyTorch)."""
    nb = _teacher(version)
    nb.cells.append(nbformat.v4.new_code_cell(LOADED))
    nb = execute(nb)
    reports = [
        o
        for c in nb.cells
        if c.cell_type == 'code' and c.source.startswith('dp.check_')
        for o in c.outputs
    ]
    assert reports
    for out in reports:
        assert 'passed all' in out['data']['text/plain']
    loaded = nb.cells[-1].outputs[0]['text'].strip()
    expected = {'mxnet': "['mxnet']", 'pytorch': "['torch']"}
    assert loaded == expected[version[1]]
