"""Grade solution files: ``python -m d2lpar check FILE_OR_FOLDER ...``.

Each submission runs in its own Python process with a time limit, so a
student's endless loop or crash costs only that student's verdict; the
submission's own output (prints, timing loops at its top level) is
captured and stored beside the verdict, never mixed into the table.
Inside that process the library's collectives are watched before the
file is imported (:mod:`d2lpar.grading.spy`), so an allreduce that
calls ``dp.allreduce`` fails as ``calls-library``.

A solution is graded in the framework it imports
(:mod:`d2lpar.grading.detect`): a file that imports ``torch`` or
``d2lpar.torch`` by the PyTorch checks (:data:`d2lpar.torch.grading.
CHECKS`), one that imports MXNet or ``d2lpar`` by the MXNet checks. A
notebook (``.ipynb``) is graded as the file of its code cells.
"""

import concurrent.futures
import csv
import importlib.util
import inspect
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types

from . import detect

TIMEOUT = 60  # seconds per submission, by default
# Seconds a child may take to import the library before the submission's
# own time limit starts (MXNet's import, on a loaded machine).
STARTUP = 300
OUTPUT_LIMIT = 20_000  # characters of a submission's output kept


def checks(framework):
    """Function name -> check, for solutions in ``framework``."""
    if framework == 'torch':
        from ..torch.grading import CHECKS
    else:
        from . import CHECKS
    return CHECKS


def solution_files(paths):
    """The ``.py`` and ``.ipynb`` files named, and those inside the
    folders named.

    Raises
    ------
    FileNotFoundError
        If a path does not exist.
    """
    files = []
    for path in map(pathlib.Path, paths):
        if not path.exists():
            raise FileNotFoundError(
                f'check: {path} does not exist; pass '
                f'a solution .py or .ipynb file or a folder'
            )
        if path.is_dir():
            files += sorted(
                p for p in path.iterdir() if p.suffix in ('.py', '.ipynb')
            )
        else:
            files.append(path)
    return files


def load(path, index=0):
    """Import a solution file as its own module (its top level runs);
    a notebook's code cells run as one module."""
    name = f'd2lpar_solution_{index}_{path.stem}'
    if path.suffix == '.ipynb':
        module = types.ModuleType(name)
        module.__file__ = str(path)
        sys.modules[name] = module
        code = compile(detect.source_of(path), str(path), 'exec')
        exec(code, module.__dict__)  # noqa: S102 - the student's notebook
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def framework(path):
    """``(framework, why)`` of a solution file
    (:func:`d2lpar.grading.detect.framework_of`); raises
    :class:`~d2lpar.grading.detect.MixedFrameworks` if it mixes them."""
    return detect.framework_of(detect.source_of(path))


def grade_file(path, index=0):
    """Run the check of every known function ``path`` defines, in this
    process (:func:`grade` runs each file in a process of its own).

    Returns
    -------
    dict
        ``{'file', 'framework', 'passed', 'error', 'reports'}``;
        ``reports`` holds :class:`Report` objects. A file that mixes the
        frameworks, fails to import, or defines none of the functions
        with a check does not pass and says why in ``error``.
    """
    result = {
        'file': str(path),
        'framework': None,
        'passed': False,
        'error': None,
        'reports': [],
    }
    try:
        result['framework'], why = framework(path)
    except (detect.MixedFrameworks, ValueError) as e:
        result['error'] = f'not graded: {e}'
        return result
    result['framework_from'] = why
    table = checks(result['framework'])
    try:
        module = load(path, index)
    except Exception:  # noqa: BLE001 - the student's file, shown whole
        result['error'] = 'importing it raised:\n' + traceback.format_exc()
        return result
    for name, check in table.items():
        fn = getattr(module, name, None)
        # Only functions the file defines: an import of the library's
        # own function is not the student's work.
        if inspect.isfunction(fn) and fn.__module__ == module.__name__:
            result['reports'].append(check(fn))
    if not result['reports']:
        result['error'] = (
            f'defines none of the functions with a check: {", ".join(table)}'
        )
    result['passed'] = result['error'] is None and all(result['reports'])
    return result


def _child(path, out):
    """In the submission's own process: watch, import, check, write the
    verdict to the file ``out`` (stdout/stderr are the submission's).
    ``out + '.started'`` tells the parent the library is imported: the
    time limit counts from there."""
    try:
        kind = framework(path)[0]
    except ValueError:  # mixed: grade_file says so
        kind = None
    if kind == 'mxnet':
        from .spy import install

        install()  # before the import: `from d2lpar import allreduce` too
    pathlib.Path(out + '.started').touch()
    result = grade_file(pathlib.Path(path))
    result['reports'] = [r.to_dict() for r in result['reports']]
    with open(out, 'w') as f:
        json.dump(result, f)
    return 0


def _run(path, out, timeout, tmp):
    """Run the child; return (timed_out, returncode, stdout, stderr,
    startup seconds)."""
    files = [open(os.path.join(tmp, n), 'w+') for n in ('out', 'err')]
    child = subprocess.Popen(
        [sys.executable, '-m', 'd2lpar.grading.grade', str(path), out],
        stdout=files[0],
        stderr=files[1],
        start_new_session=True,  # its own group: kill what it starts
    )
    begin = time.perf_counter()
    deadline, startup = begin + STARTUP + timeout, None
    while child.poll() is None and time.perf_counter() < deadline:
        if startup is None and os.path.exists(out + '.started'):
            startup = time.perf_counter() - begin
            deadline = time.perf_counter() + timeout  # the file's time
        time.sleep(0.05)
    timed_out = child.poll() is None
    if timed_out:
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    text = []
    for f in files:
        f.seek(0)
        text.append(f.read())
        f.close()
    return timed_out, child.returncode, text[0], text[1], startup


def _verdict(result):
    if result['passed']:
        return 'passed'
    return result.get('verdict') or 'failed'


def grade_isolated(path, timeout=TIMEOUT):
    """Grade one file in a fresh process that is killed ``timeout``
    seconds after it starts importing the file (importing the library
    before that does not count, up to :data:`STARTUP` seconds).

    Returns
    -------
    dict
        :func:`grade_file`'s keys with reports as plain data, plus
        ``'verdict'`` (``passed``, ``failed``, ``timeout``, ``crashed``,
        or ``not-graded``: the file's framework is not installed here,
        so it was not run, and ``'error'`` says what to install),
        ``'seconds'`` (in all), ``'startup'`` (of them,
        importing the library) and ``'output'`` (what the
        submission printed, stdout then stderr, at most
        :data:`OUTPUT_LIMIT` characters).
    """
    start = time.perf_counter()
    try:
        kind, why = framework(path)
    except ValueError:  # mixed: the child's grade_file says so
        kind = why = None
    absent = kind and detect.missing(kind)
    if absent:  # not the student's fault: say what to install
        return {
            'file': str(path),
            'framework': kind,
            'framework_from': why,
            'passed': False,
            'verdict': 'not-graded',
            'error': f'not graded: it is written in {detect.NAMES[kind]} '
            f'({why}), and {absent}',
            'reports': [],
            'seconds': 0.0,
            'startup': None,
            'output': '',
        }
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'verdict.json')
        timed_out, returncode, stdout, stderr, startup = _run(
            path, out, timeout, tmp
        )
        result = {'file': str(path), 'passed': False, 'reports': []}
        if timed_out:
            result['verdict'] = 'timeout'
            result['error'] = (
                f'did not finish within {timeout:g} s (an endless loop? '
                f'a tree whose step never grows?); killed'
            )
        elif os.path.exists(out):
            with open(out) as f:
                result = json.load(f)
        else:
            tail = stderr.strip().splitlines()[-5:]
            result['verdict'] = 'crashed'
            result['error'] = (
                f'its process ended with exit status {returncode} '
                f'before a verdict:\n' + '\n'.join(tail)
            )
    result.setdefault('framework', kind)
    result.setdefault('framework_from', why)
    result['verdict'] = _verdict(result)
    result['seconds'] = round(time.perf_counter() - start, 1)
    result['startup'] = None if startup is None else round(startup, 1)
    output = stdout + (('\n[stderr]\n' + stderr) if stderr.strip() else '')
    result['output'] = output[-OUTPUT_LIMIT:]
    return result


def _mistakes(result):
    codes = []
    for report in result['reports']:
        codes += [c for c in report['mistakes'] if c not in codes]
    return codes


def _reason(result):
    if result['verdict'] == 'passed':
        return ''
    if result['error']:
        return result['error'].strip().splitlines()[0]
    return ', '.join(_mistakes(result))


def _framework(result):
    return detect.NAMES.get(result.get('framework'), '')


def _notes(result):
    """What a check could not judge in this framework, per function
    (e.g. PyTorch's allreduce check does not count transfers)."""
    notes = []
    for report in result['reports']:
        note = report.get('note')
        if note and f'{report["function"]}: {note}' not in notes:
            notes.append(f'{report["function"]}: {note}')
    return notes


def table(results):
    """One line per student: file, verdict, checks passed, seconds,
    framework, why not; then each note of a check (what it could not
    judge in that framework), once, with the students it concerns."""
    rows = [('student', 'verdict', 'checks', 'seconds', 'framework', 'why')]
    noted = {}
    for r in results:
        passed = sum(x['passed'] for x in r['reports'])
        student = pathlib.Path(r['file']).stem
        rows.append(
            (
                student,
                r['verdict'].upper(),
                f'{passed}/{len(r["reports"])}',
                f'{r["seconds"]:.1f}',
                _framework(r),
                _reason(r),
            )
        )
        for note in _notes(r):
            noted.setdefault(note, []).append(student)
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [
        '  '.join(c.ljust(w) for c, w in zip(row, widths)) + '  ' + row[5]
        for row in rows
    ]
    lines += [
        f'note ({", ".join(students)}): {note}'
        for note, students in noted.items()
    ]
    return '\n'.join(line.rstrip() for line in lines)


def details(result):
    """The verdict of one file in full: its error and every report."""
    lines = [f'== {result["file"]}: {result["verdict"].upper()}']
    if result.get('framework'):
        graded = 'written' if result['verdict'] == 'not-graded' else 'graded'
        lines[0] += (
            f' ({graded} in {detect.NAMES[result["framework"]]}: '
            f'{result.get("framework_from")})'
        )
    if result['error']:
        lines.append(result['error'].rstrip())
    for report in result['reports']:
        lines.append(
            f'{report["check"]}({report["function"]}): '
            + (
                f'passed all {report["cases"]} cases'
                if report['passed']
                else f'{len(report["failures"])} of {report["cases"]} '
                f'cases failed'
            )
        )
        if report.get('note'):
            lines.append(f'note: {report["note"]}')
        if report['failures']:
            f = report['failures'][0]
            lines += [
                f'first failing case: {f["case"]}',
                f'mistake: {f["mistake"]}',
                f['message'],
                f'hint: {f["hint"]}',
            ]
            if f['traceback']:
                lines += ['your traceback:', f['traceback'].rstrip()]
    if result['output'].strip():
        lines.append(
            f'(the submission printed {len(result["output"])} '
            f'characters: kept in --json under "output")'
        )
    return '\n'.join(lines)


def to_csv(results):
    """A gradebook: one row per student, with the framework it was
    graded in and the notes of its checks (what a check could not
    judge in that framework)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator='\n')
    writer.writerow(
        [
            'student',
            'file',
            'framework',
            'verdict',
            'checks_passed',
            'checks',
            'why',
            'notes',
        ]
    )
    for r in results:
        writer.writerow(
            [
                pathlib.Path(r['file']).stem,
                r['file'],
                _framework(r),
                r['verdict'],
                sum(x['passed'] for x in r['reports']),
                len(r['reports']),
                _reason(r),
                '; '.join(_notes(r)),
            ]
        )
    return buffer.getvalue()


def grade(paths, timeout=TIMEOUT, jobs=None):
    """Grade every file, each in its own process, ``jobs`` at a time
    (default: one per CPU core); return a JSON-ready summary and the
    text (a table in the order of the files, then each verdict that is
    not ``passed`` in full)."""
    files = solution_files(paths)
    jobs = jobs or os.cpu_count() or 1
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda p: grade_isolated(p, timeout), files))
    text = [table(results), '']
    text += [details(r) for r in results if r['verdict'] != 'passed']
    summary = {
        'passed': bool(results) and all(r['passed'] for r in results),
        'files': results,
    }
    return summary, '\n'.join(text).rstrip()


if __name__ == '__main__':
    sys.exit(_child(*sys.argv[1:3]))
