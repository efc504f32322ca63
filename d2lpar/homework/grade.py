"""Grade solution files: ``python -m d2lpar check FILE_OR_FOLDER ...``."""

import importlib.util
import inspect
import pathlib
import sys
import traceback

from . import CHECKS


def solution_files(paths):
    """The ``.py`` files named, and those inside the folders named.

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
                f'a solution .py file or a folder'
            )
        files += sorted(path.glob('*.py')) if path.is_dir() else [path]
    return files


def load(path, index=0):
    """Import a solution file as its own module (its top level runs)."""
    name = f'd2lpar_solution_{index}_{path.stem}'
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def grade_file(path, index=0):
    """Run the check of every known function ``path`` defines.

    Returns
    -------
    dict
        ``{'file', 'passed', 'error', 'reports'}``; ``reports`` holds
        :class:`Report` objects. A file that fails to import, or defines
        none of :data:`CHECKS`, does not pass and says why in ``error``.
    """
    result = {'file': str(path), 'passed': False, 'error': None, 'reports': []}
    try:
        module = load(path, index)
    except Exception:  # noqa: BLE001 - the student's file, shown whole
        result['error'] = 'importing it raised:\n' + traceback.format_exc()
        return result
    for name, check in CHECKS.items():
        fn = getattr(module, name, None)
        # Only functions the file defines: an import of the library's
        # own function is not the student's work.
        if inspect.isfunction(fn) and fn.__module__ == module.__name__:
            result['reports'].append(check(fn))
    if not result['reports']:
        result['error'] = (
            f'defines none of the functions with a check: {", ".join(CHECKS)}'
        )
    result['passed'] = result['error'] is None and all(result['reports'])
    return result


def grade(paths):
    """Grade every file; return a JSON-ready summary and the text."""
    results = [grade_file(p, i) for i, p in enumerate(solution_files(paths))]
    lines = []
    for r in results:
        lines.append(
            f'== {r["file"]}: {"PASSED" if r["passed"] else "FAILED"}'
        )
        if r['error']:
            lines.append(r['error'].rstrip())
        lines += [str(report) for report in r['reports']]
    summary = {
        'passed': bool(results) and all(r['passed'] for r in results),
        'files': [
            dict(r, reports=[x.to_dict() for x in r['reports']])
            for r in results
        ],
    }
    return summary, '\n'.join(lines)
