#!/usr/bin/env bash
# Make the student homework notebooks for the book, and run the teacher's.
# Usage: scripts/make-homework.sh [VENV_DIR]    (called by build-book.sh)
# Student versions (solutions stripped by nbgrader's preprocessors) go to
# _build/extra/homework/, which the book serves for download; the
# executed teacher versions go to _build/homework-teacher/, which it does
# not. Fails (non-zero) if a teacher notebook raises.
set -euo pipefail
venv=${1:-.venv}
start=$(date +%s)
rm -rf _build/extra/homework _build/homework-teacher
"$venv/bin/python" -m d2lpar.homework.notebooks homework \
    _build/extra/homework --teacher _build/homework-teacher --execute
echo "homework: teacher notebooks ran in $(( $(date +%s) - start )) s"
