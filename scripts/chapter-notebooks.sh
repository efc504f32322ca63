#!/usr/bin/env bash
# Write a plain notebook of every executable chapter into OUT_DIR.
# Usage: scripts/chapter-notebooks.sh [VENV_DIR] [OUT_DIR]
# (called by scripts/build-book.sh and `make test-notebooks`)
set -euo pipefail
venv=${1:-.venv}
out=${2:-_build/extra/notebooks}
mkdir -p "$out"
for chapter in book/*.md; do
    grep -q '^kernelspec:' "$chapter" || continue
    "$venv/bin/python" scripts/chapter_notebook.py "$chapter" \
        "$out/$(basename "${chapter%.md}").ipynb"
done
echo "notebooks: $(ls "$out"/*.ipynb | wc -l) chapters in $out"
