"""Write requirements.txt from pyproject.toml, the one home of the pins.

Usage: python scripts/pins.py > requirements.txt
tests/test_install.py fails when the two disagree.
"""

import pathlib
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXTRAS = ('cpu', 'notebook', 'dev')  # everything the book's .venv needs

HEADER = """\
# GENERATED from pyproject.toml by `python scripts/pins.py > requirements.txt`;
# edit the pins there (dependencies and the extras cpu, notebook, dev).
# The whole stack of `make book` and `make test`; Python 3.11 only (mxnet
# 1.9.1 and numpy 1.23.5 have no wheels for 3.12+).
#
# GPU users: replace the CPU wheel `mxnet==1.9.1` by the CUDA build that
# matches the machine's CUDA, e.g. `mxnet-cu112==1.9.1` (see README).
"""


def project():
    with open(ROOT / 'pyproject.toml', 'rb') as f:
        return tomllib.load(f)['project']


def render():
    """The text requirements.txt must hold."""
    meta = project()
    groups = [('d2lpar', meta['dependencies'])]
    groups += [
        (f'd2lpar[{e}]', meta['optional-dependencies'][e]) for e in EXTRAS
    ]
    lines = [HEADER]
    for name, pins in groups:
        lines.append(f'# {name}')
        lines += pins
    return '\n'.join(lines) + '\n'


if __name__ == '__main__':
    print(render(), end='')
