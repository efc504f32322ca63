#!/usr/bin/env bash
# Make the student homework notebooks for the book.
# Usage: scripts/make-homework.sh [VENV_DIR]    (called by build-book.sh)
# Student versions (solutions stripped by nbgrader's preprocessors) go to
# _build/extra/homework/, which the book serves for download: for each
# assignment NAME.ipynb (MXNet) and NAME-pytorch.ipynb (PyTorch, no MXNet
# import), both made from homework/NAME.md (cells marked #@tab). The teacher
# notebooks are NOT executed here: running all six took about a minute of
# the book's build-time budget, and the slow test
# tests/test_grading_notebooks.py (make test-slow, run in CI) already
# executes every one and fails if a solution stops passing its check.
# To run them by hand as well: add --teacher DIR --execute below.
set -euo pipefail
venv=${1:-.venv}
rm -rf _build/extra/homework
"$venv/bin/python" -m d2lpar.grading.notebooks homework \
    _build/extra/homework
echo "homework: student notebooks (MXNet and PyTorch) in _build/extra/homework"
