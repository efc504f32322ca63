"""The assignment notebooks: students get no solution, teachers' run."""

import pathlib
import re

import jupytext
import pytest

from d2lpar.grading.notebooks import MARKERS, build, execute, student_version

HOMEWORK = pathlib.Path(__file__).resolve().parent.parent / 'homework'
ASSIGNMENTS = sorted(HOMEWORK.glob('[0-9]*.md'))


def _solution_lines(cell):
    lines = cell.source.splitlines()
    begin, end = (
        next(i for i, line in enumerate(lines) if line.strip() == m)
        for m in MARKERS
    )
    return [l.strip() for l in lines[begin + 1 : end] if l.strip()]


def _is_solution(cell):
    return cell.metadata.get('nbgrader', {}).get('solution', False)


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
def test_student_version_has_no_solution(path):
    """Every solution region is replaced by nbgrader's stub, every
    answer by its placeholder, and no line of a solution is left."""
    teacher = jupytext.read(path)
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
        assert left == [], f'solution lines left in {path.name}: {left}'
    for _, s in answers:
        assert s.source == 'YOUR ANSWER HERE'
    text = '\n'.join(c.source for c in student.cells)
    assert not any(m in text for m in MARKERS)


@pytest.mark.parametrize('path', ASSIGNMENTS, ids=lambda p: p.stem)
def test_every_code_solution_is_followed_by_its_check(path):
    """The code cell right after each function to write calls its
    check, so a student sees the diagnosis at once."""
    cells = [c for c in jupytext.read(path).cells if c.cell_type == 'code']
    for i, cell in enumerate(cells):
        if _is_solution(cell):
            name = cell.source.split('def ', 1)[1].split('(', 1)[0]
            follow = cells[i + 1].source
            assert follow.startswith('dp.check_')
            assert re.search(rf'\({name}(\)|, shape=)', follow), follow


def test_build_writes_student_notebooks_only_where_asked(tmp_path):
    """build() puts student notebooks in the served folder and teacher
    notebooks elsewhere (nothing with solutions in the served one)."""
    student, teacher = tmp_path / 'extra', tmp_path / 'teacher'
    written = build(HOMEWORK, student, teacher)
    assert [p.name for p in written] == [
        p.stem + '.ipynb' for p in ASSIGNMENTS
    ]
    for p in student.iterdir():
        assert MARKERS[0] not in p.read_text()
    assert all(MARKERS[0] in p.read_text() for p in teacher.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize('path', ASSIGNMENTS, ids=lambda p: p.stem)
def test_teacher_notebook_executes_and_passes(path):
    """The teacher version runs top to bottom and every check in it
    passes (its output says so)."""
    nb = execute(jupytext.read(path))
    reports = [
        o
        for c in nb.cells
        if c.cell_type == 'code' and c.source.startswith('dp.check_')
        for o in c.outputs
    ]
    assert reports
    for out in reports:
        assert 'passed all' in out['data']['text/plain']
