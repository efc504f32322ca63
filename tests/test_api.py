"""The API page's promises: every name it documents is reached from
``import d2lpar as dp`` by attributes alone (``dp.multiprocess.launch``),
with no submodule import of its own, and every example its docstrings
show prints what it says."""

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

DIRECTIVE = re.compile(r'^\.\. auto\w+:: (d2lpar\.[\w.]+)', re.MULTILINE)


def documented_names():
    with open(os.path.join(ROOT, 'book', 'api.md')) as f:
        return DIRECTIVE.findall(f.read())


def test_pattern_reads_every_entry_of_the_page():
    """Every autodoc entry of the page, in any spelling (an rst
    directive or a MyST one), is one the pattern above reads, so the
    test below checks them all and cannot pass on an empty list."""
    with open(os.path.join(ROOT, 'book', 'api.md')) as f:
        entries = re.findall(r'\bauto\w+(?:::|\})', f.read())
    assert entries
    assert len(documented_names()) == len(entries)


def without_torch_if_absent(names):
    """The names, less the PyTorch twin's where torch is not installed
    (make test-numpy126's venv): reaching them imports torch."""
    if importlib.util.find_spec('torch') is not None:
        return names
    return [n for n in names if 'torch' not in n.split('.')]


def test_every_documented_name_is_reached_from_dp():
    """In a fresh interpreter that imports only d2lpar, each documented
    dotted name resolves attribute by attribute."""
    names = without_torch_if_absent(documented_names())
    script = (
        'import sys, d2lpar as dp\n'
        'missing = []\n'
        'for name in sys.argv[1:]:\n'
        '    obj = dp\n'
        '    try:\n'
        '        for part in name.split(".")[1:]:\n'
        '            obj = getattr(obj, part)\n'
        '    except AttributeError:\n'
        '        missing.append(name)\n'
        'print("\\n".join(missing))\n'
    )
    run = subprocess.run(
        [sys.executable, '-c', script, *names],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == []


def test_docstrings_link_chapters_by_file_name():
    """A docstring names the chapter that teaches it with a :doc: link to
    a file of the book's table of contents (_toc.yml, the one list of
    chapter files), so the API page shows the chapter's current title;
    no docstring names a chapter in plain words, which goes stale when a
    chapter is renamed."""
    with open(os.path.join(ROOT, '_toc.yml')) as f:
        chapters = set(re.findall(r'(?:file|root): (\S+)', f.read()))
    linked, stale = [], []
    for folder, _, files in os.walk(os.path.join(ROOT, 'd2lpar')):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            with open(path) as f:
                source = f.read()
            for target in re.findall(r':doc:`/([\w/-]+)`', source):
                linked.append(target)
                assert target in chapters, f'{path}: no chapter {target}'
            stale += [
                f'{path}: {m}'
                for m in re.findall(
                    r'Taught in the [^.]*|the chapter (?:on|")[^.]*', source
                )
            ]
    assert len(linked) > 50
    assert stale == []


# A name a page uses: dp.a.b... or d2lpar.a.b... in code or prose (not
# a module run as a command, python -m d2lpar.grading.notebooks, nor an
# API directive, .. automodule:: d2lpar.grading.mistakes).
PAGE_NAME = re.compile(r'(?<!-m )(?<!:: )\b(?:dp|d2lpar)(?:\.\w+)+')
IMPORT_PATH = re.compile(r'^\s*(?:from|import) (d2lpar(?:\.\w+)*)', re.M)
# Walk each name from the package and say what is wrong with it, if
# anything: a private part, or a module below the first level (the
# third name of dp.comm.schedules.traffic is reached through two
# modules). Attributes of a class or of a value (dp.comm.SCHEDULES.items,
# dp.multiprocess.ParameterServer.sum_) are not levels of the package.
DEPTH_SCRIPT = """
import importlib, sys, types
root = importlib.import_module(sys.argv[1])
for name in sys.argv[2:]:
    parts = name.split('.')[1:]
    if any(p.startswith('_') for p in parts):
        print(name, 'private')
        continue
    obj = root
    for depth, part in enumerate(parts):
        if not hasattr(obj, part):
            print(name, 'not found')
            break
        obj = getattr(obj, part)
        if isinstance(obj, types.ModuleType) and depth >= 1:
            print(name, 'module at level', depth + 1)
            break
"""


# A PyTorch cell of a page in both frameworks (its first line is
# ``#@tab pytorch``, d2lpar/pages/tabs.py), whose dp is d2lpar.torch.
TORCH_CELL = re.compile(
    r'^```\{code-cell\}[^\n]*\n(?::tags:[^\n]*\n)?#@tab pytorch\n.*?^```',
    re.M | re.S,
)


CODE_CELL = re.compile(r'^```\{code-cell\}.*?^```', re.M | re.S)


def page_names(part='mxnet'):
    """Every dotted name of the package the pages (chapters and
    homework) use, and every module path they import: in their PyTorch
    cells for ``part='pytorch'``, in their other code cells for
    ``'mxnet'``, in their text (outside code cells) for ``'prose'``."""
    names = set()
    for folder in ('book', 'homework'):
        for path in sorted(os.listdir(os.path.join(ROOT, folder))):
            if path.endswith('.md') and path != 'api.md':
                with open(os.path.join(ROOT, folder, path)) as f:
                    text = f.read()
                if part == 'pytorch':
                    text = '\n'.join(TORCH_CELL.findall(text))
                elif part == 'mxnet':
                    cells = CODE_CELL.findall(TORCH_CELL.sub('', text))
                    text = '\n'.join(cells)
                else:
                    text = CODE_CELL.sub('', text)
                names |= set(PAGE_NAME.findall(text))
                names |= {
                    m + '.'  # a module path: every part is a level
                    for m in IMPORT_PATH.findall(text)
                }
    return sorted(names)


def depth_problems(names, root='d2lpar'):
    """What is wrong with each name, walked from ``root`` (``dp``)."""
    import_paths = [n[:-1] for n in names if n.endswith('.')]
    problems = [
        f'{path} imported (a module below the first level)'
        for path in import_paths
        if path.count('.') >= 2
    ]
    run = subprocess.run(
        [sys.executable, '-c', DEPTH_SCRIPT, root]
        + [n for n in names if not n.endswith('.')],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    return problems + run.stdout.splitlines()


def prose_problems(names, torch_present):
    """What is wrong with each name of the pages' text. The text is one
    for both frameworks, so a ``dp.NAME`` there is right when it is
    right in either (``d2lpar`` or, with torch installed,
    ``d2lpar.torch``); a ``d2lpar.NAME`` is walked from ``d2lpar``."""
    problems = depth_problems(without_torch_if_absent(names))
    if not torch_present:
        # A dp.NAME of the twin cannot be walked without torch (make
        # test-numpy126's venv): only what is wrong beyond 'not found'.
        return [p for p in problems if not p.endswith(' not found')]
    mine = [n for n in names if n.startswith('dp.')]
    torch_problems = depth_problems(mine, 'd2lpar.torch')

    def name(problem):
        return problem.split(' ', 1)[0]

    wrong_in_torch = {name(p) for p in torch_problems}
    return [
        p
        for p in problems
        if not (name(p) in mine and name(p) not in wrong_in_torch)
    ]


def test_pages_use_two_levels_and_no_private_names():
    """Chapters and homework reach the library in at most two levels
    (dp.allreduce, dp.zero.train_batch), never through a module of a
    subpackage (dp.comm.schedules.traffic) and never a private name."""
    torch_present = importlib.util.find_spec('torch') is not None
    names = page_names()
    assert 'dp.comm.allreduce_time' in names  # the pattern reads pages
    assert depth_problems(without_torch_if_absent(names)) == []
    prose = page_names('prose')
    assert 'dp.concise.spawn' in prose  # the pattern reads the text
    assert prose_problems(prose, torch_present) == []
    if not torch_present:
        return
    # A PyTorch cell's dp is d2lpar.torch: its names are walked from there
    # (and a d2lpar.NAME from d2lpar, as elsewhere).
    names = page_names('pytorch')
    assert 'dp.launch.launch' in names  # the pattern reads PyTorch's cells
    mine = [n for n in names if n.startswith('dp.')]
    assert depth_problems(mine, 'd2lpar.torch') == []
    assert depth_problems([n for n in names if n not in mine]) == []


def test_prose_names_are_right_in_one_framework_at_least():
    """The text's check passes a name of either framework and still
    fails a name that is in neither, and a third level."""
    if importlib.util.find_spec('torch') is None:
        pytest.skip('needs torch: the check walks d2lpar.torch too')
    names = [
        'dp.allreduce',
        'dp.concise.spawn',
        'dp.no_such',
        'dp.comm.schedules.traffic',
    ]
    assert sorted(prose_problems(names, True)) == [
        'dp.comm.schedules.traffic module at level 2',
        'dp.no_such not found',
    ]


def test_depth_check_can_fail():
    """The check above sees a third level, a private name, a deep import
    and a name that is not there, and passes the names that are
    allowed."""
    assert depth_problems(
        [
            'dp.comm.schedules.traffic',
            'dp.collectives._nothing',
            'd2lpar.comm.schedules.',
            'dp.comm.traffic',
            'dp.multiprocess.ParameterServer.sum_',
            'dp.allreduce',
            'dp.comm.no_such_name',
        ]
    ) == [
        'd2lpar.comm.schedules imported (a module below the first level)',
        'dp.comm.schedules.traffic module at level 2',
        'dp.collectives._nothing private',
        'dp.comm.no_such_name not found',
    ]


# The docstrings' examples, run as doctests in a fresh interpreter (a
# worker's thread count, once lowered, stays low for the process) on the
# machine the examples name: no GPU (D2LPAR_DEVICES=cpu) and two cores
# to share (OMP_NUM_THREADS=2, what thread_budget reads). ``plant`` maps
# a documented name to (old, new): its docstring is edited so before
# the examples run, which lets a test check that a wrong output fails.
EXAMPLES_SCRIPT = """
import doctest, inspect, json, sys, d2lpar as dp
names, plant = sys.argv[1:], json.loads(sys.stdin.read())
finder, report = doctest.DocTestFinder(), {}
for name in names:
    obj = owner = dp
    for part in name.split('.')[1:]:
        owner, obj = obj, getattr(obj, part)
    if name in plant:
        obj.__doc__ = obj.__doc__.replace(*plant[name])
    # A value (the dict d2lpar.workers.KVSTORES) has no module: its owner's.
    module = inspect.getmodule(obj) or owner
    count, failed = 0, []
    for test in finder.find(obj, name, module=module, globs=vars(module)):
        count += len(test.examples)
        doctest.DocTestRunner().run(test, out=failed.append)
    report[name] = [count, ''.join(failed)]
print(json.dumps(report))
"""

# Examples that cost a training run: the slow test runs them.
TRAINING_EXAMPLES = {'d2lpar.train'}
# Examples known to be wrong, each with what to change; the strict xfail
# below fails once one is fixed, so its entry goes.
KNOWN_WRONG = {}


def slow_if_training(names):
    """The names as parameters, those in TRAINING_EXAMPLES marked slow."""
    return [
        pytest.param(n, marks=pytest.mark.slow)
        if n in TRAINING_EXAMPLES
        else n
        for n in sorted(names)
    ]


def run_examples(names, plant=None):
    """``{name: [examples in its docstring, failure report or '']}``."""
    run = subprocess.run(
        [sys.executable, '-c', EXAMPLES_SCRIPT, *names],
        input=json.dumps(plant or {}),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=dict(os.environ, D2LPAR_DEVICES='cpu', OMP_NUM_THREADS='2'),
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_documented_examples_print_what_they_show():
    """Every Examples section the API page shows prints what it says
    (doctest, exact output), so an example cannot drift from the code
    (make_buckets' once showed buckets its rule never makes)."""
    names = [
        n
        for n in without_torch_if_absent(documented_names())
        if n not in TRAINING_EXAMPLES and n not in KNOWN_WRONG
    ]
    report = run_examples(names)
    assert sum(count for count, _ in report.values()) > 30
    assert report['d2lpar.make_buckets'][0] > 0  # examples are found
    assert {n: out for n, (_, out) in report.items() if out} == {}


@pytest.mark.parametrize('name', slow_if_training(KNOWN_WRONG))
@pytest.mark.xfail(strict=True, reason='a known wrong example')
def test_known_wrong_examples(name):
    """Each example listed as wrong still fails; once fixed, this strict
    xfail fails until the name leaves KNOWN_WRONG."""
    assert run_examples([name])[name][1] == '', KNOWN_WRONG[name]


def test_a_wrong_example_fails():
    """The check above fails an example whose printed output is not
    what the code returns: make_buckets' earlier, wrong buckets."""
    report = run_examples(
        ['d2lpar.make_buckets'],
        plant={
            'd2lpar.make_buckets': ['[[3], [2], [1, 0]]', '[[3, 2], [1, 0]]']
        },
    )
    assert (
        'Expected:\n    [[3, 2], [1, 0]]' in report['d2lpar.make_buckets'][1]
    )


@pytest.mark.parametrize(
    'name', slow_if_training(TRAINING_EXAMPLES - set(KNOWN_WRONG))
)
def test_training_examples_run(name):
    """The examples that train (a whole epoch) print what they show."""
    count, out = run_examples([name])[name]
    assert count > 0
    assert out == ''
