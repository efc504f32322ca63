#!/usr/bin/env bash
# Create or refresh the project's virtual environment from requirements.txt
# (the pins of the ranges in pyproject.toml: scripts/pins.py checks them).
# Usage: scripts/setup-venv.sh [VENV_DIR]              (default .venv)
#        scripts/setup-venv.sh --plain [VENV_DIR]      (default .venv-plain)
#        scripts/setup-venv.sh --numpy126 [VENV_DIR]   (default .venv-np126)
# --plain makes a student's environment instead: a regular (not editable)
# install of `.[cpu,notebook,d2l]`, as the notebooks' install commands
# give, without the book's build tools (no jupyter-book, no pytest).
# `make test-notebooks` runs the chapter notebooks in it.
# --numpy126 makes the venv of `make test-numpy126`: d2lpar's ranges
# resolved beside numpy 1.26.4 (the oldest numpy with Python 3.12 wheels)
# and without d2l (whose pins refuse numpy 1.26), with what the fast tests
# need; Python 3.12 itself is not on these machines, so this venv is its
# proxy (PYTHON=python3.12 uses a real one where there is one).
set -euo pipefail
plain= np126=
if [ "${1:-}" = --plain ]; then plain=1; shift; fi
if [ "${1:-}" = --numpy126 ]; then np126=1; shift; fi
venv=${1:-${plain:+.venv-plain}}
venv=${venv:-${np126:+.venv-np126}}
venv=${venv:-.venv}
if [ -n "$np126" ]; then want='(3, 11), (3, 12)'; else want='(3, 11),'; fi

find_python() {
    # The stack (mxnet 1.9.1, numpy 1.23.5) installs on Python 3.11 only.
    for candidate in "${PYTHON:-}" python3.11 python3; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c "import sys; sys.exit(sys.version_info[:2] not in ($want))"; then
            echo "$candidate"; return 0
        fi
    done
    return 1
}

if [ -x "$venv/bin/python" ] &&
   ! "$venv/bin/python" -c "import sys; sys.exit(sys.version_info[:2] not in ($want))"; then
    echo "setup: $venv is not a Python in ($want); recreating it" >&2
    rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
    python=$(find_python) || {
        echo "setup: a Python in ($want) is needed (the pinned numpy 1.23.5, d2l's" >&2
        echo "       pin, has no wheel for 3.12+). Install python3.11, or set" >&2
        echo "       PYTHON=/path/to/python3.11." >&2
        exit 1
    }
    echo "setup: creating $venv with $python"
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
if [ -n "$plain" ]; then
    # The extras the notebooks' first cells name: cpu,notebook, and d2l for
    # the chapters that compare with d2l itself (the introduction).
    "$venv/bin/python" -m pip install --quiet ".[cpu,notebook,d2l]"
    # The library as it is now, even when its version number is unchanged.
    "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall .
    rm -rf build  # setuptools' in-tree build folder
elif [ -n "$np126" ]; then
    # No d2l: the extras the tests import (notebook, teacher), not `book`.
    # wheel: the served-wheel tests build one without build isolation.
    "$venv/bin/python" -m pip install --quiet -e ".[cpu,notebook,teacher,dev]" \
        numpy==1.26.4 wheel
    if "$venv/bin/python" -c 'import d2l' 2>/dev/null; then
        echo "setup: d2l is in $venv; this venv must not have it" >&2
        exit 1
    fi
else
    # The pins, and the package with the extras they pin: pip refuses a pin
    # outside pyproject.toml's range. `book` brings d2l (the d2l extra),
    # `torch` the PyTorch twin's (CPU build: see pyproject.toml).
    "$venv/bin/python" -m pip install --quiet -r requirements.txt \
        -e ".[book,dev,torch]"
fi
# An assignment, so that set -e stops here if d2lpar does not import.
versions=$("$venv/bin/python" -c 'import d2lpar, mxnet, numpy; print("mxnet", mxnet.__version__, "numpy", numpy.__version__)')
echo "setup: $venv is ready ($versions)"
