#!/usr/bin/env bash
# Build the executed book into _build/html from scratch.
# Usage: scripts/build-book.sh [VENV_DIR]      (called by `make book`)
# Fails (non-zero) on any cell error or Sphinx warning. Every chapter is
# re-executed (execute_notebooks: force), so a change in d2lpar alone is
# always reflected. D2LPAR_QUICK=1 trains briefly, and the pages say so.
set -euo pipefail
venv=${1:-.venv}
scripts/get-mathjax.sh
"$venv/bin/jupyter-book" clean .
rm -rf _build/extra && mkdir -p _build/extra/notebooks
# Plain notebooks for readers who want .ipynb files (served with the HTML).
for chapter in book/*.md; do
    grep -q '^kernelspec:' "$chapter" || continue
    "$venv/bin/jupytext" --quiet --to ipynb \
        -o "_build/extra/notebooks/$(basename "${chapter%.md}").ipynb" "$chapter"
done
scripts/make-homework.sh "$venv"  # student notebooks, teacher's executed
start=$(date +%s)
"$venv/bin/jupyter-book" build . --all -W --keep-going
echo "book: built _build/html in $(( $(date +%s) - start )) s${D2LPAR_QUICK:+ (quick mode)}"
