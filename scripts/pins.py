"""Check requirements.txt (the pins) against pyproject.toml (the ranges).

pyproject.toml states what d2lpar works with, as ranges, so that pip can
install it beside other packages (numpy 1.26 on Python 3.12, say);
requirements.txt pins the one stack `make book` and `make test` run on.
The two must agree: every package the stack names (d2lpar's dependencies
and the extras in EXTRAS) is pinned exactly once, with '==', inside its
range, and nothing else is pinned.

Usage: python scripts/pins.py    (prints each problem; exit 1 if any)
tests/test_pins.py runs the same check.
"""

import pathlib
import sys
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Everything the book's .venv needs (book pulls in cpu, notebook, d2l
# and teacher; torch for the PyTorch twin's tests).
EXTRAS = ('book', 'dev', 'torch')
# The Python the pinned stack is for (numpy 1.23.5 has no wheel for 3.12):
# markers are read for it, whichever Python runs the check.
STACK_PYTHON = {'python_version': '3.11', 'python_full_version': '3.11.0'}


def project():
    with open(ROOT / 'pyproject.toml', 'rb') as f:
        return tomllib.load(f)['project']


def requirements(extras=EXTRAS, meta=None):
    """d2lpar's requirements with ``extras``, self-references followed.

    Returns a dict: canonical name -> Requirement. Requirements whose
    marker is false on the stack's Python 3.11 (``setuptools;
    python_version >= '3.12'``) are left out: it does not install them.
    """
    meta = meta or project()
    name = canonicalize_name(meta['name'])
    found, todo, seen = {}, [None, *extras], set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        if extra is None:
            listed = meta['dependencies']
        else:
            listed = meta['optional-dependencies'][extra]
        for text in listed:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate(STACK_PYTHON):
                continue
            if canonicalize_name(req.name) == name:
                todo += sorted(req.extras)
                continue
            key = canonicalize_name(req.name)
            if key in found and found[key].specifier != req.specifier:
                raise ValueError(f'{req.name} has two ranges: {text}')
            found[key] = req
    return found


def pins(text=None):
    """requirements.txt's pins as a list of Requirement, in file order."""
    if text is None:
        text = (ROOT / 'requirements.txt').read_text()
    lines = (line.split('#')[0].strip() for line in text.splitlines())
    return [Requirement(line) for line in lines if line]


def problems(pinned=None, ranges=None):
    """Each way the pins and the ranges disagree, as a sentence."""
    pinned = pins() if pinned is None else pinned
    ranges = requirements() if ranges is None else ranges
    out, names = [], []
    for pin in pinned:
        key = canonicalize_name(pin.name)
        specs = list(pin.specifier)
        if len(specs) != 1 or specs[0].operator != '==':
            out.append(f'{pin}: not an exact == pin')
            continue
        if key in names:
            out.append(f'{pin.name}: pinned twice')
        names.append(key)
        if key not in ranges:
            out.append(f'{pin}: not a requirement of d2lpar{list(EXTRAS)}')
        elif not ranges[key].specifier.contains(
            specs[0].version, prereleases=True
        ):
            out.append(f"{pin}: outside pyproject.toml's {ranges[key]}")
    for key, req in ranges.items():
        if key not in names:
            out.append(f'{req}: in pyproject.toml but not pinned')
    return out


if __name__ == '__main__':
    found = problems()
    for problem in found:
        print(problem)
    sys.exit(1 if found else 0)
