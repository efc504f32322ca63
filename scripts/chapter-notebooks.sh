#!/usr/bin/env bash
# Write a plain notebook of every executable chapter into OUT_DIR.
# Usage: scripts/chapter-notebooks.sh [VENV_DIR] [OUT_DIR]
# (called by scripts/build-book.sh and `make test-notebooks`)
set -euo pipefail
venv=${1:-.venv}
out=${2:-_build/extra/notebooks}
mkdir -p "$out"
# the executable chapters: those with a kernel
mapfile -t chapters < <(grep -l '^kernelspec:' book/*.md)
"$venv/bin/python" scripts/chapter_notebook.py --into "$out" "${chapters[@]}"
echo "notebooks: $(ls "$out"/*.ipynb | wc -l) chapters in $out"
