#!/usr/bin/env bash
# Write a plain notebook of every executable chapter into OUT_DIR (and
# NAME-pytorch.ipynb beside NAME.ipynb for a chapter with PyTorch cells).
# Usage: scripts/chapter-notebooks.sh [VENV_DIR] [OUT_DIR] [EXECUTED_DIR]
# (called by scripts/build-book.sh after the book's build, with the
# build's executed chapters in EXECUTED_DIR for their glued values)
set -euo pipefail
venv=${1:-.venv}
out=${2:-_build/html/notebooks}
executed=${3:+--executed $3}
mkdir -p "$out"
# the executable chapters: those with a kernel
mapfile -t chapters < <(grep -l '^kernelspec:' book/*.md)
# shellcheck disable=SC2086  # two words or none
"$venv/bin/python" scripts/chapter_notebook.py $executed --into "$out" "${chapters[@]}"
echo "notebooks: $(ls "$out"/*.ipynb | wc -l) in $out ($(ls "$out"/*-pytorch.ipynb 2>/dev/null | wc -l) of them PyTorch's)"
