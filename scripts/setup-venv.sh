#!/usr/bin/env bash
# Create or refresh the project's virtual environment from requirements.txt.
# Usage: scripts/setup-venv.sh [VENV_DIR]     (default .venv)
set -euo pipefail
venv=${1:-.venv}

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
"$venv/bin/python" -m pip install --quiet -r requirements.txt
"$venv/bin/python" -m pip install --quiet --no-deps -e .
echo "setup: $venv is ready ($("$venv/bin/python" -c 'import mxnet, numpy; print("mxnet", mxnet.__version__, "numpy", numpy.__version__)'))"
