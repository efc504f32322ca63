#!/usr/bin/env bash
# Build Horovod 0.28.1 into the project's venv (the optional extra).
# Usage: scripts/setup-horovod.sh [VENV_DIR]     (default .venv)
# MXNet support, gloo controller and gloo CPU operations; no TensorFlow,
# PyTorch or MPI. Takes about two minutes on 2 cores.
set -euo pipefail
venv=${1:-.venv}
py="$venv/bin/python"

if "$py" - <<'PY' 2>/dev/null; then
import sys
import horovod.mxnet  # fails unless built with MXNet support
from horovod.common.util import gloo_built
sys.exit(not gloo_built())
PY
    echo "setup-horovod: Horovod with MXNet and gloo is already in $venv"
    exit 0
fi

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    echo "setup-horovod: installing ${missing[*]} with apt-get"
    $sudo apt-get install -y "${missing[@]}" || {
        echo "setup-horovod: could not install ${missing[*]}; install them" >&2
        echo "               and run 'make horovod' again." >&2
        exit 1
    }
fi

echo "setup-horovod: building Horovod against $("$py" -c 'import mxnet; print("mxnet", mxnet.__version__)') (about 2 minutes)"
HOROVOD_WITH_MXNET=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_PYTORCH=1 \
HOROVOD_WITHOUT_MPI=1 HOROVOD_WITH_GLOO=1 HOROVOD_CPU_OPERATIONS=GLOO \
MAKEFLAGS="-j$(nproc)" \
    "$py" -m pip install --quiet --no-build-isolation --no-cache-dir \
    -r requirements-horovod.txt
"$py" - <<'PY'
import horovod.mxnet  # fails unless built with MXNet support
from horovod.common.util import gloo_built
assert gloo_built(), 'Horovod was built without gloo'
print('setup-horovod: Horovod', __import__('horovod').__version__,
      'with MXNet and gloo is ready')
PY
