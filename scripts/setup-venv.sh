#!/usr/bin/env bash
# Create or refresh the project's virtual environment from requirements.txt
# (generated from the pins in pyproject.toml: scripts/pins.py).
# Usage: scripts/setup-venv.sh [VENV_DIR]            (default .venv)
#        scripts/setup-venv.sh --plain [VENV_DIR]    (default .venv-plain)
# --plain makes a student's environment instead: a regular (not editable)
# install of `.[cpu,notebook]`, as `pip install "d2lpar[cpu,notebook]"`
# would give, without the book's build tools (no jupyter-book, no pytest).
# `make test-notebooks` runs the chapter notebooks in it.
set -euo pipefail
plain=
if [ "${1:-}" = --plain ]; then plain=1; shift; fi
venv=${1:-${plain:+.venv-plain}}
venv=${venv:-.venv}

find_python() {
    # The stack (mxnet 1.9.1, numpy 1.23.5) installs on Python 3.11 only.
    for candidate in "${PYTHON:-}" python3.11 python3; do
        [ -n "$candidate" ] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
            echo "$candidate"; return 0
        fi
    done
    return 1
}

if [ -x "$venv/bin/python" ] &&
   ! "$venv/bin/python" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "setup: $venv is not Python 3.11; recreating it" >&2
    rm -rf "$venv"
fi
if [ ! -x "$venv/bin/python" ]; then
    python=$(find_python) || {
        echo "setup: Python 3.11 is needed (mxnet 1.9.1 and numpy 1.23.5 do not" >&2
        echo "       install on 3.12+). Install python3.11, or set PYTHON=/path/to/python3.11." >&2
        exit 1
    }
    echo "setup: creating $venv with $python"
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
if [ -n "$plain" ]; then
    "$venv/bin/python" -m pip install --quiet ".[cpu,notebook]"
    # The library as it is now, even when its version number is unchanged.
    "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall .
    rm -rf build  # setuptools' in-tree build folder
else
    "$venv/bin/python" -m pip install --quiet -r requirements.txt
    "$venv/bin/python" -m pip install --quiet --no-deps -e .
fi
echo "setup: $venv is ready ($("$venv/bin/python" -c 'import mxnet, numpy; print("mxnet", mxnet.__version__, "numpy", numpy.__version__)'))"
